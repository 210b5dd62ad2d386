"""Where each token position lives in the pool, and which keys a query may see.

Pool tensors (the fixed contract with the attention kernels): one tensor per layer,
`kv[layer]` of shape `[2, num_blocks, tokens_per_block, num_kv_heads, head_dim]`, index 0 = K,
1 = V. A slot is `block_id * tokens_per_block + offset`.

Positions. A sequence's token at position p (0-based, in the original text) is stored at
*cache index* c(p), and cache index c lives in `block_table[c // T]` at offset `c % T`
(T = tokens_per_block):

- without sinks, c(p) = p;
- with S sink tokens, the sinks occupy their own blocks and are padded with a *bubble* of
  B = (T - S % T) % T unused slots up to the block boundary, so c(p) = p for p < S and
  c(p) = p + B for p >= S. The bubble slots are never written and never visible.

Visibility. With a window W (sinks included) a query at position i sees key j iff j <= i
and (j < S or i - j < W - S). Blocks that hold only non-sink positions no future query can
see are released and their block-table entries become `NULL_BLOCK` (-1); the table keeps
its length, so `c // T` still indexes it. Sink blocks are never released. RoPE positions
are the runtime's business: the cache stores K exactly as the model wrote it.

For kernels that take cache indices as key positions: non-sink keys and queries are all
shifted by the same B, so `i - j` and the window test are unchanged, and sinks are not
shifted at all; the only extra work is masking the B bubble slots. When S is a multiple of
the block size (or S = 0) the bubble is empty and cache index equals position.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from engine.kv.spec import KvCacheSpec

# Block-table entry for a released (out-of-window) block, and the padding value of the
# block-table tensor. Kernels must mask these entries; they never index real data.
NULL_BLOCK = -1


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class WindowLayout:
    """Position -> cache index mapping and window visibility for one KvCacheSpec."""

    tokens_per_block: int
    window: int | None
    sinks: int

    @classmethod
    def from_spec(cls, spec: KvCacheSpec) -> WindowLayout:
        return cls(spec.tokens_per_block, spec.max_attention_window, spec.sink_token_length)

    @cached_property
    def bubble(self) -> int:
        """Unused slots padding the sink tokens to a block boundary."""
        return (self.tokens_per_block - self.sinks % self.tokens_per_block) % self.tokens_per_block

    @cached_property
    def num_sink_blocks(self) -> int:
        return ceil_div(self.sinks, self.tokens_per_block)

    def cache_index(self, position: int) -> int:
        return position if position < self.sinks else position + self.bubble

    def cache_length(self, num_tokens: int) -> int:
        """Cache indices spanned by positions [0, num_tokens), bubble included.

        This is the context length an attention kernel sees when it walks the block table;
        with a bubble it must also mask the keys at cache indices [S, S + bubble).
        """
        return 0 if num_tokens <= 0 else self.cache_index(num_tokens - 1) + 1

    def position_of(self, cache_index: int) -> int | None:
        """The token position stored at `cache_index`, or None for a bubble slot."""
        if cache_index < self.sinks:
            return cache_index
        if cache_index < self.sinks + self.bubble:
            return None
        return cache_index - self.bubble

    def num_blocks_for(self, num_tokens: int) -> int:
        """Block-table length needed to hold positions [0, num_tokens)."""
        if num_tokens <= 0:
            return 0
        return self.cache_index(num_tokens - 1) // self.tokens_per_block + 1

    def block_positions(self, block_index: int) -> tuple[int, int]:
        """Half-open range of token positions that block-table entry `block_index` holds."""
        first = block_index * self.tokens_per_block
        last = first + self.tokens_per_block
        if block_index < self.num_sink_blocks:
            return first, min(last, self.sinks)
        return first - self.bubble, last - self.bubble

    def positions_covered(self, num_entries: int) -> int:
        """Token positions [0, n) that the first `num_entries` table entries hold (blocks
        cover consecutive positions, so this is the end of the last entry's range)."""
        return self.block_positions(num_entries - 1)[1] if num_entries > 0 else 0

    def can_see(self, query: int, key: int) -> bool:
        if key > query:
            return False
        if self.window is None:
            return True
        return key < self.sinks or query - key < self.window - self.sinks

    def first_visible(self, first_query: int) -> int:
        """Smallest non-sink key position that a query at or after `first_query` can see."""
        if self.window is None:
            return 0
        return max(self.sinks, first_query - (self.window - self.sinks) + 1)

    def num_releasable_blocks(self, first_query: int) -> int:
        """Leading block-table entries past the sinks that no query >= first_query sees.

        Returns how many entries, counting from index 0, are either sink blocks (kept) or
        dead; the caller releases the dead ones, i.e. indices in
        [num_sink_blocks, returned value).
        """
        if self.window is None:
            return self.num_sink_blocks
        visible_from = self.first_visible(first_query)
        # Block k (non-sink) is dead when its last position is below visible_from.
        dead_end = (visible_from + self.bubble) // self.tokens_per_block
        return max(self.num_sink_blocks, dead_end)

    def peak_blocks(self, total_tokens: int, max_chunk: int) -> int:
        """Upper bound on the blocks one beam holds at once over a life of `total_tokens`.

        A step computing `n` tokens from position c holds the sink blocks plus the blocks
        spanning [first_visible(c), c + n): at most ceil((W - S - 1 + n) / T) + 1 of them,
        the +1 for a span that straddles a block boundary. `max_chunk` bounds n.
        """
        full = self.num_blocks_for(total_tokens)
        if self.window is None:
            return full
        span = self.window - self.sinks - 1 + max(1, max_chunk)
        return min(full, self.num_sink_blocks + ceil_div(span, self.tokens_per_block) + 1)
