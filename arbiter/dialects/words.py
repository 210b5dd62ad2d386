"""An engine's own words for arbiter's options: the reverse of each dialect's map.

Each dialect maps the engine's keys onto arbiter's options (`arbiter/engines/<e>/map.py`;
MLC's is its `native.FIELDS` table); `Words` turns that around, once per pack
(`path_fields`), so that
every option path a report prints comes out as the key a user of that engine writes:
`build_config.max_batch_size` is `max-num-seqs` in a vLLM YAML, `--max-num-seqs` on a
`vllm serve` line, `max_running_requests` in SGLang, `max_batch_size` in TensorRT-LLM and
`max_num_sequence` in MLC. A key the input wrote is spelled as it was written (dashes or
underscores); any other key in the engine's own spelling (the registry entries that say
`dashes`, vLLM and SGLang, write dashes).

A path no engine key names is a fact (the model's, the device's) or an internal option;
`Words.name` then gives a named fact ("the model's max_position_embeddings") or the
option's description, never the internal path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from . import DIALECTS
from .protocol import Reading

# claim-name prefixes of the dialects (`vllm.max_num_seqs`, `llm_args.max_seq_len`, ...)
PREFIXES = {n: e.claim_prefix for n, e in DIALECTS.entries.items() if e.claim_prefix}
DASHED = tuple(n for n, e in DIALECTS.entries.items() if e.dashes)  # their keys take dashes

# facts as a user reads them (the model's config.json names, the device's)
FACTS = {
    "device.count": "GPUs",
    "device.memory_mib": "the GPU's memory (MiB)",
    "device.sm": "the GPU's compute capability (SM)",
    "device.nodes": "nodes",
    "device.host_memory_mib": "host memory (MiB)",
}
# internal paths as they may appear inside a rule's or a number's text
INTERNAL = re.compile(
    r"\b(?:build_config|plugin_config|vllm_config|sglang_config|kv_cache_config|"
    r"parallel_config|scheduler_config|runtime_config|speculative_config|quant_config|"
    r"cuda_graph_config|moe_config|attention_dp_config|memory_policy|model|device|"
    r"llm_args)\.[A-Za-z0-9_.]+"
)

# a claim named in a message: `vllm.max_num_seqs`, `llm_args.kv_cache_config.dtype`
CLAIM = re.compile(
    r"`(?:"
    + "|".join(re.escape(prefix.removesuffix(".")) for prefix in PREFIXES.values())
    + r")\.(?:default\.|derived\.)?([A-Za-z0-9_.]+)`"
)


@cache
def path_fields(dialect: str) -> Mapping[str, str]:
    """Option path -> the engine's field (dotted into a sub-config) that sets it: the
    pack's own map turned around (`option_fields()` of its `map`)."""
    if dialect not in DIALECTS:
        return {}
    return dict(DIALECTS.part(dialect, "map").option_fields())


@cache
def option_words(dialect: str) -> Mapping[str, str]:
    """Option path -> the words a report's text uses for an option the engine resolves a
    field into, where it shares the field's name with the field's own option (the pack's
    `map.OPTION_WORDS`; none elsewhere)."""
    from . import DIALECTS  # the registry: the pack's role modules, loaded on first use

    if dialect not in DIALECTS:
        return {}
    return dict(getattr(DIALECTS.part(dialect, "map"), "OPTION_WORDS", {}))


def _norm(key: str) -> str:
    return key.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Given:
    """One key of the input: as written, its value as written, and where."""

    key: str  # as written, without leading dashes
    value: Any
    flag: bool  # from a command line (`--key value`), not a YAML or JSON key
    line: int | None = None


@dataclass
class Words:
    """The engine's words for one reading: the keys it wrote and the pack's map."""

    dialect: str
    given: dict[str, Given] = field(default_factory=dict)  # normalized field -> as written
    dashed: bool = False
    source: str = "<input>"

    @classmethod
    def of(cls, dialect: str, reading: Reading | None, lines: Mapping[str, int] | None = None):
        """The words of `reading` (None: the engine's own spelling only)."""
        out = cls(dialect)
        if reading is None:
            out.dashed = dialect in DASHED
            return out
        out.source = reading.source
        flags = reading.source == "--serve-args"
        for key, value in (reading.given or {}).items():
            name = _norm(str(key))
            line = (lines or {}).get(str(key))
            out.given[name] = Given(str(key).lstrip("-"), value, flags, line)
        written = [g.key for g in out.given.values()]
        out.dashed = dialect in DASHED and (
            any("-" in k for k in written) or not any("_" in k for k in written)
        )
        return out

    def field_of(self, path: str) -> str | None:
        """The engine field (dotted) of an option path, or None."""
        return path_fields(self.dialect).get(path)

    def spell(self, name: str) -> str:
        """A field (dotted into a sub-config) in the input's spelling."""
        head, dot, sub = name.partition(".")
        g = self.given.get(head)
        if g is not None:
            return g.key + dot + sub
        return (head.replace("_", "-") if self.dashed else head) + dot + sub

    def key(self, path: str) -> str | None:
        """The engine key of an option path, spelled as the input spells it."""
        name = self.field_of(path)
        return None if name is None else self.spell(name)

    def given_for(self, name: str) -> Given | None:
        """What the input wrote for an engine field (its head key), if it wrote it."""
        return self.given.get(_norm(name.partition(".")[0]))

    def name(self, path: str) -> str:
        """A path as the engine's user reads it: its key, a named fact, or the option's
        description (never the internal path)."""
        found = self.key(path)
        if found is not None:
            return found
        if path in FACTS:
            return FACTS[path]
        if path.startswith("model."):
            return f"the model's {path.removeprefix('model.')}"
        return describe(path)

    def show(self, name: str, value: Any, *, flag: bool | None = None) -> str:
        """`key: value` (a config file) or `--key value` (a command line)."""
        use_flag = (self.given_for(name) or Given("", None, False)).flag if flag is None else flag
        shown = show_value(value)
        if use_flag:
            if value is True:
                return f"--{name}"
            return f"--{name} {shown}"
        return f"{name}: {shown}"

    def text(self, text: str) -> str:
        """`text` with every internal path in it named in the engine's words."""
        text = CLAIM.sub(lambda m: f"`{self.spell(m.group(1))}`", text)
        resolved = option_words(self.dialect)
        return INTERNAL.sub(lambda m: resolved.get(m.group(0)) or self.name(m.group(0)), text)

    @property
    def label(self) -> str:
        return DIALECTS.label(self.dialect) if self.dialect in DIALECTS else self.dialect


def describe(path: str) -> str:
    """An internal option named by its meaning (its schema description), or its leaf."""
    from constraints.errors import SchemaError  # the schema loads with a report
    from constraints.schema import lookup  # the schema loads with a report

    leaf = path.rpartition(".")[2]
    try:
        doc = lookup(path).description
    except (SchemaError, KeyError, AttributeError):
        return leaf
    doc = (doc or "").split(";")[0].split(" (")[0].rstrip(".").strip()
    if not doc:
        return leaf
    if not doc[1:2].isupper():  # "MoE ..." keeps its capital, "Draft ..." does not
        doc = doc[0].lower() + doc[1:]
    return f"{leaf} ({doc})"


def show_value(value: Any) -> str:
    """A value as an engine's YAML writes it (true, false, null)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


__all__ = ["FACTS", "Given", "INTERNAL", "PREFIXES", "Words", "describe", "path_fields"]
