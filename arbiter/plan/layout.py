"""`Layout`: one worker's parallel layout (tensor, pipeline, attention data parallel, MoE
tensor and expert parallel), and the layouts a plan enumerates for a model and GPU budget.

MoE layouts follow the engines' own shapes, as AIConfigurator enumerates them
(`aiconfigurator_core.sdk.utils.enumerate_parallel_config`, 0.12.0): attention width
tp x dp equals MoE width moe_tp x moe_ep, and each engine's pack says which of those it
runs (`allows` in `arbiter/engines/<engine>/plan.py`: TensorRT-LLM has no attention TP
together with attention DP, vLLM no MoE TP together with MoE EP). Pipeline parallelism,
which it does not search, is searched here for dense models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..dialects import DIALECTS

WIDTHS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True, order=True)
class Layout:
    tp: int = 1
    pp: int = 1
    dp: int = 1  # attention data-parallel ranks (MoE models)
    moe_tp: int | None = None
    moe_ep: int | None = None

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def moe(self) -> bool:
        return self.moe_tp is not None

    def __str__(self) -> str:
        text = f"tp{self.tp}"
        if self.pp > 1:
            text += f" pp{self.pp}"
        if self.dp > 1:
            text += f" dp{self.dp}"
        if self.moe:
            text += f" moe_tp{self.moe_tp} ep{self.moe_ep}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "attention_dp": self.dp,
            "moe_tp": self.moe_tp,
            "moe_ep": self.moe_ep,
            "gpus": self.gpus,
        }


def layouts(
    engine: str, gpus: int, moe: bool, *, max_pp: int = 8, gpus_per_node: int = 8
) -> list[Layout]:
    """Worker layouts of at most `gpus` GPUs; a worker spans nodes only by pipeline stages
    or whole nodes (tp x dp within a node)."""
    allows = DIALECTS.part(engine, "plan").allows
    found: list[Layout] = []
    for tp in WIDTHS:
        for pp in WIDTHS:
            if pp > max_pp:
                continue
            if not moe:
                if tp * pp <= gpus and tp <= gpus_per_node:
                    found.append(Layout(tp, pp))
                continue
            if pp > 1:
                continue  # MoE: pipeline stages are not priced with expert parallelism
            for dp in WIDTHS:
                width = tp * dp
                if width > gpus or width > gpus_per_node * max(1, gpus // gpus_per_node):
                    continue
                for moe_tp in WIDTHS:
                    if width % moe_tp:
                        continue
                    layout = Layout(tp, 1, dp, moe_tp, width // moe_tp)
                    if allows(layout):
                        found.append(layout)
    return sorted(set(found))
