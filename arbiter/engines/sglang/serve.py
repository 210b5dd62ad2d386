"""SGLang's argument surface read the way SGLang reads it: a `--config` YAML mapping and a
launch command line (`python -m sglang.launch_server ...` / `sglang serve ...`), checked
against the field list of the release line (`fields-0.5.23.yaml`, `fields-0.5.16.yaml`).

- every key is resolved in any spelling SGLang accepts (dashes or underscores, a leading
  `--`, the flag aliases such as `--tensor-parallel-size`); keys that are no field are
  all named at once, with close matches;
- values are coerced by the field's type (`int`, `float`, `bool`, lists) and checked
  against its choices; every bad value is named at once;
- a deprecated flag, `lora_paths` and the `--x / --no-x` pairs (`YAML_REFUSED`) are
  refused in the YAML (0.5.16: the keys of `YAML_REFUSED_0_5_16`, the dests its merger
  refuses), as SGLang's `ConfigArgumentMerger` refuses every action that is
  not a plain store / store_true ("Unsupported config option ...
  DeprecatedStoreTrueAction", utils/server_args_config_parser.py, 0.5.23); on the
  command line it is accepted as SGLang's parser does (the merge of `--enable-dp-attention`
  into `attn_dp_size` is `parallel_hook.handle_deprecated_dp_attention`);
- the command line wins over the YAML key by key (the merger puts the YAML's arguments
  first: "CLI > Config > Defaults");
- a key this release refuses that another release line has (0.5.16's `--cuda-graph-bs`,
  which 0.5.23 split into `--cuda-graph-bs-decode` / `--cuda-graph-bs-prefill`, or a flag
  new in 0.5.23 given to 0.5.16) is named with the release that has it and the profile to
  pick (`release_problem`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...dialects._base import InputProblems, KeyProblem, load_mapping
from ...dialects.surface import Field, Key, Surface, load_surface, surface_names

SURFACE = "sglang-0.5.23"  # the default release line's field list
# fields whose flag is neither a plain store nor store_true, which SGLang's --config
# merger refuses in the YAML ("Unsupported config option '<key>' with action ...":
# ConfigArgumentMerger.unsupported_actions, utils/server_args_config_parser.py, 0.5.23;
# listed from its parser): field -> the argparse action class
YAML_REFUSED = {
    "lora_paths": "LoRAPathAction",
    **{
        name: "BooleanOptionalAction"
        for name in (
            "dcp_replicate_q_proj",
            "dllm_fdfo",
            "enable_decoder_swa_bounded_replay",
            "enable_dsa_fused_indexer",
            "enable_fused_qk_norm_rope",
            "enable_tf32_matmul",
            "enable_tp_lm_head_all_to_all",
            "experts_shared_outer_loras",
            "lora_strict_loading",
            "mm_enable_dp_encoder",
            "ple_offload_embedding",
            "speculative_enable_w4a4_mxfp4_megamoe",
        )
    },
}
# SGLang 0.5.16's merger refuses a YAML key whose underscore form (`key.replace("-", "_")`)
# is the dest of an action that is neither a plain store nor store_true
# (ConfigArgumentMerger.unsupported_actions, python/sglang/srt/server_args_config_parser.py,
# v0.5.16; listed from its parser). A deprecated alias is keyed by the field it writes, so
# `cuda-graph-bs-decode` is refused in the YAML while the alias `cuda-graph-bs` itself,
# which is no dest, passes to argparse: dest -> the action class
YAML_REFUSED_0_5_16 = {
    **{
        name: "DeprecatedAliasStoreAction"
        for name in (
            "cuda_graph_bs_decode",
            "cuda_graph_bs_prefill",
            "cuda_graph_max_bs_decode",
            "cuda_graph_max_bs_prefill",
            "cuda_graph_tc_compiler",
            "dsa_decode_backend",
            "dsa_prefill_backend",
            "dsa_prefill_cp_mode",
            "mamba_radix_cache_strategy",
            "prefill_cp_mode",
            "speculative_draft_window_size",
        )
    },
    **{
        name: "DeprecatedStoreTrueAction"
        for name in (
            "disable_cuda_graph",
            "enable_dsa_prefill_context_parallel",
            "enable_prefill_context_parallel",
            "incremental_streaming_output",
        )
    },
    **{
        name: "BooleanOptionalAction"
        for name in ("dllm_fdfo", "experts_shared_outer_loras", "lora_strict_loading")
    },
    "collect_tokens_histogram": "DeprecatedAction",
    "prefill_round_robin_balance": "DeprecatedAction",
    "cuda_graph_backend_prefill": "DeprecatedStoreConstAction",
    "lora_paths": "LoRAPathAction",
}
TRUE_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


class SglangArgsError(InputProblems):
    """Every bad key and value of an SGLang configuration at once (`problems`), the keys
    that are no field of the release among them (`unknown_keys`). Its `key` is the one
    problem's key (None for more), its `value` the list of every problem's key."""

    unknown = "no field"
    bullet = "  "

    def __init__(
        self, problems: list[KeyProblem], file: str | None = None, release: str = "0.5.23"
    ):
        super().__init__(
            problems, file=file, reason=f"{len(problems)} problem(s) in the SGLang arguments"
        )
        self.release = release
        self.key = self.problems[0].key if len(self.problems) == 1 else None
        self.value = [p.key for p in self.problems]
        self.suggestions = ()

    def headline(self) -> str:
        return (
            f"{self.file or '<input>'}: {len(self.problems)} problem(s) for SGLang {self.release}"
        )


@dataclass
class Arguments:
    """SGLang fields as given: `values` (field name -> coerced value), `spelled` (field
    name -> the key as the user wrote it), `source` (field -> "yaml" or "cli"), the
    merged input in the user's spelling (`given`), `notes` on flags SGLang rewrites
    at parse time and `warnings` on keys it takes as abbreviations."""

    values: dict[str, Any] = field(default_factory=dict)
    spelled: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    given: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    file: str = "<sglang>"
    # values as written that SGLang rewrites before any rule reads them, each as an
    # adjustment ("key: before -> after (why)")
    rewrites: list[str] = field(default_factory=list)
    # 0.5.16's --enable-dp-attention as written (its memory derivation reads the switch
    # before the switch is turned off for one DP group); None on 0.5.23
    dp_attention: bool | None = None


def surface(line: str = SURFACE) -> Surface:
    """The field list of an SGLang release line (`sglang-0.5.23`, `sglang-0.5.16`)."""
    return load_surface(line)


def other_lines(key: str, line: str) -> tuple[str, ...]:
    """The other SGLang release lines whose field lists have `key` as one of their own
    spellings, newest first."""
    found = [
        name
        for name in surface_names()
        if name.startswith("sglang-") and name != line and load_surface(name).resolve(key)
    ]
    return tuple(sorted(found, key=lambda n: _release_key(n[7:]), reverse=True))


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".") if part.isdigit())


def release_problem(
    surf: Surface, line: str, key: str, matches: tuple[str, ...]
) -> KeyProblem | None:
    """The problem of a key this release refuses (unknown, or an ambiguous prefix) that
    another release line has: "an SGLang 0.5.16 flag; in 0.5.23 use --cuda-graph-bs-decode/
    --cuda-graph-bs-prefill, or --profile sglang-0.5.16". What to use instead: the flags
    the key is a prefix of here, else this release's flags of the same field, else none."""
    elsewhere = other_lines(key, line)
    if not elsewhere:
        return None
    other = load_surface(elsewhere[0])
    spelled = "--" + key.strip().lstrip("-")
    instead = list(matches)
    if not instead:
        theirs = other.resolve(key)
        mine = surf.fields.get(theirs.field.name) if theirs is not None else None
        instead = list(mine.flags[:1]) if mine is not None and mine.flags else []
    use = f"in {surf.release} use {'/'.join(instead)}, or " if instead else ""
    # the engine's own words first where its parser finds the key ambiguous
    ambiguous = f"ambiguous option: could match {', '.join(matches)}; " if matches else ""
    return KeyProblem(
        key,
        f"{ambiguous}{spelled} is an SGLang {other.release} flag, not one of {surf.release}; "
        f"{use}--profile {elsewhere[0]}",
    )


def value_release(spec: Field, raw: Any, release: str) -> str:
    """ "; a value of SGLang 0.5.16: --profile sglang-0.5.16" when another release line
    lists `raw` among the same field's choices (0.5.16's attention backend cutlass_mla and
    KV dtype fp4_e2m1, which 0.5.23 no longer offers: arg_groups/choices.py ATTENTION_BACKEND_CHOICES and
    arg_groups/fields/model.py kv_cache_dtype, v0.5.23),
    else ""."""
    if isinstance(raw, (list, dict)):
        return ""
    for name in other_lines(spec.name, f"sglang-{release}"):
        theirs = load_surface(name).fields.get(spec.name)
        if theirs is not None and theirs.choices is not None and raw in theirs.choices:
            return f"; {raw!r} is a value of SGLang {name[7:]}: --profile {name}"
    return ""


def read_arguments(
    config: str | Path | Mapping[str, Any] | None,
    serve_args: str | None = None,
    *,
    line: str = SURFACE,
) -> Arguments:
    """The YAML (a path or a mapping) and the command line merged and checked against
    the field list of release `line`; raises SglangArgsError naming every bad key and
    value."""
    problems: list[KeyProblem] = []
    args = Arguments()
    yaml_items: list[tuple[str, Any]] = []
    cli_items: list[tuple[str, Any]] = []
    surf = surface(line)
    if serve_args:
        tokens = _tokens(serve_args, problems)
        cli_items, config_path = _command_line(tokens, problems, surf)
        if config is None and config_path is not None:
            config = config_path
    if config is not None:
        data, where = load_mapping(
            dict(config) if isinstance(config, Mapping) else config, "sglang config"
        )
        args.file = where
        yaml_items = list(data.items())
    for origin, items in (("yaml", yaml_items), ("cli", cli_items)):
        for key, raw in items:
            found, matches = resolve(surf, str(key))
            other = None if found is not None else release_problem(surf, line, str(key), matches)
            if other is not None:
                problems.append(other)
                continue
            if found is None and len(matches) > 1:
                problems.append(
                    KeyProblem(str(key), "ambiguous option: could match " + ", ".join(matches))
                )
                continue
            if found is not None and surf.resolve(str(key)) is None:
                args.warnings.append(
                    f"{key} is taken as --{found.field.name.replace('_', '-')}: SGLang's "
                    "argparse parser accepts a unique prefix of a flag (allow_abbrev)"
                )
            if found is None:
                problems.append(
                    KeyProblem(
                        str(key),
                        f"no field of SGLang {surf.release}",
                        None,
                        surf.close_matches(str(key)),
                    )
                )
                continue
            spec = found.field
            if origin == "yaml" and surf.release == "0.5.16":
                action = YAML_REFUSED_0_5_16.get(str(key).replace("-", "_"))
                if action is not None:
                    problems.append(
                        KeyProblem(
                            str(key),
                            "SGLang 0.5.16's --config merger refuses this key in the YAML "
                            f"(Unsupported config option ... {action}): give it on the "
                            "command line"
                            + (
                                f" or as its alias {', '.join(alias)}"
                                if (alias := _yaml_aliases(spec, str(key)))
                                else ""
                            ),
                        )
                    )
                    continue
            elif spec.deprecated and origin == "yaml":
                problems.append(
                    KeyProblem(
                        str(key),
                        "a deprecated flag: SGLang's --config merger refuses it "
                        "(Unsupported config option ... DeprecatedStoreTrueAction)"
                        if surf.release == "0.5.23"
                        else f"a field with a deprecated flag: SGLang {surf.release}'s "
                        "--config merger refuses it (Unsupported config option ... "
                        "Deprecated...Action); give it on the command line",
                    )
                )
                continue
            if spec.name in YAML_REFUSED and origin == "yaml" and surf.release != "0.5.16":
                problems.append(
                    KeyProblem(
                        str(key),
                        "SGLang's --config merger refuses this flag in the YAML (Unsupported "
                        f"config option ... {YAML_REFUSED[spec.name]}): give it on the "
                        "command line",
                    )
                )
                continue
            try:
                value = coerce(spec, raw, negated=found.negated, cli=origin == "cli")
            except ValueError as exc:
                where = value_release(spec, raw, surf.release)
                problems.append(KeyProblem(str(key), str(exc) + where, raw))
                continue
            if spec.name in args.spelled and args.source.get(spec.name) == origin:
                problems.append(
                    KeyProblem(str(key), f"given twice (also as {args.spelled[spec.name]!r})")
                )
                continue
            if spec.name in args.spelled:
                args.given.pop(args.spelled[spec.name], None)
            # a flag is written back as a YAML key (`--tp-size` -> `tp-size`)
            key = str(key) if origin == "yaml" else str(key).lstrip("-")
            args.values[spec.name] = value
            args.spelled[spec.name] = key
            args.source[spec.name] = origin
            args.given[key] = raw if origin == "yaml" else value
    if problems:
        raise SglangArgsError(problems, file=args.file, release=surf.release)
    _deprecated_dp_attention(args, surf)
    return args


def _yaml_aliases(spec: Field, key: str) -> tuple[str, ...]:
    """The YAML keys 0.5.16's merger passes for the same field: its other flags whose
    underscore form is no refused dest (`cuda-graph-bs` for `cuda-graph-bs-decode`)."""
    return tuple(
        flag.lstrip("-")
        for flag in spec.flags
        if flag.lstrip("-").replace("-", "_") not in YAML_REFUSED_0_5_16
        and flag.lstrip("-") != key.lstrip("-")
        and not flag.startswith("--no-")
    )


def resolve(surf: Surface, key: str) -> tuple[Key | None, tuple[str, ...]]:
    """The field a key names, as SGLang's argparse parser finds it: an exact spelling, or
    else a unique prefix of one flag (argparse's `allow_abbrev`); with the flags a prefix
    matches when it matches several (argparse: "ambiguous option")."""
    found = surf.resolve(key)
    if found is not None:
        return found, ()
    flag = "--" + key.strip().lstrip("-")
    if flag == "--":
        return None, ()
    matches = sorted({f for spec in surf.fields.values() for f in spec.flags if f.startswith(flag)})
    if len(matches) == 1:
        return surf.resolve(matches[0]), ()
    return None, tuple(matches)


def coerce(spec: Field, raw: Any, *, negated: bool = False, cli: bool = False) -> Any:
    """A value of the field's type, as SGLang's parser would take it."""
    kind = spec.type.replace(" ", "")
    if is_bool(spec):
        value = raw
        if isinstance(raw, str) and raw.lower() in TRUE_WORDS:
            value = TRUE_WORDS[raw.lower()]
        if value is None and cli:
            value = True
        if not isinstance(value, bool):
            raise ValueError("expected true or false")
        return (not value) if negated else value
    if raw is None:
        if kind.startswith("Optional[") or "None" in kind:
            return None
        raise ValueError(f"expected a value of type {spec.type}")
    if spec.choices is not None and not isinstance(raw, (list, dict)) and raw in spec.choices:
        return raw
    if kind in ("int", "Optional[int]"):
        value = _int(raw)
    elif kind in ("float", "Optional[float]"):
        value = _float(raw)
    elif "List" in kind or "set[" in kind:
        items = raw if isinstance(raw, list) else [raw]
        if spec.choices is not None:
            bad = [item for item in items if item not in spec.choices]
            if bad:
                raise ValueError(f"{bad} not among the choices {list(spec.choices)}")
        return list(items)
    elif isinstance(raw, (dict, list)):
        return raw  # JSON-valued fields (cuda_graph_config, ...): carried as given
    else:
        value = raw if isinstance(raw, str) else _scalar_text(raw)
    if spec.choices is not None and value not in spec.choices:
        raise ValueError(f"not one of {', '.join(str(c) for c in spec.choices)}")
    return value


def is_bool(spec: Field) -> bool:
    """A switch: `bool`, `Optional[bool]` or `bool | None`."""
    return spec.is_bool or spec.type.replace(" ", "") == "Optional[bool]"


def _int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError("expected an integer")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            pass
    raise ValueError("expected an integer")


def _float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError("expected a number")
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw.strip())
        except ValueError:
            pass
    raise ValueError("expected a number")


def _scalar_text(raw: Any) -> str:
    return str(raw).lower() if isinstance(raw, bool) else str(raw)


def _tokens(line: str, problems: list[KeyProblem]) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        problems.append(KeyProblem("--serve-args", f"cannot be split into arguments: {exc}"))
        return []


def _command_line(
    tokens: list[str], problems: list[KeyProblem], surf: Surface
) -> tuple[list[tuple[str, Any]], str | None]:
    """(flag, value) pairs of a launch command line; program words before the first flag
    (`python -m sglang.launch_server`, `sglang serve MODEL`) are skipped. A bool flag takes
    no value (or an explicit true/false); a list flag takes every value up to the next flag."""
    items: list[tuple[str, Any]] = []
    config: str | None = None
    i = 0
    while i < len(tokens) and not tokens[i].startswith("--"):
        i += 1
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            problems.append(KeyProblem(token, "a value without a flag"))
            continue
        flag, eq, inline = token.partition("=")
        if flag == "--config":
            if eq:
                config = inline
            elif i < len(tokens):
                config, i = tokens[i], i + 1
            continue
        found, _ = resolve(surf, flag)
        values: list[str] = [inline] if eq else []
        if not eq:
            while i < len(tokens) and not tokens[i].startswith("--"):
                values.append(tokens[i])
                i += 1
        if found is None:
            items.append((flag, values[0] if len(values) == 1 else values or None))
            continue
        spec = found.field
        kind = spec.type.replace(" ", "")
        if is_bool(spec):
            if len(values) > 1 or (values and values[0].lower() not in TRUE_WORDS):
                problems.append(KeyProblem(flag, "a switch takes no value", " ".join(values)))
                continue
            items.append((flag, values[0] if values else None))
        elif "List" in kind or "set[" in kind:
            items.append((flag, values))
        elif len(values) != 1:
            problems.append(KeyProblem(flag, "expects one value", " ".join(values) or None))
        else:
            items.append((flag, values[0]))
    return items, config


def _deprecated_dp_attention(args: Arguments, surf: Surface) -> None:
    """`--enable-dp-attention` (command line only in 0.5.23) becomes `attn_dp_size =
    dp_size`, `dp_size = 1` (parallel_hook.handle_deprecated_dp_attention, 0.5.23). In
    0.5.16, which has no attn_dp_size, it is the attention-DP switch itself: `dp_size`
    attention groups inside the TP group (server_args.py, 0.5.16), the same layout."""
    written = bool(args.values.pop("enable_dp_attention", False))
    if "attn_dp_size" not in surf.fields:
        args.dp_attention = written
    if not written:
        return
    if "attn_dp_size" not in surf.fields and int(args.values.get("dp_size") or 1) == 1:
        # 0.5.16 turns the switch off with a single DP group (arg_groups/overrides.py
        # _data_parallelism_defaults, v0.5.16: dp_size == 1 -> enable_dp_attention False)
        key = args.spelled.get("enable_dp_attention", "enable-dp-attention")
        args.rewrites.append(
            f"{key.lstrip('-')}: True -> False (SGLang {surf.release} turns attention data "
            "parallelism off with --dp-size 1: arg_groups/overrides.py "
            "_data_parallelism_defaults)"
        )
        return
    if args.values.get("attn_dp_size", 1) == 1:
        args.values["attn_dp_size"] = args.values.get("dp_size", 1)
        args.values["dp_size"] = 1
    if "attn_dp_size" not in surf.fields:
        args.notes.append(
            f"--enable-dp-attention with --dp-size {args.values['attn_dp_size']}: attention "
            f"data parallelism of {args.values['attn_dp_size']} inside the tensor-parallel "
            f"group (SGLang {surf.release})"
        )
        return
    args.notes.append(
        "--enable-dp-attention is deprecated: SGLang reads it as --attn-dp-size "
        f"{args.values['attn_dp_size']} (handle_deprecated_dp_attention)"
    )


__all__ = ["Arguments", "SglangArgsError", "coerce", "read_arguments", "surface"]
