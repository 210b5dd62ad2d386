"""vLLM in `arbiter plan`: the worker layouts it runs, a priced worker written as its
serve-argument YAML (vLLM 0.33 spelling, profile `vllm-0.33` on the registry entry), and
the settings of a disaggregated role.

The MoE layouts follow AIConfigurator's enumeration (`aiconfigurator_core.sdk.utils.
enumerate_parallel_config`, 0.12.0): vLLM takes no MoE tensor parallelism together with
expert parallelism.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...plan.emit import Worker
    from ...plan.layout import Layout

RELEASE = "vLLM 0.33"  # the release whose option spelling the emitted configs use
COLOUR = "#1f77b4"  # its line on the plan's chart
# the step loop's scheduling policy and whether prompts chunk by default (vLLM v1 Scheduler.schedule: running requests first, then the waiting queue; chunked prefill on by default)
STEP_POLICY = ("mixed", True)


def allows(layout: Layout) -> bool:
    """False for MoE tensor parallelism together with expert parallelism."""
    return not ((layout.moe_tp or 1) > 1 and (layout.moe_ep or 1) > 1)


def worker_config(w: Worker) -> dict[str, Any]:
    """The worker as `vllm serve` arguments (max-num-seqs is per data-parallel rank)."""
    lay = w.layout
    config: dict[str, Any] = {"tensor-parallel-size": lay.tp}
    if lay.pp > 1:
        config["pipeline-parallel-size"] = lay.pp
    if lay.dp > 1:
        config["data-parallel-size"] = lay.dp  # vLLM: max-num-seqs is per DP rank
    if lay.moe and (lay.moe_ep or 1) > 1:
        config["enable-expert-parallel"] = True  # experts over tp x dp (moe_tp 1)
    config.update(
        {
            "max-num-seqs": w.batch,
            "max-num-batched-tokens": w.budget,
            "max-model-len": w.max_len,
            "enable-chunked-prefill": True,
        }
    )
    if w.kv_dtype == "fp8":
        config["kv-cache-dtype"] = "fp8"
    if w.nextn:
        # the checkpoint's MTP layers as the drafter (vLLM SpeculativeConfig, method "mtp")
        config["speculative-config"] = {"method": "mtp", "num_speculative_tokens": w.nextn}
    return config


def role_config(config: dict[str, Any], role: str) -> dict[str, Any]:
    """A worker's config in a disaggregated role: vLLM's NIXL connector, where both roles
    send and receive KV (kv_both)."""
    config["kv-transfer-config"] = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    return config
