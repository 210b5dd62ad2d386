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
# KV cache quantizations a ModelOpt checkpoint may name (TensorRT-LLM QuantAlgo values the
# schema's quant_config.kv_cache_quant_algo takes)
KV_ALGOS = ("FP8", "INT8", "NVFP4")
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
    # `weight_block_size` [n, k] of a block-scaled FP8 checkpoint ((0, 0): not block-scaled)
    block: tuple[int, int] = (0, 0)

    def claims(self) -> dict[str, Any]:
        """The `quant_config.*` values the checkpoint pins."""
        out: dict[str, Any] = {"quant_config.quant_algo": self.quant_algo}
        if self.kv_cache_quant_algo is not None:
            out["quant_config.kv_cache_quant_algo"] = self.kv_cache_quant_algo
        return out


def _unknown(method: Any, source: str) -> UnknownQuantization:
    return UnknownQuantization(method, KNOWN_METHODS, source=source)


class _Q:
    """Typed access to (a part of) a `quantization_config`: every error names the key
    under `quantization_config` and the value."""

    def __init__(self, data: Mapping[str, Any], source: str, path: str = "quantization_config"):
        self.data, self.source, self.path = data, source, path

    def bad(self, key: str, expected: str) -> SpecError:
        value = self.data.get(key)
        return SpecError(
            f"expected {expected}, got {value!r}",
            source=self.source,
            key=f"{self.path}.{key}",
            value=value,
        )

    def int(self, key: str, default: int, *keys: str) -> int:
        """The first of `key`, `keys` that is set, as an int; `default` when none is."""
        for name in (key, *keys):
            value = self.data.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.bad(name, "an int")
            return value
        return default

    def name(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self.bad(key, "a name")

    def part(self, key: str) -> _Q:
        """A nested object (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self.bad(key, "an object")
        return _Q(value, self.source, f"{self.path}.{key}")

    def names(self, key: str) -> list[str]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, "a list of module names")
        return value


def read_hf(config: Mapping[str, Any], source: str = "") -> CheckpointQuant:
    """A `quantization_config` (or ModelOpt `hf_quant_config.json`'s `quantization`)."""
    cfg = _Q(config, source)
    method = (cfg.name("quant_method") or cfg.part("producer").name("name") or "").lower()
    if not method and "quant_algo" in config:
        method = "modelopt"
    if method == "fp8":
        block = config.get("weight_block_size")
        if block:
            if not (
                isinstance(block, list)
                and len(block) == 2
                and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
            ):
                raise cfg.bad("weight_block_size", "two positive ints")
            bits = 8.0 + 32 / (block[0] * block[1])
            return CheckpointQuant("fp8", "FP8_BLOCK_SCALES", bits=bits, block=(block[0], block[1]))
        return CheckpointQuant("fp8", "FP8", bits=8.0)
    if method == "fbgemm_fp8":
        return CheckpointQuant(method, "FP8_PER_CHANNEL_PER_TOKEN", bits=8.0)
    if method == "mxfp4":
        skip = " ".join(cfg.names("modules_to_not_convert"))
        covers = {"experts"} | (set() if "attn" in skip else {"attention", "mlp"})
        return CheckpointQuant(method, "MXFP4", bits=4.0 + 8 / 32, covers=frozenset(covers))
    if method in ("awq", "gptq"):
        bits_n = cfg.int("bits", 4, "w_bit")
        group = cfg.int("group_size", 128, "q_group_size") or 128
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
        return _compressed(cfg)
    if method == "modelopt":
        quant = cfg.part("quantization") if "quantization" in config else cfg
        name = quant.data.get("quant_algo")
        if not isinstance(name, str) or name not in _MODELOPT_BITS:
            raise UnknownQuantization(
                name,
                tuple(_MODELOPT_BITS),
                source=source,
                key=f"{quant.path}.quant_algo",
            )
        kv = quant.name("kv_cache_quant_algo")
        if kv is not None and kv not in KV_ALGOS:
            raise UnknownQuantization(
                kv, KV_ALGOS, source=source, key=f"{quant.path}.kv_cache_quant_algo"
            )
        return CheckpointQuant(method, name, kv, bits=_MODELOPT_BITS[name])
    raise _unknown(method or None, source)


def _compressed(cfg: _Q) -> CheckpointQuant:
    groups = cfg.part("config_groups")
    if not groups.data:
        raise SpecError(
            "compressed-tensors config has no config_groups",
            source=cfg.source,
            key="quantization_config.config_groups",
        )
    scheme = groups.part(next(iter(groups.data)))
    weights, acts = scheme.part("weights"), scheme.part("input_activations")
    nbits, kind = weights.int("num_bits", 16), weights.name("type") or "int"
    group = weights.int("group_size", 0)
    kv_scheme = cfg.part("kv_cache_scheme")
    kv_float = kv_scheme.data.get("type") == "float"
    kv = "FP8" if kv_scheme.int("num_bits", 0) == 8 and kv_float else None
    if nbits == 8 and kind == "float":
        return CheckpointQuant("compressed-tensors", "FP8", kv, bits=8.0)
    if nbits == 8 and kind == "int":
        algo = "W8A8_SQ_PER_CHANNEL" if acts.int("num_bits", 0) == 8 else "W8A16"
        return CheckpointQuant("compressed-tensors", algo, kv, bits=8.0)
    if nbits == 4 and kind == "float":
        return CheckpointQuant("compressed-tensors", "NVFP4", kv, bits=4.0 + 8 / (group or 16))
    if nbits == 4 and kind == "int":
        bits = 4.0 + 16 / group if group > 0 else 4.0
        return CheckpointQuant("compressed-tensors", "W4A16", kv, bits=bits)
    raise SpecError(
        f"compressed-tensors weights of {nbits}-bit {kind} have no TensorRT-LLM quant_algo",
        source=cfg.source,
        key=f"{weights.path}",
        value=dict(weights.data),
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
    if not isinstance(name, str) or name not in MLC_QUANTIZATIONS:
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
