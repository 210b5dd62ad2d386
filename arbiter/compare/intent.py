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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from constraints.specs import DeviceSpec, SpecError

from ..dialects import machine_claims
from ..dialects._base import DialectError, load_mapping
from .vocabulary import FEATURES, IntentError, IntentProblem, Lora, Speculative, unknown_keys

TOP_KEYS = ("model", "device", "gpus", "hard", "soft")
REPO = Path(__file__).resolve().parents[2]
MODEL_DIRS = (REPO / "examples" / "models", REPO / "tests" / "fixtures" / "models")


@dataclass(frozen=True)
class Intent:
    """What a user wants of any engine: features (`hard` must hold, `soft` may give way),
    the model (a config.json path, a config.json mapping, or None), the device (a catalog
    name or None), the GPUs available."""

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
    problems: list[IntentProblem] = []
    if not isinstance(data, Mapping):
        raise IntentError(
            [IntentProblem("<intent>", "expected a mapping", type(data).__name__)], source
        )
    unknown_keys(data, TOP_KEYS, "", problems)
    sections: dict[str, dict[str, Any]] = {"hard": {}, "soft": {}}
    for section in sections:
        given = data.get(section) or {}
        if not isinstance(given, Mapping):
            problems.append(IntentProblem(section, "expected a mapping of features", given))
            continue
        for name, value in given.items():
            path = f"{section}.{name}"
            feature = FEATURES.get(str(name))
            if feature is None:
                problems.append(
                    IntentProblem(
                        path,
                        "unknown feature",
                        None,
                        ", ".join(FEATURES),
                        tuple(difflib.get_close_matches(str(name), FEATURES, n=3)),
                    )
                )
                continue
            if name in data.get("hard", {}) and section == "soft":
                problems.append(IntentProblem(path, "a feature is either hard or soft, not both"))
                continue
            got = feature.check(value, path, problems)
            if got is not None:
                sections[section][str(name)] = got
    if not sections["hard"] and not sections["soft"] and not problems:
        problems.append(
            IntentProblem("hard", "the intent asks for no feature", None, ", ".join(FEATURES))
        )
    model = model if model is not None else data.get("model")
    found: str | dict[str, Any] | None = None
    if isinstance(model, Mapping):  # a config.json given inline (the HTTP service)
        found = dict(model)
    elif model is not None:
        located = model_path(str(model), base) if isinstance(model, (str, Path)) else None
        if located is None:
            problems.append(
                IntentProblem(
                    "model",
                    "no such config.json or bundled model",
                    model,
                    "a config.json path or one of " + ", ".join(bundled_models()),
                    tuple(difflib.get_close_matches(str(model), bundled_models(), n=3)),
                )
            )
        else:
            found = str(located)
    device = device if device is not None else data.get("device")
    if device is not None and not isinstance(device, str):
        problems.append(IntentProblem("device", "expected a catalog device name", device))
        device = None
    elif device is not None:
        device = _check_device(device, problems)
    gpus = gpus if gpus is not None else data.get("gpus", 1)
    if not (isinstance(gpus, int) and not isinstance(gpus, bool) and 1 <= gpus <= 1024):
        problems.append(IntentProblem("gpus", "bad value", gpus, "an integer from 1 to 1024"))
        gpus = 1
    if found is not None and not any(p.path == "model" for p in problems):
        _check_model(found, problems)
    if problems:
        raise IntentError(problems, source)
    return Intent(sections["hard"], sections["soft"], found, device, gpus, source)


def _check_model(model: str | dict[str, Any], problems: list[IntentProblem]) -> None:
    """A model the dialects cannot read is bad input, not an engine's conflict."""

    try:
        machine_claims(model)
    except DialectError as exc:
        where = f"model ({exc.key})" if exc.key else "model"
        problems.append(IntentProblem(where, f"cannot be read: {exc.reason}", exc.value))


def _check_device(name: str, problems: list[IntentProblem]) -> str | None:

    try:
        DeviceSpec.named(name)
    except SpecError as exc:
        problems.append(
            IntentProblem(
                "device", "unknown device", name, None, tuple(getattr(exc, "suggestions", ()))
            )
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
        raise IntentError(
            [IntentProblem(exc.key or "<file>", exc.reason, exc.value)], exc.file
        ) from None
    base = None if isinstance(source, Mapping) else Path(source).parent
    return parse_intent(data, source=where, base=base, model=model, device=device, gpus=gpus)


__all__ = [
    "FEATURES",
    "Intent",
    "IntentError",
    "Lora",
    "IntentProblem",
    "Speculative",
    "parse_intent",
    "read_intent",
]
