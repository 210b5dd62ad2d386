"""What the plan emits: each worker's configuration in its engine's own format (vLLM and
SGLang serve-argument YAML, TensorRT-LLM `extra_llm_api_options` YAML) for a priced point,
and the `arbiter check` of it through the dialects.

The served limits are the priced ones: max batch / `max-num-seqs` / `max-running-requests`
equal to the planned batch, the token budget to `max-num-batched-tokens` /
`chunked-prefill-size` / `max_num_tokens`, `max-model-len` / `context-length` /
`max_seq_len` to ISL + OSL, CUDA-graph batch sizes capped at the batch, the MTP draft depth as each engine spells it
(vLLM `speculative-config` method `mtp`, SGLang's EAGLE chain with top-k 1, TensorRT-LLM
`decoding_type: MTP`); the option names are
those of the profiles' releases (SGLang 0.5: `--attn-dp-size`, `--cuda-graph-max-bs-decode`).
The dialects are reached through one call, `check_worker`, so they can move behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .layout import Layout

PROFILES = {"trtllm": "trtllm-1.2", "vllm": "vllm-0.33", "sglang": "sglang-0.5"}
# the engine releases whose option spelling the emitted configs use (arbiter's profiles)
RELEASES = {"trtllm": "TensorRT-LLM 1.2", "vllm": "vLLM 0.33", "sglang": "SGLang 0.5 (0.5.23)"}


@dataclass(frozen=True)
class Worker:
    """One worker as it is priced and served: layout, batch per attention-DP rank, token
    budget per step, KV dtype, longest sequence."""

    layout: Layout
    batch: int
    budget: int
    kv_dtype: str
    max_len: int
    nextn: int = 0  # MTP draft tokens per step (0: no speculative decoding)
    draft_accept: float | None = None  # accepted draft tokens per step it is priced with

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "layout": self.layout.to_json(),
            "batch": self.batch,
            "token_budget": self.budget,
            "kv_dtype": self.kv_dtype,
            "max_len": self.max_len,
            "draft_tokens": self.nextn,
        }
        if self.nextn:
            out["draft_accepted_per_step"] = self.draft_accept
        return out


def worker_config(engine: str, worker: Worker) -> dict[str, Any]:
    """The worker's configuration in the engine's own format (a mapping for its YAML)."""
    if engine == "vllm":
        return _vllm(worker)
    if engine == "sglang":
        return _sglang(worker)
    return _trtllm(worker)


def _vllm(w: Worker) -> dict[str, Any]:
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


def _sglang(w: Worker) -> dict[str, Any]:
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


def _trtllm(w: Worker) -> dict[str, Any]:
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


@dataclass(frozen=True)
class Checked:
    """`arbiter check` of one emitted worker config: accepted or not, with the solved
    values (for arbiter's memory model) or the refusal in words."""

    accepted: bool
    values: dict[str, Any]
    capacity: Any
    held: tuple[int, str] | None
    terms: str
    reason: str = ""
    memory: str = ""  # the memory arithmetic of a refusal, when memory is what binds


def check_worker(
    engine: str, config: dict[str, Any], model: Path, device: str, gpus: int
) -> Checked:
    """Run `arbiter check` on an emitted config for the engine's profile: the one check
    pipeline, so a config the engine would refuse (a conflict, a kept default it refuses
    with, its own validator) is refused here too."""
    from constraints.engines.trtllm.rules.kv_cache import (
        kv_sequence_tokens,  # with the dialects, below
    )

    from ..application.check import check_verdict  # the dialects and the solver: only to check
    from ..errors import ArbiterError, MemoryConflictError  # loaded with them

    try:
        verdict = check_verdict(
            dict(config),
            engine,
            model=model,
            device=device,
            gpus=gpus,
            profile=PROFILES[engine],
            words=False,  # the refusal and its memory arithmetic, without the fix search
        )
    except ArbiterError as exc:
        return Checked(False, {}, None, None, "", _first(str(exc)))
    if verdict.verdict == "reject" or verdict.resolution is None:
        conflict = verdict.conflict
        memory = conflict.memory or "" if isinstance(conflict, MemoryConflictError) else ""
        reason = (
            _first(str(conflict)) if conflict is not None else _first("; ".join(verdict.reasons))
        )
        return Checked(False, {}, None, None, "", reason, memory)
    resolution = verdict.resolution
    values = dict(resolution.values)
    held = None
    if resolution.stats.get("engine", "trtllm") == "trtllm" and "runtime_config.backend" in values:
        held = kv_sequence_tokens(values)
    terms = resolution.stats.get("memory_terms", "arbiter")
    return Checked(True, values, resolution.capacity, held, terms)


def _first(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[:4])[:600]
