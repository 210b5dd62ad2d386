"""The defect ledger of newcomer review 3 (issue 30: "each defect in 'Why' has a test
reproducing it on the old code and passing on the new").

One test per defect id of `shared/reference/newcomer-review-3.md` (D-H1..D-H4,
D-M1..D-M13, D-L1..D-L15), the id in its name. Each replays the reviewer's command (the CLI
through typer's runner, the service through its ASGI app, the Python API) and asserts the
fixed behaviour; where a stronger test exists elsewhere, the entry still asserts the
reviewer's own case. Defects fixed on another branch are `xfail(strict=True)` naming it,
so they flip to failures (and the mark must go) once that branch is merged.

The reviewer's own files (`mine/...`) are re-authored here from the review's listings.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from engine.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

LLAMA31 = "tests/fixtures/models/llama-3.1-8b.json"
LLAMA3 = "examples/models/llama-3-8b.json"

# mine/vllm_prod.yaml of the review (D-H1), with the keys it lists in its comment
VLLM_PROD = """\
model: meta-llama/Llama-3.1-8B-Instruct
host: 0.0.0.0
port: 8000
dtype: bfloat16
served-model-name: llama
disable-log-requests: true
tensor-parallel-size: 2
gpu-memory-utilization: 0.92
max-model-len: 131072
max-num-seqs: 512
max-num-batched-tokens: 16384
enable-prefix-caching: true
enable-chunked-prefill: true
kv-cache-dtype: fp8
"""


def cli(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def vllm_prod(tmp_path):
    return _write(tmp_path, "vllm_prod.yaml", VLLM_PROD)


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


# ----------------------------------------------------------------------------- high


def test_D_H1_check_uses_the_configs_own_model_and_says_what_it_checked_against(vllm_prod):
    result = cli("check", vllm_prod, "--dialect", "vllm", "--device", "H100-80GB", "--gpus", "2")
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert "checked against" in first and "Llama-3.1-8B-Instruct" in first
    assert "2x H100-80GB" in first
    assert "len-within-positions" not in result.output  # no false 8192-position limit


def test_D_H1_sglang_model_path_is_the_model_checked():
    result = cli(
        "check",
        "-d",
        "sglang",
        "--serve-args",
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct"
        " --tp 2 --context-length 65536",
        "--gpus",
        "2",
    )
    assert result.exit_code == 0, result.output
    assert "Llama-3.1-8B-Instruct" in result.output.splitlines()[0]


def test_D_H1_an_empty_file_is_no_verdict_about_an_invented_model(tmp_path):
    result = cli("check", _write(tmp_path, "empty.yaml", ""))
    assert result.exit_code == 2
    assert "capacity" not in result.output
    assert "holds no settings" in result.output


def test_D_H1_a_layout_without_gpus_is_checked_on_the_gpus_it_needs(vllm_prod):
    result = cli("check", vllm_prod)
    assert result.exit_code == 0, result.output
    assert "2x H100-80GB (assumed from tensor-parallel-size 2" in result.output.splitlines()[0]


def test_D_H2_explain_honours_the_files_profile_as_solve_does():
    explained = cli("explain", "examples/claims_streamingllm.yaml")
    solved = cli("solve", "examples/claims_streamingllm.yaml", "--json")
    assert explained.exit_code == 0, explained.output
    assert "profile: trtllm-0.10" in explained.output
    assert "block_reuse" in explained.output and "dropped" in explained.output
    data = json.loads(solved.output)
    assert "block_reuse" in {d["name"] for d in data["dropped"]}


def test_D_H3_check_output_redirected_to_a_file_is_valid_yaml(vllm_prod):
    result = runner.invoke(
        app, ["check", str(vllm_prod), "-d", "vllm", "--gpus", "2", "--model", LLAMA31]
    )
    assert result.exit_code == 0, result.output
    # the whole of stdout, comments included, is one YAML document holding the config
    assert yaml.safe_load(result.stdout)["max-model-len"] == 131072


def test_D_H3_check_has_an_output_option_that_writes_valid_yaml(vllm_prod, tmp_path):
    fixed = tmp_path / "fixed.yaml"
    result = cli("check", vllm_prod, "-d", "vllm", "--gpus", "2", "--model", LLAMA31, "-o", fixed)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(fixed.read_text())["max-model-len"] == 131072


def test_D_H4_check_json_carries_the_engine_would_set_lines(vllm_prod):
    text = cli("check", vllm_prod, "-d", "vllm", "--gpus", "2", "--model", LLAMA31)
    as_json = cli("check", vllm_prod, "-d", "vllm", "--gpus", "2", "--model", LLAMA31, "--json")
    assert text.exit_code == as_json.exit_code == 0, as_json.output
    shown = [line[2:] for line in text.output.splitlines() if line.startswith("# vLLM would set")]
    assert shown
    data = json.loads(as_json.output)
    # the report's `engine_changes` (kind "derives") carry what the engine sets by itself
    assert set(shown) <= {c["text"] for c in data["engine_changes"]}


def test_D_H4_service_check_carries_the_engine_would_set_lines(service_client):
    response = service_client.post(
        "/v1/check",
        json={
            "dialect": "vllm",
            "config": {"max-num-seqs": 512, "tensor-parallel-size": 2},
            "model": "llama-3.1-8b",
            "device": "H100-80GB",
            "gpus": 2,
        },
    )
    assert response.status_code == 200, response.text
    assert "would set" in json.dumps(response.json()["engine_changes"])


# --------------------------------------------------------------------------- medium


def _doc_outputs():
    spec = importlib.util.spec_from_file_location(
        "update_doc_outputs_ledger", ROOT / "scripts" / "update_doc_outputs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_D_M1_the_readmes_first_printed_output_is_what_its_command_prints():
    doc_outputs = _doc_outputs()
    blocks = list(doc_outputs.blocks(ROOT / "README.md"))
    assert blocks, "the README shows no tested output"
    first = blocks[0]
    output, code = doc_outputs.run(first)
    assert code == first.exit_code
    assert doc_outputs.normalise(first.shown) == doc_outputs.normalise(output)


def test_D_M2_a_tp_the_model_cannot_split_gets_the_sizes_that_work(tmp_path):
    config = _write(tmp_path, "tp3.yaml", "tensor_parallel_size: 3\n")
    result = cli("check", config, "--model", LLAMA3, "--gpus", "8")
    assert result.exit_code == 1, result.output
    assert re.search(r"tensor_parallel_size: (use |one of )?1, 2, 4,? (or )?8", result.output)


def test_D_M2_a_layout_without_gpus_is_not_a_conflict_on_the_gpu_default(tmp_path):
    config = _write(tmp_path, "tp2.yaml", "tensor_parallel_size: 2\n")
    result = cli("check", config, "--model", LLAMA3)
    assert result.exit_code == 0, result.output
    assert "drop" not in result.output
    assert "assumed from tensor_parallel_size 2; pass --gpus" in result.output


def test_D_M2_no_fix_advises_a_memory_fraction_of_0_999():
    result = cli(
        "check",
        "examples/trtllm/reuse_on_volta.yaml",
        "--model",
        LLAMA3,
        "--device",
        "V100-16GB",
        "--profile",
        "trtllm-tensorrt",
    )
    assert result.exit_code in (0, 1), result.output
    assert "0.999" not in result.output


def test_D_M3_a_vllm_conflict_speaks_vllm_and_hides_other_engines_fields(tmp_path):
    config = _write(tmp_path, "long.yaml", "max-model-len: 131072\nmax-num-seqs: 512\n")
    result = cli("check", config, "-d", "vllm", "--model", LLAMA3)
    assert result.exit_code == 1, result.output
    assert "plugin_config." not in result.output and "sglang_config." not in result.output
    assert "max-model-len" in result.output


def test_D_M4_a_vllm_config_under_the_trtllm_dialect_is_named(vllm_prod):
    result = cli("check", vllm_prod, "--dialect", "trtllm")
    assert result.exit_code == 2
    assert "this looks like a `vllm serve` config: --dialect vllm" in result.output


def test_D_M4_a_vllm_config_without_a_dialect_is_read_as_vllm(vllm_prod):
    result = cli("check", vllm_prod)
    assert result.exit_code == 0, result.output
    assert "vLLM (vllm-0.33)" in result.output.splitlines()[0]


def test_D_M4_solve_on_an_engine_config_names_check(vllm_prod):
    result = cli("solve", vllm_prod)
    assert result.exit_code == 2
    assert "use `arbiter check`" in result.output


def test_D_M4_an_sglang_command_line_under_the_vllm_dialect_is_named():
    result = cli(
        "check",
        "-d",
        "vllm",
        "--serve-args",
        "python -m sglang.launch_server --model-path m --tp-size 2",
    )
    assert result.exit_code == 2
    assert "this looks like a SGLang serve command line: --dialect sglang" in result.output
    assert "- m: unknown key" not in result.output


def test_D_M4_a_model_config_given_as_the_engine_config_names_model():
    result = cli("check", LLAMA31)
    assert result.exit_code == 2
    assert "pass it as `--model`" in result.output


def _command_in_comment(path: Path) -> list[str]:
    for line in path.read_text().splitlines():
        if line.startswith("# arbiter check"):
            return line[len("# arbiter ") :].split()
    raise AssertionError(f"{path} names no command")


def test_D_M5_the_volta_example_fails_as_its_comment_says():
    path = ROOT / "examples" / "trtllm" / "reuse_on_volta.yaml"
    assert "cannot run" in path.read_text()
    result = cli(*_command_in_comment(path))
    assert result.exit_code == 1, result.output
    assert "device.pre-ampere-no-block-reuse" in result.output  # for reuse, not memory
    check_help = cli("check", "--help").output.replace("\n  ", " ")
    assert "reuse_on_volta.yaml" in check_help and "--profile trtllm-0.10" in check_help


def test_D_M5_every_help_example_names_files_that_exist():
    run_help = cli("run", "--help").output
    assert "python -m engine.model.testing tiny-llama" in run_help  # how to make its model
    for name in ("check", "explain", "solve", "compare"):
        text = cli(name, "--help").output
        example = re.search(r"Example[^:]*:\s*\n?\s*(arbiter [^\n]+)", text)
        assert example, name
        words = example.group(1).split()[2:]
        for before, word in zip(["", *words], words, strict=False):
            if before in ("-o", "--output"):
                continue  # what the command writes
            if "/" in word or word.endswith((".yaml", ".json")):
                assert (ROOT / word).exists(), f"{name} --help: {word}"


def test_D_M6_beam_width_alone_runs_and_a_contradiction_fails_first(tmp_path):
    from engine.model.testing import make_tiny_model_dir

    make_tiny_model_dir(tmp_path / "tiny", arch="llama", seed=0)
    ok = cli("run", tmp_path / "tiny", "-p", "1,2,3", "--max-tokens", "3", "--beam-width", "2")
    assert ok.exit_code == 0, ok.output
    before = set(sys.modules)
    bad = cli(
        "run", tmp_path / "absent", "-p", "1,2", "--beam-width", "2", "--set", "max_beam_width=1"
    )
    assert bad.exit_code == 2
    assert "--beam-width 2 needs max_beam_width >= 2" in bad.output
    assert "engine.llm" not in set(sys.modules) - before


def test_D_M7_help_loads_no_rules_and_slow_commands_show_progress(monkeypatch):
    done = _python(
        "-c",
        "import sys\n"
        "from engine.cli import main\n"
        "sys.argv = ['arbiter', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.startswith(('constraints.rules', 'ortools',"
        " 'torch', 'pandas'))]\n"
        "print('HEAVY', heavy)\n",
    )
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr
    import contextlib
    import importlib

    shown: list[str] = []

    @contextlib.contextmanager
    def recorder(message, *, enabled=True):
        if enabled:
            shown.append(message)
        yield

    for module in ("arbiter.cli.check", "arbiter.cli.solve", "arbiter.cli.explain"):
        monkeypatch.setattr(importlib.import_module(module), "working", recorder)
    cli("check", "examples/trtllm/streamingllm.yaml", "--model", LLAMA3)
    cli("solve")
    cli("explain", "examples/claims_streamingllm.yaml")
    assert shown == ["checking", "solving", "explaining"]


def test_D_M8_version_python_m_and_completion():
    from arbiter import __version__

    assert cli("--version").output == f"arbiter {__version__}\n"
    assert cli("-V").exit_code == 0
    done = _python("-m", "arbiter", "--help")
    assert done.returncode == 0 and " run " in done.stdout
    completion = cli("--show-completion", "bash")
    assert completion.exit_code == 0 and "complete" in completion.output


def test_D_M9_json_input_errors_are_json_one_entry_per_problem(tmp_path):
    bad = _write(tmp_path, "vllm_bad2.yaml", "max-num-seqs: two\nenable-prefix-cachng: true\n")
    result = runner.invoke(app, ["check", str(bad), "-d", "vllm", "--json", "--model", LLAMA3])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert {e["path"] for e in data["input_errors"]} == {"max-num-seqs", "enable-prefix-cachng"}


def test_D_M9_check_and_solve_give_one_conflict_shape(tmp_path):
    config = _write(tmp_path, "tp3.yaml", "tensor_parallel_size: 3\n")
    checked = json.loads(cli("check", config, "--model", LLAMA3, "--gpus", "3", "--json").stdout)
    claims = _write(
        tmp_path,
        "claims.yaml",
        "claims:\n  - name: tp3\n    kind: func\n"
        "    requires: {parallel_config.tensor_parallel_size: 3}\n",
    )
    solved = json.loads(cli("solve", claims, "--json").stdout)
    assert checked["conflicts"] and solved["conflicts"]
    assert set(checked["conflicts"][0]) == set(solved["conflicts"][0])
    assert "fixes" in checked and "fixes" in solved
    assert "profile" in json.loads(cli("solve", "--json").stdout)


@pytest.fixture(scope="module")
def service_client():
    from fastapi.testclient import TestClient

    from arbiter.service import ServiceSettings, create_app

    settings = ServiceSettings()
    settings.workers = 1
    with TestClient(create_app(settings)) as client:
        yield client


def test_D_M10_service_check_takes_a_bundled_model_name_and_lists_each_problem(service_client):
    ok = service_client.post(
        "/v1/check",
        json={"dialect": "vllm", "config": {"max-num-seqs": 8}, "model": "llama-3.1-8b"},
    )
    assert ok.status_code == 200, ok.text
    bad = service_client.post(
        "/v1/check",
        json={
            "dialect": "vllm",
            "config": {"max-num-seqs": "two", "enable-prefix-cachng": True},
            "model": "llama-3.1-8b",
        },
    )
    assert bad.status_code == 422
    paths = {e["path"] for e in bad.json()["input_errors"]}  # one entry per problem
    assert paths == {"max-num-seqs", "enable-prefix-cachng"}


def _model_config() -> dict:
    return json.loads((ROOT / LLAMA31).read_text())  # the body's model as an object


def test_D_M10_a_bad_config_is_no_invalid_claim_error(service_client):
    bad = service_client.post(
        "/v1/check",
        json={"dialect": "vllm", "config": {"max-num-seqs": "two"}, "model": _model_config()},
    )
    assert bad.status_code == 422
    assert bad.json()["error"] != "invalid_claim"


def test_D_M10_docs_work_offline_and_the_summary_names_every_engine():
    from fastapi.testclient import TestClient

    from arbiter.service import create_app

    client = TestClient(create_app())  # no lifespan: the pages need no solver process
    html = client.get("/docs").text
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html
    summary = client.get("/openapi.json").json()["paths"]["/v1/check"]["post"]["summary"]
    assert "vLLM" in summary and "SGLang" in summary


def test_D_M11_check_writes_markdown_and_html_reports(tmp_path):
    md = runner.invoke(
        app, ["check", "examples/trtllm/streamingllm.yaml", "--model", LLAMA3, "-f", "markdown"]
    )
    assert md.exit_code == 0, md.output
    assert md.stdout.startswith("# arbiter check: adjust")
    assert "```yaml\nbackend: tensorrt" in md.stdout  # the accepted configuration
    config = _write(tmp_path, "tp3.yaml", "tensor_parallel_size: 3\n")
    html = runner.invoke(app, ["check", str(config), "--model", LLAMA3, "-f", "html"])
    assert html.exit_code == 1, html.output  # the verdict's exit code, whatever the format
    assert html.stdout.startswith("<!DOCTYPE html>")
    assert "<h2>Conflicts</h2>" in html.stdout and "`" not in html.stdout


def test_D_M11_explain_on_an_engine_config_names_check():
    result = cli("explain", "examples/trtllm/streamingllm.yaml")
    assert result.exit_code == 2
    assert "use `arbiter check`" in result.output


def test_D_M12_the_readme_installs_for_users_with_any_torch():
    readme = (ROOT / "README.md").read_text()
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^pip install \.\s", install, re.M)  # users: no developer extras
    assert "CPU or CUDA" in install
    assert "EPYC" not in install and "AVX" not in install


def test_D_M13_tensorrt_only_claims_are_refused_on_a_pytorch_profile():
    result = cli("explain", "examples/claims_streamingllm.yaml", "--profile", "trtllm-1.2")
    assert result.exit_code == 2
    assert "plugin_config.streamingllm" in result.output
    assert "outside the profile's surface" in result.output


# ------------------------------------------------------------------------------ low


def test_D_L1_help_shows_no_bool_metavars():
    for name in ("check", "solve", "explain", "compare", "rules"):
        assert "<bool>" not in cli(name, "--help").output, name


def test_D_L2_one_name_per_concept():
    assert "--output" in cli("sweep", "--help").output
    assert "--time-limit" in cli("explain", "--help").output
    assert "--time-limit" in cli("solve", "--help").output
    assert "else 1" in cli("compare", "--help").output  # --gpus names its default
    result = cli("check", "examples/trtllm/streamingllm.yaml", "--model", "llama-3.1-8b")
    assert result.exit_code == 0, result.output  # a bundled name, as compare takes


def test_D_L3_piped_output_has_no_padded_lines():
    result = cli("solve")
    assert result.exit_code == 0, result.output
    assert all(line == line.rstrip() for line in result.output.splitlines())


def test_D_L3_a_100_column_terminal_keeps_whole_rule_ids(monkeypatch):
    import io

    from rich.console import Console

    from arbiter.cli import console

    screen = io.StringIO()
    monkeypatch.setattr(console.out, "_console", Console(file=screen, width=100))
    result = cli("solve", "examples/claims_streamingllm.yaml")
    assert result.exit_code == 0, result.output
    text = "".join(line.strip(" │") for line in screen.getvalue().splitlines())
    assert "scheduler.chunked-context-needs-paged-context-fmha" in text.replace(" ", "")
    assert "…" not in screen.getvalue()


def test_D_L3_compare_table_fits_a_100_column_terminal(monkeypatch):
    import io

    from rich.console import Console

    from arbiter.cli import console

    screen = io.StringIO()
    monkeypatch.setattr(console.out, "_console", Console(file=screen, width=100))
    result = cli("compare", "examples/compare/chat.yaml", "--engines", "vllm,sglang")
    assert result.exit_code == 0, result.output
    lines = screen.getvalue().splitlines()
    table = lines[: lines.index("vLLM 0.33: holds")]  # the side-by-side table
    assert max(len(line) for line in table) <= 100, "\n".join(table)
    header = next(line for line in table if line.startswith("feature"))
    left, right = header.index("vLLM 0.33"), header.index("SGLang 0.5.23")
    column = "".join(line[left:right].strip() for line in table)  # vLLM's cells, in order
    assert "speculative-config.num_speculative_tokens: 4" in column  # wrapped, never cut


def test_D_L4_a_closed_pipe_is_not_a_conflict():
    done = subprocess.run(
        f"set -o pipefail; {sys.executable} -m arbiter rules | head -1",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def _solve_error(tmp_path: Path, text: str) -> str:
    result = cli("solve", _write(tmp_path, "claims.yaml", text))
    assert result.exit_code == 2, result.output
    return result.output


def test_D_L5_claims_errors_all_at_once_with_suggestions(tmp_path):
    two = _solve_error(
        tmp_path,
        "claims:\n  - name: a\n    kind: fucn\n    requires: {x: 1}\n"
        "  - name: b\n    kind: func\n    require: {kv_cache_config.enable_block_reuse: true}\n",
    )
    assert "'a'" in two and "'b'" in two  # both claims' problems
    assert "did you mean 'func'" in two
    assert "require" in two.replace("requires", "")
    nested = _solve_error(
        tmp_path,
        "claims:\n  - name: a\n    kind: func\n"
        "    requires: {kv_cache_config: {enable_block_reuse: true}}\n",
    )
    assert "kv_cache_config.enable_block_reuse" in nested and "dotted" in nested
    flags = _solve_error(
        tmp_path,
        "profile: vllm-0.33\nclaims:\n  - name: a\n    kind: func\n    requires: {max-num-seqs: 8}\n",
    )
    assert "did you mean" in flags


def test_D_L6_a_huge_integer_does_not_hide_the_other_errors(tmp_path):
    config = _write(
        tmp_path,
        "huge.yaml",
        "max_batch_size: 99999999999999999999999\nmax_num_tokenz: 5\nenable_chunked_prefil: true\n",
    )
    result = cli("check", config, "--model", LLAMA3)
    assert result.exit_code == 2
    for culprit in ("99999999999999999999999", "max_num_tokenz", "enable_chunked_prefil"):
        assert culprit in result.output, culprit
    assert "allowed: int in [1, 65536]" in result.output  # the option's own domain
    assert "did you mean 'enable_chunked_prefill'" in result.output


def test_D_L7_messages_in_the_users_spelling_without_python_internals(tmp_path):
    typo = cli("check", _write(tmp_path, "t.yaml", "enable-prefix-cachng: true\n"), "-d", "vllm")
    assert "did you mean 'enable-prefix-caching'" in typo.output
    bad = cli("check", _write(tmp_path, "b.yaml", "max-num-seqs: two\n"), "-d", "vllm")
    assert "invalid literal for int()" not in bad.output
    tabs = cli("check", _write(tmp_path, "tab.yaml", "a:\n\tb: 1\n"))
    assert "spaces" in tabs.output and "<unicode string>" not in tabs.output
    dup = cli("check", _write(tmp_path, "d.yaml", "max_batch_size: 8\nmax_batch_size: 16\n"))
    assert dup.exit_code == 2 and "max_batch_size" in dup.output
    assert "did you mean" in cli("check", LLAMA3, "--dialect", "vlm").output
    profile = cli("solve", "--profile", "trtllm-9")
    assert profile.exit_code == 2 and "server_h100.yaml" not in profile.output


def test_D_L8_html_reports_render_no_markdown_backticks_and_whole_rule_ids():
    result = cli(
        "explain", "examples/claims_streamingllm.yaml", "--profile", "trtllm-0.10", "-f", "html"
    )
    assert result.exit_code == 0, result.output
    assert "dropped" in result.output  # the report has prose about the dropped claims
    text = re.sub(r"<(script|style)\b.*?</\1>", "", result.output, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    assert "`block_reuse`" not in text and "`streamingllm`" not in text
    svg_labels = re.findall(r'fill="#ffffff">([^<]*)</text>', result.output)
    assert "scheduler.chunked-context-needs-paged-context-fmha" in svg_labels
    assert not any(label.endswith("\u2026") for label in svg_labels)


def test_D_L8_the_compare_page_uses_the_window_and_wraps_inside_its_boxes():
    result = cli("compare", "examples/compare/chat.yaml", "-f", "html")
    assert result.exit_code == 0, result.output
    style = re.search(r"<style>(.*?)</style>", result.output, re.S).group(1)
    rules = [(k.strip(), v) for k, v in re.findall(r"([^{}]+)\{([^}]*)\}", style)]
    widest = [v for k, v in rules if k == "body" and "max-width" in v]
    assert widest[-1].strip().startswith("max-width: none")  # the last rule wins
    assert any(k == "pre" and "pre-wrap" in v and "anywhere" in v for k, v in rules)
    assert any("td.cell" in k and "anywhere" in v for k, v in rules)


def test_D_L8_the_explain_page_of_a_solved_set_shows_its_configuration():
    result = cli("explain", "examples/claims_streamingllm.yaml", "-f", "html")
    assert result.exit_code == 0, result.output
    page = re.sub(r"<[^>]+>", " ", result.output.split("<h2>Configuration</h2>")[1])
    assert "plugin_config.streamingllm" in page and "True" in page
    assert "kv_cache_config.sink_token_length" in page


def test_D_L9_sweep_plots_label_their_axes_and_show_the_small_kv_bars(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from arbiter.sweep import COLUMNS, Grid, plot

    drawn: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))
    grid = Grid(
        models={"m": {}},
        devices={"H100-80GB": {}, "L4": {}},
        modes=["server", "local"],
        features={"baseline": [], "reuse": []},
    )
    rows = []
    for device, mode, kv in (("H100-80GB", "server", 2_000_000), ("L4", "local", 3_000)):
        for features in ("baseline", "reuse"):
            row = dict.fromkeys(COLUMNS, "")
            row.update(
                model="m",
                device=device,
                mode=mode,
                features=features,
                status="optimal",
                kv_tokens=kv,
                max_batch_size=2048,
            )
            rows.append(row)
    plot(rows, grid, tmp_path)
    kv_axis, second = drawn[0].axes[:2]
    assert kv_axis.get_yscale() == "log"  # 3,000 tokens stay visible beside 2,000,000
    for axis in (kv_axis, second):
        assert axis.get_xlabel() and axis.get_ylabel()
    assert "max batch" not in second.get_title()  # the 2048 default said nothing
    comment = (ROOT / "examples" / "sweep.yaml").read_text().split("profile:")[0]
    assert "MLC's server and local" not in comment


def test_D_L10_collection_raises_no_deprecation_warnings():
    done = _python(
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "error::pytest.PytestRemovedIn10Warning",
        "tests/arbiter/engines/sglang/test_sglang_corpus.py",
        "tests/constraints/engines/sglang/test_memory.py",
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "PytestRemovedIn10Warning" not in done.stdout + done.stderr


def test_D_L11_run_prints_no_kept_default_noise_and_names_a_missing_tokenizer(tmp_path):
    from engine.model.testing import make_tiny_model_dir

    make_tiny_model_dir(tmp_path / "tiny", arch="llama", seed=0)
    ok = cli("run", tmp_path / "tiny", "-p", "1,2,3", "--max-tokens", "2")
    assert ok.exit_code == 0, ok.output
    assert "kept default." not in ok.output
    text = cli("run", tmp_path / "tiny", "-p", "Hello world", "--max-tokens", "2")
    assert text.exit_code == 2
    assert "tokenizer" in text.output and "invalid llm_args" not in text.output


def test_D_L12_serve_logs_requests_and_counts_in_words(monkeypatch):
    import uvicorn

    from arbiter.cli.serve import startup_note

    assert startup_note(1) == "1 solver process"
    assert startup_note(4) == "4 solver processes"
    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app_, **kw: seen.update(kw))
    result = cli("serve", "--workers", "1", "--port", "0")
    assert result.exit_code == 0, result.output
    assert seen["access_log"] is True
    assert "(1 solver process)" in result.output


def test_D_L13_labels_say_what_they_are(tmp_path):
    compared = cli("compare", "examples/compare/chat.yaml", "--engines", "vllm")
    assert not re.search(r"warning:.*would set", compared.output)
    config = _write(tmp_path, "long.yaml", "max-model-len: 131072\n")
    data = json.loads(cli("check", config, "-d", "vllm", "--model", LLAMA3, "--json").stdout)
    assert "cannot all hold" not in json.dumps(data)


def test_D_L14_an_earlier_sglang_05_flag_is_accepted_or_named_as_renamed():
    result = cli(
        "check",
        "-d",
        "sglang",
        "--serve-args",
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct"
        " --cuda-graph-max-bs 64",
    )
    # accepted, or named as a flag of the release that has it (and how to spell it here)
    assert result.exit_code == 0 or "an SGLang 0.5.16 flag" in result.output, result.output


def test_D_L15_devices_and_models_are_listed():
    devices = cli("devices", "--json")
    assert devices.exit_code == 0, devices.output
    names = {row["name"] for row in json.loads(devices.output)}
    assert {"H100-80GB", "V100-16GB", "B200"} <= names
    models = cli("models", "--json")
    assert models.exit_code == 0, models.output
    data = json.loads(models.output)
    assert "meta-llama/Llama-3.1-8B" in {row["id"] for row in data["catalog"]}
    assert "llama-3-8b" in data["configs"]
    text = cli("devices")
    assert "H100-80GB" in text.output and "81,559 MiB" in text.output
