"""Dialects: foreign configuration surfaces <-> claims and resolutions, and `DIALECTS`, the
one list of engines.

Each engine's pack (`arbiter/engines/<engine>/`) holds its `Dialect` object (see
`protocol`): TensorRT-LLM `LlmArgs` YAML and prebuilt engine folders, vLLM `vllm serve`
arguments, SGLang `ServerArgs`, MLC's serving `EngineConfig` JSON. `DIALECTS` names them;
a pack is imported only when its dialect is first used, so reading the registry (command
line choices, help texts, the service's validation) imports no engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .protocol import Dialect

# what the dialects share, loaded when first asked for: reading the registry stays cheap
_SHARED = {
    "DialectError": "arbiter.errors",
    "DialectInput": "arbiter.dialects._base",
    "Verdict": "arbiter.dialects.verdict",
    "machine_claims": "arbiter.dialects._base",
}


def __getattr__(name: str) -> Any:
    if name in _SHARED:
        return getattr(importlib.import_module(_SHARED[name]), name)
    raise AttributeError(f"module 'arbiter.dialects' has no attribute {name!r}")


@dataclass(frozen=True)
class Entry:
    """One registered engine: its name, its label, its pack (the package of its role
    modules), the module holding its `DIALECT` (the pack's `dialect` unless said), and how its
    serving command line names the model: `model_key` (the key a message names),
    `model_flags` (the flags that take it) and `model_positional` (a leading MODEL word);
    `gpus_per_node`: the engine's GPU count is per node (its own flag names the nodes).

    What the shared readers tell an engine's input by, with no import of its pack:
    `launchers`, the words that start its server (the first is the one its `--serve-args`
    reader takes; one opening `python -m` follows any Python interpreter and its options);
    `dashes`, its own configs and flags spell keys with dashes; `config_label`, its config
    file in words; `prebuilt`, the top-level keys that together mark a built engine's
    config.json, named `prebuilt_label`. `plan_profile`: the profile `arbiter plan` checks
    the engine's emitted configs against (empty: the plan does not price the engine); the
    pack's `plan` module then writes them. `claim_prefix`: how the pack's claims from the
    input are named (`vllm.max_num_seqs`); `distribution`: the name the engine's wheel
    installs (found beside arbiter, its version picks the release line). `surface`: the
    release surface that holds every key of its config, where nothing else is needed:
    detection reads the engine's keys from it without importing the pack (empty: from the
    pack's `vocab.json`, the data of its `vocab.vocabulary()`: arbiter.sources.vocab_data)."""

    name: str
    label: str
    module: str
    dialect: str = ""
    model_key: str = "model"
    model_flags: tuple[str, ...] = ("--model",)
    model_positional: bool = True
    gpus_per_node: bool = False
    launchers: tuple[str, ...] = ()
    dashes: bool = False
    config_label: str = ""
    prebuilt: tuple[str, ...] = ()
    prebuilt_label: str = ""
    plan_profile: str = ""
    claim_prefix: str = ""
    distribution: str = ""
    surface: str = ""

    @property
    def model_field(self) -> str:
        """The config field that names the model (`model_path` for `--model-path`)."""
        return self.model_key.replace("-", "_")

    @property
    def dialect_module(self) -> str:
        """The module holding the pack's `DIALECT` (`<pack>.dialect` unless the entry says):
        the pack's `__init__` imports none of its role modules, so reaching one role module
        (its vocabulary, its field lists) does not import the whole pack."""
        return self.dialect or f"{self.module}.dialect"


class Registry(Mapping[str, "Dialect"]):
    """Engine name -> its Dialect, imported on first use."""

    def __init__(self, *entries: Entry) -> None:
        self.entries = {e.name: e for e in entries}
        self._loaded: dict[str, Dialect] = {}

    def __getitem__(self, name: str) -> Dialect:
        if name not in self._loaded:
            entry = self.entries[name]
            where = entry.dialect_module
            dialect = getattr(importlib.import_module(where), "DIALECT", None)
            if dialect is None:
                raise ImportError(f"{where} has no DIALECT", name=where)
            self._loaded[name] = dialect
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def part(self, name: str, role: str) -> Any:
        """One role module of the engine's pack (`part("vllm", "compare")`)."""
        return importlib.import_module(f"{self.entries[name].module}.{role}")

    def label(self, name: str) -> str:
        """The engine's name as its users write it (no import)."""
        return self.entries[name].label

    def names(self) -> str:
        """The engine names for a message: "trtllm, vllm, sglang or mlc"."""
        names = list(self.entries)
        return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]

    def get_dialect(self, name: str) -> Dialect:
        """The dialect named; an unknown name raises DialectError listing the known ones."""
        if name not in self.entries:
            import difflib  # only for the error's suggestions

            from ..errors import DialectError  # loaded only for the error: the registry is cheap

            raise DialectError(
                f"unknown dialect; use {self.names()}",
                key="dialect",
                value=name,
                suggestions=tuple(difflib.get_close_matches(str(name), list(self.entries), n=2)),
            )
        return self[name]


# the one list of engines: a new engine is one line here and its pack
DIALECTS = Registry(
    Entry(
        "trtllm",
        "TensorRT-LLM",
        "arbiter.engines.trtllm",
        # tensorrt_llm/commands/serve.py: `trtllm-serve [serve] MODEL` (NVIDIA/TensorRT-LLM 1.2)
        launchers=("trtllm-serve", "trtllm-serve serve"),
        config_label="a TensorRT-LLM `extra_llm_api_options` YAML (LlmArgs)",
        # a built engine's config.json holds `pretrained_config` beside `build_config`, the
        # two sections `arbiter.engines.trtllm.prebuilt` reads
        prebuilt=("pretrained_config", "build_config"),
        prebuilt_label="a built TensorRT engine's config.json",
        plan_profile="trtllm-1.2",
        claim_prefix="llm_args.",  # claims on the LLM API's arguments
        distribution="tensorrt_llm",
    ),
    Entry(
        "vllm",
        "vLLM",
        "arbiter.engines.vllm",
        # vllm/entrypoints/cli/serve.py (`vllm serve [MODEL]`), the OpenAI server module and
        # the CLI's main module (vllm-project/vllm v0.33.0)
        launchers=(
            "vllm serve",
            "python -m vllm.entrypoints.openai.api_server",
            "python -m vllm.entrypoints.cli.main serve",
        ),
        dashes=True,
        config_label="a `vllm serve` config",
        plan_profile="vllm-0.33",
        claim_prefix="vllm.",
        distribution="vllm",
    ),
    # python/sglang/srt/server_args.py: --model-path (aliases --model, --model_path), no
    # positional model (sgl-project/sglang v0.5.x)
    Entry(
        "sglang",
        "SGLang",
        "arbiter.engines.sglang",
        model_key="model-path",
        model_flags=("--model-path", "--model", "--model_path"),
        model_positional=False,
        gpus_per_node=True,  # --nnodes names the nodes (ServerArgs nnodes)
        # python/sglang/launch_server.py and the `sglang serve` CLI (sgl-project/sglang 0.5)
        launchers=("python -m sglang.launch_server", "sglang serve"),
        dashes=True,
        config_label="an SGLang `--config` file",
        plan_profile="sglang-0.5",
        claim_prefix="sglang.",
        distribution="sglang",
        surface="sglang-0.5",  # its field list: arbiter/engines/sglang/fields-0.5.23.yaml
    ),
    Entry(
        "mlc",
        "MLC LLM",
        "arbiter.engines.mlc",
        # python/mlc_llm/cli/serve.py: `mlc_llm serve MODEL` (mlc-ai/mlc-llm)
        launchers=("mlc_llm serve", "python -m mlc_llm serve"),
        config_label="an MLC `EngineConfig` JSON",
        claim_prefix="mlc.",
        distribution="mlc-llm",
    ),
)
DEFAULT_DIALECT = next(iter(DIALECTS))

__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "DialectError",
    "DialectInput",
    "Entry",
    "Registry",
    "Verdict",
    "machine_claims",
]
