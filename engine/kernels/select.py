"""Choose the attention backend from the solved plugin config and the device.

Takes plain values (booleans, a device), never solver objects, so the engine reads a solved
config without depending on how it was solved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from . import fused, reference, triton_paged
from .decode import Workspace
from .decode_mirror import DecodeMirror
from .metadata import AttentionMetadata
from .segments import attend_segments, host_lens, segments, sub_batch

REFERENCE = "reference"
TRITON = "triton"


@dataclass(frozen=True)
class AttentionBackend:
    """Which implementation serves decode steps and which serves context (prefill) steps.

    A Triton choice falls back to the reference per call when the shapes are outside what
    the kernel covers (see ``triton_paged.supports``) or when the step has a sink bubble
    (``meta.sink_bubble > 0``: the Triton kernels take cache index as key position and do
    not mask the bubble); results are the same either way.
    """

    decode: str = REFERENCE
    prefill: str = REFERENCE
    # Scratch tensors of the reference decode path, reused by every layer and step.
    workspace: Workspace = field(default_factory=Workspace, compare=False, repr=False)
    # Head-major K/V copies of the CPU decode batch, kept across decode steps.
    mirror: DecodeMirror = field(default_factory=DecodeMirror, compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"decode={self.decode},prefill={self.prefill}"

    def store_kv(
        self,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_layer: torch.Tensor,
        slot_mapping: torch.Tensor,
        k_scale: float = 1.0,
        v_scale: float = 1.0,
        *,
        all_stored: bool = False,
    ) -> None:
        """Write this step's K/V into their slots (slot -1: skipped). With the Triton
        backend on CUDA a kernel skips those rows itself: no host look at the slots."""
        if self.decode == TRITON and triton_paged.supports_store(kv_layer, key):
            triton_paged.store_kv(key, value, kv_layer, slot_mapping, k_scale, v_scale)
            return
        reference.store_kv(
            key, value, kv_layer, slot_mapping, k_scale, v_scale, all_stored=all_stored
        )

    def fuses_store(self, qkv: torch.Tensor, kv_layer: torch.Tensor) -> bool:
        """Whether a layer may rotate its keys and store its K/V in one kernel
        (``fused.rope_store_``): where :meth:`store_kv` would take the Triton store
        kernel, into a pool of the projection's dtype."""
        return self.decode == TRITON and fused.store_fusable(qkv, kv_layer)

    def fuses_decode(
        self, qkv: torch.Tensor, kv_layer: torch.Tensor, meta: AttentionMetadata, group: int
    ) -> bool:
        """Whether a decode step's layer may rotate, store and attend in one kernel
        (:meth:`decode_rope_store`): :meth:`fuses_store` holds, every row decodes one
        token, no sink bubble, and the grouped decode kernel serves (a GQA group)."""
        return (
            not meta.is_prefill
            and meta.sink_bubble == 0
            and self.fuses_store(qkv, kv_layer)
            and triton_paged.supports(kv_layer, qkv, prefill=False)
            and triton_paged.rope_store_decode_ok(group)
        )

    def decode_rope_store(
        self,
        qkv: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        kv_layer: torch.Tensor,
        meta: AttentionMetadata,
        *,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int,
        sliding_window: int | None = None,
        sink_query: torch.Tensor | None = None,
        softmax_scale: float | None = None,
    ) -> torch.Tensor:
        """RoPE on the step's raw ``qkv`` rows, their K/V stored, and decode attention, in
        one Triton kernel where it runs (``fused.decode_rope_store``); see
        :meth:`fuses_decode` for where it applies."""
        self.mirror.drop(kv_layer)
        return fused.decode_rope_store(
            qkv, cos, sin, kv_layer, meta.slot_mapping, meta.block_tables, meta.context_lens,
            num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
            softmax_scale=softmax_scale, sliding_window=sliding_window,
            sink_tokens=meta.sink_tokens, sink_query=sink_query,
        )  # fmt: skip

    def attention(
        self,
        query: torch.Tensor,
        kv_layer: torch.Tensor,
        meta: AttentionMetadata,
        *,
        sliding_window: int | None = None,
        sink_query: torch.Tensor | None = None,
        softmax_scale: float | None = None,
        k_scale: float = 1.0,
        v_scale: float = 1.0,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attention of the packed ``query[num_tokens, Hq, D]``; K/V already stored.

        ``sliding_window`` is the layer's effective window (already combined with
        ``meta.sliding_window`` by the caller); sinks come from ``meta.sink_tokens``.
        ``key``/``value`` (optional) are this step's K/V as stored; with them the reference
        attends whole prompts over them directly (``engine.kernels.segments``).
        """
        kwargs = dict(
            softmax_scale=softmax_scale,
            sliding_window=sliding_window,
            sink_tokens=meta.sink_tokens,
            sink_query=sink_query,
            k_scale=k_scale,
            v_scale=v_scale,
        )
        if self._mirrored(query, kv_layer, meta, sliding_window, key, value):
            assert key is not None and value is not None
            plan = self.mirror.plan(meta, kv_layer.shape[2])
            if plan is not None:
                dim = query.shape[-1]
                scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(dim)
                out = self.mirror.attention(query, key, value, kv_layer, plan, scale)
                if out is not None:
                    return out
        triton_ok = meta.sink_bubble == 0
        if triton_ok and not meta.is_prefill and self.decode == TRITON:
            if triton_paged.supports(kv_layer, query, prefill=False):
                self.mirror.drop(kv_layer)
                return triton_paged.paged_decode(
                    query, kv_layer, meta.block_tables, meta.context_lens, **kwargs
                )
        if triton_ok and meta.is_prefill and self.prefill == TRITON:
            if triton_paged.supports(kv_layer, query, prefill=True):
                self.mirror.drop(kv_layer)
                return triton_paged.paged_prefill(
                    query,
                    kv_layer,
                    meta.block_tables,
                    meta.context_lens,
                    meta.query_start_loc,
                    max_query_len=meta.max_query_len,
                    **kwargs,
                )
        if (
            key is not None
            and value is not None
            and meta.is_prefill
            and sliding_window is None
            and meta.sink_tokens == 0
            and meta.sink_bubble == 0
            and kv_layer.dtype == query.dtype == key.dtype
        ):
            scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(query.shape[-1])
            ws = self.workspace
            mirrored = False

            def paged(q: torch.Tensor, run: AttentionMetadata) -> torch.Tensor:
                return _reference(q, kv_layer, run, None, kwargs, ws)

            def decode(
                q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, run: AttentionMetadata
            ) -> torch.Tensor:
                # The step's one run of decode rows takes the kept copies, as a decode
                # step does; the prompt rows write only their own blocks.
                nonlocal mirrored
                if run.stores_every_token():
                    plan = self.mirror.plan(run, kv_layer.shape[2])
                    if plan is not None:
                        out = self.mirror.attention(q, k, v, kv_layer, plan, scale)
                        if out is not None:
                            mirrored = True
                            return out
                return paged(q, run)

            def triton_decode(
                q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, run: AttentionMetadata
            ) -> torch.Tensor:
                return self._triton_decode(q, kv_layer, run, None, kwargs)

            one_run = sum(1 for s in segments(meta) if s.kind == "decode") == 1
            with_mirror = one_run and self._mirror_ok(query, kv_layer, sliding_window, key, meta)
            runs = decode if with_mirror else None
            if self._triton_rows(query, kv_layer, meta):
                runs = triton_decode
            out = attend_segments(query, key, value, meta, scale, paged, runs)
            if not mirrored:
                self.mirror.drop(kv_layer)
            return out
        self.mirror.drop(kv_layer)
        split = _decode_split(meta)
        if split is None:
            return _reference(query, kv_layer, meta, sink_query, kwargs, self.workspace)
        # A mixed step: prompt chunks first, then decode tokens. Attending the two groups
        # apart keeps the decode rows from being padded to the longest chunk.
        head, tail = split
        rows = host_lens(meta)[1][head.num_seqs]
        sink_head = sink_tail = None
        if sink_query is not None:
            sink_head, sink_tail = sink_query[:rows], sink_query[rows:]
        if self._triton_rows(query, kv_layer, meta):
            decoded = self._triton_decode(query[rows:], kv_layer, tail, sink_tail, kwargs)
        else:
            decoded = _reference(query[rows:], kv_layer, tail, sink_tail, kwargs, self.workspace)
        return torch.cat(
            [_reference(query[:rows], kv_layer, head, sink_head, kwargs, self.workspace), decoded]
        )

    def _triton_rows(
        self, query: torch.Tensor, kv_layer: torch.Tensor, meta: AttentionMetadata
    ) -> bool:
        """Whether a mixed step's decode rows go through the Triton decode kernel (over
        the block table, one launch per layer) rather than the reference's padded gather:
        the decode backend is Triton, the kernel covers the pool and the query, no sink
        bubble. In the H200 run of 2026-11-30 attention took 4.08 of a mixed step's 5.09
        ms, its decode rows through the reference."""
        return (
            self.decode == TRITON
            and meta.sink_bubble == 0
            and triton_paged.supports(kv_layer, query, prefill=False)
        )

    def _triton_decode(
        self,
        query: torch.Tensor,
        kv_layer: torch.Tensor,
        run: AttentionMetadata,
        sink_query: torch.Tensor | None,
        kwargs: dict,
    ) -> torch.Tensor:
        """The Triton decode kernel over ``run``'s rows, one token each."""
        return triton_paged.paged_decode(
            query,
            kv_layer,
            run.block_tables,
            run.context_lens,
            **{**kwargs, "sink_query": sink_query},
        )

    def _mirrored(
        self,
        query: torch.Tensor,
        kv_layer: torch.Tensor,
        meta: AttentionMetadata,
        sliding_window: int | None,
        key: torch.Tensor | None,
        value: torch.Tensor | None,
    ) -> bool:
        """Whether a decode call can go through the kept K/V copies (``DecodeMirror``): on
        a CPU, every row one stored token, full causal attention, K/V stored unconverted."""
        return (
            not meta.is_prefill
            and self._mirror_ok(query, kv_layer, sliding_window, key, meta)
            and value is not None
            and meta.stores_every_token()
        )

    def _mirror_ok(
        self,
        query: torch.Tensor,
        kv_layer: torch.Tensor,
        sliding_window: int | None,
        key: torch.Tensor | None,
        meta: AttentionMetadata,
    ) -> bool:
        """The conditions of the kept copies that hold for a whole step and layer."""
        return (
            query.device.type == "cpu"
            and self.decode == REFERENCE
            and key is not None
            and sliding_window is None
            and meta.sink_tokens == 0
            and meta.sink_bubble == 0
            and kv_layer.dtype == query.dtype == key.dtype
        )


def _reference(
    query: torch.Tensor,
    kv_layer: torch.Tensor,
    meta: AttentionMetadata,
    sink_query: torch.Tensor | None,
    kwargs: dict,
    workspace: Workspace,
) -> torch.Tensor:
    return reference.paged_attention(
        query,
        kv_layer,
        meta.block_tables,
        meta.context_lens,
        meta.query_start_loc,
        max_query_len=meta.max_query_len,
        sink_bubble=meta.sink_bubble,
        plan_cache=meta.plan_cache,
        workspace=workspace,
        **{**kwargs, "sink_query": sink_query},
    )


def _decode_split(meta: AttentionMetadata) -> tuple[AttentionMetadata, AttentionMetadata] | None:
    """For a step whose prompt chunks come first and whose last ``n > 0`` sequences decode
    one token each, the metadata of the two parts (worked out once per step); else None."""
    cache = meta.plan_cache
    if "split" not in cache:
        cache["split"] = None
        if meta.is_prefill and meta.num_seqs > 1:
            _, starts = host_lens(meta)
            qlens = [b - a for a, b in zip(starts, starts[1:], strict=False)]
            first = len(qlens)
            while first > 0 and qlens[first - 1] == 1:
                first -= 1
            if 0 < first < len(qlens):
                cache["split"] = (
                    sub_batch(meta, 0, first, max(qlens[:first])),
                    sub_batch(meta, first, len(qlens), 1),
                )
    return cache["split"]


def select_backend(
    *,
    use_paged_context_fmha: bool = False,
    context_fmha: bool = True,
    device: str | torch.device = "cpu",
    triton_ok: bool | None = None,
) -> AttentionBackend:
    """Pick the backend for ``device`` from the solved plugin options.

    - Not CUDA, or Triton not importable: the reference backend for everything.
    - CUDA with Triton: the Triton decode kernel; context steps use the Triton paged context
      kernel only when both ``context_fmha`` and ``use_paged_context_fmha`` are on (the
      fused context path reading K/V through the block table), else the reference.

    ``triton_ok`` overrides the import probe (tests use it to exercise the choice).
    """
    dev = torch.device(device)
    have_triton = triton_paged.triton_available() if triton_ok is None else triton_ok
    if dev.type != "cuda" or not have_triton:
        return AttentionBackend(REFERENCE, REFERENCE)
    prefill = TRITON if (context_fmha and use_paged_context_fmha) else REFERENCE
    return AttentionBackend(decode=TRITON, prefill=prefill)
