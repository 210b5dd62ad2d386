"""What vLLM reads off the target model's config.json beyond arbiter's model facts: whether
its architecture serves as an EAGLE-3 target, and its MTP layers.

- EAGLE-3 (vllm-project/vllm v0.33.0): the draft reads auxiliary hidden states of the
  target, which only model classes implementing `SupportsEagle3`
  (`vllm/model_executor/models/interfaces.py`) expose; otherwise vLLM stops at model load
  (`GPUModelRunner._setup_eagle3_aux_hidden_state_outputs`, `vllm/v1/worker/
  gpu_model_runner.py`: "Model does not support EAGLE3 interface"). `NOT_EAGLE3` lists
  the architectures of vLLM 0.33.0's own registry (`vllm/model_executor/models/
  registry.py`, text-generation and multimodal models) whose class does not implement it
  (163 of 251: 111 by loading each registered class from the
  0.33.0 wheel and asking `supports_eagle3`, 52 whose class does not load on a CPU
  machine by reading its bases). An architecture vLLM has no class of is served by
  its Transformers backend (`models/transformers/base.py`), which implements it. The
  oracle runs vLLM's own load-stage check on the class its loader resolves
  (`benchmarks/oracle_vllm.py` `_load_check`; corpus case vllm-eagle3-target-unsupported
  and the targets batch of generated combinations agree with this list).
- MTP (`vllm/config/speculative.py`, `SpeculativeConfig.hf_config_override` and
  `__post_init__`): the draft is the target's own MTP layers, for the families vLLM maps
  to an MTP draft, with `n_predict` read from the family's own field (`vllm_mtp`).
- A separate draft model (`method: draft_model`): `SpeculativeConfig._verify_args` ->
  `verify_equal_vocab_size_if_draft_model` compares `ModelConfig.get_vocab_size()` of
  target and draft (the text config's `vocab_size`) and refuses a difference unless
  `use_heterogeneous_vocab` is set. vLLM reads the draft's config.json from
  `speculative_config.model`; so does `draft_vocab`, when that is a local folder or file
  (a hub name cannot be read here: the vocabularies count as equal, and a note says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constraints.facts.model import load_json
from constraints.specs import ModelSpec

from .mtp import mtp_target

NOT_EAGLE3 = frozenset(
    (
        "AXK1ForCausalLM",
        "AliceAIForCausalLM",
        "AriaForConditionalGeneration",
        "AudioFlamingo3ForConditionalGeneration",
        "BagelForConditionalGeneration",
        "BailingMoeForCausalLM",
        "BailingMoeV2ForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "BailingMoeV3ForCausalLM",
        "BailingMoeV3VLForConditionalGeneration",
        "BeeForConditionalGeneration",
        "Blip2ForConditionalGeneration",
        "BloomForCausalLM",
        "ChatGLMForConditionalGeneration",
        "ChatGLMModel",
        "Cohere2ForCausalLM",
        "Cohere2VisionForConditionalGeneration",
        "CohereAsrForConditionalGeneration",
        "CohereForCausalLM",
        "Cosmos3EdgeForConditionalGeneration",
        "DbrxForCausalLM",
        "DeciLMForCausalLM",
        "DeepseekOCR2ForCausalLM",
        "DeepseekOCRForCausalLM",
        "DeepseekV4ForConditionalGeneration",
        "DeepseekVLV2ForCausalLM",
        "DiffusionGemmaForBlockDiffusion",
        "DomynEdgeForCausalLM",
        "DoryForCausalLM",
        "Dots3NoteForCausalLM",
        "DotsOCRForCausalLM",
        "Eagle2_5_VLForConditionalGeneration",
        "Ernie4_5_MoeForCausalLM",
        "Ernie4_5_VLMoeForConditionalGeneration",
        "Exaone4ForCausalLM",
        "ExaoneForCausalLM",
        "ExaoneMoEForCausalLM",
        "ExaoneMoeForCausalLM",
        "FalconForCausalLM",
        "FalconH1ForCausalLM",
        "FalconMambaForCausalLM",
        "FireRedASR2ForConditionalGeneration",
        "FlintForCausalLM",
        "FunASRForConditionalGeneration",
        "FunAudioChatForConditionalGeneration",
        "GLM4VForCausalLM",
        "GPT2LMHeadModel",
        "GPTJForCausalLM",
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Gemma3nForCausalLM",
        "Gemma3nForConditionalGeneration",
        "GemmaForCausalLM",
        "Glm4ForCausalLM",
        "Glm4MoeForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
        "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration",
        "GlmAsrForConditionalGeneration",
        "GlmOcrForConditionalGeneration",
        "Granite4VisionForConditionalGeneration",
        "GraniteMoeHybridForCausalLM",
        "GraniteSpeechForConditionalGeneration",
        "GraniteSpeechPlusForConditionalGeneration",
        "H2OVLChatModel",
        "HCXVisionV2ForCausalLM",
        "HYV3ForCausalLM",
        "HYV4ForCausalLM",
        "HfMoondream",
        "HrmTextForCausalLM",
        "HyperCLOVAXForCausalLM",
        "IQuestLoopCoderForCausalLM",
        "Idefics3ForConditionalGeneration",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "InternLM2ForCausalLM",
        "InternS1ForConditionalGeneration",
        "InternVLChatModel",
        "InternVLForConditionalGeneration",
        "IsaacForConditionalGeneration",
        "JambaForCausalLM",
        "KananaVForConditionalGeneration",
        "KeyeForConditionalGeneration",
        "KeyeVL1_5ForConditionalGeneration",
        "KimiVLForConditionalGeneration",
        "Lfm2ForCausalLM",
        "Lfm2MoeForCausalLM",
        "Lfm2VlForConditionalGeneration",
        "Llama_Nemotron_Nano_VL",
        "LlavaNextForConditionalGeneration",
        "LlavaNextVideoForConditionalGeneration",
        "LlavaOnevision2ForConditionalGeneration",
        "LlavaOnevisionForConditionalGeneration",
        "LongcatFlashForCausalLM",
        "LongcatFlashNgramForCausalLM",
        "Mamba2ForCausalLM",
        "MambaForCausalLM",
        "MiDashengLMModel",
        "MiniCPMO",
        "MiniCPMV",
        "MiniMaxM3SparseForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration",
        "MixtralForCausalLM",
        "Molmo2ForConditionalGeneration",
        "MolmoForCausalLM",
        "Moondream3ForCausalLM",
        "MoonshotKimiaForCausalLM",
        "MossAudioModel",
        "MossTranscribeDiarizeForConditionalGeneration",
        "NVLM_D",
        "NemotronForCausalLM",
        "NemotronParseForConditionalGeneration",
        "OPTForCausalLM",
        "OlmoHybridForCausalLM",
        "OlmoeForCausalLM",
        "OpenPanguVLForConditionalGeneration",
        "OpenVLAForActionPrediction",
        "OrionForCausalLM",
        "Ovis",
        "Ovis2_5",
        "Ovis2_6ForCausalLM",
        "Ovis2_6_MoeForCausalLM",
        "PaddleOCRVLForConditionalGeneration",
        "PaliGemmaForConditionalGeneration",
        "PanguEmbeddedForCausalLM",
        "PanguProMoEV2ForCausalLM",
        "PanguUltraMoEForCausalLM",
        "Param2MoEForCausalLM",
        "Phi3VForCausalLM",
        "Phi4ForCausalLMV",
        "Phi4MMForCausalLM",
        "PhiMoEForCausalLM",
        "QianfanOCRForConditionalGeneration",
        "Qwen2AudioForConditionalGeneration",
        "Qwen2MoeForCausalLM",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5OmniForConditionalGeneration",
        "Qwen2_5OmniModel",
        "Qwen4ExpForCausalLM",
        "Qwen4ExpForConditionalGeneration",
        "RForConditionalGeneration",
        "Rnj1ForCausalLM",
        "SarvamMoEForCausalLM",
        "SkyworkR1VChatModel",
        "SmolVLMForConditionalGeneration",
        "SolarForCausalLM",
        "StableLmForCausalLM",
        "Step3TextForCausalLM",
        "Step3VLForConditionalGeneration",
        "Step3p5ForCausalLM",
        "Step3p7ForConditionalGeneration",
        "Step5ForCausalLM",
        "Step5ForConditionalGeneration",
        "StepVLForConditionalGeneration",
        "UltravoxModel",
        "UnlimitedOCRForCausalLM",
        "VoxtralForConditionalGeneration",
        "VoxtralRealtimeGeneration",
        "WhisperForConditionalGeneration",
        "Zamba2ForCausalLM",
    )
)
EAGLE3_TARGET = "vllm_config.eagle3_target"
MTP_TARGET = "vllm_config.mtp_target"
MTP_LAYERS = "model.mtp_layers"


@dataclass(frozen=True)
class Target:
    """The target model as vLLM's speculative decoding sees it (unknown: no model given)."""

    architecture: str | None = None
    mtp_layers: int = 0
    mtp: bool = True
    mtp_draft: str | None = None

    @property
    def eagle3(self) -> bool:
        return self.architecture not in NOT_EAGLE3

    def facts(self) -> dict[str, Any]:
        return {EAGLE3_TARGET: self.eagle3, MTP_TARGET: self.mtp, MTP_LAYERS: self.mtp_layers}


def read_target(
    model: str | Path | Mapping[str, Any] | ModelSpec | None, model_impl: Any = None
) -> Target:
    """The target's architecture and MTP layers from its config.json (a path, a folder or
    the dict, or the ModelSpec read from it); no model: unknown (a config that cannot be
    read is named by the model facts). `model_impl` "transformers" runs any architecture on the
    Transformers backend (ModelRegistry.resolve_model_cls), an EAGLE-3 target."""
    if model is None:
        return Target()
    if isinstance(model, ModelSpec):
        if model.hf_config is None:  # not a Hugging Face config (MLC's)
            return Target()
        data: Mapping[str, Any] = model.hf_config
    else:
        try:
            data, _ = load_json(model, "config.json")
        except (OSError, ValueError, TypeError):
            return Target()
    archs = data.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if model_impl == "transformers":
        arch = None
    mtp = mtp_target(data, model_impl)
    return Target(arch, mtp.layers, mtp.supported, mtp.draft_type)


def vocab_size(data: Mapping[str, Any]) -> int | None:
    """ModelConfig.get_vocab_size: the text config's vocab_size (the config's own when it
    has no text config)."""
    text = data.get("text_config")
    value = (text if isinstance(text, Mapping) else data).get("vocab_size")
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else None


@dataclass(frozen=True)
class DraftVocab:
    """The two vocabulary sizes vLLM compares for a draft model (None: not readable)."""

    target: int | None
    draft: int | None
    where: str
    heads: int = 0  # the draft's num_attention_heads (0: not readable)

    @property
    def differs(self) -> bool:
        return self.target is not None and self.draft is not None and self.target != self.draft


def draft_vocab(model: str | Path | Mapping[str, Any] | ModelSpec | None, draft: Any) -> DraftVocab:
    """The target's and the draft's vocab_size: the draft from `speculative_config.model`
    when it names a local folder holding config.json (or the file itself)."""
    target = None
    if isinstance(model, ModelSpec):
        target = model.text_vocab_size
    elif model is not None:
        try:
            data, _ = load_json(model, "config.json")
            target = vocab_size(data)
        except (OSError, ValueError, TypeError):
            target = None
    if not isinstance(draft, str) or not draft:
        return DraftVocab(target, None, "no draft model named")
    path = Path(draft).expanduser()
    if not (path.is_dir() and (path / "config.json").is_file()) and not path.is_file():
        return DraftVocab(target, None, f"{draft}: not a local folder with config.json")
    try:
        data, source = load_json(path, "config.json")
    except (OSError, ValueError, TypeError):
        return DraftVocab(target, None, f"{draft}: config.json not readable")
    return DraftVocab(target, vocab_size(data), source, _heads(data))


def _heads(data: Mapping[str, Any]) -> int:
    """num_attention_heads at the top of a config.json or under text_config (0: none)."""
    for where in (data, data.get("text_config")):
        if isinstance(where, Mapping):
            heads = where.get("num_attention_heads")
            if isinstance(heads, int) and not isinstance(heads, bool) and 0 < heads < 1 << 16:
                return heads
    return 0


__all__ = ["NOT_EAGLE3", "DraftVocab", "Target", "draft_vocab", "read_target", "vocab_size"]
