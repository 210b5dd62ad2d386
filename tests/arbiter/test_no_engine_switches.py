"""Engine facts the shared code needs come from the packs and the registry, not from a
comparison with an engine's name or a table keyed by one: the KV manager's longer
sequences are the memory terms' `held_tokens`; the model's key and flags, whether GPUs
count per node, the launchers, the claim prefix and the plan's profile are fields of the
registry's entries; each pack's `vocab`, `map` and `plan` modules hold its keys, its
words and its side of the plan."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arbiter.dialects import DIALECTS
from arbiter.sources.command import find_serve_command, model_of
from constraints.facts.memory import memory_terms

ROOT = Path(__file__).resolve().parents[2]
# shared modules freed of engine-name switches: every module of these folders, and these
FREED_FOLDERS = ("arbiter/sources", "arbiter/plan", "arbiter/service", "arbiter/dialects")
FREED = (
    "arbiter/resolution.py",
    "arbiter/application/check_setup.py",
    "arbiter/check.py",
    "arbiter/dialects/_base.py",
    "arbiter/dialects/open_defaults.py",
    *sorted(
        str(path.relative_to(ROOT))
        for folder in FREED_FOLDERS
        for path in (ROOT / folder).rglob("*.py")
    ),
)


def _names(node: ast.AST) -> list[ast.Constant]:
    """The constants a side of a comparison holds: itself, or a tuple/list/set's items."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [item for item in node.elts if isinstance(item, ast.Constant)]
    return [node] if isinstance(node, ast.Constant) else []


def _engine_switches(path: Path) -> list[int]:
    """Lines that compare a value with an engine's name (`==`, `in (...)`) or key a dict
    literal by one."""
    names = set(DIALECTS)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        found: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            found = [c for side in (node.left, *node.comparators) for c in _names(side)]
        elif isinstance(node, ast.Dict):
            found = [k for k in node.keys if isinstance(k, ast.Constant)]
        out += [node.lineno for c in found if isinstance(c, ast.Constant) and c.value in names]
    return sorted(set(out))


@pytest.mark.parametrize("module", FREED)
def test_no_shared_module_switches_on_an_engine_name(module):
    assert _engine_switches(ROOT / module) == [], module


def test_the_switch_check_sees_each_kind(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        'if engine == "trtllm":\n    pass\n'
        'ok = d in ("vllm", "sglang")\n'
        'PROFILES = {"mlc": 1, "x": 2}\n'
        'fine = {"model": 1} and kind == "trtllm-engine"\n'
    )
    assert _engine_switches(probe) == [1, 3, 4]


def test_every_freed_folder_is_read():
    for folder in FREED_FOLDERS:
        assert any(m.startswith(f"{folder}/") for m in FREED), folder


def test_only_tensorrt_llm_holds_longer_sequences_than_max_seq_len():
    values = {
        "runtime_config.backend": "pytorch",
        "build_config.max_seq_len": 100,
        "speculative_config.decoding_type": "none",
    }
    assert memory_terms("arbiter").held_tokens(values)[0] > 100  # the overlap scheduler
    for terms in ("vllm", "sglang", "mlc"):
        assert memory_terms(terms).held_tokens(values) is None


def test_the_model_is_named_the_engines_way():
    assert DIALECTS.entries["sglang"].model_key == "model-path"
    assert model_of("sglang", ["--model-path", "m"]) == "m"
    assert model_of("sglang", ["m"]) is None  # no positional model
    assert model_of("vllm", ["m", "--max-num-seqs", "8"]) == "m"
    assert [e for e in DIALECTS.entries.values() if e.gpus_per_node] == [DIALECTS.entries["sglang"]]


@pytest.mark.parametrize("name", list(DIALECTS))
def test_every_pack_has_the_roles_the_shared_readers_read(name):
    entry = DIALECTS.entries[name]
    assert entry.launchers and entry.config_label and entry.claim_prefix.endswith(".")
    vocab = DIALECTS.part(name, "vocab")
    assert vocab.vocabulary().dialect == name
    assert vocab.config_keys() and "tp" in vocab.PARALLEL
    assert set(vocab.PARALLEL) <= {"tp", "pp", "dp"}
    assert DIALECTS.part(name, "map").option_fields()
    if entry.plan_profile:
        plan = DIALECTS.part(name, "plan")
        assert plan.RELEASE and plan.COLOUR.startswith("#")


@pytest.mark.parametrize("name", list(DIALECTS))
def test_each_launcher_of_an_entry_names_its_engine(name):
    canonical = DIALECTS.entries[name].launchers[0].split()
    for launcher in DIALECTS.entries[name].launchers:
        found = find_serve_command([*launcher.split(), "--x", "1"])
        assert found is not None and found.dialect == name, launcher
        assert found.args == ("--x", "1")
        assert found.serve_args.split()[: len(canonical)] == canonical
