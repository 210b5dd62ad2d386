"""The PyTorch backend's KV cache manager holds more than max_seq_len per sequence (the
overlap scheduler's token, the draft tokens, one-model EAGLE-3's extra KV): the int32
block-table rule counts what the manager holds, computed the engine's way."""

from __future__ import annotations

import pytest

from constraints.engines.trtllm.rules.kv_cache import pytorch_kv_sequence_tokens
from constraints.rules import all_rules
from constraints.schema import EngineConfig

RULE = next(r for r in all_rules() if r.id == "kv.block-table-fits-int32")
# (2 x 65536 - 1) x (T + 31) <= 32 x (2^31 - 1) holds up to T = 524260 tokens
LONGEST = 524260


def _values(**over):
    values = EngineConfig().flat()
    values.update(
        {
            "build_config.max_batch_size": 65536,
            "kv_cache_config.tokens_per_block": 32,
            "build_config.max_seq_len": LONGEST,
        }
    )
    values.update(over)
    return values


@pytest.mark.parametrize(
    ("over", "tokens"),
    [
        ({"runtime_config.disable_overlap_scheduler": True}, 8192),
        ({}, 8193),  # the overlap scheduler's extra token
        ({"speculative_config.decoding_type": "MTP", "build_config.max_draft_len": 3}, 8199),
        (
            {
                "speculative_config.decoding_type": "Eagle",
                "speculative_config.eagle3": True,
                "speculative_config.eagle3_one_model": True,
                "build_config.max_draft_len": 3,
            },
            8201,  # + 1 + 2 x 3 + (3 - 1)
        ),
        (
            {
                "runtime_config.disable_overlap_scheduler": True,
                "speculative_config.decoding_type": "Eagle",
                "speculative_config.eagle3": True,
                "speculative_config.eagle3_one_model": True,
                "build_config.max_draft_len": 3,
            },
            8197,
        ),
    ],
)
def test_kv_tokens_per_sequence_as_create_py_executor_counts_them(over, tokens):
    assert pytorch_kv_sequence_tokens(_values(**{"build_config.max_seq_len": 8192, **over})) == (
        tokens
    )


def test_the_tensorrt_engine_without_drafts_fits_at_the_limit():
    assert RULE.expr.evaluate(_values(**{"runtime_config.backend": "tensorrt"}))
    assert not RULE.expr.evaluate(
        _values(**{"runtime_config.backend": "tensorrt", "build_config.max_seq_len": LONGEST + 1})
    )


def test_the_pytorch_reserve_pushes_a_limit_sequence_over():
    no_overlap = {"runtime_config.backend": "pytorch"}
    no_overlap["runtime_config.disable_overlap_scheduler"] = True
    assert RULE.expr.evaluate(_values(**no_overlap))
    assert not RULE.expr.evaluate(_values(**{"runtime_config.backend": "pytorch"}))
    drafts = {
        **no_overlap,
        "speculative_config.decoding_type": "MTP",
        "build_config.max_draft_len": 4,
        "build_config.max_seq_len": LONGEST - 4,
    }
    assert RULE.expr.evaluate(_values(**drafts))
    assert not RULE.expr.evaluate(_values(**{**drafts, "build_config.max_seq_len": LONGEST - 3}))


def test_a_tree_counts_its_total_draft_tokens_not_its_depth():
    """1.2's create_py_executor adds spec_config.max_total_draft_tokens: a static EAGLE tree
    of 10 nodes and depth 3 holds 10 draft tokens per step."""
    tree = {
        "runtime_config.backend": "pytorch",
        "runtime_config.disable_overlap_scheduler": True,
        "speculative_config.decoding_type": "Eagle",
        "speculative_config.eagle3": True,
        "speculative_config.eagle3_one_model": False,
        "build_config.max_draft_len": 3,
        "speculative_config.max_total_draft_tokens": 10,
    }
    assert pytorch_kv_sequence_tokens(_values(**{**tree, "build_config.max_seq_len": 8192})) == (
        8192 + 10
    )
    assert RULE.expr.evaluate(_values(**{**tree, "build_config.max_seq_len": LONGEST - 10}))
    # the depth alone would still fit here; the tree's 10 tokens do not
    assert not RULE.expr.evaluate(_values(**{**tree, "build_config.max_seq_len": LONGEST - 9}))
    chain = {**tree, "speculative_config.max_total_draft_tokens": 3}
    assert RULE.expr.evaluate(_values(**{**chain, "build_config.max_seq_len": LONGEST - 3}))
