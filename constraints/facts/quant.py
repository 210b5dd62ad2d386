"""What a checkpoint's quantization is: `quantization_config` of a Hugging Face
`config.json` (or an MLC quantization name) read as a fact of the checkpoint.

A `CheckpointQuant` says which TensorRT-LLM `quant_algo` (and KV quantization) the
checkpoint already is, how many bits one stored weight takes with its scales, and which
weight groups are quantized (the rest stay in the model's dtype). It becomes a setup claim:
no solve may re-quantize a checkpoint.

Bits per weight, with scales (and zero points) spread over the weights they cover:

- `fp8`: 8 bits; with `weight_block_size` [128, 128] one FP32 scale per block (DeepSeek-V3's
  config.json); quant_algo FP8_BLOCK_SCALES, else FP8.
- `mxfp4`: 4 bits + one 8-bit E8M0 scale per 32 (OCP MX spec v1.0); only the listed modules
  (gpt-oss: the MoE experts; `modules_to_not_convert` names attention, router, embedding
  and head).
- `modelopt` NVFP4: 4 bits + one FP8 scale per 16 (NVIDIA ModelOpt); FP8 as above.
- `awq`, `gptq`: 4 bits + an FP16 scale and a 4-bit zero point per `group_size` (128).
- `compressed-tensors`: from `config_groups.*.weights` (num_bits, type, group_size) and
  `input_activations`; `kv_cache_scheme` with 8-bit floats is an FP8 KV cache.
- `bitsandbytes`: NF4 (4 bits + one FP32 absmax per 64, TRT name W4A16) or LLM.int8 (8 bits,
  W8A16).
- MLC names (`MLC_QUANTIZATIONS`, python/mlc_llm/quantization/quantization.py @98d96718):
  group quantization packs int4 eight to a uint32 and int3 ten to a uint32 (3.2 bits), plus
  one scale in the model dtype per group (32 for int4, 40 for int3); q4f16_1 quantizes the
  embedding and the head as well; e4m3/e5m2 per-tensor FP8 leaves embedding and head in
  float16.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import SpecError, UnknownQuantization

# weight groups of a model (see model.py ParamBreakdown)
LINEAR = frozenset({"attention", "mlp", "experts"})
ALL = LINEAR | {"embedding", "head"}
KNOWN_METHODS = (
    "awq",
    "bitsandbytes",
    "compressed-tensors",
    "fbgemm_fp8",
    "fp8",
    "gptq",
    "modelopt",
    "mxfp4",
)
_MODELOPT_BITS = {
    "FP8": 8.0,
    "FP8_BLOCK_SCALES": 8.0 + 32 / (128 * 128),
    "NVFP4": 4.0 + 8 / 16,
    "W4A16_AWQ": 4.0 + 20 / 128,
    "W4A8_AWQ": 4.0 + 20 / 128,
    "W8A8_SQ_PER_CHANNEL": 8.0,
    "MXFP4": 4.0 + 8 / 32,
}


@dataclass(frozen=True)
class CheckpointQuant:
    """A checkpoint's quantization (a fact): TRT `quant_algo`, KV quantization, bits per
    stored weight (scales included) and the weight groups it covers."""

    method: str
    quant_algo: str | None
    kv_cache_quant_algo: str | None = None
    bits: float = 16.0
    covers: frozenset[str] = LINEAR
    model_dtype: str | None = None  # MLC names fix the compute dtype as well

    def claims(self) -> dict[str, Any]:
        """The `quant_config.*` values the checkpoint pins."""
        out: dict[str, Any] = {"quant_config.quant_algo": self.quant_algo}
        if self.kv_cache_quant_algo is not None:
            out["quant_config.kv_cache_quant_algo"] = self.kv_cache_quant_algo
        return out


def _unknown(method: Any, source: str) -> UnknownQuantization:
    return UnknownQuantization(method, KNOWN_METHODS, source=source)


def read_hf(config: Mapping[str, Any], source: str = "") -> CheckpointQuant:
    """A `quantization_config` (or ModelOpt `hf_quant_config.json`'s `quantization`)."""
    method = str(config.get("quant_method") or config.get("producer", {}).get("name") or "")
    method = method.lower()
    if not method and "quant_algo" in config:
        method = "modelopt"
    if method == "fp8":
        block = config.get("weight_block_size")
        if block:
            if not (isinstance(block, list) and len(block) == 2 and all(block)):
                raise SpecError(
                    "weight_block_size must be two positive ints",
                    source=source,
                    key="quantization_config.weight_block_size",
                    value=block,
                )
            bits = 8.0 + 32 / (block[0] * block[1])
            return CheckpointQuant("fp8", "FP8_BLOCK_SCALES", bits=bits)
        return CheckpointQuant("fp8", "FP8", bits=8.0)
    if method == "fbgemm_fp8":
        return CheckpointQuant(method, "FP8_PER_CHANNEL_PER_TOKEN", bits=8.0)
    if method == "mxfp4":
        skip = " ".join(config.get("modules_to_not_convert") or ())
        covers = {"experts"} | (set() if "attn" in skip else {"attention", "mlp"})
        return CheckpointQuant(method, "MXFP4", bits=4.0 + 8 / 32, covers=frozenset(covers))
    if method in ("awq", "gptq"):
        bits_n = int(config.get("bits", config.get("w_bit", 4)))
        group = int(config.get("group_size", config.get("q_group_size", 128)) or 128)
        if group <= 0:  # -1: one scale per output channel
            group = 4096
        if bits_n == 4:
            algo = "W4A16_AWQ" if method == "awq" else "W4A16_GPTQ"
        elif bits_n == 8:
            algo = "W8A16"
        else:
            raise SpecError(
                f"{method} with {bits_n} bits has no TensorRT-LLM quant_algo (4 or 8)",
                source=source,
                key="quantization_config.bits",
                value=bits_n,
            )
        return CheckpointQuant(method, algo, bits=bits_n + (16 + bits_n) / group)
    if method == "bitsandbytes":
        if config.get("load_in_4bit") or config.get("_load_in_4bit"):
            return CheckpointQuant(method, "W4A16", bits=4.0 + 32 / 64)
        return CheckpointQuant(method, "W8A16", bits=8.0)
    if method == "compressed-tensors":
        return _compressed(config, source)
    if method == "modelopt":
        quant = config.get("quantization", config)
        algo = quant.get("quant_algo")
        if algo not in _MODELOPT_BITS:
            raise UnknownQuantization(
                algo,
                tuple(_MODELOPT_BITS),
                source=source,
                key="quantization_config.quant_algo",
            )
        kv = quant.get("kv_cache_quant_algo")
        return CheckpointQuant(method, algo, kv, bits=_MODELOPT_BITS[algo])
    raise _unknown(method or None, source)


def _compressed(config: Mapping[str, Any], source: str) -> CheckpointQuant:
    groups = config.get("config_groups") or {}
    if not groups:
        raise SpecError(
            "compressed-tensors config has no config_groups",
            source=source,
            key="quantization_config.config_groups",
        )
    scheme = next(iter(groups.values()))
    weights = scheme.get("weights") or {}
    acts = scheme.get("input_activations") or {}
    nbits, kind = int(weights.get("num_bits", 16)), weights.get("type", "int")
    group = int(weights.get("group_size") or 0)
    kv_scheme = config.get("kv_cache_scheme") or {}
    kv = "FP8" if kv_scheme.get("num_bits") == 8 and kv_scheme.get("type") == "float" else None
    if nbits == 8 and kind == "float":
        return CheckpointQuant("compressed-tensors", "FP8", kv, bits=8.0)
    if nbits == 8 and kind == "int":
        algo = "W8A8_SQ_PER_CHANNEL" if acts.get("num_bits") == 8 else "W8A16"
        return CheckpointQuant("compressed-tensors", algo, kv, bits=8.0)
    if nbits == 4 and kind == "float":
        return CheckpointQuant("compressed-tensors", "NVFP4", kv, bits=4.0 + 8 / (group or 16))
    if nbits == 4 and kind == "int":
        bits = 4.0 + 16 / group if group > 0 else 4.0
        return CheckpointQuant("compressed-tensors", "W4A16", kv, bits=bits)
    raise SpecError(
        f"compressed-tensors weights of {nbits}-bit {kind} have no TensorRT-LLM quant_algo",
        source=source,
        key="quantization_config.config_groups",
        value=weights,
    )


# ---------------------------------------------------------------------------- MLC names
def _group(bits: int, group: int, dtype: str, *, whole: bool = True) -> CheckpointQuant:
    per_word = 32 // bits  # packed into uint32 words
    scale_bits = 32 if dtype == "float32" else 16
    algo = "W4A16" if bits == 4 else None
    return CheckpointQuant(
        "mlc-group",
        algo,
        bits=32 / per_word + scale_bits / group,
        covers=ALL if whole else LINEAR,
        model_dtype=dtype,
    )


MLC_QUANTIZATIONS: dict[str, CheckpointQuant] = {
    "q0f16": CheckpointQuant(
        "mlc-none", None, bits=16.0, covers=frozenset(), model_dtype="float16"
    ),
    "q0bf16": CheckpointQuant(
        "mlc-none", None, bits=16.0, covers=frozenset(), model_dtype="bfloat16"
    ),
    "q0f32": CheckpointQuant(
        "mlc-none", None, bits=32.0, covers=frozenset(), model_dtype="float32"
    ),
    "q3f16_0": _group(3, 40, "float16"),
    "q3f16_1": _group(3, 40, "float16"),
    "q4f16_0": _group(4, 32, "float16"),
    "q4f16_1": _group(4, 32, "float16"),
    "q4bf16_0": _group(4, 32, "bfloat16"),
    "q4bf16_1": _group(4, 32, "bfloat16"),
    "q4f32_1": _group(4, 32, "float32"),
    "q4f16_2": _group(4, 32, "float16", whole=False),
    "q4f16_autoawq": CheckpointQuant(
        "mlc-awq", "W4A16_AWQ", bits=4.0 + 20 / 128, model_dtype="float16"
    ),
    "q4f16_ft": CheckpointQuant("mlc-ft", "W4A16", bits=4.0 + 16 / 4096, model_dtype="float16"),
    "e5m2_e5m2_f16": CheckpointQuant("mlc-fp8", "FP8", bits=8.0, model_dtype="float16"),
    "e4m3_e4m3_f16": CheckpointQuant("mlc-fp8", "FP8", bits=8.0, model_dtype="float16"),
    "e4m3_e4m3_f16_max_calibrate": CheckpointQuant(
        "mlc-fp8", "FP8", bits=8.0, model_dtype="float16"
    ),
    "fp8_e4m3fn_bf16_block_scale": CheckpointQuant(
        "mlc-fp8-block", "FP8_BLOCK_SCALES", bits=8.0 + 16 / (128 * 128), model_dtype="bfloat16"
    ),
}


def read_mlc(name: Any, source: str = "") -> CheckpointQuant:
    """An MLC quantization name (`q4f16_1`, `e4m3_e4m3_f16`, ...)."""
    if name not in MLC_QUANTIZATIONS:
        raise UnknownQuantization(name, tuple(MLC_QUANTIZATIONS), source=source, key="quantization")
    return MLC_QUANTIZATIONS[name]


__all__ = [
    "ALL",
    "KNOWN_METHODS",
    "LINEAR",
    "MLC_QUANTIZATIONS",
    "CheckpointQuant",
    "read_hf",
    "read_mlc",
]
