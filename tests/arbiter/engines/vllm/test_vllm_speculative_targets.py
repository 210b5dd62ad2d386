"""What vLLM 0.33 reads off the target model for speculative decoding: EAGLE-3 needs an
architecture implementing its EAGLE-3 interface, MTP tokens above the MTP layers must be
a multiple of them, and num_speculative_tokens must be given."""

from __future__ import annotations

import json
from pathlib import Path

from arbiter.engines.vllm.native import check_vllm
from arbiter.engines.vllm.target import NOT_EAGLE3, read_target

MODELS = Path(__file__).parents[3] / "fixtures" / "models"
LLAMA = json.loads((MODELS / "llama-3.1-8b.json").read_text())
MIXTRAL = json.loads((MODELS / "mixtral-8x7b.json").read_text())
DEEPSEEK = json.loads((MODELS / "deepseek-v3.json").read_text())
EAGLE3 = {"method": "eagle3", "model": "org/EAGLE3-draft", "num_speculative_tokens": 3}


def test_the_eagle3_list_holds_vllms_own_verdicts_for_known_families():
    assert "MixtralForCausalLM" in NOT_EAGLE3 and "Gemma2ForCausalLM" in NOT_EAGLE3
    for arch in ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GptOssForCausalLM"):
        assert arch not in NOT_EAGLE3, arch
    assert read_target(MIXTRAL).eagle3 is False
    assert read_target(LLAMA).eagle3 is True
    # an architecture vLLM has no class of runs on the Transformers backend, which has it
    assert read_target({**LLAMA, "architectures": ["SomeNewForCausalLM"]}).eagle3 is True
    assert read_target(MIXTRAL, model_impl="transformers").eagle3 is True
    assert read_target(None).eagle3 is True


def test_eagle3_on_a_target_without_the_interface_is_refused():
    args = {"tensor-parallel-size": 2, "speculative-config": EAGLE3}
    refused = check_vllm(args, model=MIXTRAL, device="H100-80GB", gpus=2)
    assert refused.verdict == "reject"
    assert "vllm.spec.eagle3-target-supported" in refused.rules
    served = check_vllm(
        {**args, "model-impl": "transformers"}, model=MIXTRAL, device="H100-80GB", gpus=2
    )
    assert served.verdict == "accept", served.reasons
    assert check_vllm({"speculative-config": EAGLE3}, model=LLAMA, device="H100-80GB").verdict == (
        "accept"
    )


def _mtp(tokens: int | None, layers: int):
    spec: dict = {"method": "mtp"}
    if tokens is not None:
        spec["num_speculative_tokens"] = tokens
    model = {**DEEPSEEK, "num_nextn_predict_layers": layers}
    return check_vllm(
        {"tensor-parallel-size": 8, "speculative-config": spec}, model=model, device="H200", gpus=8
    )


def test_mtp_tokens_above_the_layers_are_a_multiple_of_them():
    assert read_target({**DEEPSEEK, "num_nextn_predict_layers": 2}).mtp_layers == 2
    for tokens in (1, 2, 4, 6):
        assert _mtp(tokens, 2).verdict == "accept", tokens
    for tokens in (3, 5):
        refused = _mtp(tokens, 2)
        assert refused.verdict == "reject", tokens
        assert "vllm.spec.mtp-tokens-multiple-of-layers" in refused.rules
    assert _mtp(3, 1).verdict == "accept"  # one layer: any count


def test_mtp_without_num_speculative_tokens_is_refused():
    refused = _mtp(None, 2)
    assert refused.verdict == "reject"
    assert "vllm.spec.tokens-given" in refused.rules
