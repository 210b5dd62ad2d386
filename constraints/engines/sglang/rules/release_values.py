"""Values of SGLang's closed sets that one release line has and another lacks: the
attention backend `cutlass_mla` and the KV dtype `fp4_e2m1`, both in SGLang 0.5.16's
parser and gone from 0.5.23's. Each rule refuses the value on the releases without it and
names the one that has it; 0.5.16 parses `fp4_e2m1` but refuses it when the model runner
sets up its KV cache.

Read against sglang 0.5.16 (python/sglang/srt/server_args.py ATTENTION_BACKEND_CHOICES
and ServerArgs.kv_cache_dtype; mem_cache/kv_cache_dtype.py) and sglang 0.5.23
(python/sglang/srt/arg_groups/choices.py ATTENTION_BACKEND_CHOICES and
arg_groups/fields/model.py kv_cache_dtype).
"""

from __future__ import annotations

from constraints.expr import ne
from constraints.rules.base import Rule, Source

from ._releases import SINCE_0_5_23, UNTIL_0_5_16
from .sglang import BACKEND, DECODE_BACKEND, PREFILL_BACKEND, S, uses

KV_DTYPE = S + "kv_cache_dtype"
_UNSET = {PREFILL_BACKEND: None, DECODE_BACKEND: None}


def _source(path: str, what: str, tag: str) -> Source:
    return Source("SGLang", f"python/sglang/srt/{path} {what}", tag, tag.lstrip("v"))


RULES = [
    Rule(
        id="sglang.cutlass-mla-until-0.5.16",
        text=(
            "cutlass_mla is an attention backend of SGLang 0.5.16 (--profile sglang-0.5.16);"
            " 0.5.23 no longer offers it: pick flashinfer, trtllm_mla or flashmla for an MLA"
            " model"
        ),
        source=_source("arg_groups/choices.py", "ATTENTION_BACKEND_CHOICES", "v0.5.23"),
        expr=~uses("cutlass_mla"),
        feasible={**_UNSET, BACKEND: "trtllm_mla"},
        infeasible={**_UNSET, BACKEND: "cutlass_mla"},
        scope=SINCE_0_5_23,
        topic="sglang",
    ),
    Rule(
        id="sglang.fp4-e2m1-kv-until-0.5.16",
        text=(
            "fp4_e2m1 is a KV cache dtype of SGLang 0.5.16's parser (--profile"
            " sglang-0.5.16, which refuses it at KV-cache setup too); 0.5.23 no longer"
            " offers it: use fp4_mx_block16"
        ),
        source=_source(
            "arg_groups/fields/model.py", "ServerArgs.kv_cache_dtype choices", "v0.5.23"
        ),
        expr=ne(KV_DTYPE, "fp4_e2m1"),
        feasible={KV_DTYPE: "fp4_mx_block16"},
        infeasible={KV_DTYPE: "fp4_e2m1"},
        scope=SINCE_0_5_23,
        topic="sglang",
    ),
    Rule(
        id="sglang.fp4-e2m1-kv-deprecated-0.5.16",
        text=(
            "SGLang 0.5.16 parses the KV cache dtype fp4_e2m1 but refuses it when the model"
            " runner sets up its KV cache (deprecated: use fp4_mx_block16)"
        ),
        source=_source(
            "mem_cache/kv_cache_dtype.py",
            "(--kv-cache-dtype=fp4_e2m1 is deprecated; also"
            " layers/quantization/fp4_kv_cache_quant_method.py)",
            "v0.5.16",
        ),
        expr=ne(KV_DTYPE, "fp4_e2m1"),
        feasible={KV_DTYPE: "fp4_mx_block16"},
        infeasible={KV_DTYPE: "fp4_e2m1"},
        scope=UNTIL_0_5_16,
        topic="sglang",
    ),
]

__all__ = ["RULES"]
