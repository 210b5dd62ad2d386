"""A draft model's vocabulary (vLLM 0.33.0 `method: draft_model`) and how vLLM drafts MTP
tokens from a target's MTP layers, as the vLLM dialect reads them.

vLLM compares the target's and the draft's `vocab_size` (the text config's) in
`SpeculativeConfig.verify_equal_vocab_size_if_draft_model` and refuses a difference unless
`use_heterogeneous_vocab` is set, which then runs on its V1 model runner. arbiter reads the
draft's config.json where vLLM does: the folder `speculative_config.model` names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.engines.vllm.fields import read_args
from arbiter.engines.vllm.native import check_vllm, v1_fallback
from arbiter.engines.vllm.target import draft_vocab, vocab_size

FIXTURES = Path(__file__).parents[3] / "fixtures" / "models"
LLAMA = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())
QWEN = json.loads((FIXTURES / "qwen2.5-7b.json").read_text())


def _draft(tmp_path: Path, config: dict) -> str:
    folder = tmp_path / "draft"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def _spec(model: str, **extra) -> dict:
    return {
        "speculative-config": {
            "method": "draft_model",
            "model": model,
            "num_speculative_tokens": 4,
            **extra,
        }
    }


def test_vocab_size_is_the_text_configs():
    assert vocab_size({"vocab_size": 32000}) == 32000
    assert vocab_size({"vocab_size": 1, "text_config": {"vocab_size": 248320}}) == 248320
    assert vocab_size({"vocab_size": True}) is None


def test_draft_vocab_reads_a_folder_or_a_file(tmp_path):
    folder = _draft(tmp_path, QWEN)
    found = draft_vocab(LLAMA, folder)
    assert (found.target, found.draft, found.differs) == (128256, 152064, True)
    assert draft_vocab(LLAMA, str(Path(folder) / "config.json")).draft == 152064
    hub = draft_vocab(LLAMA, "Qwen/Qwen2.5-0.5B")
    assert hub.draft is None and not hub.differs and "not a local folder" in hub.where


@pytest.mark.slow  # ~10 s (explaining the refusal); corpus case vllm-draft-model-vocab-differs
def test_a_draft_with_another_vocabulary_is_refused(tmp_path):
    verdict = check_vllm(_spec(_draft(tmp_path, QWEN)), model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "reject"
    assert "vllm.spec.draft-vocab-matches-target" in verdict.rules


def test_the_same_vocabulary_is_accepted(tmp_path):
    small = {**LLAMA, "num_hidden_layers": 2}
    verdict = check_vllm(_spec(_draft(tmp_path, small)), model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "accept"
    assert not any("vocabulary" in w for w in verdict.warnings)


def test_use_heterogeneous_vocab_accepts_and_runs_v1(tmp_path):
    spec = _spec(_draft(tmp_path, QWEN), use_heterogeneous_vocab=True)
    verdict = check_vllm(spec, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "accept"
    assert any("heterogeneous-vocabulary draft models" in w for w in verdict.warnings)
    assert any("token-level intersection" in w for w in verdict.warnings)
    assert v1_fallback(read_args(spec)) == ["heterogeneous-vocabulary draft models"]


@pytest.mark.parametrize(
    ("extra", "rule"),
    [
        ({"draft_sample_method": "probabilistic"}, "vllm.spec.heterogeneous-vocab-greedy"),
        ({"use_local_argmax_reduction": True}, "vllm.spec.heterogeneous-vocab-full-logits"),
    ],
)
def test_heterogeneous_vocab_limits(tmp_path, extra, rule):
    spec = _spec(_draft(tmp_path, QWEN), use_heterogeneous_vocab=True, **extra)
    verdict = check_vllm(spec, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "reject" and rule in verdict.rules


def test_a_hub_draft_is_not_compared_and_says_so():
    verdict = check_vllm(_spec("meta-llama/Llama-3.2-1B"), model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "accept"
    assert any("was not compared" in w for w in verdict.warnings)


def test_a_draft_sample_method_outside_vllms_literal_is_named():
    spec = _spec("meta-llama/Llama-3.2-1B", draft_sample_method="gumbel")
    verdict = check_vllm(spec, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "reject"
    assert "speculative-config.draft_sample_method" in verdict.reasons[0]
    assert "greedy" in verdict.reasons[0]


# Qwen3.5's published layout: the language model (and its MTP layers) under text_config
QWEN3_5 = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": {
        "model_type": "qwen3_5_text",
        "hidden_size": 5120,
        "intermediate_size": 17408,
        "num_attention_heads": 24,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "num_hidden_layers": 64,
        "max_position_embeddings": 262144,
        "vocab_size": 248320,
        "mtp_num_hidden_layers": 2,
    },
}


@pytest.mark.parametrize(
    ("k", "verdict"),
    [
        (2, "accept"),
        # ~6 s; corpus case vllm-qwen3.5-mtp-text-config-not-multiple in the default run
        pytest.param(3, "reject", marks=pytest.mark.slow),
        (4, "accept"),
    ],
)
def test_qwen3_5_mtp_layers_come_from_the_text_config(k, verdict):
    spec = {
        "max-model-len": 32768,
        "speculative-config": {"method": "mtp", "num_speculative_tokens": k},
    }
    found = check_vllm(spec, model=QWEN3_5, device="H200")
    assert found.verdict == verdict
    if verdict == "reject":
        assert found.rules == ("vllm.spec.mtp-tokens-multiple-of-layers",)
    else:
        assert any("same MTP layer" in w for w in found.warnings)
    if k == 4:
        assert any("2 MTP layer(s) 2 times" in w for w in found.warnings)
