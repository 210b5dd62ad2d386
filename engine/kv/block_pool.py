"""Block metadata: reference counts, free lists, prefix-hash index and LRU eviction.

A block is in exactly one of three states:

- *used*: `ref_count > 0`, held by one or more block tables;
- *free*: `ref_count == 0` and no prefix hash; handed out first;
- *cached-free*: `ref_count == 0` and a registered prefix hash; kept so that a later
  prompt with the same prefix can reuse it, and evicted least-recently-freed first.

The pool knows nothing about sequences; the manager tells it what to take, touch, release
and register. Eviction calls `on_evict(block)` before the hash is dropped, which is where
host offload hooks in.

A block's `Block` object is made the first time it is used (`Blocks`): a pool sized from
host memory holds hundreds of thousands of blocks, most of which a run never touches, and
one object per block made up front cost seconds at start-up. A block never used reads as
a fresh one (no reference, no hash) and sits in the free list like any other.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, ValuesView
from dataclasses import dataclass, field

from engine.kv.errors import KvCacheError
from engine.kv.stats import KvCounters


@dataclass
class Block:
    block_id: int
    ref_count: int = 0
    hash: int | None = None
    parent_hash: int | None = None
    tokens: tuple[int, ...] = field(default_factory=tuple)

    def reset(self) -> None:
        self.hash = None
        self.parent_hash = None
        self.tokens = ()


class Blocks:
    """Every block's metadata by id, its ``Block`` made on first use.

    ``blocks[i]`` is block ``i``'s one ``Block`` (made, and kept, if it was never used);
    ``len`` is the pool's size; iterating yields every block in id order, an unused one as a
    fresh ``Block`` that is not kept. ``made()`` holds only the blocks used so far, and
    ``peek(i)`` block ``i`` if made (None otherwise): checks read these and create nothing.
    """

    __slots__ = ("_made", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._made: dict[int, Block] = {}

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, block_id: int) -> Block:
        block = self._made.get(block_id)
        if block is None:
            if not 0 <= block_id < self._size:
                raise IndexError(f"block {block_id} is outside the pool of {self._size}")
            block = self._made[block_id] = Block(block_id)
        return block

    def __iter__(self) -> Iterator[Block]:
        made = self._made
        for block_id in range(self._size):
            block = made.get(block_id)
            yield Block(block_id) if block is None else block

    def peek(self, block_id: int) -> Block | None:
        return self._made.get(block_id)

    def made(self) -> ValuesView[Block]:
        return self._made.values()


class BlockPool:
    """Owns every block's metadata; O(1) take, touch and release."""

    def __init__(
        self,
        num_blocks: int,
        counters: KvCounters,
        on_evict: Callable[[Block], None] | None = None,
    ) -> None:
        self.blocks = Blocks(num_blocks)
        self.free: deque[int] = deque(range(num_blocks))
        # Insertion order is release order: the first key is the least recently freed.
        self.cached_free: OrderedDict[int, None] = OrderedDict()
        self.hash_to_block: dict[int, int] = {}
        # parent hash -> hashed blocks that extend it; partial reuse searches these.
        self.children: dict[int, set[int]] = {}
        self.counters = counters
        self.on_evict = on_evict

    @property
    def num_free(self) -> int:
        """Blocks a caller can obtain now (free plus evictable cached-free)."""
        return len(self.free) + len(self.cached_free)

    def lookup(self, block_hash: int, tokens: tuple[int, ...]) -> Block | None:
        """The device block holding this prefix hash, if its tokens really match."""
        block_id = self.hash_to_block.get(block_hash)
        if block_id is None or self.blocks[block_id].tokens != tokens:
            return None
        return self.blocks[block_id]

    def is_leaf(self, block: Block) -> bool:
        return block.hash is None or not self.children.get(block.hash)

    def take(self) -> int:
        """Hand out one block with ref_count 1, evicting the LRU cached-free one if needed."""
        if self.free:
            block_id = self.free.popleft()
        elif self.cached_free:
            block_id, _ = self.cached_free.popitem(last=False)
            victim = self.blocks[block_id]
            if self.on_evict is not None:
                self.on_evict(victim)
            self.unregister(block_id)
            self.counters.evictions += 1
        else:
            raise KvCacheError("block pool exhausted: take() called without a capacity check")
        self.blocks[block_id].ref_count = 1
        return block_id

    def touch(self, block_id: int) -> None:
        """Add a reference; a cached-free block leaves the eviction queue."""
        block = self.blocks[block_id]
        if block.ref_count == 0:
            if block.hash is not None:
                del self.cached_free[block_id]
            else:
                self.free.remove(block_id)  # rare: only a fork of a just-freed table
        block.ref_count += 1

    def release(self, block_id: int) -> None:
        """Drop a reference; at zero a hashed block becomes the most recent cached-free."""
        block = self.blocks[block_id]
        if block.ref_count <= 0:
            raise KvCacheError(f"block {block_id} released with ref_count {block.ref_count}")
        block.ref_count -= 1
        if block.ref_count == 0:
            if block.hash is not None:
                self.cached_free[block_id] = None
            else:
                self.free.append(block_id)

    def register(
        self, block_id: int, block_hash: int, parent_hash: int, tokens: tuple[int, ...]
    ) -> bool:
        """Record a full block's prefix hash; False when another block already holds it.

        Duplicates stay unhashed rather than replacing the indexed block, so block tables
        never change under a running sequence.
        """
        if block_hash in self.hash_to_block:
            return False
        block = self.blocks[block_id]
        block.hash, block.parent_hash, block.tokens = block_hash, parent_hash, tokens
        self.hash_to_block[block_hash] = block_id
        self.children.setdefault(parent_hash, set()).add(block_id)
        return True

    def unregister(self, block_id: int) -> None:
        """Forget a block's prefix hash (it is about to be overwritten)."""
        block = self.blocks[block_id]
        if block.hash is None:
            return
        del self.hash_to_block[block.hash]
        siblings = self.children.get(block.parent_hash)  # type: ignore[arg-type]
        if siblings is not None:
            siblings.discard(block_id)
            if not siblings:
                del self.children[block.parent_hash]  # type: ignore[arg-type]
        block.reset()
        # An unhashed block with no owner belongs in the plain free list.
        if block.ref_count == 0 and block_id in self.cached_free:
            del self.cached_free[block_id]
            self.free.append(block_id)
