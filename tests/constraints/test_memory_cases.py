"""The memory rules' precision cases (expressions the solver sees) and the memory module's
functions (what capacity reports and the runtime allocate) agree on every combination."""

from __future__ import annotations

import itertools

from constraints.facts.memory import KV_DTYPE_HALVES, compute_dtype, kv_dtype, weight_half_bytes
from constraints.schema import KV_QUANT_ALGOS, QUANT_ALGOS
from constraints.shared.rules.memory import kv_cases, weight_cases

MODEL_DTYPES = ("float32", "float16", "bfloat16")
BUILD_DTYPES = ("auto", *MODEL_DTYPES)
KV_DTYPES = ("auto", "float16", "bfloat16", "float32", "fp8")


def _case(cases, values):
    matches = [halves for halves, when in cases if when.evaluate(values)]
    assert len(matches) == 1, (values, matches)  # exactly one case holds
    return matches[0]


def test_kv_precision_cases_agree_with_kv_dtype():
    seen = set()
    for model, build, kv, quant in itertools.product(
        MODEL_DTYPES, BUILD_DTYPES, KV_DTYPES, KV_QUANT_ALGOS
    ):
        values = {
            "model.dtype": model,
            "build_config.dtype": build,
            "kv_cache_config.dtype": kv,
            "quant_config.kv_cache_quant_algo": quant,
        }
        name = kv_dtype(values)
        seen.add(name)
        assert _case(kv_cases(), values) == KV_DTYPE_HALVES[name], values
    assert seen == set(KV_DTYPE_HALVES)  # every element type is reached


def test_weight_precision_cases_agree_with_weight_half_bytes():
    for model, build, quant in itertools.product(MODEL_DTYPES, BUILD_DTYPES, QUANT_ALGOS):
        values = {
            "model.dtype": model,
            "build_config.dtype": build,
            "quant_config.quant_algo": quant,
        }
        expected = weight_half_bytes(quant, compute_dtype(values))
        assert _case(weight_cases(), values) == expected, values
