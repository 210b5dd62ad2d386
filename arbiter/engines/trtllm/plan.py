"""TensorRT-LLM in `arbiter plan`: the worker layouts it runs, a priced worker written as
its `extra_llm_api_options` YAML (TensorRT-LLM 1.2 spelling, profile `trtllm-1.2` on the
registry entry), and the settings of a disaggregated role.

The MoE layouts follow AIConfigurator's enumeration (`aiconfigurator_core.sdk.utils.
enumerate_parallel_config`, 0.12.0): TensorRT-LLM takes no attention tensor parallelism
together with attention data parallelism.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...plan.emit import Worker
    from ...plan.layout import Layout

RELEASE = "TensorRT-LLM 1.2"  # the release whose option spelling the emitted configs use
COLOUR = "#76b900"  # its line on the plan's chart
# the step loop's scheduling policy and whether prompts chunk by default (TensorRT-LLM in-flight batching; enable_chunked_prefill off by default (llm_args.py))
STEP_POLICY = ("mixed", False)


def allows(layout: Layout) -> bool:
    """False for attention TP together with attention DP."""
    return not (layout.dp > 1 and layout.tp > 1)


def worker_config(w: Worker) -> dict[str, Any]:
    """The worker as LLM-API arguments (max_batch_size is per attention-DP rank)."""
    lay = w.layout
    config: dict[str, Any] = {"tensor_parallel_size": lay.tp * lay.dp}
    if lay.pp > 1:
        config["pipeline_parallel_size"] = lay.pp
    if lay.moe:
        config["moe_tensor_parallel_size"] = lay.moe_tp
        config["moe_expert_parallel_size"] = lay.moe_ep
    if lay.dp > 1:
        config["enable_attention_dp"] = True  # max_batch_size is per attention-DP rank
    config.update(
        {
            "max_batch_size": w.batch,
            "max_num_tokens": w.budget,
            "max_seq_len": w.max_len,
            "enable_chunked_prefill": w.budget < w.max_len,
            "cuda_graph_config": {"enable_padding": True, "max_batch_size": w.batch},
        }
    )
    if w.kv_dtype == "fp8":
        config["kv_cache_config"] = {"dtype": "fp8"}
    if w.nextn:
        config["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": w.nextn}
    return config


def role_config(config: dict[str, Any], role: str) -> dict[str, Any]:
    """A worker's config in a disaggregated role: the cache transceiver; a context
    (prefill) server runs without the overlap scheduler, as the disaggregated serving
    guide requires, and without CUDA graphs."""
    config["cache_transceiver_config"] = {"backend": "DEFAULT"}
    if role == "prefill":
        config["disable_overlap_scheduler"] = True
        config.pop("cuda_graph_config", None)
    return config
