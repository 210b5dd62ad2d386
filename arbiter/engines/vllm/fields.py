"""Reading `vllm serve` arguments the way vLLM 0.33's parser reads them.

Input is the `--config` YAML form (a mapping of long option names) and/or a command line;
the result is one `Given` per field of the release (`vllm-0.33` field list), or a
`VllmArgErrors` naming every unknown key and bad value at once. What this follows
(vllm-project/vllm v0.33.0):

- `FlexibleArgumentParser` (vllm/utils/argparse_utils.py): a key is a long option name
  with dashes or underscores; a YAML `key: true` on a boolean field is `--key`; a `no-key:
  true` key is the negation; the command line wins over the `--config` file. A YAML `key:
  false` is dropped by 0.24.0's `load_config_file` (it passes a boolean only when true);
  0.33.0's turns it into `--no-<key>` where the parser has that option string for the key
  as written (`enable-prefix-caching: false` -> `--no-enable-prefix-caching`), and drops
  it otherwise (`enable_prefix_caching: false`: no `--no-enable_prefix_caching`). A
  dropped `false` leaves the field at its default, with a warning (`ignored_false`).
- `human_readable_int` for max_num_batched_tokens, kv_cache_memory_bytes and the other
  token counts (`1k` = 1000, `1K` = 1024, no decimals with a binary suffix);
  `human_readable_int_or_auto` for max_model_len (also `-1` / `auto`: derived).
- sub-configs (`compilation_config`, `speculative_config`, `eplb_config`, ...) take a
  JSON string or a mapping; a dotted key (`attention-config.backend`) sets one of their
  fields; a sub-config with a known field list (its default) refuses other keys, as
  vLLM's config dataclasses forbid extra fields.
- values against the engine's domains: `choices` of the field list (argparse), the
  kv_cache_dtype literals (`CacheConfig`), the quantization methods
  (`QUANTIZATION_METHODS`), gpu_memory_utilization in (0, 1] (`CacheConfig`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from constraints.engines.vllm.schema import VLLM_QUANTIZATION_METHODS

from ...dialects._base import InputProblems, KeyProblem
from ...dialects.surface import Field, Surface, field_list_path, load_surface, surface_names

SURFACE = "vllm-0.33"  # the default release line's field list
# the release line being read (`release_line`): its field list decides every key
_LINE: ContextVar[str] = ContextVar("vllm_release_line", default=SURFACE)
HUMAN_INTS = {
    "max_num_batched_tokens",
    "max_num_scheduled_tokens",
    "kv_cache_memory_bytes",
    "safetensors_prefetch_block_size",
    "max_num_queued_tokens",
}
# vllm/model_executor/layers/quantization/__init__.py QuantizationMethods (v0.33.0)
# the schema's list of the option's values less its "none" (flag not given)
QUANTIZATION_METHODS = VLLM_QUANTIZATION_METHODS[1:]


class VllmArgErrors(InputProblems):
    """Every unknown key and bad value of a vLLM argument set, named at once."""

    unknown = "unknown"

    def __init__(self, problems: list[KeyProblem], *, file: str | None = None):
        super().__init__(problems, file=file, against=f"vllm serve {surface().release}")


@dataclass
class Given:
    """One field the input sets: its value as vLLM reads it, and how it was written."""

    field: str
    value: Any
    key: str  # the key as written (the last spelling that set it)
    raw: Any  # the value as written
    negated: bool = False  # written as `no-<field>: true`
    subkeys: dict[str, Any] = dataclasses.field(
        default_factory=dict
    )  # dotted keys into a sub-config


def surface() -> Surface:
    """The field list of the release line being read (`release_line`; vllm-0.33 else)."""
    return load_surface(_LINE.get())


@contextmanager
def release_line(profile: str) -> Iterator[str]:
    """Read, write and judge against `profile`'s own field list (`vllm-0.24`,
    `vllm-0.33`): the profile's when its release has one, the default line's otherwise."""
    name = profile if field_list_path(profile).is_file() else SURFACE
    token = _LINE.set(name)
    try:
        yield name
    finally:
        _LINE.reset(token)


def other_releases(head: str) -> tuple[str, ...]:
    """The other vLLM release lines whose field lists know `head` (a renamed, added or
    removed flag), newest first."""
    found = []
    for name in surface_names():
        if name.startswith("vllm-") and name != _LINE.get():
            if load_surface(name).resolve(head) is not None:
                found.append(name)
    return tuple(sorted(found, key=lambda n: [int(x) for x in n[5:].split(".")], reverse=True))


def literals(type_text: str) -> tuple[str, ...]:
    """The string literals of a `Literal[...]` type as the field list spells it."""
    match = re.search(r"Literal\[(.*?)\]", type_text)
    return tuple(re.findall(r"'([^']*)'", match.group(1))) if match else ()


def human_int(text: str) -> int:
    """vLLM's `human_readable_int`: `25.6k` = 25600, `4K` = 4096; ValueError otherwise."""
    text = text.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text)
    if match:
        number, suffix = match.groups()
        if suffix.islower():
            return int(float(number) * 10 ** {"k": 3, "m": 6, "g": 9, "t": 12}[suffix])
        if "." in number:
            raise ValueError(f"decimals are not allowed with the binary suffix {suffix}")
        return int(number) * 2 ** {"K": 10, "M": 20, "G": 30, "T": 40}[suffix]
    return _whole(text)


def _whole(raw: Any) -> int:
    """An integer as vLLM's argparse `int` reads it; the refusal in words, not Python's."""
    try:
        return int(raw)
    except ValueError:
        raise ValueError("expected an integer (e.g. 8)") from None


def _number(raw: Any) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ValueError("expected a number (e.g. 0.9)") from None


def _is_int_type(f: Field) -> bool:
    return bool(re.fullmatch(r"int( \| None)?", f.type.replace("Optional[int]", "int | None")))


def _parse_value(f: Field, raw: Any) -> Any:
    """The value of one field as vLLM's parser and config classes read it (ValueError
    with the reason when they refuse it)."""
    name = f.name
    value: Any
    if raw is None:
        return None
    if f.is_bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise ValueError("expected true or false")
    if name == "max_model_len":
        text = str(raw).strip()
        if text in ("-1", "auto"):
            return None  # derived from the model
        value = human_int(text)
    elif name in HUMAN_INTS:
        value = human_int(str(raw)) if not isinstance(raw, int) else raw
    elif _is_int_type(f):
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise ValueError("expected an integer")
        value = _whole(raw)
    elif f.type == "float":
        if isinstance(raw, bool):
            raise ValueError("expected a number")
        value = _number(raw)
    elif isinstance(f.default, dict) or "dict" in f.type or "Config" in f.type:
        value = _mapping(raw)
    else:
        value = raw
    if f.choices is not None and value not in f.choices and str(value) not in map(str, f.choices):
        raise ValueError(
            "invalid choice; choose from " + ", ".join(map(str, sorted(f.choices, key=str)))
        )
    if name == "kv_cache_dtype" and value not in literals(f.type):
        raise ValueError("invalid kv_cache_dtype; one of " + ", ".join(literals(f.type)))
    if name == "quantization" and value not in QUANTIZATION_METHODS:
        raise ValueError("unknown quantization method")
    if name == "gpu_memory_utilization" and not 0 < value <= 1:
        raise ValueError("must be greater than 0 and at most 1 (CacheConfig)")
    return value


def _mapping(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg}") from None
        if isinstance(data, dict):
            return data
    raise ValueError("expected a JSON object or a mapping")


def _sub_problems(f: Field, value: dict[str, Any], key: str) -> list[KeyProblem]:
    """Keys of a sub-config that are no field of it (where the field list has its fields:
    the default mapping), one level of nesting included (compilation_config.pass_config)."""

    if not isinstance(f.default, dict) or not f.default:
        return []
    out = []
    for sub, sub_value in value.items():
        if sub not in f.default:
            out.append(
                KeyProblem(
                    f"{key}.{sub}",
                    f"unknown field of {f.name} (extra fields not permitted)",
                    suggestions=tuple(difflib.get_close_matches(sub, list(f.default), n=3)),
                )
            )
            continue
        known = f.default[sub]
        if isinstance(known, dict) and known and isinstance(sub_value, dict):
            for inner in sub_value:
                if inner not in known:
                    out.append(
                        KeyProblem(
                            f"{key}.{sub}.{inner}",
                            f"unknown field of {f.name}.{sub} (extra fields not permitted)",
                            suggestions=tuple(difflib.get_close_matches(inner, list(known), n=3)),
                        )
                    )
    return out


def read_args(data: Mapping[str, Any], *, file: str | None = None) -> dict[str, Given]:
    """Every field the mapping sets, keyed by field name (later keys win), or
    `VllmArgErrors` with all problems."""
    surf = surface()
    problems: list[KeyProblem] = []
    out: dict[str, Given] = {}
    for key, raw in data.items():
        if not isinstance(key, str):
            problems.append(KeyProblem(str(key), "unknown key: not an option name", value=key))
            continue
        head, _, sub = key.partition(".")
        found = surf.resolve(head)
        if found is None:
            elsewhere = other_releases(head)
            if elsewhere:
                lines = ", ".join(elsewhere)
                problems.append(
                    KeyProblem(
                        key,
                        f"not a field of vLLM {surf.release}; it is one of {lines}"
                        f" (--profile {elsewhere[0]})",
                    )
                )
                continue
            problems.append(KeyProblem(key, "unknown key", suggestions=surf.close_matches(head)))
            continue
        f = found.field
        if sub:
            if not (isinstance(f.default, dict) or "dict" in f.type or "Config" in f.type):
                problems.append(KeyProblem(key, f"{f.name} has no fields to set with a dotted key"))
                continue
            given = out.setdefault(f.name, Given(f.name, {}, head, {}))
            if not isinstance(given.value, dict):
                given.value = {}
            given.value = {**given.value, sub: raw}
            given.subkeys[sub] = raw
            problems += _sub_problems(f, {sub: raw}, head)
            continue
        if found.negated:
            if raw is True or raw == "true":
                out[f.name] = Given(f.name, False, key, raw, negated=True)
            elif raw not in (False, None, "false"):
                problems.append(KeyProblem(key, "a negation takes true or false", value=raw))
            continue
        if raw is False and false_dropped(key, f):
            continue  # vLLM's --config drops this `key: false` (ignored_false)
        try:
            value = _parse_value(f, raw)
        except (ValueError, TypeError, OverflowError) as exc:
            problems.append(KeyProblem(key, f"invalid value: {exc}", value=raw))
            continue
        if isinstance(value, dict):
            problems += _sub_problems(f, value, key)
        out[f.name] = Given(f.name, value, key, raw)
    problems += _cross_problems(out)
    if problems:
        raise VllmArgErrors(problems, file=file)
    return out


# The releases whose `--config` drops every `key: false` (FlexibleArgumentParser.
# load_config_file: `if isinstance(value, bool): if value: append("--" + key)` in v0.24.0;
# v0.33.0 adds `elif (no_key := f"--no-{key}") in self._option_string_actions`).
FALSE_DROPPED_ALWAYS = {"0.24"}


def false_dropped(key: str, f: Field) -> bool:
    """vLLM's `--config` drops a `key: false` written this way: always in 0.24; in 0.33
    unless `--no-<key>` (the key exactly as written) is one of the parser's options."""
    if surface().release in FALSE_DROPPED_ALWAYS:
        return True
    return f"--no-{key}" not in (f.negation, *f.off_flags)


def ignored_false(data: Mapping[str, Any]) -> list[str]:
    """A warning for each `key: false` vLLM's `--config` ignores (`false_dropped`): the
    field keeps its default, and how to turn it off instead."""
    surf = surface()
    out = []
    for key, raw in data.items():
        if raw is not False or not isinstance(key, str) or "." in key:
            continue
        found = surf.resolve(key)
        if found is None or found.negated or not false_dropped(key, found.field):
            continue
        f = found.field
        if surf.release in FALSE_DROPPED_ALWAYS:
            how = "passes a boolean only when it is true"
        else:
            how = f"turns `key: false` into --no-<key> only where that option exists (--no-{key} does not)"
        fix = f"; to turn it off write {f.negation[2:]}: true" if f.negation else ""
        out.append(
            f"{key}: false is ignored: vLLM {surf.release}'s --config {how}"
            f" (FlexibleArgumentParser.load_config_file), so {f.name} is as if not given{fix}"
        )
    return out


# Fields a release line takes with one value only, and its refusal of any other:
# vLLM 0.24.0 `EngineArgs._check_feature_supported` (vllm/engine/arg_utils.py, run by
# create_engine_config) raises NotImplementedError "Concurrent Partial Prefill is not
# supported" for max_num_partial_prefills or max_long_partial_prefills other than
# SchedulerConfig's 1; 0.33.0 no longer has either field.
ONLY_VALUES: dict[str, dict[str, tuple[Any, str]]] = {
    "0.24": {
        "max_num_partial_prefills": (1, "Concurrent Partial Prefill is not supported"),
        "max_long_partial_prefills": (1, "Concurrent Partial Prefill is not supported"),
    },
}


def _release_only_values(given: Mapping[str, Given]) -> list[KeyProblem]:
    release = surface().release
    out = []
    for name, (value, why) in ONLY_VALUES.get(release, {}).items():
        found = given.get(name)
        if found is not None and found.value != value:
            out.append(
                KeyProblem(
                    found.key,
                    f"{why}: vLLM {release} takes only {value}"
                    " (EngineArgs._check_feature_supported)",
                    value=found.raw,
                )
            )
    return out


def _cross_problems(given: Mapping[str, Given]) -> list[KeyProblem]:
    """Refusals that need two fields and have no option of their own: attention_backend
    with attention_config.backend (vllm/engine/arg_utils.py create_engine_config)."""
    out = []
    attention = given.get("attention_config")
    if (
        "attention_backend" in given
        and given["attention_backend"].value is not None
        and attention is not None
        and isinstance(attention.value, dict)
        and attention.value.get("backend") is not None
    ):
        out.append(
            KeyProblem(
                "attention_backend",
                "attention_backend and attention_config.backend are mutually exclusive",
            )
        )
    comp = given.get("compilation_config")
    sub = comp.value if comp is not None and isinstance(comp.value, dict) else {}
    for name in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        top = given.get(name)
        if top is not None and top.value is not None and sub.get(name) is not None:
            # EngineArgs.create_engine_config (v0.24.0, v0.33.0)
            out.append(
                KeyProblem(name, f"{name} and compilation_config.{name} are mutually exclusive")
            )
    out += _release_only_values(given)
    spec = given.get("speculative_config")
    if spec is not None and isinstance(spec.value, dict) and "tensor_parallel_size" in spec.value:
        out.append(
            KeyProblem(
                "speculative_config.tensor_parallel_size",
                "not a valid argument in the speculative_config; pass"
                " draft_tensor_parallel_size (SpeculativeConfig._verify_args)",
            )
        )
    return out


__all__ = [
    "Given",
    "QUANTIZATION_METHODS",
    "VllmArgErrors",
    "human_int",
    "literals",
    "read_args",
    "surface",
]
