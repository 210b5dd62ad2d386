"""The engine-neutral intent: a small vocabulary of features, each hard or soft.

An intent file (YAML or JSON) names the model, the device and the GPU count, and the
features wanted, in two sections: `hard` (must hold, like a func claim) and `soft` (a
wish that may give way, like a perf claim):

    model: llama-3.1-8b          # a config.json path (relative to the file) or a fixture name
    device: H100-80GB
    gpus: 1
    hard:
      context_length: 8192
      prefix_caching: true
    soft:
      fp8_kv: true
      speculative: {kind: ngram, draft_tokens: 4}

`read_intent()` checks it all at once: every unknown feature (with close matches) and
every bad value (its path and the allowed domain) go into one `IntentError`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dialects._base import DialectError, load_mapping
from ..errors import InvalidClaim

SPECULATIVE_KINDS = ("ngram", "eagle3", "mtp", "draft_model")
MAX_DRAFT_TOKENS = 64
TOP_KEYS = ("model", "device", "gpus", "hard", "soft")
REPO = Path(__file__).resolve().parents[2]
MODEL_DIRS = (REPO / "examples" / "models", REPO / "tests" / "fixtures" / "models")


@dataclass(frozen=True)
class Problem:
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

    def __init__(self, problems: list[Problem], file: str | None = None):
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


def _speculative(value: Any, path: str, problems: list[Problem]) -> Speculative | None:
    if not isinstance(value, Mapping):
        problems.append(
            Problem(path, "expected a mapping", value, "{kind, draft_tokens, draft_model}")
        )
        return None
    _unknown_keys(value, ("kind", "draft_tokens", "draft_model"), path, problems)
    kind = value.get("kind")
    if kind not in SPECULATIVE_KINDS:
        problems.append(
            Problem(
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
            Problem(f"{path}.draft_tokens", "bad value", value.get("draft_tokens"), allowed)
        )
    draft = value.get("draft_model")
    if draft is not None and (not isinstance(draft, str) or not draft.strip()):
        problems.append(Problem(f"{path}.draft_model", "bad value", draft, "a path or hub id"))
        draft = None
    if kind in ("eagle3", "draft_model") and draft is None:
        problems.append(
            Problem(f"{path}.draft_model", f"{kind} needs a draft model", None, "a path or hub id")
        )
    if (
        kind not in SPECULATIVE_KINDS
        or allowed
        or (kind in ("eagle3", "draft_model") and not draft)
    ):
        return None
    return Speculative(kind, tokens, draft)


def _lora(value: Any, path: str, problems: list[Problem]) -> Lora | None:
    if not isinstance(value, Mapping):
        problems.append(Problem(path, "expected a mapping", value, "{max_rank, adapters}"))
        return None
    _unknown_keys(value, ("max_rank", "adapters"), path, problems)
    found = {}
    for key, limit in (("max_rank", 1024), ("adapters", 4096)):
        got, allowed = _positive(limit)(value.get(key))
        if allowed:
            problems.append(Problem(f"{path}.{key}", "bad value", value.get(key), allowed))
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
    check: Callable[[Any, str, list[Problem]], Any]


def _simple(check: Callable[[Any], tuple[Any, str | None]]) -> Callable[..., Any]:
    def run(value: Any, path: str, problems: list[Problem]) -> Any:
        got, allowed = check(value)
        if allowed:
            problems.append(Problem(path, "bad value", value, allowed))
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


def _unknown_keys(
    data: Mapping[str, Any], known: tuple[str, ...], path: str, problems: list[Problem]
) -> None:
    for key in data:
        if key not in known:
            problems.append(
                Problem(
                    f"{path}.{key}" if path else str(key),
                    "unknown key",
                    None,
                    ", ".join(known),
                    tuple(difflib.get_close_matches(str(key), known, n=3)),
                )
            )


@dataclass(frozen=True)
class Intent:
    """What a user wants of any engine: features (`hard` must hold, `soft` may give way),
    the model (a config.json path, a config.json mapping, or None), the device (a catalog name or None), GPUs."""

    hard: Mapping[str, Any] = field(default_factory=dict)
    soft: Mapping[str, Any] = field(default_factory=dict)
    model: str | dict[str, Any] | None = None
    device: str | None = None
    gpus: int = 1
    source: str = "<intent>"

    @property
    def features(self) -> dict[str, Any]:
        """Every feature asked for, hard and soft, in the intent's order."""
        return {**self.hard, **self.soft}

    def strength(self, name: str) -> str:
        return "hard" if name in self.hard else "soft"

    def to_json(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, (Speculative, Lora)):
                return {k: v for k, v in value.__dict__.items() if v is not None}
            return value

        model: Any = self.model
        if isinstance(model, dict):
            model = "(config.json given)"
        elif model is not None and Path(model).is_relative_to(Path.cwd()):
            model = str(Path(model).relative_to(Path.cwd()))
        return {
            "model": model,
            "device": self.device,
            "gpus": self.gpus,
            "hard": {k: plain(v) for k, v in self.hard.items()},
            "soft": {k: plain(v) for k, v in self.soft.items()},
        }


def model_path(name: str, base: Path | None = None) -> Path | None:
    """A model given as a path (relative to `base`, then the working folder) or as the
    name of a bundled config (examples/models, tests/fixtures/models)."""
    candidates = [Path(name)]
    if base is not None and not Path(name).is_absolute():
        candidates.insert(0, base / name)
    candidates += [folder / f"{name}.json" for folder in MODEL_DIRS]
    for path in candidates:
        if path.is_file() or (path.is_dir() and (path / "config.json").is_file()):
            return path
    return None


def bundled_models() -> tuple[str, ...]:
    return tuple(sorted({p.stem for d in MODEL_DIRS if d.is_dir() for p in d.glob("*.json")}))


def parse_intent(
    data: Mapping[str, Any],
    *,
    source: str = "<intent>",
    base: Path | None = None,
    model: str | Mapping[str, Any] | None = None,
    device: str | None = None,
    gpus: int | None = None,
) -> Intent:
    """An `Intent` from a parsed mapping; `model`, `device`, `gpus` override the file's.
    Raises `IntentError` naming every problem."""
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        raise IntentError([Problem("<intent>", "expected a mapping", type(data).__name__)], source)
    _unknown_keys(data, TOP_KEYS, "", problems)
    sections: dict[str, dict[str, Any]] = {"hard": {}, "soft": {}}
    for section in sections:
        given = data.get(section) or {}
        if not isinstance(given, Mapping):
            problems.append(Problem(section, "expected a mapping of features", given))
            continue
        for name, value in given.items():
            path = f"{section}.{name}"
            feature = FEATURES.get(str(name))
            if feature is None:
                problems.append(
                    Problem(
                        path,
                        "unknown feature",
                        None,
                        ", ".join(FEATURES),
                        tuple(difflib.get_close_matches(str(name), FEATURES, n=3)),
                    )
                )
                continue
            if name in data.get("hard", {}) and section == "soft":
                problems.append(Problem(path, "a feature is either hard or soft, not both"))
                continue
            got = feature.check(value, path, problems)
            if got is not None:
                sections[section][str(name)] = got
    if not sections["hard"] and not sections["soft"] and not problems:
        problems.append(
            Problem("hard", "the intent asks for no feature", None, ", ".join(FEATURES))
        )
    model = model if model is not None else data.get("model")
    found: str | dict[str, Any] | None = None
    if isinstance(model, Mapping):  # a config.json given inline (the HTTP service)
        found = dict(model)
    elif model is not None:
        path = model_path(str(model), base) if isinstance(model, (str, Path)) else None
        if path is None:
            problems.append(
                Problem(
                    "model",
                    "no such config.json or bundled model",
                    model,
                    "a config.json path or one of " + ", ".join(bundled_models()),
                    tuple(difflib.get_close_matches(str(model), bundled_models(), n=3)),
                )
            )
        else:
            found = str(path)
    device = device if device is not None else data.get("device")
    if device is not None and not isinstance(device, str):
        problems.append(Problem("device", "expected a catalog device name", device))
        device = None
    elif device is not None:
        device = _check_device(device, problems)
    gpus = gpus if gpus is not None else data.get("gpus", 1)
    if not (isinstance(gpus, int) and not isinstance(gpus, bool) and 1 <= gpus <= 1024):
        problems.append(Problem("gpus", "bad value", gpus, "an integer from 1 to 1024"))
        gpus = 1
    if problems:
        raise IntentError(problems, source)
    return Intent(sections["hard"], sections["soft"], found, device, gpus, source)


def _check_device(name: str, problems: list[Problem]) -> str | None:
    from constraints.specs import DeviceSpec, SpecError

    try:
        DeviceSpec.named(name)
    except SpecError as exc:
        problems.append(
            Problem("device", "unknown device", name, None, tuple(getattr(exc, "suggestions", ())))
        )
        return None
    return name


def read_intent(
    source: str | Path | Mapping[str, Any],
    *,
    model: str | None = None,
    device: str | None = None,
    gpus: int | None = None,
) -> Intent:
    """An `Intent` from a YAML/JSON file or a mapping (see the module docstring)."""
    try:
        data, where = load_mapping(
            dict(source) if isinstance(source, Mapping) else source, "intent"
        )
    except DialectError as exc:
        raise IntentError([Problem(exc.key or "<file>", exc.reason, exc.value)], exc.file) from None
    base = None if isinstance(source, Mapping) else Path(source).parent
    return parse_intent(data, source=where, base=base, model=model, device=device, gpus=gpus)


__all__ = [
    "FEATURES",
    "SPECULATIVE_KINDS",
    "Feature",
    "Intent",
    "IntentError",
    "Lora",
    "Problem",
    "Speculative",
    "parse_intent",
    "read_intent",
]
