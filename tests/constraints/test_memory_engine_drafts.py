"""A TensorRT engine built for speculative decoding holds max_seq_len + max_draft_len
tokens per sequence (EAGLE: + num_eagle_layers), so the fail-fast one-sequence check of
the memory model needs room for exactly that many more tokens."""

from __future__ import annotations

from constraints.rules import all_rules
from constraints.schema import EngineConfig

RULE = next(r for r in all_rules() if r.id == "memory.fail-fast-needs-one-sequence")


def _values(**over):
    values = EngineConfig().flat()
    values.update(
        {
            "device.memory_mib": 24576,
            "kv_cache_config.free_gpu_memory_fraction": 0.9,
            "memory_policy.fail_fast_on_attention_window_too_large": True,
            "runtime_config.backend": "tensorrt",
            "kv_cache_config.max_attention_window": None,
        }
    )
    values.update(over)
    return values


def _longest(**over) -> int:
    """The longest max_seq_len the rule admits (bisection over the solver-free check)."""
    expr = RULE.expr.bind(_values(**over))
    lo, hi = 1, 1 << 22
    assert expr.evaluate(_values(**over, **{"build_config.max_seq_len": lo}))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if expr.evaluate(_values(**over, **{"build_config.max_seq_len": mid})):
            lo = mid
        else:
            hi = mid - 1
    return lo


def test_draft_tokens_take_room_from_the_longest_sequence():
    plain = _longest()
    assert 1 < plain < 1 << 22
    medusa = {"speculative_config.decoding_type": "Medusa", "build_config.max_draft_len": 63}
    assert _longest(**medusa) == plain - 63
    eagle = {
        "speculative_config.decoding_type": "Eagle",
        "build_config.max_draft_len": 60,
        "speculative_config.num_eagle_layers": 4,
    }
    assert _longest(**eagle) == plain - 64


def test_without_fail_fast_the_engine_clamps_instead():
    values = _values(
        **{
            "memory_policy.fail_fast_on_attention_window_too_large": False,
            "build_config.max_seq_len": 1 << 22,
        }
    )
    assert RULE.expr.bind(values).evaluate(values)
