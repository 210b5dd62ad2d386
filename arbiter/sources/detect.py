"""Which dialect a config is written in, told from its content; and what else it may be.

`detect(source)` takes a mapping (a parsed config), a text (YAML, JSON, a command line
or a Kubernetes manifest) or a list of command-line words, and returns a `Detection`:

- `kind`: `engine-config` (a dialect's config), `serve-command` (a serve command line),
  `claims` (an `arbiter solve` claims file), `intent` (an `arbiter compare` intent),
  `grid` (an `arbiter sweep` grid), `model` (a Hugging Face `config.json`),
  `<engine>-engine` (a built engine's `config.json`, `trtllm-engine`: the keys its
  registry entry's `prebuilt` names), `manifest` (Kubernetes),
  `empty`, or `unknown`;
- `dialect`: the engine it is written for, or None (no evidence, or a tie: then
  `candidates` names the dialects that fit equally);
- `confidence` (0 to 1: the winner's share of the evidence) and `evidence`, the
  sentences that decided it.

How a config is scored, from each dialect's field list (`arbiter.sources.vocab`): a key
that `n` dialects know counts 1/n for each (a key only one dialect knows decides most);
a key no dialect knows counts 1/4 for the dialect whose name is closest to it (among
its keys, TensorRT-LLM's nested section fields written one level up and trtllm-serve's
options; a dashed key only for the engines whose keys take dashes). Only when the keys tie
do values speak: a value one dialect lists for the key, and another dialect's list for
the same key lacks, counts 1/10. A serve command is recognised by its launcher
(`arbiter.sources.command`); failing one, by its option names (`Vocabulary.flag`: a
serve command's own options, or the config fields of an engine whose flags they are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from constraints.edge import EdgeError, parse_json, parse_yaml

from ..dialects import DIALECTS as REGISTRY
from .command import find_serve_command, split_command_line
from .vocab import DIALECTS, ENGINES, LABELS, Vocabulary
from .vocab_data import vocabularies

KEY_WEIGHT = 1.0
ALIAS_WEIGHT = 0.5  # a key in a spelling the engine accepts but does not write itself
SECTION_WEIGHT = 0.5  # a nested mapping whose keys are those of the engine's section
CLOSE_WEIGHT = 0.25
VALUE_WEIGHT = 0.1
CLAIM_KINDS = ("func", "perf", "setup")
INTENT_KEYS = frozenset(("model", "device", "gpus", "hard", "soft"))
GRID_KEYS = frozenset(("profile", "models", "devices", "modes", "features", "pairs"))
MODEL_KEYS = ("architectures", "model_type", "num_hidden_layers", "num_attention_heads")
COMMANDS = {
    "engine-config": "arbiter check",
    "serve-command": "arbiter check --serve-args",
    "manifest": "arbiter check",
    "claims": "arbiter solve",
    "intent": "arbiter compare",
    "grid": "arbiter sweep",
}


@dataclass(frozen=True)
class Detection:
    """What a source looks like: its kind, the dialect (None: unknown or a tie among
    `candidates`), the winner's share of the evidence, and the evidence itself."""

    dialect: str | None
    confidence: float
    evidence: tuple[str, ...]
    kind: str = "engine-config"
    candidates: tuple[str, ...] = ()
    scores: Mapping[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """What it is, in words ("a `vllm serve` config")."""
        if self.kind in ("engine-config", "serve-command") and self.dialect is not None:
            if self.kind == "serve-command":
                return f"a {ENGINES[self.dialect]} serve command line"
            return LABELS[self.dialect]
        return KIND_LABELS.get(self.kind, "an unrecognised file")

    def __str__(self) -> str:
        if self.dialect is None and len(self.candidates) > 1:
            names = " or ".join(ENGINES[d] for d in self.candidates)
            head = f"could be {names} ({self.confidence:.0%} each)"
        else:
            head = f"{self.label} ({self.confidence:.0%})"
        return head + "".join(f"\n  - {e}" for e in self.evidence)


KIND_LABELS = {
    "claims": "an `arbiter solve` claims file",
    "intent": "an `arbiter compare` intent",
    "grid": "an `arbiter sweep` grid",
    "model": "a Hugging Face model config.json",
    **{f"{e.name}-engine": e.prebuilt_label for e in REGISTRY.entries.values() if e.prebuilt},
    "manifest": "a Kubernetes manifest",
    "empty": "an empty document",
    "unknown": "a document of no known kind",
    "engine-config": "an engine config of no known dialect",
    "serve-command": "a command line that starts no known engine",
}


PREBUILT_KINDS = frozenset(f"{e.name}-engine" for e in REGISTRY.entries.values() if e.prebuilt)
_DASHED = [ENGINES[d] for d in DIALECTS if REGISTRY.entries[d].dashes]
_UNDASHED = [ENGINES[d] for d in DIALECTS if not REGISTRY.entries[d].dashes]
DASHED = f"keys spelled with dashes: {' or '.join(_DASHED)} ({' and '.join(_UNDASHED)} take none)"


# --------------------------------------------------------------------------- entry
def detect(source: Mapping[str, Any] | Sequence[str] | str | Path) -> Detection:
    """What `source` is: a parsed mapping, command-line words, a text, or a file path."""
    if isinstance(source, Path):
        return detect_path(source)
    if isinstance(source, Mapping):
        return detect_mapping(source)
    if isinstance(source, str):
        return detect_text(source)
    if isinstance(source, Sequence):
        if all(isinstance(word, str) for word in source):
            return detect_argv(list(source))
        return detect_list(list(source))
    raise TypeError(f"cannot detect a {type(source).__name__}")


def detect_path(path: Path) -> Detection:
    """A file, or a folder holding a `config.json` (a model's or a built engine's). A file
    that cannot be read is `unknown`, with the reason; the reader of the file reports it."""
    from constraints.edge import read_text  # only a path is read here

    if path.is_dir():
        inner = path / "config.json"
        if not inner.is_file():
            return Detection(None, 0.0, (f"{path} is a folder without a config.json",), "unknown")
        found = detect_path(inner)
        return Detection(
            found.dialect,
            found.confidence,
            (f"a folder whose config.json is {found.label}", *found.evidence),
            found.kind,
            found.candidates,
            found.scores,
        )
    try:
        text = read_text(path)
    except (OSError, EdgeError) as exc:
        return Detection(None, 0.0, (f"cannot read {path}: {exc}",), "unknown")
    return detect_text(text, suffix=path.suffix)


def detect_text(text: str, suffix: str = "") -> Detection:
    """A text: a Kubernetes manifest, a YAML/JSON document, or a command line."""
    if not text.strip() or all(
        not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()
    ):
        return Detection(None, 0.0, ("the document holds nothing",), kind="empty")
    from .manifest import looks_like_manifest  # a manifest check only for texts

    if looks_like_manifest(text):
        return Detection(None, 1.0, ("apiVersion and kind of a Kubernetes object",), "manifest")
    data: Any = None
    try:
        data = parse_json(text) if suffix == ".json" else parse_yaml(text)
    except (EdgeError, ValueError, yaml.YAMLError):
        data = None
    if isinstance(data, Mapping):
        return detect_mapping(data)
    if isinstance(data, list):
        return detect_list(data)
    words = split_command_line(text)
    if words:
        return detect_argv(words)
    return Detection(None, 0.0, ("neither a YAML/JSON object nor a command line",), "unknown")


def detect_list(data: list[Any]) -> Detection:
    if data and all(isinstance(item, Mapping) and item.get("kind") in CLAIM_KINDS for item in data):
        return Detection(
            None, 1.0, (f"a list of {len(data)} claim(s) (kind: func/perf/setup)",), "claims"
        )
    return Detection(None, 0.0, ("a list, and no engine config is a list",), "unknown")


# --------------------------------------------------------------------------- mappings
def _other_kind(data: Mapping[str, Any]) -> Detection | None:
    claims = data.get("claims")
    if isinstance(claims, list):
        return Detection(None, 1.0, ("a top-level `claims` list",), "claims")
    keys = set(data)
    if {"hard", "soft"} & keys and keys <= INTENT_KEYS:
        return Detection(None, 1.0, ("`hard`/`soft` feature wishes: a compare intent",), "intent")
    if {"models", "devices", "features"} <= keys and keys <= GRID_KEYS:
        return Detection(None, 1.0, ("`models`, `devices` and `features`: a sweep grid",), "grid")
    for entry in REGISTRY.entries.values():
        if entry.prebuilt and set(entry.prebuilt) <= keys:
            shown = " beside ".join(f"`{k}`" for k in entry.prebuilt)
            return Detection(entry.name, 1.0, (f"{shown}: a built engine",), f"{entry.name}-engine")
    found = [k for k in MODEL_KEYS if k in keys]
    if len(found) >= 2:
        shown = ", ".join(f"`{k}`" for k in found)
        return Detection(None, 1.0, (f"{shown}: a model's config.json",), "model")
    return None


def detect_mapping(data: Mapping[str, Any]) -> Detection:
    """The dialect of a config mapping, or the other kind of file it is."""
    if not data:
        return Detection(None, 0.0, ("the document holds nothing",), kind="empty")
    other = _other_kind(data)
    if other is not None:
        return other
    vocab = vocabularies()
    scores = dict.fromkeys(DIALECTS, 0.0)
    evidence: list[str] = []
    known: dict[str, list[str]] = {}
    for key in data:
        if not isinstance(key, str):
            continue
        knowers = [d for d in DIALECTS if vocab[d].field_of(key) is not None]
        if knowers:
            known[key] = knowers
            _score_known(key, data[key], knowers, vocab, scores, evidence)
            continue
        _score_unknown(key, vocab, scores, evidence)
    if "-" in "".join(k for k in data if isinstance(k, str)):
        evidence.append(DASHED)
    tied = _tied(scores)
    if len(tied) > 1:
        _score_values(data, known, tied, vocab, scores, evidence)
    return _verdict(scores, evidence, "engine-config")


def _score_known(
    key: str,
    value: Any,
    knowers: list[str],
    vocab: Mapping[str, Vocabulary],
    scores: dict[str, float],
    evidence: list[str],
) -> None:
    native = [d for d in knowers if vocab[d].is_native(key)]
    for d in knowers:
        weight = KEY_WEIGHT if d in native else ALIAS_WEIGHT
        scores[d] += weight / len(knowers)
    names = " and ".join(ENGINES[d] for d in knowers)
    if len(knowers) == 1:
        evidence.append(f"`{key}` is a field of {names} only")
    elif native and len(native) < len(knowers):
        spelled = " and ".join(ENGINES[d] for d in native)
        evidence.append(f"`{key}` is a field of {names}, spelled this way by {spelled}")
    else:
        evidence.append(f"`{key}` is a field of {names}")
    if isinstance(value, Mapping) and value:
        for d in knowers:
            section = vocab[d].sections.get(str(vocab[d].field_of(key)))
            inside = [k for k in value if isinstance(k, str) and section and k in section]
            if inside:
                scores[d] += SECTION_WEIGHT
                shown = ", ".join(f"`{k}`" for k in inside[:3])
                evidence.append(f"`{key}` holds {shown}: keys of {ENGINES[d]}'s section")


def _score_unknown(
    key: str, vocab: Mapping[str, Vocabulary], scores: dict[str, float], evidence: list[str]
) -> None:
    dashed = "-" in key.strip().lstrip("-")
    near = {
        d: found
        for d in DIALECTS
        if (vocab[d].dashes or not dashed) and (found := vocab[d].close(key)) is not None
    }
    if not near:
        evidence.append(f"`{key}` is a field of no engine")
        return
    best = max(ratio for _, ratio in near.values())
    hits = [d for d in DIALECTS if d in near and near[d][1] >= best - 0.02]
    for d in hits:
        scores[d] += CLOSE_WEIGHT / len(hits)
    evidence.append(
        f"`{key}` is no field; closest: "
        + ", ".join(f"{ENGINES[d]}'s `{near[d][0]}`" for d in hits)
    )


def _score_values(
    data: Mapping[str, Any],
    known: Mapping[str, list[str]],
    tied: list[str],
    vocab: Mapping[str, Vocabulary],
    scores: dict[str, float],
    evidence: list[str],
) -> None:
    for key, knowers in known.items():
        among = [d for d in knowers if d in tied]
        if len(among) < 2:
            continue
        value = data[key]
        listed = {d: vocab[d].lists(str(vocab[d].field_of(key)), value) for d in among}
        for d in among:
            others_refuse = [o for o in among if o != d and listed[o] is False]
            if listed[d] and others_refuse:
                scores[d] += VALUE_WEIGHT
                evidence.append(
                    f"`{key}: {value}` is a value {ENGINES[d]} lists and "
                    + ", ".join(ENGINES[o] for o in others_refuse)
                    + " does not"
                )


def _tied(scores: Mapping[str, float]) -> list[str]:
    top = max(scores.values())
    if top <= 0:
        return []
    return [d for d in DIALECTS if abs(scores[d] - top) < 1e-9]


def _verdict(scores: dict[str, float], evidence: list[str], kind: str) -> Detection:
    total = sum(scores.values())
    tied = _tied(scores)
    rounded = {d: round(s, 3) for d, s in scores.items() if s > 0}
    if not tied:
        return Detection(None, 0.0, tuple(evidence), kind, scores=rounded)
    share = round(scores[tied[0]] / total, 3)
    if len(tied) > 1:
        return Detection(None, share, tuple(evidence), kind, tuple(tied), rounded)
    ranked = tuple(sorted((d for d in scores if scores[d] > 0), key=lambda d: -scores[d]))
    return Detection(tied[0], share, tuple(evidence), kind, ranked, rounded)


# --------------------------------------------------------------------------- commands
def detect_argv(words: list[str]) -> Detection:
    """A command line: its launcher names the engine; failing one, its option names."""
    command = find_serve_command(words)
    if command is not None:
        return Detection(
            command.dialect,
            1.0,
            (f"the launcher `{' '.join(command.program)}`",),
            "serve-command",
            (command.dialect,),
            {command.dialect: 1.0},
        )
    flags = [w.partition("=")[0] for w in words if w.startswith("--")]
    if not flags:
        return Detection(None, 0.0, ("no launcher and no --options",), "unknown")
    vocab = vocabularies()
    scores = dict.fromkeys(DIALECTS, 0.0)
    evidence: list[str] = []
    for flag in flags:
        spoken = {d: vocab[d].flag(flag) for d in DIALECTS}
        knowers = [d for d in DIALECTS if spoken[d] is not None]
        for d in knowers:
            scores[d] += (KEY_WEIGHT if spoken[d] else ALIAS_WEIGHT) / len(knowers)
        if len(knowers) == 1:
            evidence.append(f"`{flag}` is an option of {ENGINES[knowers[0]]} only")
        elif not knowers:
            evidence.append(f"`{flag}` is an option of no engine")
    return _verdict(scores, evidence, "serve-command")


# --------------------------------------------------------------------------- messages
def mismatch_message(detection: Detection, dialect: str) -> str | None:
    """The sentence to print when a source checked as `dialect` looks like another one
    ("this looks like a `vllm serve` config: --dialect vllm"), or None when it does not
    (it fits `dialect`, or a tie includes it, or nothing is known)."""
    if detection.kind not in ("engine-config", "serve-command"):
        return None
    if detection.dialect is None or detection.dialect == dialect:
        return None
    return f"this looks like {detection.label}: --dialect {detection.dialect}"


def command_message(detection: Detection, command: str) -> str | None:
    """The sentence to print when `command` (`check`, `solve`, `compare`, `sweep`) got a
    file of another kind ("an engine config: use `arbiter check`"), or None."""
    wanted = {
        "check": ("engine-config", "serve-command", "manifest"),
        "solve": ("claims",),
        "explain": ("claims",),
        "compare": ("intent",),
        "sweep": ("grid",),
    }
    kind = detection.kind
    if kind in wanted.get(command, ()) or kind in ("empty", "unknown"):
        return None
    if kind == "engine-config" and detection.dialect is None and not detection.candidates:
        return None
    if kind == "model":
        return f"{detection.label}: pass it as `--model`"
    if kind in PREBUILT_KINDS:
        return f"{detection.label}: pass its folder as `arbiter check --engine`"
    what = "an engine config" if kind == "engine-config" else detection.label
    if kind == "engine-config" and detection.dialect is not None:
        what = f"an engine config ({LABELS[detection.dialect]})"
    return f"{what}: use `{COMMANDS[kind]}`"


def dialect_hint(detection: Detection) -> str | None:
    """For a source checked without `--dialect`: what to pass, when detection could not
    decide ("could be vLLM or SGLang: pass --dialect vllm or --dialect sglang")."""
    if detection.dialect is not None or not detection.candidates:
        return None
    names = " or ".join(ENGINES[d] for d in detection.candidates)
    flags = " or ".join(f"--dialect {d}" for d in detection.candidates)
    return f"could be {names}: pass {flags}"
