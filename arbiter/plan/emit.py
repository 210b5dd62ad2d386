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
Each engine's writer is its pack's `plan` module (`arbiter/engines/<engine>/plan.py`) and
its profile the registry entry's `plan_profile`. The dialects are reached through one
call, `check_worker`, so they can move behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constraints.facts.memory import memory_terms

from ..dialects import DIALECTS
from .layout import Layout

# the profile each planned engine's configs are checked against (its registry entry's)
PROFILES = {name: e.plan_profile for name, e in DIALECTS.entries.items() if e.plan_profile}


def release(engine: str) -> str:
    """The engine release whose option spelling the emitted configs use ("vLLM 0.33")."""
    return str(DIALECTS.part(engine, "plan").RELEASE)


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
    return dict(DIALECTS.part(engine, "plan").worker_config(worker))


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
    terms = resolution.stats.get("memory_terms", "arbiter")
    held = memory_terms(terms).held_tokens(values)  # the KV manager's longer sequences
    return Checked(True, values, resolution.capacity, held, terms)


def _first(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[:4])[:600]
