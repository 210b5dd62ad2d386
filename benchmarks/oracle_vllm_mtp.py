"""Which target models vLLM's own code drafts MTP from, and where it reads their MTP layers.

Run with the Python of the vLLM venv (see docs/engines.md):

    /tmp/v-vllm/bin/python benchmarks/oracle_vllm_mtp.py [--out FILE]

vLLM 0.33.0 turns the target's config into the MTP draft's in
`SpeculativeConfig.hf_config_override` (vllm/config/speculative.py): a chain of branches
on `model_type` or `architectures[0]` that rewrites the config to a draft model type and
sets `n_predict` from one of the config's fields. `SpeculativeConfig.__post_init__` then
accepts `method: mtp` only when the rewritten `model_type` is one of `MTPModelTypes`
(else "Unsupported speculative method: 'mtp'"), and checks `num_speculative_tokens`
against `n_predict`.

This probe does not read the function's branches by hand: it takes every string constant
in the function's source (the model types and architectures its branches test, and some
that are only written) and runs the function itself on a probe config with that string
as `model_type`, then as `architectures[0]`. Each layer-count field the branches may read
holds a distinct value at the top and under `text_config`, so the `n_predict` vLLM sets
tells which field it read; probes that drop each field read so far give the fields vLLM
falls back to, in order (`fallbacks`: Qwen3.5 reads the top `mtp_num_hidden_layers`,
then the text config's); a probe without any of those fields gives vLLM's default. The
record (`tests/corpus/vllm/oracle/mtp_families.json`) is what `arbiter/dialects/
vllm_mtp.py` is compared with.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import logging
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "corpus" / "vllm" / "oracle" / "mtp_families.json"

# a distinct value per (field, place): the n_predict vLLM sets names the field it read
FIELDS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")
TOP_VALUES = dict(zip(FIELDS, (2, 3, 5), strict=True))
TEXT_VALUES = dict(zip(FIELDS, (11, 13, 17), strict=True))
MTP_CONFIG_VALUE = 7  # mtp_config.num_nextn_predict_layers (a dict field)
# fields some branches read besides the layer count (so the probe reaches their n_predict)
SUPPORT = {
    "layer_types": [],
    "hc_count": 1,
    "mtp_num_experts": 8,
    "mtp_num_experts_per_tok": 2,
    "num_attention_heads": 8,
}


def _which(value: Any) -> dict[str, Any]:
    for name, v in TOP_VALUES.items():
        if value == v:
            return {"field": name, "where": "top"}
    for name, v in TEXT_VALUES.items():
        if value == v:
            return {"field": name, "where": "text_config"}
    if value == MTP_CONFIG_VALUE:
        return {"field": "mtp_config.num_nextn_predict_layers", "where": "top"}
    return {"fixed": value}


def _config(model_type: str, arch: str, with_layers: bool, drop: frozenset = frozenset()) -> Any:
    """A probe config: every layer-count field at the top, under `text_config` and in
    `mtp_config` (none without `with_layers`), less the (field, where) pairs in `drop`."""
    from transformers import PretrainedConfig

    text_values = {k: v for k, v in TEXT_VALUES.items() if (k, "text_config") not in drop}
    text = PretrainedConfig(**SUPPORT, **(text_values if with_layers else {}))
    text.model_type = "probe_text"
    extra: dict[str, Any] = dict(SUPPORT)
    if with_layers:
        extra.update({k: v for k, v in TOP_VALUES.items() if (k, "top") not in drop})
        if ("mtp_config.num_nextn_predict_layers", "top") not in drop:
            extra["mtp_config"] = {"num_nextn_predict_layers": MTP_CONFIG_VALUE}
    cfg = PretrainedConfig(architectures=[arch], text_config=text, **extra)
    cfg.model_type = model_type
    return cfg


def _run(
    model_type: str, arch: str, with_layers: bool, drop: frozenset = frozenset()
) -> tuple[Any, str | None]:
    from vllm.config.speculative import SpeculativeConfig

    try:
        out = SpeculativeConfig.hf_config_override(_config(model_type, arch, with_layers, drop))
    except Exception as exc:  # a branch that needs more of a real config
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    return out, None


def _fallbacks(model_type: str, arch: str, first: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields vLLM reads when the one it read first is absent, in order: the probe
    drops each field read so far and asks again, until vLLM reads none."""
    chain: list[dict[str, Any]] = []
    drop = frozenset()
    read = first
    while "field" in read:
        drop = drop | {(read["field"], read["where"])}
        out, _ = _run(model_type, arch, True, drop)
        read = _which(getattr(out, "n_predict", None)) if out is not None else {}
        if "field" in read:
            chain.append(read)
    return chain


def candidates() -> list[str]:
    from vllm.config.speculative import SpeculativeConfig

    source = textwrap.dedent(inspect.getsource(SpeculativeConfig.hf_config_override))
    names = {
        n.value
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    return sorted(n for n in names if n.isidentifier())


def probe() -> dict[str, Any]:
    from typing import get_args

    import vllm
    from vllm.config.speculative import MTPModelTypes

    draft_types = set(get_args(MTPModelTypes))
    families, errors = [], []
    for name in candidates():
        for match, (model_type, arch) in (
            ("model_type", (name, "ProbeForCausalLM")),
            ("architecture", ("probe", name)),
        ):
            out, error = _run(model_type, arch, with_layers=True)
            if out is None or out.model_type not in draft_types:
                if error:
                    errors.append({"match": match, "name": name, "error": error})
                continue
            bare, _ = _run(model_type, arch, with_layers=False)
            read = _which(getattr(out, "n_predict", None))
            row = {
                "match": match,
                "name": name,
                "draft_type": out.model_type,
                "draft_architecture": (out.architectures or [None])[0],
                **read,
                # where vLLM looks next when that field is absent (Qwen3.5: the text config)
                "fallbacks": _fallbacks(model_type, arch, read),
                "default": getattr(bare, "n_predict", None) if bare is not None else None,
                # without any layer field, is it still an MTP draft (nemotron_h is not)
                "without_field": bare is not None and bare.model_type in draft_types,
            }
            families.append(row)
    return {
        "engine": "vllm",
        "version": vllm.__version__,
        "function": "vllm/config/speculative.py SpeculativeConfig.hf_config_override",
        "draft_types": sorted(draft_types),
        "families": families,
        "errors": errors,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT))
    opts = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    logging.disable(logging.WARNING)
    payload = probe()
    Path(opts.out).write_text(json.dumps(payload, indent=1) + "\n")
    print(f"{len(payload['families'])} MTP families -> {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
