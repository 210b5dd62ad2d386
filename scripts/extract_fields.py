"""Write an engine release's field list (`arbiter/engines/<engine>/fields-<line>.yaml`)
from the engine's installed wheel.

Run it with the Python of a throwaway virtual environment that has the engine installed
(see docs/engines.md, "Running the engines' own code"):

    /tmp/v-vllm/bin/python scripts/extract_fields.py vllm
    /tmp/v-sglang/bin/python scripts/extract_fields.py sglang

An older release reuses the venv's dependencies with the wheel put first on the path
(SGLang 0.5.16, whose `ServerArgs` is one dataclass deriving in `__post_init__`):

    /tmp/v-sglang/bin/pip install --no-deps --target /tmp/sg16 sglang==0.5.16
    PYTHONPATH=/tmp/sg16 /tmp/v-sglang/bin/python scripts/extract_fields.py sglang

The file is `fields-<major.minor>.yaml` for vLLM and `fields-<major.minor.patch>.yaml`
for SGLang, whose option surface changes within 0.5.

It builds the engine's own command-line parser (vLLM: `vllm serve`'s parser;
SGLang: `ServerArgs.add_cli_args`) and reads, for each field, the flags, the default and
the choices the parser has, the type from the dataclass annotation, and the section
(the parser's argument group). Derived defaults are read by calling the engine's own
function with the machine facts patched in (vLLM: `EngineArgs.get_batch_defaults`;
SGLang: `handle_gpu_memory_settings`, run by `benchmarks/oracle_sglang.py`'s resolver).
Only facts are written: names, types, defaults, choices, flags. No help text, no code.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import importlib.util
import json
import os
import re
import sys
import typing
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "arbiter" / "engines"  # each engine pack keeps its field lists
GIB = 1 << 30


def plain(value: Any) -> Any:
    """A YAML-safe form of a default: enums by value, records as mappings."""
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return plain(value.model_dump())
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value):
        return f"<{getattr(value, '__name__', type(value).__name__)}>"
    try:
        json.dumps(value)
        return value
    except TypeError:
        return str(value)


def type_name(annotation: Any) -> str:
    """The annotation without its `Annotated` metadata (help texts stay upstream) and
    without module paths."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type):
        return annotation.__name__
    text = annotation if isinstance(annotation, str) else repr(annotation)
    text = text.replace("typing.", "").replace("NoneType", "None")
    return re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", text)


def parser_facts(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    """dest -> flags, negation, default, choices, section, as the parser declares them.

    Every option string the parser accepts counts, hidden ones included (vLLM keeps
    `--no-enable-x` registered but out of help beside `--enable-x` / `--disable-x`)."""
    section_of: dict[int, str] = {}
    for group in parser._action_groups:
        for action in group._group_actions:
            section_of[id(action)] = group.title or ""
    spellings: dict[int, list[str]] = {}
    for option, action in parser._option_string_actions.items():
        spellings.setdefault(id(action), []).append(option)
    facts: dict[str, dict[str, Any]] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "config"):
            continue
        entry = facts.setdefault(
            action.dest,
            {"flags": [], "negation": None, "section": section_of.get(id(action), "")},
        )
        options = list(dict.fromkeys([*action.option_strings, *spellings.get(id(action), [])]))
        negative = set(getattr(action, "negative_option_strings", ()))
        if isinstance(action, argparse.BooleanOptionalAction):
            negative |= {o for o in options if o.startswith("--no-")}
        elif isinstance(action, argparse._StoreFalseAction) or (
            isinstance(action, argparse._StoreConstAction) and action.const is False
        ):
            negative |= set(options)  # a separate flag that switches the field off
        flags = [o for o in options if o not in negative]
        no_flag = sorted(o for o in negative if o.startswith("--no-"))
        if no_flag and not entry["negation"]:
            entry["negation"] = no_flag[0]
        off = sorted(o for o in negative if o != entry["negation"])
        if off:
            entry.setdefault("off_flags", [])
            entry["off_flags"] += [o for o in off if o not in entry["off_flags"]]
        entry["flags"] += [f for f in flags if f not in entry["flags"]]
        if type(action).__name__.startswith("Deprecated") or action in getattr(
            parser, "_deprecated", ()
        ):
            entry["deprecated"] = True
        if action.choices is not None and not isinstance(action.choices, range):
            entry["choices"] = sorted((plain(c) for c in action.choices), key=repr)
        if action.default is not argparse.SUPPRESS and "parser_default" not in entry:
            entry["parser_default"] = plain(action.default)
    return facts


def dataclass_fields(cls: type) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        out[f.name] = {"type": type_name(f.type), "default": plain(default)}
    return out


def merge(
    declared: dict[str, dict[str, Any]], parsed: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """One entry per field: the declared type and default, the parser's flags and choices.
    A flag with no declared field (a frontend argument) keeps the parser's default."""
    names = list(declared) + [name for name in parsed if name not in declared]
    entries = []
    for name in names:
        d = declared.get(name, {})
        p = parsed.get(name, {})
        default = d["default"] if "default" in d else p.get("parser_default")
        entry: dict[str, Any] = {
            "name": name,
            "type": d.get("type") or _parser_type(p, default),
            "default": default,
            "section": p.get("section", "") or "(not on the command line)",
        }
        if p.get("choices") is not None:
            entry["choices"] = p["choices"]
        if p.get("flags"):
            entry["flags"] = p["flags"]
        if p.get("negation"):
            entry["negation"] = p["negation"]
        if p.get("off_flags"):
            entry["off_flags"] = p["off_flags"]
        if p.get("deprecated"):
            entry["deprecated"] = True
        entries.append(entry)
    return entries


def _parser_type(p: dict[str, Any], default: Any) -> str:
    if p.get("negation") or p.get("off_flags"):
        return "bool"
    if default is None:
        return "str | None"
    return type(default).__name__


# ------------------------------------------------------------------------------- vLLM


class _FakePlatform:
    """The attributes `EngineArgs.get_batch_defaults` reads from `current_platform`."""

    def __init__(self, memory_gib: float, name: str):
        self.memory = int(memory_gib * GIB)
        self.name = name

    def get_device_total_memory(self, device_id: int = 0) -> int:
        return self.memory

    def get_device_name(self, device_id: int = 0) -> str:
        return self.name

    def is_device_capability(self, capability: Any, device_id: int = 0) -> bool:
        return False

    def is_tpu(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False


VLLM_MACHINES = (
    ("NVIDIA A100-SXM4-40GB", 40),
    ("NVIDIA A100-SXM4-80GB", 80),
    ("NVIDIA L40S", 48),
    ("NVIDIA H100 80GB HBM3", 80),
    ("NVIDIA H200", 141),
    ("NVIDIA B200", 180),
)


def vllm_surface() -> dict[str, Any]:
    # vLLM picks its platform at import; this wheel is the CUDA build, so say "cpu".
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm.platforms as platforms

    if platforms.current_platform.device_type == "":
        # releases before ~0.30 (0.24) take the CPU platform only from a CPU build's version
        # string (platforms/__init__.py cpu_platform_plugin): answer as such a build would
        platforms.vllm_version_matches_substr = lambda part: part == "cpu"
        platforms._current_platform = None
    import vllm
    from vllm.engine import arg_utils
    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs
    from vllm.usage.usage_lib import UsageContext
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    try:
        try:
            from vllm.entrypoints.common.cli_args import make_arg_parser

            parser_name = "vllm.entrypoints.common.cli_args.make_arg_parser (vllm serve)"
        except ModuleNotFoundError:  # before ~0.30 (0.24): the OpenAI server's module
            from vllm.entrypoints.openai.cli_args import make_arg_parser

            parser_name = "vllm.entrypoints.openai.cli_args.make_arg_parser (vllm serve)"
        make_arg_parser(parser)
    except Exception as exc:  # the frontend parser needs more than the engine's
        print(f"frontend parser unavailable ({exc!r}); engine arguments only", file=sys.stderr)
        parser = FlexibleArgumentParser()
        AsyncEngineArgs.add_cli_args(parser)
        parser_name = "vllm.engine.arg_utils.AsyncEngineArgs.add_cli_args"
    entries = merge(dataclass_fields(AsyncEngineArgs), parser_facts(parser))

    derived = []
    real_platform = arg_utils.current_platform
    tokens: list[dict[str, Any]] = []
    seqs: list[dict[str, Any]] = []
    try:
        for name, gib in VLLM_MACHINES:
            arg_utils.current_platform = _FakePlatform(gib, name)
            batched, max_seqs = EngineArgs.get_batch_defaults(world_size=1)
            for usage in (UsageContext.OPENAI_API_SERVER, UsageContext.LLM_CLASS):
                when = {"device": name, "memory_gib": gib, "usage_context": usage.value}
                tokens.append({"when": when, "value": batched[usage]})
                seqs.append({"when": when, "value": max_seqs[usage]})
    finally:
        arg_utils.current_platform = real_platform
    src = f"vllm {vllm.__version__}: vllm/engine/arg_utils.py EngineArgs.get_batch_defaults"
    note = (
        "tiers: >=160 GiB; >=70 GiB unless the device name has 'a100' (or is GB10); the rest. "
        "With chunked prefill off and no user value the budget is raised to max_model_len; "
        "a default budget is capped at max_num_seqs * max_model_len and a default "
        "max_num_seqs at the budget (_set_default_max_num_seqs_and_batched_tokens_args); "
        "performance_mode=throughput doubles both defaults."
    )
    derived.append(
        {"field": "max_num_batched_tokens", "cases": tokens, "source": src, "note": note}
    )
    derived.append({"field": "max_num_seqs", "cases": seqs, "source": src, "note": note})
    return {
        "engine": "vllm",
        "release": ".".join(vllm.__version__.split(".")[:2]),
        "source": {
            "package": "vllm",
            "version": vllm.__version__,
            "class": "vllm.engine.arg_utils.AsyncEngineArgs",
            "parser": parser_name,
            "generator": "scripts/extract_fields.py",
        },
        "fields": entries,
        "derived": derived,
    }


# ----------------------------------------------------------------------------- SGLang


def _sglang_import_shims() -> None:
    """What importing an older SGLang wheel beside this machine's libraries needs: the
    CPU shims of `benchmarks/oracle_sglang.py` (no torchvision), and transformers'
    `Auto*.register` told that a name it already has is fine (0.5.16 registers its own
    `qwen3_asr` config, which newer transformers ship too)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from oracle_sglang import install_cpu_shims

    install_cpu_shims()
    import transformers

    for name in ("AutoConfig", "AutoProcessor", "AutoTokenizer", "AutoImageProcessor"):
        cls = getattr(transformers, name, None)
        if cls is None:
            continue

        def register(*args: Any, _orig: Any = cls.register, **kwargs: Any) -> Any:
            try:
                return _orig(*args, **{**kwargs, "exist_ok": True})
            except (TypeError, ValueError):
                return None

        cls.register = staticmethod(register)


def sglang_surface() -> dict[str, Any]:
    _sglang_import_shims()
    import sglang
    from sglang.srt.server_args import ServerArgs

    try:  # 0.5.23: the arguments are records across arg_groups/fields namespaces
        from sglang.srt.arg_groups.arg_utils import record_fields
    except ImportError:  # 0.5.16: ServerArgs is one dataclass
        record_fields = dataclasses.fields  # type: ignore[assignment]

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    try:  # the annotations as types: `A[int, "help"]` strings become `int` (no help text)
        hints: dict[str, Any] = typing.get_type_hints(ServerArgs)
    except Exception:  # 0.5.23's records annotate in their own namespaces
        hints = {}
    declared = {}
    for f in record_fields(ServerArgs):
        default = getattr(f, "default", None)
        factory = getattr(f, "default_factory", None)
        if factory not in (None, dataclasses.MISSING) and callable(factory):
            default = factory()
        if default is dataclasses.MISSING or type(default).__name__ == "_NoDefault":
            default = None
        annotation = hints.get(f.name, getattr(f, "type", ""))
        declared[f.name] = {"type": type_name(annotation), "default": plain(default)}
    parsed = parser_facts(parser)
    try:
        from sglang.srt.arg_groups import fields as namespaces
    except ImportError:  # 0.5.16: one parser group, no namespaces
        namespaces = None
    for module_name in (
        ()
        if namespaces is None
        else (
            "device",
            "disagg",
            "exec_",
            "lora",
            "memory",
            "mm",
            "model",
            "observability",
            "parallel",
            "schedule",
            "serving",
            "spec",
        )
    ):
        module = importlib.import_module(f"{namespaces.__name__}.{module_name}")  # type: ignore[union-attr]
        for cls in vars(module).values():
            if isinstance(cls, type) and cls.__module__ == module.__name__:
                for name in getattr(cls, "__annotations__", {}):
                    if name in parsed:
                        parsed[name]["section"] = cls.__name__
    entries = merge(declared, parsed)
    derived = sglang_derived(sglang.__version__)
    return {
        "engine": "sglang",
        "release": ".".join(sglang.__version__.split(".")[:3]),
        "source": {
            "package": "sglang",
            "version": sglang.__version__,
            "class": "sglang.srt.server_args.ServerArgs",
            "parser": "ServerArgs.add_cli_args",
            "generator": "scripts/extract_fields.py",
        },
        "fields": entries,
        "derived": derived,
    }


def sglang_derived(version: str) -> list[dict[str, Any]]:
    """Run SGLang's resolution on a small Llama config for several GPU memory sizes and
    TP sizes, and write down what it derived."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if importlib.util.find_spec("sglang.srt.arg_groups.memory_hook") is None:
        return sglang_derived_in_post_init(version)
    from oracle_sglang import derived_defaults_table

    return derived_defaults_table(version)


def sglang_derived_in_post_init(version: str) -> list[dict[str, Any]]:
    """The same table for a release that derives in `ServerArgs.__post_init__` (0.5.16:
    `_handle_gpu_memory_settings`): build `ServerArgs` from the parsed command line with
    the GPU's memory patched in, and read the fields back."""
    import logging

    from oracle_sglang import _STATE, GPUS, install_memory_probe, model_folder
    from sglang.srt.server_args import ServerArgs

    logging.disable(logging.WARNING)
    install_memory_probe()
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    folder = str(model_folder("llama-3.1-8b"))
    rows: dict[str, list[dict[str, Any]]] = {
        "chunked_prefill_size": [],
        "cuda_graph_max_bs": [],
        "mem_fraction_static": [],
    }
    for gpu in ("A10", "A100-40GB", "L40S", "H100", "H200", "B200"):
        _STATE["gpu_mib"] = GPUS[gpu][0] * 1024
        for tp in (1, 4):
            argv = ["--model-path", folder, "--tp-size", str(tp), "--device", "cuda"]
            args = ServerArgs.from_cli_args(parser.parse_args(argv))
            values = {
                "chunked_prefill_size": args.chunked_prefill_size,
                "cuda_graph_max_bs": args.cuda_graph_config.decode.max_bs,
                "mem_fraction_static": args.mem_fraction_static,
            }
            when = {"device": gpu, "memory_gib": GPUS[gpu][0], "tp_size": tp}
            for name, value in values.items():
                rows[name].append({"when": {**when, "model": "llama-3.1-8b"}, "value": value})
    source = f"sglang {version}: python/sglang/srt/server_args.py _handle_gpu_memory_settings"
    notes = {
        "chunked_prefill_size": "GPU memory tiers <20, <35, <60, <90, <160 GiB and above: 2048, 2048, 4096, 8192, 8192, 16384",
        "cuda_graph_max_bs": "decode graph max_bs by the same tiers (8, 24/80, 32/160, 256/512, 256/512, 512), larger for tp_size >= 4; not capped at max_running_requests",
        "mem_fraction_static": "(gpu_mem - reserved) / gpu_mem, reserved = 512 MiB + 1.5 MiB x max(chunk, 2048) + tp x pp / 8 GiB + graph reserve, at least 10 GiB above 60 GiB",
    }
    return [
        {"field": name, "cases": cases, "source": source, "note": notes[name]}
        for name, cases in rows.items()
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("vllm", "sglang"):
        print("usage: extract_fields.py vllm|sglang", file=sys.stderr)
        return 2
    data = vllm_surface() if argv[0] == "vllm" else sglang_surface()
    (OUT / data["engine"]).mkdir(parents=True, exist_ok=True)
    path = OUT / data["engine"] / f"fields-{data['release']}.yaml"
    header = (
        f"# {data['engine']} {data['source']['version']}: every field of "
        f"{data['source']['class']}, written by scripts/extract_fields.py from the "
        "installed wheel. Facts only; do not edit by hand.\n"
    )
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, width=100))
    print(f"wrote {path.relative_to(ROOT)}: {len(data['fields'])} fields")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
