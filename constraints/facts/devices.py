"""`DeviceSpec`: an accelerator's facts (memory, compute capability, bandwidth, data
types, and how many of them the machine has), from a built-in catalog or probed.

Catalog figures: memory in MiB as `nvidia-smi` reports the total where that figure is
known, otherwise the vendor's capacity converted (then marked "vendor GB" in `source`:
a little more than the driver will show); compute capability as an int (100 = 10.0) from
NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus) and the CUDA programming guide;
bandwidth in GB/s and data types from each product's datasheet named in `source`.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .errors import UnknownDevice

FP16 = ("float32", "float16")
AMPERE = (*FP16, "bfloat16", "int8")
ADA = (*AMPERE, "fp8")
BLACKWELL = (*ADA, "fp6", "mxfp4", "nvfp4")


@dataclass(frozen=True)
class DeviceSpec:
    """An accelerator: memory (MiB), compute capability (80 = 8.0), bandwidth (GB/s), data
    types, host memory when known, and `count` GPUs per node on `nodes` nodes."""

    name: str
    memory_mib: int
    sm: int
    host_memory_mib: int = 0
    bandwidth_gbs: int = 0
    dtypes: tuple[str, ...] = ()
    source: str = ""
    count: int = 1
    nodes: int = 1

    @classmethod
    def named(cls, name: str, count: int = 1, nodes: int = 1) -> DeviceSpec:
        """A catalog device by name (case and separators do not matter: "h100" works);
        a `name` such as "8xH100" or "H100x8" gives the count as well."""
        key = _norm(name)
        base, times = _split_count(key)
        if times:
            key, count = base, times
        for spec in CATALOG.values():
            if _norm(spec.name) == key or key in (_norm(a) for a in _ALIASES.get(spec.name, ())):
                return replace(spec, count=count, nodes=nodes)
        if key == "cpu":
            return replace(cls.cpu(), count=count, nodes=nodes)
        names = [*CATALOG, "cpu"]
        raise UnknownDevice(name, tuple(difflib.get_close_matches(name, names, n=3, cutoff=0.4)))

    @classmethod
    def cpu(cls) -> DeviceSpec:
        """The host as a device: its memory from /proc/meminfo. It counts as sm 90, as the
        engine's reference kernels support every feature there."""
        mib = _meminfo_mib()
        return cls("cpu", mib, 90, mib, source="/proc/meminfo")

    @classmethod
    def probe(cls, index: int = 0) -> DeviceSpec:
        """The CUDA device `index` through torch (and how many there are), or the CPU."""
        try:
            import torch  # torch loads only when a device is probed
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
            source="torch.cuda",
            count=torch.cuda.device_count(),
        )

    def facts(self) -> dict[str, Any]:
        """The `device.*` facts for a setup claim."""
        return {
            "device.sm": self.sm,
            "device.memory_mib": self.memory_mib,
            "device.host_memory_mib": self.host_memory_mib,
            "device.count": self.count,
            "device.nodes": self.nodes,
        }

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _d(name: str, mib: int, sm: int, gbs: int, dtypes: tuple[str, ...], source: str) -> DeviceSpec:
    return DeviceSpec(name, mib, sm, bandwidth_gbs=gbs, dtypes=dtypes, source=source)


CATALOG: dict[str, DeviceSpec] = {
    d.name: d
    for d in (
        _d("V100-16GB", 16160, 70, 900, FP16, "NVIDIA V100 datasheet"),
        _d("V100-32GB", 32510, 70, 900, FP16, "NVIDIA V100 datasheet"),
        _d("A10G", 23028, 86, 600, AMPERE, "AWS G5 / NVIDIA A10 datasheet"),
        _d("L4", 23034, 89, 300, ADA, "NVIDIA L4 datasheet"),
        _d("L40S", 46068, 89, 864, ADA, "NVIDIA L40S datasheet"),
        _d("A100-40GB", 40960, 80, 1555, AMPERE, "NVIDIA A100 datasheet"),
        _d("A100-80GB", 81920, 80, 2039, AMPERE, "NVIDIA A100 datasheet (SXM)"),
        _d("H100-80GB", 81559, 90, 3350, ADA, "NVIDIA H100 datasheet (SXM)"),
        _d("H200", 143771, 90, 4800, ADA, "NVIDIA H200 datasheet (141 GB HBM3e)"),
        _d("RTX-4090", 24564, 89, 1008, ADA, "NVIDIA GeForce RTX 4090 specifications"),
        _d(
            "H800",
            81559,
            90,
            3350,
            ADA,
            "NVIDIA H800 datasheet (80 GB HBM3, SXM; same memory as H100 SXM)",
        ),
        _d("H20", 97871, 90, 4000, ADA, "NVIDIA HGX H20 datasheet (96 GB HBM3, 4.0 TB/s)"),
        _d("L20", 46068, 89, 864, ADA, "NVIDIA L20 datasheet (48 GB GDDR6 as L40S)"),
        _d(
            "B200",
            183359,
            100,
            8000,
            BLACKWELL,
            "NVIDIA DGX B200 datasheet (1,440 GB for 8 GPUs = 180 GB each; 8 TB/s)",
        ),
        _d(
            "GB200",
            189471,
            100,
            8000,
            BLACKWELL,
            "NVIDIA GB200 NVL72 specifications (186 GB HBM3e per GPU, 8 TB/s)",
        ),
        _d(
            "B300",
            274658,
            103,
            8000,
            BLACKWELL,
            "NVIDIA Blackwell Ultra (B300) specifications: 288 GB HBM3e, vendor GB",
        ),
        _d(
            "RTX-PRO-6000",
            97887,
            120,
            1792,
            BLACKWELL,
            "NVIDIA RTX PRO 6000 Blackwell datasheet (96 GB GDDR7, 1,792 GB/s)",
        ),
    )
}
_ALIASES = {
    "V100-16GB": ("V100",),
    "A100-80GB": ("A100",),
    "H100-80GB": ("H100", "H100-SXM", "H100 80GB HBM3"),
    "H200": ("H200-141GB",),
    "RTX-4090": ("4090", "GeForce RTX 4090"),
    "B200": ("NVIDIA B200",),
    "GB200": ("GB200-NVL72",),
    "B300": ("B300-SXM", "GB300"),
    "RTX-PRO-6000": ("RTX PRO 6000 Blackwell", "RTX6000-PRO", "NVIDIA RTX PRO 6000"),
}


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _split_count(key: str) -> tuple[str, int]:
    """'8xh100' -> ('h100', 8); 'h100x8' -> ('h100', 8); otherwise (key, 0)."""
    head, sep, tail = key.partition("x")
    if sep and head.isdigit() and tail:
        return tail, int(head)
    head, sep, tail = key.rpartition("x")
    if sep and tail.isdigit() and head and head in {_norm(n) for n in CATALOG}:
        return head, int(tail)
    return key, 0


def _meminfo_mib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


__all__ = ["CATALOG", "DeviceSpec"]
