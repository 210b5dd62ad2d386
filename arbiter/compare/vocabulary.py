"""The engine-neutral vocabulary: the features an intent may name, the domain of each
value, and the problems a bad value is reported as (all of them at once, in an
`IntentError`).

Features: prefix_caching, chunked_prefill, speculative {kind, draft_tokens, draft_model},
fp8_kv, lora {max_rank, adapters}, context_length, batch, token_budget, tensor_parallel,
pipeline_parallel, expert_parallel, attention_dp, cuda_graphs, kv_page_size,
kv_memory_share (docs/engines.md, "Engine-neutral claim vocabulary", maps each onto the
engines' options).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidClaim

SPECULATIVE_KINDS = ("ngram", "eagle3", "mtp", "draft_model")
MAX_DRAFT_TOKENS = 64


@dataclass(frozen=True)
class IntentProblem:
    """One thing wrong with an intent: where (`path`), what, the value, the domain."""

    path: str
    reason: str
    value: Any = None
    allowed: str | None = None
    suggestions: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.path}: {self.reason}"
        if self.value is not None:
            text += f" (got {self.value!r})"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


class IntentError(InvalidClaim):
    """An intent that cannot be compared: every problem at once (`problems`)."""

    def __init__(self, problems: list[IntentProblem], file: str | None = None):
        super().__init__(
            f"{len(problems)} problem(s) in the intent",
            path=problems[0].path if problems else None,
            value=problems[0].value if problems else None,
        )
        self.problems = tuple(problems)
        self.file = file

    def __str__(self) -> str:
        head = f"{self.file or '<intent>'}: {len(self.problems)} problem(s) in the intent"
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


# ------------------------------------------------------------------------ value domains
def _bool(value: Any) -> tuple[Any, str | None]:
    return (value, None) if isinstance(value, bool) else (None, "true or false")


def _positive(limit: int) -> Callable[[Any], tuple[Any, str | None]]:
    def check(value: Any) -> tuple[Any, str | None]:
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= limit:
            return value, None
        return None, f"an integer from 1 to {limit}"

    return check


def _fraction(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return round(float(value), 3), None
    return None, "a number above 0 and at most 1"


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding of one kind with `draft_tokens` tokens per step."""

    kind: str
    draft_tokens: int
    draft_model: str | None = None


@dataclass(frozen=True)
class Lora:
    """LoRA adapters up to `max_rank`, `adapters` of them in one batch."""

    max_rank: int
    adapters: int


def _speculative(value: Any, path: str, problems: list[IntentProblem]) -> Speculative | None:
    if not isinstance(value, Mapping):
        problems.append(
            IntentProblem(path, "expected a mapping", value, "{kind, draft_tokens, draft_model}")
        )
        return None
    unknown_keys(value, ("kind", "draft_tokens", "draft_model"), path, problems)
    kind = value.get("kind")
    if kind not in SPECULATIVE_KINDS:
        problems.append(
            IntentProblem(
                f"{path}.kind",
                "unknown speculative kind" if kind is not None else "missing",
                kind,
                ", ".join(SPECULATIVE_KINDS),
                tuple(difflib.get_close_matches(str(kind), SPECULATIVE_KINDS, n=2)),
            )
        )
    tokens, allowed = _positive(MAX_DRAFT_TOKENS)(value.get("draft_tokens"))
    if allowed:
        problems.append(
            IntentProblem(f"{path}.draft_tokens", "bad value", value.get("draft_tokens"), allowed)
        )
    draft = value.get("draft_model")
    if draft is not None and (not isinstance(draft, str) or not draft.strip()):
        problems.append(
            IntentProblem(f"{path}.draft_model", "bad value", draft, "a path or hub id")
        )
        draft = None
    if kind in ("ngram", "mtp") and draft is not None:
        problems.append(
            IntentProblem(f"{path}.draft_model", f"{kind} takes no draft model", draft, "no value")
        )
    if kind in ("eagle3", "draft_model") and draft is None:
        problems.append(
            IntentProblem(
                f"{path}.draft_model", f"{kind} needs a draft model", None, "a path or hub id"
            )
        )
    if (
        kind not in SPECULATIVE_KINDS
        or allowed
        or (kind in ("eagle3", "draft_model") and not draft)
    ):
        return None
    return Speculative(kind, tokens, draft)


def _lora(value: Any, path: str, problems: list[IntentProblem]) -> Lora | None:
    if not isinstance(value, Mapping):
        problems.append(IntentProblem(path, "expected a mapping", value, "{max_rank, adapters}"))
        return None
    unknown_keys(value, ("max_rank", "adapters"), path, problems)
    found = {}
    for key, limit in (("max_rank", 1024), ("adapters", 4096)):
        got, allowed = _positive(limit)(value.get(key))
        if allowed:
            problems.append(IntentProblem(f"{path}.{key}", "bad value", value.get(key), allowed))
        found[key] = got
    if None in found.values():
        return None
    return Lora(**found)


@dataclass(frozen=True)
class Feature:
    """One word of the vocabulary: its name, what it means, and its value's domain."""

    name: str
    meaning: str
    domain: str
    check: Callable[[Any, str, list[IntentProblem]], Any]


def _simple(check: Callable[[Any], tuple[Any, str | None]]) -> Callable[..., Any]:
    def run(value: Any, path: str, problems: list[IntentProblem]) -> Any:
        got, allowed = check(value)
        if allowed:
            problems.append(IntentProblem(path, "bad value", value, allowed))
        return got

    return run


def _features() -> dict[str, Feature]:
    flag, count = _simple(_bool), _simple(_positive(1 << 24))
    small = _simple(_positive(1024))
    rows = (
        ("prefix_caching", "reuse the KV cache of shared prompt prefixes", "bool", flag),
        ("chunked_prefill", "split long prompts into chunks mixed with decoding", "bool", flag),
        (
            "speculative",
            "speculative decoding of a kind",
            "{kind, draft_tokens, draft_model}",
            _speculative,
        ),
        ("fp8_kv", "store the KV cache in FP8", "bool", flag),
        ("lora", "serve LoRA adapters", "{max_rank, adapters}", _lora),
        ("context_length", "longest sequence (prompt + output), tokens", "int >= 1", count),
        ("batch", "most sequences in flight", "int >= 1", count),
        ("token_budget", "most tokens in one step (prefill budget)", "int >= 1", count),
        ("tensor_parallel", "tensor-parallel size", "int >= 1", small),
        ("pipeline_parallel", "pipeline-parallel size", "int >= 1", small),
        ("expert_parallel", "expert-parallel size (MoE)", "int >= 1", small),
        ("attention_dp", "data-parallel attention across the tensor-parallel ranks", "bool", flag),
        ("cuda_graphs", "CUDA graphs on (true) or off (false)", "bool", flag),
        ("kv_page_size", "tokens per KV page (block)", "int >= 1", small),
        (
            "kv_memory_share",
            "the engine's memory fraction option (each engine reads it its own way)",
            "0 < x <= 1",
            _simple(_fraction),
        ),
    )
    return {name: Feature(name, meaning, domain, check) for name, meaning, domain, check in rows}


FEATURES: dict[str, Feature] = _features()


def unknown_keys(
    data: Mapping[str, Any], known: tuple[str, ...], path: str, problems: list[IntentProblem]
) -> None:
    for key in data:
        if key not in known:
            problems.append(
                IntentProblem(
                    f"{path}.{key}" if path else str(key),
                    "unknown key",
                    None,
                    ", ".join(known),
                    tuple(difflib.get_close_matches(str(key), known, n=3)),
                )
            )


__all__ = [
    "FEATURES",
    "SPECULATIVE_KINDS",
    "Feature",
    "IntentError",
    "Lora",
    "IntentProblem",
    "Speculative",
    "unknown_keys",
]
