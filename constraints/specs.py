"""The facts rules and the memory model read: `ModelSpec` (from a Hugging Face
`config.json`) and `DeviceSpec` (a built-in catalog, or probed from torch).

Both turn into `setup` claims through `facts()`, a mapping of `model.*` / `device.*` paths.
Errors are `SpecError`s naming the file and key at fault.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import SchemaError
from .schema import ARCHITECTURES, DTYPES


class SpecError(SchemaError, ValueError):
    """A model config or device name that cannot become facts."""

    def __init__(self, reason: str, *, source: str = "", key: str | None = None, value: Any = None):
        super().__init__(reason)
        self.reason = reason
        self.source = source
        self.key = key
        self.value = value

    def __str__(self) -> str:
        where = self.source or "model config"
        if self.key is not None:
            where += f", key {self.key!r}"
        return f"{where}: {self.reason}"


class UnknownDevice(SpecError):
    def __init__(self, name: str, suggestions: tuple[str, ...]):
        hint = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"unknown device {name!r}{hint}", source="device catalog", value=name)
        self.suggestions = suggestions


# ---------------------------------------------------------------------------- models
# config.json key -> our name; the first key found wins (names differ across families)
_KEYS = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "vocab_size": ("vocab_size",),
}
_TORCH_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}


@dataclass(frozen=True)
class ModelSpec:
    """The shape of a decoder model, as the rules and the memory model need it."""

    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    sliding_window: int = 0  # 0: full attention
    dtype: str = "bfloat16"
    architecture: str = "other"
    tie_word_embeddings: bool = False
    is_encoder_decoder: bool = False
    num_experts: int = 1
    source: str = ""

    @classmethod
    def from_hf_config(cls, config: str | Path | Mapping[str, Any]) -> ModelSpec:
        """Read a Hugging Face `config.json` (a path to it or to its folder, or the dict)."""
        if isinstance(config, Mapping):
            data, source = dict(config), "<config dict>"
        else:
            path = Path(config)
            if path.is_dir():
                path = path / "config.json"
            source = str(path)
            try:
                data = json.loads(path.read_text())
            except OSError as exc:
                raise SpecError(f"cannot read: {exc.strerror}", source=source) from None
            except ValueError as exc:
                raise SpecError(f"not JSON: {exc}", source=source) from None
            if not isinstance(data, dict):
                raise SpecError("expected a JSON object", source=source)

        def need(name: str) -> int:
            for key in _KEYS[name]:
                if key in data:
                    return _int(data, key, source)
            raise SpecError(
                f"missing (looked for {', '.join(_KEYS[name])})", source=source, key=_KEYS[name][0]
            )

        def maybe(key: str, default: int) -> int:
            return default if data.get(key) is None else _int(data, key, source)

        layers = need("num_layers")
        heads = need("num_attention_heads")
        hidden = need("hidden_size")
        vocab = need("vocab_size")
        kv_heads = maybe("num_key_value_heads", heads)
        head_dim = maybe("head_dim", hidden // heads)
        inter = maybe("intermediate_size", maybe("ffn_dim", 4 * hidden))
        positions = maybe("max_position_embeddings", maybe("n_positions", 2048))
        window = data.get("sliding_window")
        if data.get("use_sliding_window") is False:
            window = None
        dtype = data.get("torch_dtype") or data.get("dtype") or "bfloat16"
        if dtype not in _TORCH_DTYPES:
            raise SpecError(
                f"dtype {dtype!r} is not one of {DTYPES}", source=source, key="torch_dtype"
            )
        archs = data.get("architectures") or ["other"]
        arch = archs[0] if archs[0] in ARCHITECTURES else "other"
        if heads % kv_heads:
            raise SpecError(
                f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}",
                source=source,
                key="num_key_value_heads",
            )
        return cls(
            num_layers=layers,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            hidden_size=hidden,
            intermediate_size=inter,
            vocab_size=vocab,
            max_position_embeddings=positions,
            sliding_window=int(window or 0),
            dtype=_TORCH_DTYPES[dtype],
            architecture=arch,
            tie_word_embeddings=bool(data.get("tie_word_embeddings", False)),
            is_encoder_decoder=bool(data.get("is_encoder_decoder", False)),
            num_experts=maybe("num_local_experts", 1),
            source=source,
        )

    @property
    def num_params(self) -> int:
        """Parameters computed from the shapes: embeddings, attention, gated MLP (per
        expert, plus a router), norms, and the output head unless tied."""
        h, hd = self.hidden_size, self.head_dim
        attention = h * self.num_attention_heads * hd * 2 + 2 * h * self.num_kv_heads * hd
        mlp = 3 * h * self.intermediate_size * self.num_experts
        router = h * self.num_experts if self.num_experts > 1 else 0
        per_layer = attention + mlp + router + 2 * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_layers * per_layer + h + head

    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        """K and V of one token over all layers."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * bytes_per_element

    def facts(self) -> dict[str, Any]:
        """The `model.*` facts for a setup claim."""
        return {
            "model.num_layers": self.num_layers,
            "model.num_attention_heads": self.num_attention_heads,
            "model.num_kv_heads": self.num_kv_heads,
            "model.head_dim": self.head_dim,
            "model.hidden_size": self.hidden_size,
            "model.intermediate_size": self.intermediate_size,
            "model.vocab_size": self.vocab_size,
            "model.max_position_embeddings": self.max_position_embeddings,
            "model.sliding_window": self.sliding_window,
            "model.dtype": self.dtype,
            "model.architecture": self.architecture,
            "model.tie_word_embeddings": self.tie_word_embeddings,
            "model.is_encoder_decoder": self.is_encoder_decoder,
            "model.num_params": self.num_params,
        }


def _int(data: Mapping[str, Any], key: str, source: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(
            f"expected a non-negative int, got {value!r}", source=source, key=key, value=value
        )
    return value


# ---------------------------------------------------------------------------- devices
@dataclass(frozen=True)
class DeviceSpec:
    """An accelerator: memory (MiB, as nvidia-smi reports the total), compute capability
    as an int (80 = 8.0), and host memory when known."""

    name: str
    memory_mib: int
    sm: int
    host_memory_mib: int = 0

    @classmethod
    def named(cls, name: str) -> DeviceSpec:
        """A catalog device by name (case and separators do not matter: "h100" works)."""
        key = _norm(name)
        for spec in CATALOG.values():
            if _norm(spec.name) == key or key in (_norm(a) for a in _ALIASES.get(spec.name, ())):
                return spec
        if key == "cpu":
            return cls.cpu()
        names = [*CATALOG, "cpu"]
        raise UnknownDevice(name, tuple(difflib.get_close_matches(name, names, n=3, cutoff=0.4)))

    @classmethod
    def cpu(cls) -> DeviceSpec:
        """The host as a device: its memory from /proc/meminfo. It counts as sm 90, as the
        engine's reference kernels support every feature there."""
        mib = _meminfo_mib()
        return cls("cpu", mib, 90, mib)

    @classmethod
    def probe(cls, index: int = 0) -> DeviceSpec:
        """The CUDA device `index` through torch, or the CPU when there is none."""
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency
            return cls.cpu()
        if not torch.cuda.is_available():
            return cls.cpu()
        props = torch.cuda.get_device_properties(index)
        return cls(
            props.name,
            props.total_memory // (1 << 20),
            props.major * 10 + props.minor,
            _meminfo_mib(),
        )

    def facts(self) -> dict[str, Any]:
        """The `device.*` facts for a setup claim."""
        return {
            "device.sm": self.sm,
            "device.memory_mib": self.memory_mib,
            "device.host_memory_mib": self.host_memory_mib,
        }

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


CATALOG: dict[str, DeviceSpec] = {
    d.name: d
    for d in (
        DeviceSpec("V100-16GB", 16160, 70),
        DeviceSpec("V100-32GB", 32510, 70),
        DeviceSpec("A10G", 23028, 86),
        DeviceSpec("L4", 23034, 89),
        DeviceSpec("L40S", 46068, 89),
        DeviceSpec("A100-40GB", 40960, 80),
        DeviceSpec("A100-80GB", 81920, 80),
        DeviceSpec("H100-80GB", 81559, 90),
        DeviceSpec("H200", 143771, 90),
        DeviceSpec("RTX-4090", 24564, 89),
    )
}
_ALIASES = {
    "V100-16GB": ("V100",),
    "A100-80GB": ("A100",),
    "H100-80GB": ("H100", "H100-SXM", "H100 80GB HBM3"),
    "H200": ("H200-141GB",),
    "RTX-4090": ("4090", "GeForce RTX 4090"),
}


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _meminfo_mib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


__all__ = ["CATALOG", "DeviceSpec", "ModelSpec", "SpecError", "UnknownDevice"]
