"""SGLang's memory semantics: the defaults it derives from GPU memory (checked against the
values SGLang 0.5.23 itself derived: the field list's `derived` rows and the oracle's
records for the corpus), and `Resolution.capacity` under the "sglang" memory terms
(`total x mem_fraction_static - weights`) against SGLang's own pool formula with the
published parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from arbiter.dialects.sglang import check_sglang
from arbiter.dialects.sglang_memory import (
    derive,
    kv_tokens,
    pool_running_requests,
    vision_tower,
    vlm_fraction,
)
from arbiter.dialects.surface import load_surface
from constraints.specs import DeviceSpec

ROOT = Path(__file__).resolve().parents[4]
CORPUS = ROOT / "tests" / "corpus" / "sglang"
# the GPU memory the oracle answered SGLang's probe with (benchmarks/oracle_sglang.py
# GPUS: what nvidia-smi reports, arbiter's catalog MiB), GiB
ORACLE_GIB = {
    "H100": 81559 / 1024,
    "H200": 143771 / 1024,
    "B200": 183359 / 1024,
    "A100-40GB": 40960 / 1024,
    "L40S": 46068 / 1024,
    "L4": 23034 / 1024,
}
# published parameter counts (Hugging Face model cards / safetensors metadata)
PUBLISHED = {
    "llama-3-8b": 8_030_261_248,
    "qwen2-7b": 7_615_616_512,
    "mistral-7b-v0.3": 7_248_023_552,
}


def test_field_list_rows():
    """Every (GPU, tp) row SGLang derived when the field list was written."""
    derived = load_surface("sglang-0.5").derived
    rows = 0
    for field_name in ("chunked_prefill_size", "cuda_graph_max_bs", "mem_fraction_static"):
        for case in derived[field_name].cases:
            when = case["when"]
            # recorded where torch sees no GPU: SGLang 0.5.23 then leaves the prefill
            # CUDA graphs off (cuda_graph_config.py default_prefill_backend: is_cuda())
            got = derive(when["memory_gib"] * 1024, tp=when["tp_size"], prefill_graphs=False)
            value = {
                "chunked_prefill_size": got.chunked_prefill_size,
                "cuda_graph_max_bs": got.cuda_graph_max_bs,
                "mem_fraction_static": got.mem_fraction_static,
            }[field_name]
            assert value == case["value"], (field_name, when)
            rows += 1
    assert rows == 36


def _oracle_models() -> dict:
    """The model configs the oracle resolved the corpus against (benchmarks/oracle_*.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "oracle_sglang", ROOT / "benchmarks" / "oracle_sglang.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODELS


MODELS = _oracle_models()


def _oracle_cases():
    records = json.loads((CORPUS / "oracle" / "corpus.json").read_text())["results"]
    by_id = {r["id"]: r for r in records}
    for path in sorted(CORPUS.glob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        record = by_id.get(case["id"], {})
        # a key that is the fraction or a prefix of it (`mem-fraction`, argparse's
        # allow_abbrev) sets it: nothing derived
        given = any(k.replace("_", "-").startswith("mem-fraction") for k in case["config"])
        if "derived" in record and not given:
            yield pytest.param(case, record["derived"], id=case["id"])


@pytest.mark.parametrize(("case", "recorded"), _oracle_cases())
def test_oracle_derived_fraction(case, recorded):
    c = {k.replace("-", "_"): v for k, v in case["config"].items()}
    got = derive(
        ORACLE_GIB[case["device"]] * 1024,
        chunked_prefill_size=c.get("chunked_prefill_size"),
        tp=c.get("tp_size", 1),
        pp=c.get("pp_size", 1),
        attn_dp=c.get("attn_dp_size", 1),
        max_running_requests=c.get("max_running_requests"),
        disaggregation_mode=c.get("disaggregation_mode", "null"),
        draft_tokens=c.get("speculative_num_draft_tokens"),
        vision=None if c.get("language_only") else vision_tower(MODELS.get(case["model"])),
        # the oracle answers SGLang's prefill-graph probe as a CUDA GPU would (its patch 8:
        # cuda_graph_config.py default_prefill_backend), so the graphs are decided as there
        cuda_graphs=not (c.get("disable_cuda_graph") or c.get("disable_decode_cuda_graph")),
        prefill_cuda_graphs=not (
            c.get("disable_cuda_graph") or c.get("disable_prefill_cuda_graph")
        ),
        prefill_graphs=None,
        mla=case["model"].startswith("deepseek"),
        attn_cp=c.get("attn_cp_size", 1),
        decode_max_bs=c.get("cuda_graph_max_bs_decode"),
        multimodal=vision_tower(MODELS.get(case["model"])) is not None,
        max_total_tokens=c.get("max_total_tokens"),
    )
    assert got.mem_fraction_static == recorded["mem_fraction_static"]
    assert got.cuda_graph_max_bs == recorded["cuda_graph_max_bs"]


@pytest.mark.parametrize(
    ("model", "device", "tp"),
    [
        ("llama-3-8b", "H100-80GB", 1),
        ("qwen2-7b", "L40S", 1),
        ("mistral-7b-v0.3", "A100-80GB", 1),
        ("llama-3-8b", "H200", 2),
        ("llama-3-8b", "L4", 1),
    ],
)
def test_capacity_follows_sglangs_pool_formula(model, device, tp):
    path = ROOT / "examples" / "models" / f"{model}.json"
    cfg = json.loads(path.read_text())
    verdict = check_sglang({"tp-size": tp}, model=path, device=device, gpus=tp)
    resolution = verdict.resolution
    assert resolution.stats["memory_terms"] == "sglang"
    capacity = resolution.capacity
    assert capacity.activations == 0  # the static fraction holds weights + KV only
    fraction = resolution.values["kv_cache_config.free_gpu_memory_fraction"]
    heads = cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    cell = cfg["num_hidden_layers"] * max(1, heads // tp) * head_dim * 2 * 2  # K and V, bf16
    theirs = kv_tokens(
        DeviceSpec.named(device).memory_mib, fraction, PUBLISHED[model] * 2 / tp, cell
    )
    assert abs(capacity.kv_tokens - theirs) <= theirs * 0.001


def test_capacity_grows_with_the_fraction():
    path = ROOT / "examples" / "models" / "llama-3-8b.json"
    low = check_sglang({"mem-fraction-static": 0.6}, model=path, device="H100-80GB")
    high = check_sglang({"mem-fraction-static": 0.9}, model=path, device="H100-80GB")
    gib = 2**30
    extra = high.resolution.capacity.kv_tokens - low.resolution.capacity.kv_tokens
    # 0.3 x 79.6 GiB more pool, at 128 KiB a token (32 layers x 8 heads x 128 x 2 x 2 B)
    assert extra == pytest.approx(0.3 * 81559 * 2**20 / (128 * 1024), rel=0.001)
    assert high.resolution.capacity.kv_pool > low.resolution.capacity.kv_pool + 23 * gib


def test_weights_that_do_not_fit_are_refused():
    path = ROOT / "examples" / "models" / "llama-3-8b.json"
    verdict = check_sglang({"mem-fraction-static": 0.2}, model=path, device="L4")
    assert verdict.verdict == "reject"
    assert "memory.weights-fit" in verdict.rules


def test_vision_tower_of_a_multimodal_config():
    vl = MODELS["qwen2.5-vl-7b"]
    # the checkpoint gives hidden_size 1280 and no depth: the config class's 32 layers
    assert vision_tower(vl) == (32, 1280)
    assert vision_tower(MODELS["qwen2.5-7b"]) is None
    # a vision_config on a plain causal LM is no multimodal model
    assert vision_tower({**MODELS["llama-3.1-8b"], "vision_config": {"hidden_size": 1}}) is None
    assert vision_tower({"architectures": ["X"], "text_config": {}, "vision_config": {}}) == (
        24,
        1024,
    )


def test_vlm_fraction_follows_adjust_mem_fraction_for_vlm():
    # ViT-L/14 itself: only the 0.95 base reduction
    assert vlm_fraction(0.8, 24, 1024) == pytest.approx(0.76)
    # twice the complexity: 10% less again
    assert vlm_fraction(0.8, 48, 1024) == pytest.approx(0.8 * 0.95 * 0.9)
    # the factor is clamped to [0.8, 1.05]
    assert vlm_fraction(0.8, 240, 1024) == pytest.approx(0.8 * 0.95 * 0.8)
    assert vlm_fraction(0.8, 1, 64) == pytest.approx(0.8 * 0.95 * 1.05)


def test_a_multimodal_model_gets_the_lower_fraction_in_a_check():
    text = check_sglang({}, model=MODELS["qwen2.5-7b"], device="H100-80GB")
    vl = check_sglang({}, model=MODELS["qwen2.5-vl-7b"], device="H100-80GB")
    only = check_sglang({"language-only": True}, model=MODELS["qwen2.5-vl-7b"], device="H100-80GB")
    path = "kv_cache_config.free_gpu_memory_fraction"
    # the text model captures prefill CUDA graphs (8 MiB for each of its 51 sizes up to
    # the 8192-token chunk); a multimodal model does not, served language-only or not
    # (disable_breakable_cudagraph_if_incompatible reads the model config)
    assert text.resolution.values[path] == 0.83
    assert only.resolution.values[path] == 0.835
    assert vl.resolution.values[path] == round(vlm_fraction(0.835, 32, 1280), 3) == 0.707
    assert vl.resolution.capacity.kv_tokens < text.resolution.capacity.kv_tokens


def test_running_requests_from_the_pool():
    # unset: pool / context x 512, between 2048 and 4096, at most half the pool
    assert pool_running_requests(422_282, 131_072) == 2048
    assert pool_running_requests(422_282, 8192) == 4096
    assert pool_running_requests(3000, 8192) == 1500
    # explicit: split over the attention DP workers, at most half the pool
    assert pool_running_requests(2_000_000, 32768, 1024, attn_dp=8) == 128
    assert pool_running_requests(100, 32768, 1024) == 50


def test_check_reports_the_running_requests_sglang_sets():
    verdict = check_sglang({"context-length": 8192}, model=MODELS["llama-3.1-8b"], device="H100")
    tokens = verdict.resolution.capacity.kv_tokens
    assert tokens > 8192 * 8  # a pool large enough for the 4096 ceiling
    assert any(
        w.startswith("SGLang derives max_running_requests = 4096 (unset; from the KV pool")
        for w in verdict.warnings
    ), verdict.warnings
    dp = check_sglang(
        {"tp-size": 8, "attn-dp-size": 8, "max-running-requests": 1024},
        model=MODELS["mixtral-8x7b"],
        device="H100",
        gpus=8,
    )
    assert any(
        w.startswith("SGLang runs max_running_requests = 128 per DP worker, not 1024")
        for w in dp.warnings
    ), dp.warnings


def test_expert_parallel_layouts_reserve_their_gathered_tokens_and_deepep_buffers():
    # python/sglang/srt/arg_groups/memory_hook.py, v0.5.23: attention DP gathers the
    # tokens of its groups (reserve_for_graph_mb: 3 MiB x decode max_bs x attn_dp_size,
    # +1.5 MiB x ... above 300), and DeepEP's all-to-all reserves 1 GiB beside the
    # breakable prefill graphs and 2 GiB for the buffers the decode graphs capture, on
    # top of the 10 GiB floor (reserve_for_deepep_a2a_mb); outside mem_fraction_static,
    # as SGLang's whole workspace is
    h200 = 143771
    base = {"chunked_prefill_size": 8192, "tp": 8, "prefill_graphs": None}
    one, eight = derive(h200, **base), derive(h200, attn_dp=8, **base)
    assert eight.cuda_graph_max_bs == 512  # above 300: 3 + 1.5 MiB a sequence and group
    assert eight.reserved_mib - one.reserved_mib == 512 * 8 * (3 + 1.5)
    plain = derive(h200, attn_dp=8, **base)
    deepep = derive(h200, attn_dp=8, deepep=True, **base)
    assert deepep.reserved_mib - plain.reserved_mib == 3 * 1024
    assert deepep.mem_fraction_static < plain.mem_fraction_static
    for mode, extra in (("decode", 2 * 1024), ("prefill", 1024)):
        with_ep = derive(h200, deepep=True, disaggregation_mode=mode, **base)
        without = derive(h200, disaggregation_mode=mode, **base)
        assert with_ep.reserved_mib - without.reserved_mib == extra, mode
    graphs_off = {"cuda_graphs": False, "prefill_cuda_graphs": False}
    assert derive(h200, deepep=True, **base, **graphs_off) == derive(h200, **base, **graphs_off)
    # 0.5.16's reserve is verified without it (not modelled there)
    old = {**base, "release": "0.5.16"}
    assert derive(h200, deepep=True, **old) == derive(h200, **old)
