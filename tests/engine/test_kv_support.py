"""A fake model for KV-cache tests, and tests of the fake itself.

The fake writes, for the token at position p, a value that depends on the whole prefix
`token_ids[: p + 1]` (as real K/V does), into every layer's K and V rows of that slot.
Any reuse, copy, offload or onboard that hands a sequence wrong rows then shows up as a
mismatch in `assert_cache_content`.
"""

from __future__ import annotations

import torch

from engine.kv import KvCacheManager, KvCacheSpec, hash_block, slots_for
from engine.kv.layout import NULL_BLOCK
from engine.sequence import Sequence


def make_spec(**overrides: object) -> KvCacheSpec:
    fields: dict[str, object] = dict(
        num_layers=2, num_kv_heads=1, head_dim=2, tokens_per_block=4, num_blocks=8
    )
    fields.update(overrides)
    return KvCacheSpec(**fields)  # type: ignore[arg-type]


def token_value(token_ids: list[int], position: int) -> float:
    """An exact float32 value determined by the prefix up to `position`."""
    return float(hash_block(0, token_ids[: position + 1]) % (1 << 20))


def write_kv(kv: KvCacheManager, seq: Sequence, num_new: int) -> None:
    """Play the model: write K/V of the next `num_new` tokens, then mark them computed."""
    start = seq.num_computed_tokens
    slots = slots_for(kv.layout, seq.block_table, start, num_new)
    for layer_index, layer in enumerate(kv.storage.kv):
        rows = layer.view(2, -1, kv.spec.num_kv_heads, kv.spec.head_dim)
        for position, slot in zip(range(start, start + num_new), slots, strict=True):
            value = token_value(seq.token_ids, position) + 1000.0 * layer_index
            rows[0, slot] = value
            rows[1, slot] = -value
    kv.mark_computed(seq, num_new)


def expected_rows(kv: KvCacheManager, seq: Sequence) -> dict[int, float]:
    """slot -> expected K value of layer 0, for every computed position in a live block."""
    expected: dict[int, float] = {}
    tpb = kv.spec.tokens_per_block
    for position in range(seq.num_computed_tokens):
        index = kv.layout.cache_index(position)
        block = seq.block_table[index // tpb]
        if block != NULL_BLOCK:
            expected[block * tpb + index % tpb] = token_value(seq.token_ids, position)
    return expected


def assert_cache_content(kv: KvCacheManager, seq: Sequence) -> None:
    for layer_index, layer in enumerate(kv.storage.kv):
        rows = layer.view(2, -1, kv.spec.num_kv_heads, kv.spec.head_dim)
        for slot, value in expected_rows(kv, seq).items():
            want = value + 1000.0 * layer_index
            assert torch.all(rows[0, slot] == want), (seq.seq_id, slot, rows[0, slot], want)
            assert torch.all(rows[1, slot] == -want), (seq.seq_id, slot)


def prefill(kv: KvCacheManager, seq: Sequence, next_token: int | None = 7) -> None:
    """Admit `seq` whole, compute its prompt, and append a sampled token."""
    remaining = len(seq) - kv.match_prefix(seq).num_cached_tokens
    kv.allocate(seq, remaining)
    write_kv(kv, seq, len(seq) - seq.num_computed_tokens)
    if next_token is not None:
        seq.append_token(next_token)


def decode(kv: KvCacheManager, seq: Sequence, next_token: int) -> None:
    kv.append_slot(seq, 1)
    write_kv(kv, seq, 1)
    seq.append_token(next_token)


def test_fake_model_round_trip() -> None:
    kv = KvCacheManager(make_spec())
    seq = Sequence(1, [3, 1, 4, 1, 5])
    prefill(kv, seq)
    decode(kv, seq, 9)
    assert seq.num_computed_tokens == 6
    assert_cache_content(kv, seq)
    # Corrupt one computed slot: the checker must notice.
    kv.storage.kv[1][0, seq.block_table[0], 2] += 1.0
    try:
        assert_cache_content(kv, seq)
    except AssertionError:
        return
    raise AssertionError("a corrupted slot went unnoticed")


def test_token_value_depends_on_whole_prefix() -> None:
    assert token_value([1, 2, 3], 2) != token_value([0, 2, 3], 2)
    assert token_value([1, 2, 3], 1) == token_value([1, 2, 9], 1)
