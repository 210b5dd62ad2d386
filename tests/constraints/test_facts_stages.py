"""Per-GPU weights of pipeline stages split the engine's way (facts/memory.py
`stage_layers`, `WeightParts.stage`) and under TensorRT-LLM's attention data parallelism
(`attention_dp`, `stages_adp`), in the report's arithmetic and in the memory rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter import ConflictError, arbitrate, func
from arbiter.dialects import machine_claims, trtllm
from constraints.facts import DeviceSpec, ModelSpec
from constraints.facts.memory import (
    GIB,
    kv_rank_share,
    rank_weight_bytes,
    stage_layers,
    stages_adp,
    weight_parts,
)
from constraints.schema import options

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
ADP = "parallel_config.enable_attention_dp"
TP = "parallel_config.tensor_parallel_size"
PP = "parallel_config.pipeline_parallel_size"


def config(name: str) -> dict[str, object]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return data


def facts(name: str, **layout: object) -> dict[str, object]:
    defaults = {s.path: s.default for s in options()}
    return {**defaults, **ModelSpec.from_hf_config(config(name)).facts(), **layout}


@pytest.mark.parametrize(
    ("terms", "split"),
    [
        # vLLM get_pp_indices: the extra layers go to the stages before the last
        ("vllm", (15, 15, 16, 15)),
        # SGLang get_pp_indices: to the last stages
        ("sglang", (15, 15, 15, 16)),
        # TensorRT-LLM Mapping.pp_layers (torch.tensor_split): to the first stages
        ("arbiter", (16, 15, 15, 15)),
    ],
)
def test_each_engine_splits_uneven_layers_its_own_way(terms, split):
    assert stage_layers(61, 4, terms) == split
    assert stage_layers(61, 1, terms) == (61,)
    assert stage_layers(64, 8, terms) == (8,) * 8


def test_vllm_gives_the_first_stage_an_extra_layer_only_when_every_other_one_has_it():
    assert stage_layers(63, 4, "vllm") == (16, 16, 16, 15)
    assert stage_layers(62, 4, "vllm") == (15, 16, 16, 15)


def test_the_heaviest_stage_holds_its_layers_and_the_embedding_or_the_head():
    # Llama-3.1-405B (126 layers, untied): 8 stages of tp 1 each; TensorRT-LLM gives the
    # first 6 stages 16 layers and the last 2 15, the first also the embedding
    f = facts("llama-3.1-405b", **{PP: 8})
    parts = weight_parts(f, None, "bfloat16")
    layers = parts.total - parts.embedding - parts.head
    first = layers * 16 / 126 + parts.embedding
    last = layers * 15 / 126 + parts.head
    assert rank_weight_bytes(f, None, "bfloat16") == pytest.approx(max(first, last))
    assert rank_weight_bytes(f, None, "bfloat16") > parts.total / 8  # not an even eighth
    # vLLM: 16 layers on stages 1-6, the first 15 and the embedding, the last 15 and head
    vllm = rank_weight_bytes(f, None, "bfloat16", "vllm")
    assert vllm == pytest.approx(max(layers * 16 / 126, first - layers / 126, last))


def test_a_stage_holds_no_more_expert_layers_than_the_model_has():
    # DeepSeek-R1: 58 MoE layers of 61 (3 dense first); vLLM pp 2 puts 31 layers on the
    # first stage and 30 on the last: each counts min(layers, 58) / 58 of the experts
    f = facts("deepseek-r1-0528-fp8", **{PP: 2, TP: 8})
    parts = weight_parts(f, None, "bfloat16")
    assert f["model.moe_layers"] == 58
    counts = stage_layers(61, 2, "vllm")
    assert counts == (31, 30)
    first = parts.stage(0, counts, 58)
    last = parts.stage(1, counts, 58)
    assert first.experts == pytest.approx(parts.experts * 31 / 58)
    assert last.head == parts.head and first.embedding == parts.embedding
    assert first.head == 0 and last.embedding == 0
    per_gpu = rank_weight_bytes(f, None, "bfloat16", "vllm")
    assert per_gpu == pytest.approx(max(first.total, last.total) / 8)
    assert per_gpu > parts.total / 16  # the experts are not spread over 61 layers


def test_tied_embeddings_are_held_by_the_first_and_the_last_stage():
    f = facts("llama-3.1-8b", **{PP: 2, "model.tie_word_embeddings": True})
    parts = weight_parts(f, None, "bfloat16")
    assert parts.head == 0 and parts.tied
    last = parts.stage(1, (16, 16), 0)
    assert last.head == parts.embedding  # vLLM builds the embedding on the last stage too


def test_attention_dp_keeps_all_but_the_routed_experts_whole_on_every_rank():
    f = facts("deepseek-r1-0528-fp8", **{TP: 8})
    parts = weight_parts(f, None, "bfloat16")
    plain = rank_weight_bytes(f, None, "bfloat16")
    adp = rank_weight_bytes({**f, ADP: True}, None, "bfloat16")
    assert plain == pytest.approx(parts.total / 8)
    assert adp == pytest.approx(parts.total - parts.experts + parts.experts / 8)
    assert round(adp / GIB, 1) == 93.9 and round(plain / GIB, 1) == 78.4
    # TensorRT-LLM's field: vLLM's and SGLang's terms do not read it
    assert rank_weight_bytes({**f, ADP: True}, None, "bfloat16", "vllm") == pytest.approx(plain)
    assert stages_adp(parts, f, 1) == ((parts.total - parts.experts, parts.experts),)


def test_attention_dp_keeps_every_kv_head_on_every_rank():
    f = facts("llama-3.1-70b", **{TP: 8})
    assert kv_rank_share(f) == pytest.approx(1 / 8)  # 8 KV heads over 8 ranks
    assert kv_rank_share({**f, ADP: True}) == 1
    assert kv_rank_share({**f, ADP: True, PP: 2}) == pytest.approx(1 / 2)


def _trtllm(model: dict[str, object], device: str, args: dict[str, object]):
    parsed = trtllm.read(args)
    claims = [*parsed.claims, *machine_claims(model, DeviceSpec.named(device), parsed.claims)]
    # the engine's defaults for what the config leaves unset (TensorRT-LLM runs 2048
    # sequences and 8192 tokens: the solver may not shrink them to make room)
    claims.append(
        func(
            "defaults",
            {
                "kv_cache_config.free_gpu_memory_fraction": 0.9,
                "build_config.max_batch_size": 2048,
                "build_config.max_num_tokens": 8192,
            },
        )
    )
    return arbitrate(claims)


def test_the_memory_rule_counts_attention_dp_the_engines_way():
    # DeepSeek-R1 FP8 on 8 H20 (95.6 GiB): 78.4 GiB a GPU at tp 8 fits (TensorRT-LLM's
    # README: 8 H20 run it); with attention DP each GPU holds 93.9 GiB, which with the
    # engine's workspace leaves nothing of 95.6 GiB for its fraction of the free memory
    # (constraints/engines/trtllm/memory.py): the rule refuses what the arithmetic refuses
    r1 = config("deepseek-r1-0528-fp8")
    args = {"tensor_parallel_size": 8, "moe_expert_parallel_size": 8, "max_seq_len": 4096}
    solved = _trtllm(r1, "8xH20", args)
    assert solved.capacity.weights == pytest.approx(78.4 * GIB, rel=1e-3)
    with pytest.raises(ConflictError) as err:
        _trtllm(r1, "8xH20", {**args, "enable_attention_dp": True})
    assert "memory.weights-fit" in str(err.value)
    assert "weights 93.9 GiB" in err.value.memory


def test_vllm_replicas_with_pipeline_stages_share_the_experts_on_a_known_machine():
    from constraints.shared.rules.memory import _layouts

    # DeepSeek-R1 FP8 on 2 x 8 GPUs at pp 2: vLLM's replica layouts are checked at pp 2
    # too (dp 8 x pp 2 fits 16 GPUs), each at the heaviest stage with the experts shared
    known = facts("deepseek-r1-0528-fp8", **{"device.count": 8, "device.nodes": 2})
    parts = weight_parts(known, None, "bfloat16")
    cases = _layouts(parts, known, "vllm", 2)
    plain = cases[0][1]
    assert len(cases) == 8  # dp 1 to 8, each exactly (the MoE workspace counts every replica)
    assert cases[-1][1] < plain / 4  # dp 8: an eighth of the experts per stage
    counts = stage_layers(61, 2, "vllm")
    first = parts.stage(0, counts, 58)
    assert cases[-1][1] == pytest.approx(first.total - first.experts + first.experts / 8)
    # on 8 GPUs pp 2 leaves room for 4 replicas at most: dp 5 to 8 are not compiled
    assert len(_layouts(parts, {**known, "device.nodes": 1}, "vllm", 2)) == 4
    # the machine unknown: the one plain case (stricter: all experts in each replica)
    unknown = {k: v for k, v in known.items() if not k.startswith("device.")}
    assert _layouts(parts, unknown, "vllm", 2) == [(None, plain, 1)]
