"""TensorRT-LLM's LLM-API field lists per release, and validation of a config against them.

The field lists are facts kept as package data (`fields-<release>.yaml` beside this module, one per
supported release, each naming the upstream file it was read from). `validate()` checks a
mapping against the argument class of a backend (`TorchLlmArgs` for the PyTorch backend,
`TrtLlmArgs` for TensorRT engines) the way the engine's pydantic models do:

- every model forbids extra keys, and every unknown key is reported at once, each with
  close matches (siblings, or the same name one level down: `enable_block_reuse` at the
  top level suggests `kv_cache_config.enable_block_reuse`);
- an object where the engine expects a value, or a value where it expects an object, is
  reported with its path;
- values are coerced by pydantic itself in lax mode (the engine's models are not strict):
  "false" is False, "8" is 8, and 1.5 for an int is refused.

The result is the input with coerced values (only the keys that were given) or a
`FieldErrors` naming every problem.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import Field, TypeAdapter, ValidationError

from ...dialects._base import DialectError, InputProblems, KeyProblem

# PyYAML's libyaml-backed safe loader when it is built (same data, ~6x faster on the
# field lists), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MISSING = object()


@dataclass(frozen=True)
class FieldSpec:
    """One field: its name, its type in the catalogue notation, and its default."""

    name: str
    type: str
    default: Any = _MISSING

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    @property
    def optional(self) -> bool:
        return self.type.endswith("?")

    @property
    def base_type(self) -> str:
        return self.type[:-1] if self.optional else self.type


class FieldErrors(InputProblems):
    """Every unknown key and bad value of a TensorRT-LLM config, named at once."""

    unknown = "unknown"

    def __init__(self, problems: list[KeyProblem], *, file: str | None, release: str, cls: str):
        super().__init__(problems, file=file, against=f"{cls} of TensorRT-LLM {release}")
        self.release = release
        self.cls = cls


@dataclass
class Catalogue:
    """The field lists of one release: nested models, argument classes and unions."""

    release: str
    source: dict[str, Any]
    models: dict[str, dict[str, Any]]
    args: dict[str, dict[str, Any]]
    unions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def fields(self, cls: str) -> dict[str, FieldSpec]:
        """The fields of a model or argument class, inherited ones first."""
        table = self.models.get(cls) or self.args.get(cls)
        if table is None:
            raise KeyError(cls)
        out: dict[str, FieldSpec] = {}
        base = table.get("base")
        if base:
            out.update(self.fields(base))
        for name, text in table.items():
            if name not in ("base", "extra", "values"):
                out[name] = _spec(name, str(text))
        return out

    def ignores_extra(self, cls: str) -> bool:
        """True when the engine drops a key `cls` does not know instead of refusing it
        (`extra: ignore` in the field list: BuildConfig.from_dict)."""
        table = self.models.get(cls) or {}
        return table.get("extra") == "ignore"

    def unchecked(self, cls: str) -> bool:
        """True when the engine stores `cls`'s values without validating them
        (`values: unchecked` in the field list: a YAML's build_config.plugin_config)."""
        table = self.models.get(cls) or {}
        return table.get("values") == "unchecked"

    def is_model(self, name: str) -> bool:
        return name in self.models

    def args_class(self, backend: str) -> str:
        return "TrtLlmArgs" if backend == "tensorrt" else "TorchLlmArgs"


@cache
def _parsed_default(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)


def _default(text: str) -> Any:
    """A field's default as YAML reads it; parsed once per distinct text (most are `None`,
    `False`, `0`), copied when it is a container so that no two fields share one."""
    value = _parsed_default(text)
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value


def _spec(name: str, text: str) -> FieldSpec:
    text = text.split("  #", 1)[0].strip()
    if " = " in text:
        kind, default = text.split(" = ", 1)
        return FieldSpec(name, kind.strip(), _default(default))
    return FieldSpec(name, text)


@cache
def releases() -> tuple[str, ...]:
    """The supported releases: one field list each, oldest first."""
    names = [
        p.name[len("fields-") : -len(".yaml")]
        for p in resources.files(__package__).iterdir()
        if p.name.startswith("fields-") and p.name.endswith(".yaml")
    ]
    return tuple(sorted(names, key=lambda r: tuple(int(x) for x in r.split("."))))


@cache
def catalogue(release: str) -> Catalogue:
    """The field lists of `release` (one of `releases()`)."""
    if release not in releases():
        raise DialectError(
            f"no TensorRT-LLM field list for release {release!r}; supported: "
            + ", ".join(releases()),
            key="release",
            value=release,
        )
    text = resources.files(__package__).joinpath(f"fields-{release}.yaml").read_text()
    data = yaml.load(text, Loader=_LOADER)  # a safe loader (libyaml when built)
    return Catalogue(
        release=str(data["release"]),
        source=dict(data["source"]),
        models=data["models"],
        args=data["args"],
        unions=data.get("unions") or {},
    )


# ------------------------------------------------------------------- leaf types
_SIMPLE: dict[str, Any] = {
    "bool": bool,
    "int": int,
    "int>=0": Annotated[int, Field(ge=0)],
    "int>0": Annotated[int, Field(gt=0)],
    "float": float,
    "float>=0": Annotated[float, Field(ge=0)],
    "float[0,1]": Annotated[float, Field(ge=0, le=1)],
    "number": Union[int, float],  # noqa: UP007 (a runtime type expression)
    "str": str,
    "any": Any,
    "dict": dict[str, Any],
    "open": dict[str, Any],
}


def python_type(kind: str) -> Any:
    """The Python type pydantic validates a catalogue leaf type with."""
    if kind.endswith("?"):
        return Optional[python_type(kind[:-1])]  # noqa: UP007, UP045
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    match = re.fullmatch(r"enum\((.*)\)", kind)
    if match:
        return Literal[tuple(match.group(1).split("|"))]
    match = re.fullmatch(r"(list|set)\[(.*)\]", kind)
    if match:
        inner = python_type(match.group(2))
        return list[inner] if match.group(1) == "list" else set[inner]
    match = re.fullmatch(r"dict\[(\w+),(\w+)\]", kind)
    if match:
        return dict[python_type(match.group(1)), python_type(match.group(2))]
    raise ValueError(f"unknown catalogue type {kind!r}")


@cache
def _adapter(kind: str) -> TypeAdapter:
    return TypeAdapter(python_type(kind))


def _describe(kind: str) -> str:
    return kind.replace("?", " or null")


# ------------------------------------------------------------------- validation
def validate(
    data: Mapping[str, Any],
    release: str,
    backend: str,
    *,
    file: str | None = None,
    ignored: list[KeyProblem] | None = None,
) -> dict[str, Any]:
    """`data` with values coerced as the engine does, or FieldErrors naming every problem.

    A key of a model the engine reads leniently (`extra: ignore`) is no problem: it stays
    in the result as given (carried) and is appended to `ignored` with close matches."""
    cat = catalogue(release)
    cls = cat.args_class(backend)
    problems: list[KeyProblem] = []
    dropped: list[KeyProblem] = [] if ignored is None else ignored
    out = _model(cat, cls, data, "", problems, dropped, top=True)
    if problems:
        raise FieldErrors(problems, file=file, release=release, cls=cls)
    return out


def _model(
    cat: Catalogue,
    cls: str,
    data: Any,
    prefix: str,
    problems: list[KeyProblem],
    ignored: list[KeyProblem],
    *,
    top: bool = False,
) -> Any:
    where = prefix.rstrip(".") or cls
    if not isinstance(data, Mapping):
        problems.append(
            KeyProblem(
                where,
                f"expected an object ({cls}), got {type(data).__name__}",
                data,
                show_value=False,
            )
        )
        return data
    fields = cat.fields(cls)
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        spec = fields.get(str(key))
        if spec is None and cat.ignores_extra(cls):
            ignored.append(
                KeyProblem(
                    path,
                    f"no field of {cls} (TensorRT-LLM {cat.release}): the engine drops it",
                    value,
                    _suggest(cat, str(key), fields, False, prefix),
                    show_value=False,
                )
            )
            out[key] = value
            continue
        if spec is None:
            problems.append(
                KeyProblem(
                    path,
                    f"unknown field of {cls} (TensorRT-LLM {cat.release})"
                    + (_other_backend(cat, cls, str(key)) if top else ""),
                    value,
                    _suggest(cat, str(key), fields, top, prefix),
                    show_value=False,
                )
            )
            continue
        if cat.unchecked(cls):
            out[key] = _unchecked(cat, cls, spec, value, path, ignored)
            continue
        out[key] = _value(cat, spec, value, path, problems, ignored)
    if not top:
        for name, spec in fields.items():
            if spec.required and name not in data and name != "decoding_type":
                problems.append(
                    KeyProblem(f"{prefix}{name}", f"required by {cls}", show_value=False)
                )
    return out


def _value(
    cat: Catalogue,
    spec: FieldSpec,
    value: Any,
    path: str,
    problems: list[KeyProblem],
    ignored: list[KeyProblem],
) -> Any:
    kind = spec.base_type
    if value is None and (spec.optional or spec.default is None):
        return None
    if cat.is_model(kind):
        return _model(cat, kind, value, path + ".", problems, ignored)
    if kind.startswith("tagged("):
        return _tagged(cat, kind[len("tagged(") : -1], value, path, problems, ignored)
    try:
        return _adapter(spec.type).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        if isinstance(value, Mapping) and not kind.startswith(("dict", "open", "any")):
            reason = f"expected {_describe(spec.type)}, not an object"
        else:
            reason = f"expected {_describe(spec.type)}: {first['msg']}"
        problems.append(KeyProblem(path, reason, value, show_value=False))
        return value


def _unchecked(
    cat: Catalogue, cls: str, spec: FieldSpec, value: Any, path: str, ignored: list[KeyProblem]
) -> Any:
    """A value the engine stores without validating it: kept exactly as given, and named
    in `ignored` when `cls`'s own validation would refuse it ("enable" and "disable" read
    as PluginConfig's before-validator reads them)."""
    probe = value
    if value == "enable":
        probe = True
    elif value == "disable":
        probe = False if spec.base_type == "bool" else None
    if probe is None and (spec.optional or spec.default is None):
        return value
    try:
        _adapter(spec.type).validate_python(probe)
    except ValidationError as exc:
        ignored.append(
            KeyProblem(
                path,
                f"expected {_describe(spec.type)} ({cls} would refuse it:"
                f" {exc.errors()[0]['msg']}); TensorRT-LLM {cat.release} stores it unchecked",
                value,
                show_value=False,
            )
        )
    return value


def _tagged(
    cat: Catalogue,
    name: str,
    value: Any,
    path: str,
    problems: list[KeyProblem],
    ignored: list[KeyProblem],
) -> Any:
    union = cat.unions[name]
    tag = union["field"]
    if not isinstance(value, Mapping):
        problems.append(
            KeyProblem(path, f"expected an object with a {tag}", value, show_value=False)
        )
        return value
    choices: dict[str, str] = union["choices"]
    aliases: dict[str, str] = union.get("aliases") or {}
    given = value.get(tag)
    if given is None and tag != "decoding_type":
        given = next(iter(choices))
    # an object or a list as the tag is no choice (and not hashable): named below
    kind = aliases.get(given, given) if isinstance(given, (str, type(None))) else None
    if kind not in choices:
        problems.append(
            KeyProblem(
                f"{path}.{tag}",
                f"must be one of {', '.join(choices)} in TensorRT-LLM {cat.release}",
                given,
                tuple(difflib.get_close_matches(str(given), list(choices), n=3)),
                show_value=False,
            )
        )
        return value
    body = {k: v for k, v in value.items() if k != tag}
    out = _model(cat, choices[kind], body, path + ".", problems, ignored)
    if isinstance(out, dict):
        out = {tag: given, **out}
    return out


def _other_backend(cat: Catalogue, cls: str, key: str) -> str:
    """ ", a field of TrtLlmArgs (backend tensorrt)" when `key` belongs to the other
    backend's argument class of the same release (build_config, quant_config on 1.2's
    PyTorch backend; cuda_graph_config on the TensorRT one); else ""."""
    for backend in ("pytorch", "tensorrt"):
        other = cat.args_class(backend)
        if other != cls and other in cat.args and key in cat.fields(other):
            return f"; it is a field of {other} (backend: {backend})"
    return ""


def _suggest(
    cat: Catalogue, key: str, fields: Mapping[str, FieldSpec], top: bool, prefix: str = ""
) -> tuple[str, ...]:
    found: list[str] = []
    if top:
        # the right name at the wrong depth: a field of one of the nested configs
        for name, spec in fields.items():
            kind = spec.base_type
            if cat.is_model(kind) and key in cat.fields(kind):
                found.append(f"{name}.{key}")
            # a command-line name that folds the config in (kv_cache_free_gpu_memory_fraction)
            stem = name.removesuffix("_config") + "_"
            if cat.is_model(kind) and key.startswith(stem) and key[len(stem) :] in cat.fields(kind):
                found.append(f"{name}.{key[len(stem) :]}")
    elif any(key in cat.fields(cls) for cls in cat.args):
        # nested where the engine takes it at the top (kv_cache_config.tensor_parallel_size)
        found.append(key)
    found += [prefix + m for m in difflib.get_close_matches(key, list(fields), n=3, cutoff=0.6)]
    return tuple(dict.fromkeys(found))[:4]


def union_class(release: str, name: str, tag_value: Any) -> str | None:
    """The model a tagged union picks for `tag_value` (aliases resolved), or None."""
    union = catalogue(release).unions.get(name) or {}
    aliases = union.get("aliases") or {}
    return (union.get("choices") or {}).get(aliases.get(tag_value, tag_value))


__all__ = [
    "Catalogue",
    "FieldErrors",
    "FieldSpec",
    "catalogue",
    "python_type",
    "releases",
    "union_class",
    "validate",
]
