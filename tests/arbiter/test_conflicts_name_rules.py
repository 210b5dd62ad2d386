"""Every conflict of a refusal names where it comes from: at least one rule id, or, for a
claim that clashes with a setup fact directly, that setup by name.

A conflict naming neither (rendered "the setup facts cannot all hold" and nothing else)
tells the user nothing they can act on; issue 31 found one (a checkpoint declaring its KV
quantization under vLLM). The property runs over generated configurations of every
dialect (the front-door generators, widened with the options the hardware and
quantization rules read), on several models (dense, FP8 and NVFP4 checkpoints, one
declaring its FP8 KV cache, a block-scaled FP8 MoE) and GPU generations (Volta to
Blackwell): bounded, derandomized under the `ci` profile."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import arbiter
from arbiter.dialects import DIALECTS
from arbiter.dialects.protocol import Machine
from arbiter.errors import ArbiterError
from tests.arbiter.test_front_doors import GENERATORS

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures/models"
MODELS = (
    "llama-3.1-8b",
    "llama-3.3-70b-fp8",
    "llama-3.3-70b-nvfp4",
    "llama-3.3-70b-fp8-kv",  # the FP8 checkpoint declaring kv_cache_quant_algo FP8
    "qwen3-235b-a22b-fp8",
    "mixtral-8x7b",
)
DEVICES = ("V100-32GB", "A100-80GB", "L4", "H100", "B200")
# options the device and quantization rules read, per dialect, on top of the front doors'
EXTRA: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "vllm": {
        "quantization": st.sampled_from(["fp8", "modelopt_fp4", "mxfp4", "awq", "gptq"]),
        "enable-expert-parallel": st.booleans(),
        "data-parallel-size": st.sampled_from([1, 2]),
        "dtype": st.sampled_from(["auto", "bfloat16", "half", "float32"]),
    },
    "trtllm": {
        "backend": st.sampled_from(["pytorch", "tensorrt"]),
        "dtype": st.sampled_from(["auto", "bfloat16", "float16"]),
    },
    "sglang": {
        "quantization": st.sampled_from(["fp8", "modelopt_fp4"]),
        "ep-size": st.sampled_from([1, 2]),
    },
    "mlc": {},
}


@cache
def model_path(name: str, tmp: str) -> str:
    """A fixture's config.json; the `-kv` variant is written once into `tmp`."""
    if not name.endswith("-fp8-kv"):
        return str(FIXTURES / f"{name}.json")
    data = json.loads((FIXTURES / "llama-3.3-70b-fp8.json").read_text())
    data["quantization_config"] = {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_quant_algo": "FP8",
    }
    path = Path(tmp) / "llama-3.3-70b-fp8-kv.json"
    path.write_text(json.dumps(data))
    return str(path)


def configs(dialect: str) -> st.SearchStrategy[dict[str, Any]]:
    extra = EXTRA[dialect]
    if not extra:
        return GENERATORS[dialect]
    more = st.fixed_dictionaries({}, optional=extra)
    return st.tuples(GENERATORS[dialect], more).map(lambda pair: {**pair[0], **pair[1]})


def unnamed(verdict: Any) -> list[str]:
    """The conflicts of a refusal that name no rule and no setup fact they clash with."""
    if verdict.conflict is None:
        return []
    out = []
    for c in verdict.conflict.conflicts:
        if c.rules:
            continue
        if c.setups and c.claims:  # a claim against a named setup fact: named
            continue
        out.append(f"{c} (claims {c.claims}, setups {c.setups})")
    return out


def test_every_dialect_has_a_generator_here():
    assert set(EXTRA) == set(DIALECTS) == set(GENERATORS)


@pytest.mark.parametrize("dialect", sorted(EXTRA))
def test_every_conflict_names_a_rule_or_its_setup_fact(dialect, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("models"))

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        configs(dialect),
        st.sampled_from(MODELS),
        st.sampled_from(DEVICES),
        st.sampled_from([1, 2, 8]),
    )
    def prop(config, model, device, gpus):
        machine = Machine.read(model_path(model, tmp), device, gpus)
        try:
            verdict = arbiter.check(dialect, config, machine=machine)
        except ArbiterError as err:  # bad input: a typed error naming its key, no conflict
            assert str(err)
            event("bad input")
            return
        event(verdict.verdict)
        assert not unnamed(verdict), (config, model, device, gpus, unnamed(verdict))

    prop()


def test_a_conflict_without_rule_or_setup_is_caught():
    """The check itself can fail: a conflict of setup facts alone, no rule, is flagged."""
    from arbiter.errors import Conflict, ConflictError

    bare = ConflictError([Conflict(claims=(), rules=(), setups=("model",))])
    verdict = type("V", (), {"conflict": bare})()
    assert unnamed(verdict)
    named = ConflictError([Conflict(claims=(), rules=("memory.fits",), setups=("model",))])
    assert not unnamed(type("V", (), {"conflict": named})())


@pytest.mark.parametrize("kv", ["fp8", "bfloat16"])
def test_a_written_kv_dtype_on_a_checkpoint_declaring_fp8_kv_names_its_rule(kv, tmp_path):
    """Found by the property above: with `kv-cache-dtype` written, a default still pinned
    the checkpoint's declared KV quantization to none, two setups clashing with no rule."""
    machine = Machine.read(model_path("llama-3.3-70b-fp8-kv", str(tmp_path)), "V100-32GB", 8)
    verdict = arbiter.check("vllm", {"kv-cache-dtype": kv}, machine=machine)
    assert verdict.verdict == "reject" and not unnamed(verdict)
    assert "vllm.quant.checkpoint-min-capability" in verdict.conflict.conflicts[0].rules
    fits = Machine.read(model_path("llama-3.3-70b-fp8-kv", str(tmp_path)), "H100", 8)
    accepted = arbiter.check(
        "vllm", {"kv-cache-dtype": kv, "tensor-parallel-size": 4}, machine=fits
    )
    assert accepted.verdict in ("accept", "adjust"), accepted.reasons


def test_a_conflict_of_facts_alone_renders_what_to_change(tmp_path):
    """A conflict no key of the config takes part in (an FP8 checkpoint on a V100) reads
    as the model, GPUs and release clashing, with what to change, not a traceback."""
    from typer.testing import CliRunner

    from arbiter.cli import app

    config = tmp_path / "v.yaml"
    config.write_text("max-num-seqs: 8\n")
    model = model_path("llama-3.3-70b-fp8", str(tmp_path))
    args = [
        "check", str(config), "-d", "vllm", "--model", model, "--device", "V100-32GB",
        "--gpus", "8",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "the model, the GPUs and the release cannot hold together" in result.output
    assert "vllm.quant.checkpoint-min-capability" in result.output
    assert (
        "--device" in result.output
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    )
