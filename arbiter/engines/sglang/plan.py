"""SGLang in `arbiter plan`: the worker layouts it runs (all that AIConfigurator
enumerates), a priced worker written as its serve-argument YAML (SGLang 0.5 spelling:
`--attn-dp-size`, `--cuda-graph-max-bs-decode`; profile `sglang-0.5` on the registry
entry), and the settings of a disaggregated role."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...plan.emit import Worker
    from ...plan.layout import Layout

RELEASE = "SGLang 0.5 (0.5.23)"  # the release whose option spelling the emitted configs use
COLOUR = "#d62728"  # its line on the plan's chart
# the step loop's scheduling policy and whether prompts chunk by default (SGLang get_next_batch_to_run: prefill first; decodes join only with --enable-mixed-chunk)
STEP_POLICY = ("prefill-first", True)


def allows(layout: Layout) -> bool:
    """Every layout the oracle enumerates."""
    return True


def worker_config(w: Worker) -> dict[str, Any]:
    """The worker as SGLang server arguments (running requests and the prefill chunk over
    all attention-DP ranks)."""
    lay = w.layout
    config: dict[str, Any] = {"tp-size": lay.tp * lay.dp}
    if lay.pp > 1:
        config["pp-size"] = lay.pp
    if lay.dp > 1:
        # SGLang splits the running requests and the chunk over the attention-DP ranks
        config["attn-dp-size"] = lay.dp
    if lay.moe and (lay.moe_ep or 1) > 1:
        config["ep-size"] = lay.moe_ep
    config.update(
        {
            "max-running-requests": w.batch * lay.dp,
            "chunked-prefill-size": w.budget * lay.dp,
            "context-length": w.max_len,
            "cuda-graph-max-bs-decode": w.batch,
        }
    )
    if w.kv_dtype == "fp8":
        config["kv-cache-dtype"] = "fp8_e4m3"
    if w.nextn:
        # MTP through SGLang's EAGLE worker, a chain of k drafts (topk 1, k + 1 verified)
        config.update(
            {
                "speculative-algorithm": "EAGLE",
                "speculative-num-steps": w.nextn,
                "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": w.nextn + 1,
            }
        )
    return config


def role_config(config: dict[str, Any], role: str) -> dict[str, Any]:
    """A worker's config in a disaggregated role: `disaggregation-mode`; a prefill server
    decodes nothing, so it has no decode CUDA graphs."""
    config["disaggregation-mode"] = role
    if role == "prefill":
        config.pop("cuda-graph-max-bs-decode", None)
    return config
