"""The memory report when the GPU count decides: no layout of the machine holds the model,
so the minimal conflict is a GPU-count rule with the memory rule, and the tensor-parallel
size the user asked for is no part of it. The arithmetic is then shown at the layout that
uses every GPU (the sizes the user fixed kept, the free one taking the GPUs left), where
each GPU holds the least, not at the defaults' single GPU; the "more GPUs" fix counts
data-parallel replicas."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from arbiter.errors import MemoryConflictError
from constraints.facts import ModelSpec

from .test_deployments import QWEN3_THREAD, Case, model, solve, tp

GIB = 1 << 30
QWEN3 = model("qwen3-235b-a22b")  # bf16, 235.09B parameters
WEIGHTS = ModelSpec.from_hf_config(QWEN3).num_params * 2  # bytes, every rank together
# 4 H20 at TP 4 run out of memory, 8 run it (vllm-project/vllm issue 17327)
ON_4XH20 = Case("qwen3-235b-bf16-4xh20", QWEN3, "4xH20", "vllm-rules", {}, False, QWEN3_THREAD)
REPORT = re.compile(
    r"weights (?P<w>[\d.]+) GiB \+ workspace [\d.]+ [GM]iB \+ KV of one block \(\d+ tokens\)"
    r" [\d.]+ [GM]iB"
    r" = (?P<total>[\d.]+) GiB > [\d.]+ GiB x 0\.9 = (?P<budget>[\d.]+) GiB"
)


def refused(case: Case) -> MemoryConflictError:
    with pytest.raises(MemoryConflictError) as err:
        solve(case)
    return err.value


# TensorRT-LLM's form: its fraction of the memory the weights and workspace leave free
# (tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory)
AFTER_LOAD = re.compile(
    r"[\d.]+ GiB - weights (?P<w>[\d.]+) GiB - workspace [\d.]+ [GM]iB = -?[\d.]+ GiB free"
    r" after loading; KV of one block \(\d+ tokens\) (?P<total>[\d.]+) [GM]iB"
    r" > -?[\d.]+ GiB x 0\.9 = (?P<budget>-?[\d.]+) GiB"
)


def numbers(err: MemoryConflictError) -> tuple[float, float, float]:
    """(weights, what is needed, its budget) of the report, in GiB (a KV block of the
    after-loading form in its own unit)."""
    assert err.memory is not None
    found = REPORT.fullmatch(err.memory) or AFTER_LOAD.fullmatch(err.memory)
    assert found, err.memory
    return float(found["w"]), float(found["total"]), float(found["budget"])


@pytest.mark.parametrize(
    "args",
    [{}, tp(4), tp(2), {"pipeline_parallel_size": 2}],
    ids=["layout-open", "tp4", "tp2-pp-open", "pp2-tp-open"],
)
def test_a_conflict_the_gpus_decide_is_shown_with_every_gpu_in_use(args):
    err = refused(replace(ON_4XH20, args=args))
    rules = {r for c in err.conflicts for r in c.rules}
    assert {"machine.parallel-fits-devices", "memory.weights-fit"} <= rules
    # the asked tensor-parallel size is no member of the conflict: the GPUs alone decide
    assert all("tensor_parallel_size" not in name for c in err.conflicts for name in c.claims)
    weights, total, budget = numbers(err)
    # 4 ranks (tp 4, or tp 2 x pp 2): a quarter of the weights each, still too much
    assert weights == round(WEIGHTS / 4 / GIB, 1) == 109.5
    assert total > budget
    assert err.fixes == (
        "8 GPUs (tensor_parallel_size 8, device.count 8): 55.8 GiB <= 86.0 GiB per GPU",
    )


def test_gpus_of_every_node_count():
    # two nodes of 2 H20: 4 GPUs, the same ranks as one node of 4
    err = refused(replace(ON_4XH20, device="H20", extra={"count": 2, "nodes": 2}))
    assert numbers(err)[0] == 109.5


def test_a_layout_asked_for_that_uses_every_gpu_is_the_one_shown():
    # 8 H100 hold DeepSeek-R1 FP8 at no layout (TensorRT-LLM's README asks for 16): tp 8
    # is all 8 GPUs, and the report is at tp 8, an eighth of the stored weights each
    err = refused(
        Case("r1", model("deepseek-r1-0528-fp8"), "8xH100", "trtllm", tp(8), False, QWEN3_THREAD)
    )
    stored = ModelSpec.from_hf_config(model("deepseek-r1-0528-fp8")).weight_bytes()
    assert numbers(err)[0] == round(stored / 8 / GIB, 1)


def test_data_parallel_replicas_share_the_experts_and_the_fix_counts_them():
    from arbiter.dialects.vllm import check_vllm
    from constraints.facts.memory import weight_parts

    # vLLM: tp 2 x dp 2 on 8 H20 (pipeline_parallel_size 1, vLLM's default): each GPU holds
    # half of the non-expert weights and a quarter of the experts (the MoE layers of both
    # replicas form one group of tp x dp ranks), still more than an H20 holds
    verdict = check_vllm(
        {"tensor-parallel-size": 2, "data-parallel-size": 2}, model=QWEN3, device="H20", gpus=8
    )
    assert verdict.verdict == "reject"
    # the weights alone exceed the budget: of the two memory rules in conflict, the
    # explanation names the more basic one (memory.fits-one-sequence declares it weaker)
    assert "memory.weights-fit" in verdict.rules
    err = verdict.conflict
    assert isinstance(err, MemoryConflictError)
    parts = weight_parts(ModelSpec.from_hf_config(QWEN3).facts(), None, "bfloat16")
    per_gpu = (parts.total - parts.experts) / 2 + parts.experts / 4
    assert err.memory.startswith(f"weights {per_gpu / GIB:.1f} GiB + ")
    assert per_gpu < WEIGHTS / 2  # the experts are shared across the replicas
    # tp 4 in each of the 2 replicas: 8 GPUs
    assert len(err.fixes) == 1
    assert err.fixes[0].startswith(
        "8 GPUs (tensor_parallel_size 4, in each of 2 data-parallel replicas, device.count 8)"
    )
