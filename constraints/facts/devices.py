"""`DeviceSpec`: an accelerator's facts (memory, compute capability, bandwidth, data
types, and how many of them the machine has), from a built-in catalog or probed.

Catalog figures: memory in MiB as `nvidia-smi` reports the total (every entry's figure was
checked against public nvidia-smi logs; B300 was corrected from the vendor's 288 GB
converted, 274,658 MiB, to the driver's 275,040 MiB); compute capability as an int
(100 = 10.0) from NVIDIA's CUDA GPUs table and, for B300 (10.3) and RTX PRO 6000 (12.0),
from devices that report it; bandwidth in GB/s and data types from the page named in each
entry's `source` (`Source`: where the memory figure and the vendor figures come from).
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


@dataclass(frozen=True)
class Source:
    """Where a catalog entry's figures come from. `memory` says where the MiB figure was
    read (an nvidia-smi total seen in public logs, checked by value); `vendor` names the
    page or document with the capacity and bandwidth, and the figures it gives."""

    memory: str
    vendor: str
    url: str

    def __str__(self) -> str:
        return f"memory: {self.memory}; {self.vendor} ({self.url})"


SMI = "nvidia-smi memory.total {} MiB, as public nvidia-smi logs show it"


def _d(name: str, mib: int, sm: int, gbs: int, dtypes: tuple[str, ...], src: Source) -> DeviceSpec:
    return DeviceSpec(name, mib, sm, bandwidth_gbs=gbs, dtypes=dtypes, source=str(src))


def _src(mib: int, vendor: str, url: str) -> Source:
    return Source(SMI.format(f"{mib:,}"), vendor, url)


# Figures checked on 2026-11-30. NVIDIA's own datasheets were not in the reference corpus
# for every product; where they were not, the page named is a specification page quoting
# them, and the MiB figure is the driver's own total (which is what the memory rules use).
CATALOG: dict[str, DeviceSpec] = {
    d.name: d
    for d in (
        _d("V100-16GB", 16160, 70, 900, FP16, _src(16160, "NVIDIA V100 datasheet: 16 GB HBM2, 900 GB/s (spec databases list 897 GB/s)", "https://sysrqmts.com/gpus/compare/nvidia-a100-pcie-vs-nvidia-tesla-v100-pcie-16-gb")),
        _d("V100-32GB", 32510, 70, 900, FP16, _src(32510, "NVIDIA V100 datasheet: 32 GB HBM2, 900 GB/s", "https://sysrqmts.com/es/gpus/compare/nvidia-tesla-t4-vs-nvidia-tesla-v100-sxm3-32-gb")),
        _d("A10G", 23028, 86, 600, AMPERE, _src(23028, "A10G (AWS G5): 24 GB GDDR6, 600 GB/s, as the A10", "https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/")),
        _d("L4", 23034, 89, 300, ADA, _src(23034, "NVIDIA L4: 24 GB GDDR6, 300 GB/s", "https://grokipedia.com/page/NVIDIA_L4_vs_L40S")),
        _d("L40S", 46068, 89, 864, ADA, _src(46068, "NVIDIA L40S: 48 GB GDDR6, 864 GB/s", "https://grokipedia.com/page/NVIDIA_L4_vs_L40S")),
        _d("A100-40GB", 40960, 80, 1555, AMPERE, _src(40960, "NVIDIA A100 datasheet: 40 GB HBM2, 1,555 GB/s", "https://glennklockwood.com/garden/processors/A100")),
        _d("A100-80GB", 81920, 80, 2039, AMPERE, _src(81920, "NVIDIA A100 datasheet (SXM): 80 GB HBM2e, 2,039 GB/s", "https://glennklockwood.com/garden/processors/A100")),
        _d("H100-80GB", 81559, 90, 3350, ADA, _src(81559, "NVIDIA H100 SXM: 80 GB HBM3, 3.35 TB/s", "https://lzwjava.github.io/nvidia-h200-gpu-specs-en")),
        _d("H200", 143771, 90, 4800, ADA, _src(143771, "NVIDIA H200 SXM: 141 GB HBM3e, 4.8 TB/s", "https://lzwjava.github.io/nvidia-h200-gpu-specs-en")),
        _d("RTX-4090", 24564, 89, 1008, ADA, _src(24564, "GeForce RTX 4090: 24 GB GDDR6X, 1,008 GB/s (1.01 TB/s)", "https://askai.glarity.app/search/How-is-the-RTX-4090-compared-to-the-Tesla-V100")),
        _d("H800", 81559, 90, 3350, ADA, _src(81559, "NVIDIA H800 SXM: the H100's die and 80 GB HBM3 (3.35 TB/s), NVLink cut to 400 GB/s", "https://www.philisun.com/technical-analysis/nvidia-h800-vs-h100-a-technical-deep-dive-into-politically-defined-ai-chips/")),
        _d("H20", 97871, 90, 4000, ADA, _src(97871, "NVIDIA HGX H20: 96 GB HBM3, 4.0 TB/s", "https://www.tomshardware.com/pc-components/gpus/new-nvidia-ai-gpus-designed-to-get-around-us-export-bans-come-to-china-h20-l20-and-l2-to-fill-void-left-by-restricted-models")),
        _d("L20", 46068, 89, 864, ADA, _src(46068, "NVIDIA L20 PCIe: 48 GB GDDR6, 864 GB/s (Ada, AD102)", "https://www.tomshardware.com/pc-components/gpus/new-nvidia-ai-gpus-designed-to-get-around-us-export-bans-come-to-china-h20-l20-and-l2-to-fill-void-left-by-restricted-models")),
        _d("B200", 183359, 100, 8000, BLACKWELL, _src(183359, "NVIDIA B200: 180 GB HBM3e per GPU (DGX B200 1.44 TB for 8), 8 TB/s; sm_100", "https://www.server-parts.eu/post/nvidia-b200-gb200-blackwell-gpu-server-comparison")),
        _d("GB200", 189471, 100, 8000, BLACKWELL, _src(189471, "NVIDIA GB200 NVL72: Blackwell GPUs of 186 GB HBM3e (13.4 TB for 72), 8 TB/s each", "https://aiwiki.ai/wiki/nvidia_gb200_nvl72/raw")),
        _d("B300", 275040, 103, 8000, BLACKWELL, _src(275040, "NVIDIA Blackwell Ultra B300: 288 GB HBM3e, 8 TB/s; compute capability 10.3", "https://thefilibusterblog.com/nvidia-blackwell-ultra-gb300-gpu-unveiling-the-fastest-ai-chip-with-dual-reticle-20k-cores-288-gb-hbm3e-memory-at-8-tb-s-50-faster-than-gb200")),
        _d("RTX-PRO-6000", 97887, 120, 1792, BLACKWELL, _src(97887, "NVIDIA RTX PRO 6000 Blackwell: 96 GB GDDR7, 512-bit, 1,792 GB/s; compute capability 12.0", "https://gpu.name/posts/nvidia-unveils-rtx-pro-6000-blackwell-gpu-with-24-064-cores-and-96gb-memory")),
    )
}  # fmt: skip
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


__all__ = ["CATALOG", "DeviceSpec", "Source"]
