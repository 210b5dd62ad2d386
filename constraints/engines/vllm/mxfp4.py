"""vLLM's MXFP4 routed experts as it allocates them: padded to its MoE kernel's tiles
(`vllm_expert_padding`), which the vLLM memory terms apply to a model's weight parts
(`vllm_padded`, `VllmMemoryTerms.padded`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ...facts.memory import WeightParts, fact

# vLLM 0.33 allocates MXFP4 routed experts at sizes rounded up to its MoE kernel's tiles
# (Mxfp4MoEMethod.maybe_roundup_sizes -> mxfp4_round_up_hidden_size_and_intermediate_size,
# vllm/model_executor/layers/fused_moe/oracle/mxfp4.py, v0.33.0), per tensor-parallel
# partition of the intermediate size. Which kernel runs follows the GPU
# (_get_priority_backends_for_gpt_oss): the OAI Triton kernels on SM 9.0-12.x
# (_triton_kernel_moe_supports_current_device), moved behind Marlin on consumer
# Blackwell (SM 12.x), so SM 7.5-8.9 and 12.x run Marlin (MarlinExperts: SM 7.5 and up;
# the vLLM recipe says so for A100: "Marlin MXFP4 MoE"). Marlin rounds the intermediate
# size to 128 and the hidden size to 256; the Triton kernels take the default branch,
# the intermediate size to 64. Datacenter Blackwell (SM 10.x) picks FlashInfer's
# kernels when installed: not modelled (no padding counted there).
VLLM_MXFP4_TILES = {"marlin": (128, 256), "triton": (64, 1)}


def vllm_mxfp4_kernel(sm: int) -> str | None:
    """The MXFP4 MoE kernel family vLLM 0.33 runs gpt-oss with on a GPU of compute
    capability `sm` (80 = 8.0), when its padding is modelled."""
    if 75 <= sm < 90 or 120 <= sm < 130:
        return "marlin"
    if sm == 90:
        return "triton"
    return None


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def vllm_expert_padding(facts: Mapping[str, Any], partitions: Iterable[int] = (1,)) -> float:
    """How much larger vLLM allocates MXFP4 routed experts than the checkpoint stores
    them (padded intermediate x hidden over the real ones), at the most padded of the
    intermediate size's `partitions` (tensor-parallel shares of it); 1.0 when the
    experts are not MXFP4, the device is not known or its kernel is not modelled.
    Applied to the experts' stored bytes (scales and biases included: their padding is
    proportionally no larger)."""
    if not facts.get("model.mxfp4_experts") or "device.sm" not in facts:
        return 1.0
    kernel = vllm_mxfp4_kernel(int(facts["device.sm"]))
    inter = int(fact(facts, "model.moe_intermediate_size"))
    if kernel is None or not inter:
        return 1.0
    i_tile, h_tile = VLLM_MXFP4_TILES[kernel]
    h = int(fact(facts, "model.hidden_size"))
    hidden = _round_up(h, h_tile) / h
    shares = [inter // t for t in partitions if t >= 1 and inter % t == 0] or [inter]
    return hidden * max(_round_up(n, i_tile) / n for n in shares)


def vllm_padded(
    parts: WeightParts, facts: Mapping[str, Any], partitions: Iterable[int]
) -> WeightParts:
    """`parts` with the routed experts as vLLM allocates them (`vllm_expert_padding`)."""
    factor = vllm_expert_padding(facts, partitions)
    return parts if factor == 1.0 else replace(parts, experts=parts.experts * factor)
