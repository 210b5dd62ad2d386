"""MLC LLM's memory terms: `gpu_memory_utilization` of the whole device, and MLC's own
workspace formulas (`EstimateMemoryUsageOnMode`, cpp/serve/config.cc @79d603f0, catalog
2.4) with max_num_tokens as the prefill chunk and max_batch_size as max_num_sequence,
plus twice the compiled per-function temp buffer (config.cc InferForKVCache). That
buffer's size comes from compiling the model (`memory.mlc_temp_buffer_bytes` when known);
when it is unknown we assume it holds one prefill chunk's gate and up projections in 16
bits (`MLC_TEMP_BYTES_PER_TOKEN`: 4 x intermediate bytes per prefill token, so twice that
is counted per token of max_num_tokens). Layers over pipeline stages: as TensorRT-LLM
(the extra ones first), an assumption.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...facts.memory import MIB, Coefficients, MemoryTerms, fact

# assumed MLC temp buffer per prefill token, in bytes per unit of intermediate size: the
# gate and up projections of one chunk in 16 bits (2 x 2 bytes)
MLC_TEMP_BYTES_PER_TOKEN = 4
# the compiled temp buffer's bytes, when known (a fact outside the schema)
TEMP_BUFFER = "memory.mlc_temp_buffer_bytes"


class MlcMemoryTerms(MemoryTerms):
    """MLC LLM: the whole device x gpu_memory_utilization, MLC's workspace."""

    name = "mlc"
    engine = "mlc"
    extra_facts = (TEMP_BUFFER,)
    source = "mlc-ai/mlc-llm cpp/serve/config.cc EstimateMemoryUsageOnMode @79d603f0"

    def coefficients(self, facts: Mapping[str, Any]) -> Coefficients:
        nq = int(fact(facts, "model.num_attention_heads"))
        nkv = int(fact(facts, "model.num_kv_heads"))
        hd = int(fact(facts, "model.head_dim"))
        inter = int(fact(facts, "model.intermediate_size"))
        vocab = int(fact(facts, "model.vocab_size"))
        qo_hidden = hd * nq  # MLC's hidden_size in the workspace formula
        per_token = (nq + 1) * 8 + hd * (nq + nkv) * 4 + 4 + 2 * qo_hidden * 2
        per_seq = 88 + 4 + qo_hidden * 2 + 20 + math.ceil(vocab * 16.125)
        known = int(facts.get(TEMP_BUFFER) or 0)
        if known:
            return Coefficients(per_token, per_seq, 88 + 48 * MIB + 2 * known, 2)
        per_token += 2 * MLC_TEMP_BYTES_PER_TOKEN * inter
        return Coefficients(per_token, per_seq, 88 + 48 * MIB, 2)  # 1.25 B, rounded up


TERMS = MlcMemoryTerms()
