"""What TensorRT-LLM only warns about: it logs a line and runs the config as written.

None of these changes the verdict (no rule, no adjustment); `check_trtllm()` lists them
in `Verdict.warnings`:

- `runtime_warnings`: the LLM API's and the PyTorch executor's (both backends' arguments);
- `builder_warnings`: the TensorRT engine builder's, for the `tensorrt` backend only. They
  were default rules (`build.seq-len-within-model-positions`,
  `build.token-budget-at-most-16k`), but a default rule lets the solver move a value the
  engine would keep, so they are warnings now, as the audit reads them
  (`reference/rules-audit.md`: "warning only"). No release line refuses or rewrites
  either value: 0.9-0.12 and the 1.x TensorRT backend log the same two warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...resolution import Resolution

# the builder's max_seq_len deduction (T29 of the engine-rules catalogue): a max_seq_len
# above the model's positions (times the RoPE factor) only warns, and not for StreamingLLM
SEQ_LEN_SOURCE = "tensorrt_llm/builder.py BuildConfig max_seq_len deduction (T29; warns)"
# check_max_num_tokens (T30): a max_num_tokens above 16384 is logged as not advised, and kept
TOKENS_SOURCE = "tensorrt_llm/_common.py check_max_num_tokens (T30; warns)"
TOKEN_BUDGET_ADVISED = 16384


def runtime_warnings(resolution: Resolution, given: Mapping[str, Any] | None = None) -> list[str]:
    """What the engine warns about or narrows at run time, leaving the arguments as they
    are (so no change of the verdict):

    - a max_batch_size above max_num_tokens (BaseLlmArgs.validate_runtime_args,
      tensorrt_llm/llmapi/llm_args.py 1.0-1.2: a logger warning, no rewrite);
    - with `given` (the PyTorch backend's arguments): CUDA graphs the user asked for above
      min(max_batch_size, max_num_tokens // (1 + draft tokens)) are not captured
      (tensorrt_llm/_torch/pyexecutor/model_engine.py `_filter_cuda_graph_batch_sizes`,
      1.0-1.2; with enable_padding the batches pad to that size instead). TorchLlmArgs
      itself accepts any cuda_graph_config.max_batch_size beside max_batch_size."""
    out = []
    batch = resolution.value("build_config.max_batch_size")
    tokens = resolution.value("build_config.max_num_tokens")
    if isinstance(batch, int) and isinstance(tokens, int) and batch > tokens:
        out.append(
            f"max_batch_size [{batch}] should be less than or equal to max_num_tokens "
            f"[{tokens}] (a warning of BaseLlmArgs.validate_runtime_args; nothing changes)"
        )
    graphs = given.get("cuda_graph_config") if given is not None else None
    if isinstance(graphs, Mapping) and isinstance(batch, int) and isinstance(tokens, int):
        asked = resolution.value("cuda_graph_config.max_batch_size") or resolution.value(
            "cuda_graph_config.batch_sizes_max"
        )
        draft = resolution.value("build_config.max_draft_len") or 0
        cap = min(batch, tokens // (1 + draft))
        if asked and asked > cap:
            out.append(
                f"cuda_graph_config asks for CUDA graphs up to batch {asked}; the PyTorch "
                f"engine captures them only up to {cap} (min(max_batch_size, max_num_tokens "
                f"// (1 + draft tokens)); model_engine.py _filter_cuda_graph_batch_sizes)"
            )
    return out


def builder_warnings(resolution: Resolution) -> list[str]:
    """The TensorRT engine builder's two warnings about the solved build limits.

    The model's positions are compared as they are: arbiter has no RoPE scaling fact, and
    the builder multiplies them by the rotary factor (except llama3/su/longrope scaling),
    so a RoPE-scaled model can warn here where the builder would not."""
    out = []
    seq_len = resolution.value("build_config.max_seq_len")
    positions = resolution.value("model.max_position_embeddings")
    streaming = resolution.value("plugin_config.streamingllm")
    if isinstance(seq_len, int) and isinstance(positions, int) and seq_len > positions:
        if not streaming:
            out.append(
                f"max_seq_len [{seq_len}] is above the model's max_position_embeddings "
                f"[{positions}]: the builder warns and builds it ({SEQ_LEN_SOURCE})"
            )
    tokens = resolution.value("build_config.max_num_tokens")
    if isinstance(tokens, int) and tokens > TOKEN_BUDGET_ADVISED:
        out.append(
            f"max_num_tokens [{tokens}] is above {TOKEN_BUDGET_ADVISED}, which the builder "
            f"does not recommend; it builds it ({TOKENS_SOURCE})"
        )
    return out


__all__ = ["builder_warnings", "runtime_warnings"]
