"""Memory terms as one object per engine (constraints/engines/<engine>/memory.py), the
budget each engine applies its fraction to, and explanations whose printed arithmetic is
the solver's: a refused configuration's printed need always exceeds its printed budget."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter import ConflictError, arbitrate, func, setup
from arbiter.application.check import check_file
from arbiter.dialects.sglang_memory import derive
from arbiter.dialects.vllm import check_vllm
from arbiter.errors import MemoryConflictError
from constraints.engines.sglang.memory import prefill_capture_sizes, prefill_graph_reserve_mib
from constraints.facts.memory import GIB, TERMS, MemoryTerms, memory_terms, terms_names
from constraints.profiles import PROFILES
from constraints.specs import DeviceSpec, ModelSpec

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"


def _model(name: str, **extra: object) -> dict:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return {**data, **extra}


def test_every_profile_finds_its_engines_terms_object():
    for profile in PROFILES.values():
        terms = memory_terms(profile.memory_terms)
        assert isinstance(terms, MemoryTerms) and terms.name == profile.memory_terms
        assert terms.engine == profile.engine and terms.source
    # each profile's terms come from its engine's pack, found there (no list names them)
    for name in TERMS:
        module = type(memory_terms(name)).__module__
        if name == "estimate":
            assert module == "constraints.facts.memory"
        else:
            assert module == f"constraints.engines.{memory_terms(name).engine}.memory", name
    assert terms_names() == TERMS == ("arbiter", "estimate", "mlc", "sglang", "vllm")
    with pytest.raises(ValueError, match="unknown memory terms 'tgi'; use one of"):
        memory_terms("tgi")
    # only TensorRT-LLM takes its fraction of the memory left after loading
    assert [t for t in TERMS if memory_terms(t).budget_after_load] == ["arbiter"]


# ai-dynamo/aiconfigurator src/aiconfigurator/generator/rule_plugin/trtllm.rule @17676b35:
# a prefill worker runs max_batch_size 1, max_num_tokens (isl + 1500) rounded up to the
# 32-token block, no overlap scheduler; its TensorRT-LLM workers were refused here as out
# of memory (plan-anchors section 5) while TensorRT-LLM runs them with a small pool
AIC_PREFILL = {
    "tensor_parallel_size": 1,
    "max_batch_size": 1,
    "max_num_tokens": 5504,
    "max_seq_len": 5504,
    "disable_overlap_scheduler": True,
    "kv_cache_config": {"free_gpu_memory_fraction": 0.8, "tokens_per_block": 32},
}


def test_tensorrt_llm_takes_its_fraction_of_what_the_weights_leave():
    # Llama-3.1-70B bf16 (131.4 GiB of weights) on one H200 (140.4 GiB): 0.8 x the
    # memory left after weights and workspace (KvCacheCreator._cal_max_memory)
    resolution, _, _ = check_file(
        AIC_PREFILL, "trtllm", model=_model("llama-3.1-70b"), device="H200"
    )
    cap = resolution.capacity
    assert round(cap.weights / GIB, 1) == 131.4
    free = cap.memory - cap.weights - cap.activations
    assert cap.kv_pool <= 0.8 * free < cap.kv_pool + cap.kv_bytes_per_token * 32
    assert cap.weights + cap.activations + cap.kv_pool + cap.headroom == pytest.approx(
        cap.budget, abs=4
    )
    assert "free after loading" not in str(cap) and "- weights - workspace" in str(cap)
    # weights that do not fit at all are still refused, with the arithmetic of the rule
    with pytest.raises(ConflictError) as err:
        check_file(AIC_PREFILL, "trtllm", model=_model("llama-3.1-70b"), device="H100")
    assert "memory.weights-fit" in {r for c in err.value.conflicts for r in c.rules}
    assert re.search(r"= -[\d.]+ GiB free after loading; KV of one block", err.value.memory)


def test_shipped_moe_workers_that_fill_the_gpu_run_with_a_small_pool():
    # Qwen3-235B-A22B bf16 prefill at tp 4 on 4 H200: 109.5 GiB of weights a GPU, more
    # than 0.8 x 140.4 GiB, accepted with what 0.8 of the rest holds
    qwen = _model("qwen3-235b-a22b")
    args = {**AIC_PREFILL, "tensor_parallel_size": 4}
    resolution, _, _ = check_file(args, "trtllm", model=qwen, device="H200", gpus=4)
    assert round(resolution.capacity.weights / GIB, 1) == 109.5
    assert resolution.capacity.kv_tokens > 5504


def test_sglang_reserves_its_prefill_graphs_on_a_gpu():
    # reserve_for_graph_mb (SGLang 0.5.23): 8 MiB per captured prefill size up to the
    # chunk (58 sizes up to 8192), 1.5 GiB under an MLA backend
    assert len(prefill_capture_sizes(8192)) == 58 and prefill_capture_sizes(8192)[-1] == 8192
    assert prefill_graph_reserve_mib(8192) == 464.0
    assert prefill_graph_reserve_mib(8192, mla=True) == 1536.0
    h100 = 81559
    on = derive(h100, prefill_graphs=None)  # as on a GPU
    off = derive(h100, prefill_graphs=False)  # as where torch sees no GPU
    assert on.reserved_mib == off.reserved_mib + 464 == 13904
    assert (on.mem_fraction_static, off.mem_fraction_static) == (0.83, 0.835)
    # off for a PD decode server, with pipeline stages, for a multimodal model
    assert derive(h100, prefill_graphs=None, pp=2).reserved_mib == derive(h100, pp=2).reserved_mib
    decode = derive(h100, prefill_graphs=None, disaggregation_mode="decode")
    assert decode.reserved_mib == derive(h100, disaggregation_mode="decode").reserved_mib


def _printed(text: str) -> tuple[float, float]:
    """(what is needed, its budget) as a memory explanation prints them, in GiB."""

    def gib(number: str, unit: str) -> float:
        return float(number) / (1024 if unit == "MiB" else 1)

    after = re.search(
        r"KV of .*? (-?[\d.]+) ([GM]iB) (?:>|<=) -?[\d.]+ GiB x [\d.]+ = (-?[\d.]+) ([GM]iB)", text
    )
    if after and "free after loading" in text:
        return gib(after[1], after[2]), gib(after[3], after[4])
    whole = re.search(r" = ([\d.]+) GiB (?:>|<=) [\d.]+ GiB x [\d.]+ = ([\d.]+) GiB", text)
    assert whole, text
    return float(whole[1]), float(whole[2])


def test_a_conflict_prints_the_terms_its_rule_was_built_with():
    # Qwen3-235B-A22B bf16 (262,144-token context, as the 2507 checkpoint's config.json
    # says) prefill at tp 4 on 4 H200, no --max-model-len: the note once printed the
    # engine-neutral workspace (128.7 <= 129.2 GiB) for vLLM's rule
    qwen = _model("qwen3-235b-a22b", max_position_embeddings=262144)
    verdict = check_vllm(
        {},
        serve_args="--tensor-parallel-size 4 --max-num-batched-tokens 32768 --max-num-seqs 1024",
        model=qwen,
        device="H200",
        gpus=4,
    )
    assert verdict.verdict == "reject"
    notes = [n.text for c in verdict.conflict.explanation.conflicts for n in c.numbers]
    memory = [t for t in notes if "KV of" in t]
    assert memory
    for text in memory:
        need, budget = _printed(text)
        assert need > budget, text


def test_a_replica_layout_is_shown_at_its_case_not_the_default():
    # Kimi-K2 FP8 under vLLM DP 8 + EP on 8 H200: the note once showed all 384 experts on
    # one GPU (958.5 GiB, the dp 1 case); the rule splits them over the 8 replicas
    kimi = _model("kimi-k2")
    verdict = check_vllm(
        {},
        serve_args="--data-parallel-size 8 --enable-expert-parallel --max-model-len 8192",
        model=kimi,
        device="H200",
        gpus=8,
    )
    assert verdict.verdict == "reject"
    notes = [n.text for c in verdict.conflict.explanation.conflicts for n in c.numbers]
    assert any(t.startswith("weights 131.4 GiB + ") for t in notes), notes
    assert not any("958.5" in t for t in notes)


LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}


def _near_the_edge(layers, hidden, factor, fraction, seq, profile) -> str | None:
    """Arbitrate a dense model on a GPU of `factor` x its bf16 weights (near where it
    stops fitting); on a memory conflict, check every printed memory arithmetic and
    return the memory line, else None."""
    config = {**LLAMA, "num_hidden_layers": layers, "hidden_size": hidden}
    config["intermediate_size"] = hidden * 3
    spec = ModelSpec.from_hf_config(config)
    memory_mib = int(spec.num_params * 2 * factor / (1 << 20))
    claims = [
        setup("model", spec.facts()),
        setup("device", {**DeviceSpec.named("H100").facts(), "device.memory_mib": memory_mib}),
        func(
            "asked",
            {
                "kv_cache_config.free_gpu_memory_fraction": fraction,
                "build_config.max_seq_len": seq,
                "kv_cache_config.max_attention_window": None,
                "parallel_config.tensor_parallel_size": 1,
                "build_config.max_batch_size": 64,
                "build_config.max_num_tokens": 4096,
                "quant_config.quant_algo": None,
            },
        ),
    ]
    try:
        arbitrate(claims, profile=profile)
    except MemoryConflictError as err:
        texts = [n.text for c in err.explanation.conflicts for n in c.numbers if "KV of" in n.text]
        texts += [err.memory] if err.memory else []
        for text in texts:
            need, budget = _printed(text)
            assert need > budget, text
        return err.memory
    return None


PROFILES_BY_ENGINE = ["trtllm-1.2", "vllm-0.33", "mlc", "sglang-0.5"]


@settings(max_examples=10, deadline=None)
@given(
    layers=st.sampled_from([16, 32]),
    hidden=st.sampled_from([2048, 4096]),
    factor=st.sampled_from([0.9, 1.0, 1.05, 1.1, 1.2, 1.3, 1.6]),
    fraction=st.sampled_from([0.5, 0.8, 0.9, 0.95]),
    seq=st.sampled_from([4096, 32768, 131072]),
    profile=st.sampled_from(PROFILES_BY_ENGINE),
)
def test_every_memory_conflict_prints_a_sum_over_its_budget(
    layers, hidden, factor, fraction, seq, profile
):
    _near_the_edge(layers, hidden, factor, fraction, seq, profile)


def test_the_edge_is_reached_by_every_engine():
    # the property above is not vacuous: near the weights every engine refuses, and says so
    # with arithmetic that does not fit
    for profile in PROFILES_BY_ENGINE:
        assert _near_the_edge(16, 2048, 1.0, 0.9, 131072, profile), profile
