"""The numbers of a conflict come from a proved best witness, also over a wide product.

SGLang's `chunked_prefill_size` 8191 with 64-token pages breaks `sglang.chunk-multiple-of-page`;
the conflict's numbers include `sglang.attn-dp-divides-chunk`'s lower half, whose slack
(`max_num_tokens * attn_dp_size - chunk + attn_dp_size`) ranges over a product of two wide
domains. The oracle's own search raises that slack a step at a time (a million branches
and ~20 s of CPU for a witness it never proved); the witness search then solves it with
presolve, which proves the optimum: the largest per-rank chunk the domain allows with
one attention DP rank. Deterministic, so the note is the same on every run.
"""

from __future__ import annotations

from arbiter.engines.sglang.native import check_sglang
from tests.arbiter.engines.sglang.test_sglang_corpus import MODELS

LLAMA = MODELS["llama-3.1-8b"]  # the oracles' Llama-3.1-8B config


def test_witness_over_a_wide_product_is_the_proved_best():
    verdict = check_sglang(
        {"chunked-prefill-size": 8191, "page-size": 64}, model=LLAMA, device="H100"
    )
    assert verdict.verdict == "reject"
    assert verdict.conflict is not None
    (report,) = verdict.conflict.explanation.conflicts
    assert "sglang.chunk-multiple-of-page" in report.conflict.rules
    lower = [n for n in report.numbers if n.where == "sglang.attn-dp-divides-chunk" and n.op == ">"]
    assert len(lower) == 1
    values = dict(lower[0].values)
    # the best witness: one attention DP rank and the largest max_num_tokens there is
    assert values["sglang_config.attn_dp_size"] == 1
    assert values["sglang_config.chunked_prefill_size"] == 8191
    assert values["build_config.max_num_tokens"] == 4194304
    assert lower[0].holds is True
    assert (lower[0].lhs, lower[0].rhs) == (4194304, 8190)
