"""The groundtruth of model facts: what `ModelSpec` reads from every fixture model under
tests/fixtures/models/ (its `facts()`, parameters by group, layer kinds, experts, KV
elements per token, checkpoint quantization), pinned in `groundtruth.json` there.

`python -m tests.constraints.model_groundtruth` rewrites the file from the current reader;
tests/constraints/test_model_groundtruth.py compares the reader against it. Rewrite it only
when a change of facts is meant, and say which numbers changed and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from constraints.facts import ModelSpec, read_model

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
GROUNDTRUTH = FIXTURES / "groundtruth.json"


def fixture_names() -> list[str]:
    """Every fixture model (the groundtruth file itself excluded)."""
    return sorted(p.stem for p in FIXTURES.glob("*.json") if p != GROUNDTRUTH)


def _runs(kinds: tuple[str, ...]) -> list[list[Any]]:
    """Layer kinds as runs: [[kind, count], ...] (61 layers read as a few pairs)."""
    runs: list[list[Any]] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1][1] += 1
        else:
            runs.append([kind, 1])
    return runs


def record(spec: ModelSpec) -> dict[str, Any]:
    """The pinned facts of one model."""
    quant = None
    if spec.quant is not None:
        quant = {
            "method": spec.quant.method,
            "quant_algo": spec.quant.quant_algo,
            "kv_cache_quant_algo": spec.quant.kv_cache_quant_algo,
            "bits": spec.quant.bits,
            "covers": sorted(spec.quant.covers),
            "model_dtype": spec.quant.model_dtype,
        }
    return {
        "facts": spec.facts(),
        "family": spec.family,
        "model_type": spec.model_type,
        "params": spec.params.groups(),
        "active_params": spec.active_params,
        "layer_kinds": _runs(spec.layer_types),
        "num_experts": spec.num_experts,
        "experts_per_token": spec.experts_per_token,
        "moe_intermediate_size": spec.moe_intermediate_size,
        "moe_layers": spec.moe_layers,
        "kv_elements_per_layer": spec.kv_elements_per_layer,
        "kv_elements_per_token": spec.kv_elements_per_token,
        "window_kv_elements_per_token": spec.window_kv_elements_per_token,
        "state_bytes": spec.state_bytes,
        "quant": quant,
    }


def current() -> dict[str, dict[str, Any]]:
    """The groundtruth as the current reader reads it."""
    return {name: record(read_model(FIXTURES / f"{name}.json")) for name in fixture_names()}


def main() -> int:
    GROUNDTRUTH.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GROUNDTRUTH} ({len(fixture_names())} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
