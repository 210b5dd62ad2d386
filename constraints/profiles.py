"""Profiles: one engine release line each (engine, backend, release), its option defaults,
and thereby the rules in scope (`Profile.admits`), plus the capacity modes.

A profile is what "fewest changes" counts from, which rules are compiled, and which memory
terms the memory model uses. Each engine pack declares its own release lines in
`constraints/engines/<engine>/profiles.yaml` (their defaults with sources, former names
under `aliases`, and, in one pack, the `default` profile); this module reads those files
from disk, so naming the profiles imports no pack, and it holds no list of engines:
`ENGINES` are the packs that declare profiles, in name order. A profile whose defaults
name its pack's own section says `defaults: pack` (read from the pack's `defaults.py` on
first use, `PackDefaults`). README "Supported releases" lists the lines.

A mode (MLC's `local`, `interactive`, `server`) infers the batch size, the prefill chunk
(`max_num_tokens`) and the KV token capacity (`kv_cache_config.max_tokens`) the way MLC's
`EstimateMemoryUsageOnMode` does, for every one of them no func or setup claim names:

- interactive: one sequence; KV capacity up to max_seq_len; prefill chunk up to the
  profile's max_num_tokens and max_seq_len;
- local: up to 4 sequences; KV capacity up to max_seq_len and 8192 tokens; prefill chunk
  as interactive;
- server: as many sequences as the profile's max_batch_size; prefill chunk the profile's
  max_num_tokens; KV capacity as large as memory allows, up to batch x max_seq_len.

Each target is a preference first (kept when the perf claims allow it), then the largest
value under it: `arbitrate()` runs them as objective stages after the perf tiers and the
default rules, before "fewest changes".
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import import_module
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic import Field as PydanticField

from .errors import SchemaError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UnknownProfile(SchemaError, KeyError):
    """A profile or mode name that does not exist."""

    def __init__(self, kind: str, name: str, known: tuple[str, ...]):
        super().__init__(name)
        self.kind = kind
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; use one of {', '.join(self.known)}"


def engine_label(engine: str) -> str:
    """The engine's name as its users write it: `LABEL` of its pack
    (`constraints/engines/<engine>/__init__.py`), loaded when first asked for, so that
    naming one engine imports no other engine's pack."""
    try:
        return str(import_module(f"constraints.engines.{engine}").LABEL)
    except (ImportError, AttributeError):
        return engine


def __getattr__(name: str) -> Any:
    if name == "ENGINE_NAMES":  # every engine's label: imports each pack's __init__ only
        return {engine: engine_label(engine) for engine in ENGINES}
    raise AttributeError(f"module 'constraints.profiles' has no attribute {name!r}")


@dataclass(frozen=True)
class Profile:
    """One engine release line: `engine` ("trtllm", "vllm", "sglang", "mlc"), its
    `backend` ("pytorch" or "tensorrt" for TensorRT-LLM, "" elsewhere) and `release`
    (dotted integers, compared as a tuple by rule scopes); `version` is what the
    defaults were read from (a release or commit)."""

    name: str
    engine: str
    version: str
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    memory_terms: str = "arbiter"
    backend: str = ""
    release: str = ""

    @property
    def engine_name(self) -> str:
        return engine_label(self.engine)

    @property
    def surface(self) -> Mapping[str, Any]:
        """{path: default} of every option this release has (its field list read through
        its dialect map, generated into `constraints/engines/<engine>/surfaces/`); the
        compiler holds every other option at the profile's default."""
        return load_surface(self)

    def on_surface(self, path: str) -> bool:
        """Whether option `path` is one this release has (facts are never surface)."""
        return path in load_surface(self)

    def admits(self, rule: Any) -> bool:
        """Whether `rule`'s scope covers this profile (so it is compiled)."""
        return rule.scope.applies(self.engine, self.backend, self.release)

    @property
    def line(self) -> str:
        """The release line in words: "TensorRT-LLM 1.2, pytorch backend"."""
        text = f"{self.engine_name} {self.release or self.version}"
        if self.version and self.version != (self.release or self.version):
            text += f" @{self.version}"
        return text + (f", {self.backend} backend" if self.backend else "")

    def why(self, rule: Any) -> str:
        """Why `rule` is compiled for this profile: its scope against the profile."""
        return f"scope {rule.scope} covers {self.name} ({self.line})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "engine": self.engine,
            "backend": self.backend,
            "release": self.release,
            "version": self.version,
            "description": self.description,
            "defaults": dict(self.defaults),
            "memory_terms": self.memory_terms,
        }


class PackDefaults(Mapping[str, Any]):
    """A profile's defaults held in its engine's pack (`constraints/engines/<engine>/
    defaults.py`, its `DEFAULTS`), read on first use: an engine whose defaults name its
    own section keeps those names in its pack, and naming its profiles imports nothing
    of it."""

    def __init__(self, engine: str, name: str = "DEFAULTS") -> None:
        self.engine, self.name = engine, name

    @cached_property
    def _data(self) -> Mapping[str, Any]:
        module = import_module(f"{__package__}.engines.{self.engine}.defaults")
        return dict(getattr(module, self.name))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"PackDefaults({self.engine!r}, {self.name!r})"


_ROOT = Path(__file__).resolve().parent.parent


class _Entry(BaseModel):
    """One release line as a pack's profiles.yaml writes it (the engine is the folder)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    version: str
    description: str
    # option path -> default; "pack": the pack's defaults.py `DEFAULTS`, read on first use
    defaults: dict[str, Any] | Literal["pack"] = PydanticField(default_factory=dict)
    memory_terms: str = "arbiter"
    backend: str = ""
    release: str = ""


class _PackFile(BaseModel):
    """A pack's profiles.yaml: its release lines, former names, and the default profile
    (named by one pack only)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    profiles: list[_Entry]
    aliases: dict[str, str] = PydanticField(default_factory=dict)
    default: str | None = None


def _pack_roots() -> list[Path]:
    """The folders holding the packs: those of the `constraints.engines` package (its
    `__init__` only is imported; a folder appended to its `__path__` adds packs)."""
    return [Path(p) for p in import_module(f"{__package__}.engines").__path__]


def _pack_files() -> list[Path]:
    """Every pack's `profiles.yaml`, in the packs' name order (found on disk: reading them
    imports no pack)."""
    found = {
        pack.name: pack / "profiles.yaml"
        for root in _pack_roots()
        for pack in root.iterdir()
        if (pack / "profiles.yaml").is_file()
    }
    return [found[name] for name in sorted(found)]


def _shown(path: Path) -> Path:
    return path.relative_to(_ROOT) if path.is_relative_to(_ROOT) else path


def _read_file(path: Path) -> _PackFile:
    """A pack's profiles.yaml; SchemaError naming the file and each bad key otherwise."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    try:
        return _PackFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or '<file>'}: {e['msg']}"
            for e in exc.errors()
        )
        raise SchemaError(f"{_shown(path)}: {problems}") from None


def _read_packs() -> tuple[dict[str, Profile], dict[str, str], str]:
    """The profiles every pack declares (engine = its folder), the former names and the
    default profile, from the packs' `profiles.yaml`; a bad file is a SchemaError naming
    the file, the entry and the key."""
    profiles: dict[str, Profile] = {}
    aliases: dict[str, str] = {}
    default: list[str] = []
    for path in _pack_files():
        engine, read = path.parent.name, _read_file(path)
        for i, e in enumerate(read.profiles):
            if e.name in profiles:
                raise SchemaError(
                    f"{_shown(path)}: profiles.{i}.name: {e.name!r} is declared twice"
                )
            defaults = PackDefaults(engine) if e.defaults == "pack" else e.defaults
            profiles[e.name] = Profile(
                e.name,
                engine,
                e.version,
                " ".join(e.description.split()),
                defaults,
                memory_terms=e.memory_terms,
                backend=e.backend,
                release=e.release,
            )
        aliases.update(read.aliases)
        if read.default is not None:
            default.append(read.default)
    for old, new in aliases.items():
        if new not in profiles:
            raise SchemaError(f"profile alias {old!r} names no profile: {new!r}")
    if len(default) != 1 or default[0] not in profiles:
        raise SchemaError(
            f"exactly one pack names the default profile, and it must exist; got {default}"
        )
    return profiles, aliases, default[0]


# every engine pack's profiles (constraints/engines/<engine>/profiles.yaml): no list here
PROFILES: dict[str, Profile]
ALIASES: dict[str, str]  # former names, still accepted
DEFAULT_PROFILE: str
PROFILES, ALIASES, DEFAULT_PROFILE = _read_packs()


def surface_module(profile: Profile) -> str:
    """The module holding `profile`'s surface: constraints.engines.<engine>.surfaces.<name>."""
    name = profile.name.replace("-", "_").replace(".", "_")
    return f"{__package__}.engines.{profile.engine}.surfaces.{name}"


@cache
def _surface(module: str) -> Mapping[str, Any]:
    return dict(importlib.import_module(module).SURFACE)


def load_surface(profile: Profile) -> Mapping[str, Any]:
    """`profile.surface` (read once per file). A profile built outside `PROFILES` (a
    dialect's line for a release and backend arbiter has no profile of) has the surface of
    the registered line of its engine and backend nearest its release (`surface_line`). A
    registered profile without its generated file is an error naming the file."""
    module = surface_module(surface_line(profile))
    try:
        return _surface(module)
    except ModuleNotFoundError:
        raise SchemaError(
            f"profile {profile.name!r} has no surface ({module}); run scripts/gen_surfaces.py"
        ) from None


def surface_line(profile: Profile) -> Profile:
    """The registered profile whose surface `profile` has: itself when registered, else
    the one of the same engine and backend with the newest release not after its own (or
    the oldest one, for a release older than all of them)."""
    same = PROFILES.get(profile.name)
    if same is not None and (same.engine, same.backend) == (profile.engine, profile.backend):
        return same
    lines = sorted(
        (
            p
            for p in PROFILES.values()
            if (p.engine, p.backend) == (profile.engine, profile.backend)
        ),
        key=lambda p: _release_key(p.release),
    )
    if not lines:
        raise SchemaError(
            f"profile {profile.name!r}: no registered {profile.engine} line with backend "
            f"{profile.backend!r} to take the surface from"
        )
    key = _release_key(profile.release)
    older = [p for p in lines if _release_key(p.release) <= key]
    return older[-1] if older else lines[0]


def _release_key(release: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split(".")) if release else ()
    except ValueError:
        return ()


# the engines and their backends: the profiles' (no other list of engine names)
ENGINES: tuple[str, ...] = tuple(dict.fromkeys(p.engine for p in PROFILES.values()))
BACKENDS: dict[str, tuple[str, ...]] = {
    engine: tuple(
        dict.fromkeys(p.backend for p in PROFILES.values() if p.engine == engine and p.backend)
    )
    for engine in ENGINES
}


@dataclass(frozen=True)
class Mode:
    name: str
    batch_cap: int | None  # None: the profile's max_batch_size
    kv_cap: int | None  # a fixed cap on the KV capacity in tokens (local: 8192)
    kv_per_sequence: bool  # the capacity may reach batch x max_seq_len (server)
    prefill_within_sequence: bool  # the prefill chunk stays within max_seq_len


MODES: dict[str, Mode] = {
    "interactive": Mode("interactive", 1, None, False, True),
    "local": Mode("local", 4, 8192, False, True),
    "server": Mode("server", None, None, True, False),
}


def get_profile(name: str | Profile | None) -> Profile:
    if isinstance(name, Profile):
        return name
    if name is None:
        name = DEFAULT_PROFILE
    name = ALIASES.get(name, name) if isinstance(name, str) else name
    if name not in PROFILES:
        raise UnknownProfile("profile", str(name), tuple(PROFILES))
    return PROFILES[name]


def get_mode(name: str | None) -> Mode | None:
    if name is None:
        return None
    if name not in MODES:
        raise UnknownProfile("mode", str(name), tuple(MODES))
    return MODES[name]


__all__ = [
    "ALIASES",
    "BACKENDS",
    "ENGINES",
    "DEFAULT_PROFILE",
    "engine_label",
    "MODES",
    "PROFILES",
    "Mode",
    "Profile",
    "UnknownProfile",
    "get_mode",
    "get_profile",
    "load_surface",
    "surface_line",
    "surface_module",
]
