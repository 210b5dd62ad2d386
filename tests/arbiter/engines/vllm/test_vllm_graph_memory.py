"""vLLM 0.33 takes its CUDA-graph memory out of the KV budget: the dialect estimates it for
the capture sizes vLLM would use and the memory model (terms "vllm") subtracts it."""

from __future__ import annotations

import json
from pathlib import Path

from arbiter.engines.vllm.defaults import PER_GRAPH_BYTES, cudagraph_ladder, cudagraph_memory
from arbiter.engines.vllm.native import check_vllm

LLAMA = json.loads((Path(__file__).parents[3] / "fixtures/models/llama-3.1-8b.json").read_text())
MIB = 1 << 20


def test_the_estimate_is_the_largest_capture_plus_a_floor_per_further_graph():
    assert cudagraph_memory(0, 0, 86016) == 0
    assert len(cudagraph_ladder(512)) == 51  # 1, 2, 4, 8..248 by 8, 256..512 by 16
    assert PER_GRAPH_BYTES == MIB
    # PIECEWISE graphs up to 512 and FULL decode graphs up to 512: 50 + 50 further graphs
    assert cudagraph_memory(512, 512, 1000) == 1000 * 512 + 100 * MIB
    # decode graphs only up to 8 sequences: 1, 2, 4, 8
    assert cudagraph_memory(512, 8, 1000) == 1000 * 512 + (50 + 3) * MIB


def test_the_graph_memory_leaves_the_kv_pool():
    graphs = check_vllm({}, model=LLAMA, device="H100-80GB")
    eager = check_vllm({"enforce-eager": True}, model=LLAMA, device="H100-80GB")
    assert graphs.verdict == eager.verdict == "accept"
    estimate = graphs.resolution.value("model.vllm_cudagraph_bytes")
    assert eager.resolution.value("model.vllm_cudagraph_bytes") == 0
    # Llama-3.1-8B: 86,016 workspace bytes per token x 512 + (50 + 50) MiB
    assert estimate == 86016 * 512 + 100 * MIB
    with_graphs, without = graphs.resolution.capacity, eager.resolution.capacity
    assert with_graphs.activations - without.activations == estimate
    assert with_graphs.kv_pool < without.kv_pool
    assert any("CUDA-graph memory taken from the KV budget" in w for w in graphs.warnings)


def test_explicit_capture_sizes_set_the_ceiling_and_its_memory():
    # VllmConfig._set_cudagraph_sizes (0.24.0, 0.33.0): sizes above the budget dropped,
    # the ceiling is the largest kept, and only the kept sizes are captured
    sizes = [1, 2, 4, 8, 16, 2048, 4096]
    for key, config in (
        ("cudagraph-capture-sizes", {"cudagraph-capture-sizes": sizes}),
        ("compilation-config", {"compilation-config": {"cudagraph_capture_sizes": sizes}}),
    ):
        verdict = check_vllm(
            {**config, "max-num-batched-tokens": 2048}, model=LLAMA, device="H100-80GB"
        )
        assert verdict.verdict == "adjust", (key, verdict.reasons)
        assert verdict.resolution.value("vllm_config.max_cudagraph_capture_size") == 2048
        # PIECEWISE graphs for the 6 sizes kept, FULL decode graphs for those up to the
        # default sequence limit (1024): 1, 2, 4, 8, 16
        estimate = verdict.resolution.value("model.vllm_cudagraph_bytes")
        assert estimate == 86016 * 2048 + (5 + 4) * MIB
        assert any("-> [1, 2, 4, 8, 16, 2048]" in c for c in verdict.changes)


def test_capture_sizes_within_the_budget_are_kept_as_given():
    verdict = check_vllm({"cudagraph-capture-sizes": [1, 2, 4, 8]}, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "accept"
    assert verdict.resolution.value("vllm_config.max_cudagraph_capture_size") == 8
    assert verdict.resolution.value("model.vllm_cudagraph_bytes") == 86016 * 8 + 6 * MIB


def test_a_ceiling_beside_sizes_must_be_their_largest_kept():
    ok = check_vllm(
        {"cudagraph-capture-sizes": [1, 2, 4, 8], "max-cudagraph-capture-size": 8},
        model=LLAMA,
        device="H100-80GB",
    )
    assert ok.verdict == "accept"
    bad = check_vllm(
        {"cudagraph-capture-sizes": [1, 2, 4, 8], "max-cudagraph-capture-size": 16},
        model=LLAMA,
        device="H100-80GB",
    )
    assert bad.verdict == "reject" and "should be consistent" in bad.reasons[0]
    assert "max-cudagraph-capture-size" in bad.reasons[0]
