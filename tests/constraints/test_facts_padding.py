"""vLLM's MXFP4 expert padding (engines/vllm/mxfp4.py `vllm_expert_padding`): the sizes vLLM
0.33 allocates gpt-oss's routed experts at on each GPU generation, in the report's
arithmetic and in the memory rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.dialects.vllm import check_vllm
from arbiter.errors import MemoryConflictError
from constraints.engines.vllm.mxfp4 import vllm_expert_padding, vllm_mxfp4_kernel
from constraints.facts import DeviceSpec, ModelSpec
from constraints.facts.memory import GIB, rank_weight_bytes, weight_parts
from constraints.schema import options

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
TP = "parallel_config.tensor_parallel_size"


def config(name: str) -> dict[str, object]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return data


def facts(name: str, device: str, **layout: object) -> dict[str, object]:
    defaults = {s.path: s.default for s in options()}
    spec = ModelSpec.from_hf_config(config(name))
    return {**defaults, **spec.facts(), **DeviceSpec.named(device).facts(), **layout}


@pytest.mark.parametrize(
    ("sm", "kernel"),
    [(75, "marlin"), (80, "marlin"), (86, "marlin"), (89, "marlin"), (90, "triton")]
    + [(100, None), (120, "marlin")],
)
def test_the_mxfp4_kernel_follows_the_gpu(sm, kernel):
    assert vllm_mxfp4_kernel(sm) == kernel


def test_marlin_pads_gpt_oss_experts_on_an_a100():
    f = facts("gpt-oss-120b", "A100-80GB")
    assert f["model.mxfp4_experts"] is True
    hidden = 3072 / 2880  # 2880 rounded up to 256
    # one GPU: intermediate 2880 rounded up to 128 = 2944
    assert vllm_expert_padding(f, (1,)) == pytest.approx(2944 / 2880 * hidden)
    # tp 2 holds 1440 of it, rounded up to 1536; tp 4: 720 -> 768
    assert vllm_expert_padding(f, (2,)) == pytest.approx(1536 / 1440 * hidden)
    assert vllm_expert_padding(f, (4,)) == pytest.approx(768 / 720 * hidden)
    assert vllm_expert_padding(f, (1, 2)) == vllm_expert_padding(f, (2,))  # the most


def test_hopper_pads_only_a_split_intermediate_to_64():
    f = facts("gpt-oss-120b", "H100")
    assert vllm_expert_padding(f, (1,)) == 1.0  # 2880 = 45 x 64
    assert vllm_expert_padding(f, (2,)) == pytest.approx(1472 / 1440)


def test_no_padding_without_mxfp4_experts_or_a_known_device():
    assert vllm_expert_padding(facts("deepseek-r1-0528-fp8", "A100-80GB"), (1,)) == 1.0
    no_device = {k: v for k, v in facts("gpt-oss-120b", "A100-80GB").items() if k != "device.sm"}
    assert vllm_expert_padding(no_device, (1,)) == 1.0


def test_the_per_gpu_weights_are_padded_under_vllm_only():
    f = facts("gpt-oss-120b", "A100-80GB", **{TP: 1})
    parts = weight_parts(f, None, "bfloat16")
    factor = 2944 / 2880 * 3072 / 2880
    vllm = rank_weight_bytes(f, None, "bfloat16", "vllm")
    assert vllm == pytest.approx(parts.total + parts.experts * (factor - 1))
    assert rank_weight_bytes(f, None, "bfloat16", "sglang") == pytest.approx(parts.total)
    assert round((vllm - parts.total) / GIB, 1) == 5.1  # 57 GiB of experts, 9% more


@pytest.mark.slow  # one vLLM arbitration, ~3-6 s; the deployment cases run the rule too
def test_the_memory_rule_counts_the_padded_experts():
    # gpt-oss-120b on one A100 80GB at a memory fraction (0.82: 65.6 GiB) that holds the
    # stored weights (60.7 GiB) with the workspace and a block, but not the padded weights
    # vLLM allocates (65.8 GiB): refused, with the padded figure in the report
    model = config("gpt-oss-120b")
    args = {"gpu-memory-utilization": 0.82, "max-model-len": 8192, "max-num-seqs": 64}
    verdict = check_vllm(args, model=model, device="A100-80GB")
    assert verdict.verdict == "reject" and verdict.rules == ("memory.weights-fit",)
    err = verdict.conflict
    assert isinstance(err, MemoryConflictError)
    f = facts("gpt-oss-120b", "A100-80GB")
    padded = rank_weight_bytes(f, None, "bfloat16", "vllm")
    assert err.memory.startswith(f"weights {padded / GIB:.1f} GiB + workspace ")
    need = float(err.memory.split(" = ")[1].split(" GiB")[0])  # padded + the rest
    stored = weight_parts(f, None, "bfloat16").total
    assert need - (padded - stored) / GIB < 0.82 * 80 < need  # the stored ones would fit
