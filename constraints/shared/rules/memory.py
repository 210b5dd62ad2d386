"""The memory rules: what one GPU (one tensor/pipeline-parallel rank) must hold, and
that the parallel layout fits the machine. The byte counts come from
`constraints.facts.memory` (the one module of memory knowledge); this module turns them
into rules and reports.

Terms, all in bytes per rank (`tp` tensor-parallel ranks, `pp` pipeline stages):

- weights: a pre-quantized checkpoint's stored bytes (`model.weight_bytes`), else
  parameters x bytes per parameter of `quant_config.quant_algo`, placed by the parallel
  layout and counted on the heaviest pipeline stage as the engine splits the layers
  (facts/memory.py `rank_weight_bytes`, `stage_layers`; vLLM's padded MXFP4 experts,
  TensorRT-LLM's attention DP).
- activation workspace: `a_tok * max_num_tokens + a_seq * max_batch_size + a_fixed`
  (facts/memory.py `coefficients`: the "arbiter" estimate or MLC's own formulas).
- KV of one sequence of n tokens: full-attention elements per token x n, plus the
  sliding/chunked layers' elements per token x their window (an upper bound: a shorter
  sequence holds less), times the KV dtype's bytes, plus the recurrent state, times the
  share one rank keeps (facts/memory.py `kv_heads_per_rank`: ceil(kv_heads / tp) heads and
  at least one, so with tp above the KV heads a rank keeps 1 / kv_heads, not 1 / tp; MLA's
  latent whole), over pp: the same share the capacity report counts (`kv_rank_share`).
- budget, per engine (`MemoryTerms`, constraints/engines/<engine>/memory.py): vLLM's
  gpu_memory_utilization, SGLang's mem_fraction_static and MLC's utilization are a
  fraction of the whole device (weights + workspace + KV <= `device.memory_mib` x
  `kv_cache_config.free_gpu_memory_fraction`); TensorRT-LLM applies its
  free_gpu_memory_fraction to the memory left free once the model is loaded (KV <=
  fraction x (memory - weights - workspace): KvCacheCreator._cal_max_memory,
  calculateFreeMemBytes), so a model whose weights take 90% of a GPU still runs with a
  small pool.

Rules and their scope (rules-audit.md section 2):

- `memory.weights-fit` (every engine): weights + workspace + the KV of one block fit the
  budget. An engine that cannot hold one block fails (TensorRT-LLM's KV cache manager,
  vLLM "no available memory for the cache blocks", MLC's capacity <= 0 error).
- `memory.fits-one-sequence` and `memory.max-tokens-holds-a-sequence` (vLLM): vLLM's
  `check_enough_kv_cache_memory` refuses a max_model_len one sequence cannot hold.
  TensorRT-LLM instead clamps the attention window (and max_seq_len) to what fits
  (`clampWindowSizesToFitAtLeastOneSequence`, unless `fail_fast_on_attention_window_too_large`)
  and MLC caps the sequence length at its capacity: the capacity report says so
  (`Capacity.clamped_to`) instead of a conflict. With
  `fail_fast_on_attention_window_too_large` (a `TrtLlmArgs` field, TensorRT backend)
  TensorRT-LLM raises instead: `memory.fail-fast-needs-one-sequence`.
- `memory.host-tier-within-host-memory` (vLLM): swap space x tensor-parallel size at most
  70% of host memory.
- `machine.parallel-fits-devices` (every engine): tensor x pipeline ranks fit the GPUs
  there are (`device.count` x `device.nodes`); no solve adds GPUs.
- `replicas_fit(dp)`: data-parallel replicas of tp x pp GPUs each fit the GPUs; the rules
  on an engine's own data-parallel option are in its pack, since they read its section
  (`machine.sglang-dp-replicas-fit-devices`: constraints/engines/sglang/rules/parallel.py;
  `machine.vllm-dp-replicas-fit-devices`: constraints/engines/vllm/rules/parallel.py).

To stay linear for CP-SAT the memory expression is built per case of (weight bytes, KV
bytes, pipeline size) once the facts are known, and multiplied through by tp, which leaves
one product `tp * (budget - workspace)` for the solver; under a budget after loading the
one product is `fraction * (memory - weights - workspace)`, built per range of tp at its
low end (`_after_load_checks`). Pipeline sizes 1, 2, 4 and 8 are
checked exactly; any other size as the largest of those below it (3 as 2, 5-7 as 4, above
8 as 8), which is stricter than the formula, never looser. Everything is counted in KiB
and scaled by 1000 (the fixed point of the fraction); fractional counts of what is needed
are rounded up, so the check is never looser than the formula.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from constraints.expr import (
    And,
    Cmp,
    Expr,
    Lin,
    Prod,
    all_of,
    any_of,
    eq,
    ge,
    implies,
    le,
    lt,
    ne,
    one_of,
    ref,
)
from constraints.facts.memory import (
    ARBITER_FIXED_BYTES,
    EIGHT_BIT,
    FOUR_BIT,
    GIB,
    KV_DTYPE_HALVES,
    MIB,
    TERMS,
    Coefficients,
    KvSplit,
    MemoryTerms,
    WeightParts,
    coefficients,
    compute_dtype,
    fact,
    heaviest_stage_times_tp,
    kv_dtype,
    kv_elements_per_token,
    kv_heads_per_rank,
    kv_pool_bytes_per_token,
    kv_rank_share,
    kv_shape,
    kv_splits,
    layout_option_paths,
    memory_terms,
    param_count,
    rank_weight_bytes,
    stages_adp,
    terms_name,
    weight_parts,
)
from constraints.paths import PARALLEL_CONFIG, SPECULATIVE_CONFIG
from constraints.rules.base import Computed, Rule, Scope, Source
from constraints.schema import fact_defaults, lookup

FRACTION_SCALE = 1000
# The rule counts bytes in KiB (times FRACTION_SCALE): with 1024 beams of a 4M-token
# sequence of a model holding megabytes of KV a token, bytes would overflow CP-SAT's int64.
UNIT = 1024
# Pipeline sizes the memory rule checks exactly; a size between two of them is checked as
# the smaller one (more weights and KV per rank than it really has: stricter, never looser),
# and any size from the last one up as the last one.
PP_CASES = (1, 2, 4, 8)

B = "build_config."
KV = "kv_cache_config."
TP = PARALLEL_CONFIG.tensor_parallel_size
PP = PARALLEL_CONFIG.pipeline_parallel_size
FRAC = KV + "free_gpu_memory_fraction"
SEQ = B + "max_seq_len"
WINDOW = KV + "max_attention_window"
SINK = KV + "sink_token_length"
MAX_TOKENS = KV + "max_tokens"
BATCH = B + "max_batch_size"
NUM_TOKENS = B + "max_num_tokens"
BEAM = B + "max_beam_width"
TPB = KV + "tokens_per_block"
_fact = fact  # the name the memory rules used before the knowledge moved


# ---------------------------------------------------------------------------- dtype cases
def _compute_fp32() -> Expr:
    return eq(B + "dtype", "float32") | all_of(
        eq(B + "dtype", "auto"), eq("model.dtype", "float32")
    )


def weight_cases() -> list[tuple[int, Expr]]:
    """(half-bytes per parameter, when) for every weight precision."""
    q = "quant_config.quant_algo"
    return [
        (8, all_of(eq(q, None), _compute_fp32())),
        (4, all_of(eq(q, None), ~_compute_fp32())),
        (2, one_of(q, EIGHT_BIT)),
        (1, one_of(q, FOUR_BIT)),
    ]


def kv_cases() -> list[tuple[int, Expr]]:
    """(half-bytes per KV element, when) for every KV precision."""
    q = "quant_config.kv_cache_quant_algo"
    d = KV + "dtype"
    return [
        (
            8,
            all_of(eq(q, None), eq(d, "float32") | all_of(eq(d, "auto"), _compute_fp32())),
        ),
        (
            4,
            all_of(
                eq(q, None),
                one_of(d, ["float16", "bfloat16"]) | all_of(eq(d, "auto"), ~_compute_fp32()),
            ),
        ),
        (2, one_of(q, ["FP8", "INT8"]) | all_of(eq(q, None), eq(d, "fp8"))),
        (1, eq(q, "NVFP4")),
    ]


def _weight_cases(facts: Mapping[str, Any]) -> list[tuple[WeightParts, Expr | None]]:
    """(weight bytes of all ranks by part, when): one case for a pre-quantized checkpoint."""
    if int(fact(facts, "model.weight_bytes")):
        return [(weight_parts(facts, None, "bfloat16"), None)]
    return [
        (weight_parts(facts, None, "bfloat16", halves=halves), when)
        for halves, when in weight_cases()
    ]


# the parallel layouts that place a MoE model's weights differently, per engine (`terms`),
# each checked at the layout holding the most weights per rank in its range (stricter,
# never looser): vLLM data-parallel replicas share the experts (MemoryTerms.expert_shards,
# engines/vllm/memory.py: 2 to 8 replicas each exactly, 9-15 as 9, 16-31 as 16, 32-63 as
# 32, 64 or more as 64), while each rank's MoE layers take in the tokens of every replica
# (engines/vllm/memory.py gathered_replicas, set through MemoryTerms.gathering), counted
# at the top of the range: capped, when the machine is known, by the replicas its GPUs
# hold at the pipeline size (so exact up to its GPUs), else 15, 31, 63, and 64 for 64 or
# more (the one case looser than the formula); SGLang attention DP copies the attention
# weights (MemoryTerms.attention_copies: 2, 3-4 as 4, 5-8 as 8, more as 64). With
# pipeline stages above 1 the layouts are checked when the machine is known (its GPUs
# prune the layouts it cannot hold: pp x the range's low end above them); with the GPU
# count unknown there the one plain case stands (with vLLM: all experts in each replica,
# stricter, and one replica's MoE tokens; with SGLang looser: no attention copies). Every
# case counts the heaviest pipeline stage the engine's way (facts/memory.py stage_layers).
_SHARDS = (
    *((n, n, n) for n in range(2, 9)),
    (9, 9, 15),
    (16, 16, 31),
    (32, 32, 63),
    (64, 64, None),
)
_COPIES = ((2, 2, 2), (4, 3, 4), (8, 5, 8), (64, 9, None))


def _in_range(path: str, lo: int, hi: int | None) -> Expr:
    if hi is None:
        return ge(path, lo)
    return eq(path, lo) if lo == hi else all_of(ge(path, lo), le(path, hi))


def _gpus(facts: Mapping[str, Any]) -> int | None:
    """The GPUs of the machine when the facts give them, else None."""
    if "device.count" not in facts or "device.nodes" not in facts:
        return None
    return int(facts["device.count"]) * int(facts["device.nodes"])


def _gathered(lo: int, hi: int | None, gpus: int | None, pp: int) -> int:
    """The replicas a vLLM layout case of `_SHARDS` counts the gathered MoE tokens of: the
    top of its range, capped by the replicas the machine's GPUs hold at `pp` stages."""
    if gpus is None:
        return hi or lo
    return max(lo, min(hi or gpus // pp, gpus // pp))


def _layouts(
    parts: WeightParts, facts: Mapping[str, Any], terms: str | MemoryTerms, pp: int
) -> list[tuple[Expr | None, float, int]]:
    """(when, tp x the weight bytes of one rank of the heaviest pipeline stage, the
    data-parallel replicas whose MoE tokens each rank gathers) for every layout case of
    an engine's memory `terms` (`MemoryTerms.layouts`); one case with no condition (and
    no gathering) for a dense model and for the engines whose layouts split all weights
    over tp x pp."""
    engine = memory_terms(terms)
    plain = heaviest_stage_times_tp(parts, facts, pp, engine)
    gpus = _gpus(facts)
    if not parts.experts or not engine.layouts or (pp > 1 and gpus is None):
        return [(None, plain, 1)]
    path = str(engine.layout_path)
    shards = engine.layouts == "experts-over-dp"
    fit = [c for c in (_SHARDS if shards else _COPIES) if gpus is None or pp * c[1] <= gpus]
    out: list[tuple[Expr | None, float, int]] = [(eq(path, 1), plain, 1)]
    for n, lo, hi in fit:
        if shards:
            weights = heaviest_stage_times_tp(parts, facts, pp, engine, n)
            gathered = _gathered(lo, hi, gpus, pp)
        else:
            weights, gathered = heaviest_stage_times_tp(parts, facts, pp, engine, 1, n), 1
        out.append((_in_range(path, lo, hi), weights, gathered))
    return out


# ---------------------------------------------------------------------------- the rule
def _budget_minus_workspace(facts: Mapping[str, Any], c: Coefficients) -> Lin:
    mem_units = int(fact(facts, "device.memory_mib")) * MIB // UNIT
    return Lin(
        tuple(
            sorted(
                [
                    (mem_units, FRAC),
                    (-_units(c.act_per_token), NUM_TOKENS),
                    (-_units(c.act_per_sequence), BATCH),
                ],
                key=lambda t: t[1],
            )
        ),
        -_units(c.act_fixed),
    )


def _units(num_bytes: float) -> int:
    """`num_bytes` in the rule's units, rounded up (needs never shrink)."""
    return math.ceil(FRACTION_SCALE * num_bytes / UNIT)


def _pp_case(index: int) -> Expr:
    """The pipeline sizes checked as `PP_CASES[index]`: from it up to the next case."""
    lo = PP_CASES[index]
    if index + 1 == len(PP_CASES):
        return ge(PP, lo)
    hi = PP_CASES[index + 1]
    return eq(PP, lo) if hi == lo + 1 else all_of(ge(PP, lo), lt(PP, hi))


def _guarded(when: Expr | None, check: Expr) -> Expr:
    return check if when is None else implies(when, check)


class MemoryCheck(And):
    """The memory rule's expression for one engine's memory terms: an `And` of its cases
    that remembers which terms built it (`terms`, a `MemoryTerms` name), so that an
    explanation prints the arithmetic of the same terms the solver was given."""

    def __init__(self, terms: str, items: tuple[Expr, ...]):
        super().__init__(items)
        object.__setattr__(self, "terms", terms)


def memory_check_terms(expr: Expr) -> str | None:
    """The memory terms a memory rule's bound expression was built with, else None."""
    if isinstance(expr, MemoryCheck):
        return str(expr.terms)
    for item in getattr(expr, "items", ()):
        found = memory_check_terms(item)
        if found is not None:
            return found
    then = getattr(expr, "then", None)
    return memory_check_terms(then) if isinstance(then, Expr) else None


def fits(
    facts: Mapping[str, Any],
    tokens: Lin | list[tuple[Expr, Lin]],
    terms: str | MemoryTerms | None = None,
    *,
    per_beam: bool = False,
) -> Expr:
    """The memory holds weights, workspace and the KV of `tokens` tokens, on every rank.

    `tokens` may be a list of (condition, tokens) pairs; the cases are nested (weight
    precision, KV precision, pipeline stages) so each condition is reified once. With
    `per_beam`, every beam of a `max_beam_width` search holds `tokens` of its own. The
    windowed layers' KV and the recurrent state are added once per sequence (beam).
    The budget follows the engine's terms (`MemoryTerms.budget_after_load`): the whole
    device x the fraction, or the fraction of what the weights and workspace leave."""
    engine = memory_terms(terms or facts.get("memory.terms") or "arbiter")
    needs = [(None, tokens)] if isinstance(tokens, Lin) else tokens
    c = engine.coefficients(facts)
    shape = kv_shape(facts)
    budgets: dict[int, Lin] = {1: _budget_minus_workspace(facts, c)}

    def budget_for(gathered: int) -> Lin:
        """The budget less the workspace of a layout whose MoE layers gather the tokens
        of `gathered` data-parallel replicas (vLLM's all-gather dispatch)."""
        if gathered not in budgets:
            wide = engine.coefficients(engine.gathering(facts, gathered))
            budgets[gathered] = _budget_minus_workspace(facts, wide)
        return budgets[gathered]

    heads = max(1, int(fact(facts, "model.num_kv_heads")))
    tp_sizes = tuple(range(lookup(TP).domain.lo, lookup(TP).domain.hi + 1))
    splits: tuple[KvSplit, ...]
    if shape.replicated:  # MLA: every rank keeps the whole latent
        heads, splits = 1, (KvSplit(tp_sizes, 0, 1),)
    else:  # each rank keeps kv_heads_per_rank of the KV heads, as the capacity counts
        splits = kv_splits(heads, tp_sizes)
    by_weight = []
    for parts, w_when in _weight_cases(facts):
        # as the engine allocates them (vLLM: MXFP4 experts padded to its kernel tiles)
        parts = engine.padded(parts, facts, engine.layout_partitions(facts))
        by_kv = []
        for k_halves, k_when in kv_cases():
            kv_token = shape.per_token * k_halves / 2 + c.kv_extra_per_token
            kv_seq = shape.window_per_token * shape.window * k_halves / 2 + shape.state_bytes
            by_pp = []
            for index, pp in enumerate(PP_CASES):
                if engine.budget_after_load:
                    checks = _after_load_checks(
                        facts, engine, c, parts, pp, needs, (kv_token, kv_seq), per_beam
                    )
                    by_pp.append(implies(_pp_case(index), all_of(*checks)))
                    continue
                layouts = _layouts(parts, facts, engine, pp)
                checks = []
                for split in splits:
                    # the KV of the heads all ranks keep together, else of one rank's heads
                    part = (split.heads_together or split.heads_per_rank) / heads / pp
                    per_token = _units(kv_token * part)
                    per_seq = _units(kv_seq * part)
                    for when, need in needs:
                        for l_when, tp_weights, gathered in layouts:
                            weights = _units(tp_weights)
                            budget = budget_for(gathered)
                            if not split.heads_together:
                                check = _rank_kv(
                                    budget, need, per_token, per_seq, weights, per_beam
                                )
                            else:
                                one = need.scale(per_token) + per_seq
                                kv = Prod(ref(BEAM), one, 1, weights) if per_beam else one + weights
                                check = Cmp(Prod(ref(TP), budget), ">=", kv)
                            check = _guarded(l_when, check)
                            if len(splits) > 1:
                                check = implies(_tp_in(split.tp_sizes), check)
                            checks.append(_guarded(when, check))
                by_pp.append(implies(_pp_case(index), all_of(*checks)))
            by_kv.append(implies(k_when, all_of(*by_pp)))
        by_weight.append(_guarded(w_when, all_of(*by_kv)))
    return MemoryCheck(engine.name, (all_of(*by_weight),))


def _kib_up(num_bytes: float) -> int:
    """`num_bytes` in KiB, rounded up (what is taken never shrinks)."""
    return math.ceil(num_bytes / UNIT)


def _free_after_load(facts: Mapping[str, Any], c: Coefficients, weights: float) -> Lin:
    """KiB one rank has free once `weights` bytes of weights and the workspace are in
    memory (the memory exact, what is taken rounded up): device memory - weights -
    workspace, the base TensorRT-LLM applies its fraction to."""
    mem_kib = int(fact(facts, "device.memory_mib")) * MIB // UNIT
    return Lin(
        tuple(
            sorted(
                [(-_kib_up(c.act_per_token), NUM_TOKENS), (-_kib_up(c.act_per_sequence), BATCH)],
                key=lambda t: t[1],
            )
        ),
        mem_kib - _kib_up(c.act_fixed + weights),
    )


def _after_load_checks(
    facts: Mapping[str, Any],
    engine: MemoryTerms,
    c: Coefficients,
    parts: WeightParts,
    pp: int,
    needs: Sequence[tuple[Expr | None, Lin]],
    kv: tuple[float, float],
    per_beam: bool,
) -> list[Expr]:
    """The check of an engine whose fraction applies to the memory left after loading
    (`MemoryTerms.budget_after_load`, TensorRT-LLM): fraction x (memory - weights -
    workspace) >= the KV asked for, per rank, in the rule's units (the fraction's fixed
    point x KiB >= KV in thousandths of a KiB). The weights and the KV share of a rank
    depend on tp, so each range of tp (`_tp_ranges`) is checked at its low end (more per
    rank: stricter, never looser), which keeps the check one product of the fraction and
    a linear sum. A layout the machine cannot hold (tp x pp above its GPUs) is refused by
    machine.parallel-fits-devices and gets no case. With attention DP (pipeline size 1,
    as before) each rank holds all but the routed experts whole and the KV of every head
    (facts/memory.py attention_dp)."""
    kv_token, kv_seq = kv
    shape = kv_shape(facts)
    heads = max(1, int(fact(facts, "model.num_kv_heads")))
    gpus = _gpus(facts)
    ranges = [(lo, hi) for lo, hi in _tp_ranges(facts) if gpus is None or lo * pp <= gpus]
    cases: list[tuple[Expr | None, int, int, float, bool]] = []
    for lo, hi in ranges:
        cases.append((None, lo, hi, heaviest_stage_times_tp(parts, facts, pp, engine) / lo, False))
        if engine.attention_dp_path and pp == 1:
            adp = eq(engine.attention_dp_path, True)
            for whole, split in stages_adp(parts, facts, pp, engine):
                cases.append((adp, lo, hi, whole + split / lo, True))
    out: list[Expr] = []
    for when_layout, lo, hi, weights, adp in cases:
        if shape.replicated or adp:
            share = 1 / pp
        else:
            share = kv_heads_per_rank(heads, lo) / (heads * pp)
        per_token, per_seq = _units(kv_token * share), _units(kv_seq * share)
        tp_when = eq(TP, lo) if lo == hi else all_of(ge(TP, lo), le(TP, hi))
        when = tp_when if when_layout is None else all_of(when_layout, tp_when)
        for need_when, need in needs:
            one = need.scale(per_token) + per_seq
            if per_beam:  # beams x KV is a product of its own: the weights inside
                lhs = Prod(ref(FRAC), _free_after_load(facts, c, weights))
                check = Cmp(lhs, ">=", Prod(ref(BEAM), one))
            else:  # fraction x (memory - workspace) is shared by every case
                lhs = Prod(ref(FRAC), _free_after_load(facts, c, 0.0))
                check = Cmp(lhs, ">=", one + ref(FRAC).scale(_kib_up(weights)))
            out.append(_guarded(need_when, implies(when, check)))
    return out


def _tp_ranges(facts: Mapping[str, Any]) -> list[tuple[int, int]]:
    """tensor_parallel_size as each power of two exactly and the sizes between two of them
    as a range (3, 5-7, 9-15, ...), up to its domain's top, or up to the machine's GPUs
    when the facts give them."""
    top = lookup(TP).domain.hi
    gpus = _gpus(facts)
    if gpus is not None:
        top = min(top, max(1, gpus))
    out, power = [], 1
    while power <= top:
        out.append((power, power))
        if power + 1 <= min(top, 2 * power - 1):
            out.append((power + 1, min(top, 2 * power - 1)))
        power *= 2
    return out


def _tp_in(sizes: tuple[int, ...]) -> Expr:
    """tensor_parallel_size is one of `sizes` (a range when they are consecutive)."""
    if len(sizes) > 2 and sizes[-1] - sizes[0] == len(sizes) - 1:
        return all_of(ge(TP, sizes[0]), le(TP, sizes[-1]))
    return one_of(TP, list(sizes))


def _rank_kv(
    budget: Lin, need: Lin, per_token: int, per_seq: int, weights: int, per_beam: bool
) -> Expr:
    """The check when one rank keeps the same KV whatever tp is (MLA's whole latent, or one
    replicated KV head when tp exceeds the KV heads): tp x (budget - workspace) >= weights
    + tp x (need x per_token + per_seq), written as tp x (budget - workspace - per_seq) >=
    tp x need x per_token + weights so that every case shares the one product tp x need.
    With beams, tp x beams x KV has no product of two sums: each range of beam widths is
    checked at its top (2, 3-4, 5-8, ...), stricter, never looser."""
    top = lookup(BEAM).domain.hi if per_beam else 1
    cases, lo, hi = [], 1, 1
    while lo <= top:
        hi = min(hi, top)
        kv: Prod | Lin = _rank_kv_need(need, per_token * hi, weights)
        check = Cmp(Prod(_tp_ref(), budget + -(per_seq * hi)), ">=", kv)
        cases.append(implies(_beam_case(lo, hi), check) if per_beam else check)
        lo, hi = hi + 1, hi * 2
    return all_of(*cases)


# The parts of `_rank_kv` that do not read the budget, built once and shared by every
# build of the memory rule (expressions are immutable and compared by value, so a shared
# part compiles as a fresh one would): the builds of one model differ in the budget alone
# when only the workspace changes (vLLM's CUDA-graph bytes follow max_num_seqs).
@lru_cache(maxsize=1)
def _tp_ref() -> Lin:
    return ref(TP)


@lru_cache(maxsize=64)
def _beam_case(lo: int, hi: int) -> Expr:
    """max_beam_width in lo..hi."""
    return eq(BEAM, hi) if lo == hi else all_of(ge(BEAM, lo), le(BEAM, hi))


@lru_cache(maxsize=4096)
def _rank_kv_need(need: Lin, per_token: int, weights: int) -> Prod | Lin:
    """tp x need x per_token + weights (the weights alone when a token holds no KV here)."""
    return Prod(_tp_ref(), need, per_token, weights) if per_token else Lin((), weights)


def _one_sequence(facts: Mapping[str, Any]) -> Expr:
    full = any_of(eq(WINDOW, None), ge(WINDOW, ref(SEQ)))
    short = all_of(ne(WINDOW, None), lt(WINDOW, ref(SEQ)))
    return fits(facts, [(full, ref(SEQ)), (short, ref(WINDOW) + ref(SINK))], per_beam=True)


DRAFT_LEN = B + "max_draft_len"
DECODING = SPECULATIVE_CONFIG.decoding_type
EAGLE_LAYERS = SPECULATIVE_CONFIG.num_eagle_layers


def _one_engine_sequence(facts: Mapping[str, Any]) -> Expr:
    """One sequence of a TensorRT engine: the builder grows an engine built for speculative
    decoding to max_seq_len + max_draft_len tokens (EAGLE: + num_eagle_layers;
    tensorrt_llm/builder.py build() @008b2b8d, as kv.block-table-fits-int32 counts it),
    and the KV cache manager holds a whole one of those."""
    full = any_of(eq(WINDOW, None), ge(WINDOW, ref(SEQ)))
    short = all_of(ne(WINDOW, None), lt(WINDOW, ref(SEQ)))
    plain = eq(DECODING, "none")
    eagle = eq(DECODING, "Eagle")
    drafts = all_of(ne(DECODING, "none"), ne(DECODING, "Eagle"))
    return fits(
        facts,
        [
            (all_of(full, plain), ref(SEQ)),
            (all_of(full, drafts), ref(SEQ) + ref(DRAFT_LEN)),
            (all_of(full, eagle), ref(SEQ) + ref(DRAFT_LEN) + ref(EAGLE_LAYERS)),
            (short, ref(WINDOW) + ref(SINK)),
        ],
        per_beam=True,
    )


@lru_cache(maxsize=64)
def _one_engine_sequence_cached(key: tuple) -> Expr:
    return _one_engine_sequence(dict(key))


def _one_block(facts: Mapping[str, Any]) -> Expr:
    return fits(facts, ref(TPB))


_FACT_PATHS = tuple(fact_defaults())  # the facts alone: no pack section read


@lru_cache(maxsize=64)
def _one_sequence_cached(key: tuple) -> Expr:
    return _one_sequence(dict(key))


@lru_cache(maxsize=64)
def _one_block_cached(key: tuple) -> Expr:
    return _one_block(dict(key))


def _fact_key(facts: Mapping[str, Any]) -> tuple:
    """The facts the memory expressions are built from, as a cache key: the GPUs of the
    machine (`device.count`, `device.nodes`) only where they shape them (`_gpus_matter`),
    so the configs of a plan on 1, 2, 4 and 8 GPUs share one build of a dense model's,
    and the facts outside the schema the engine's terms read (`MemoryTerms.extra_facts`)."""
    drop = () if _gpus_matter(facts) else (COUNT, NODES)
    engine = memory_terms(facts.get("memory.terms") or "arbiter")
    keys = (*_FACT_PATHS, "memory.terms", *engine.extra_facts)
    return tuple((k, facts[k]) for k in keys if k in facts and k not in drop)


def _gpus_matter(facts: Mapping[str, Any]) -> bool:
    """Whether the machine's GPUs enter `fits`: through `_gpus` in the layout cases of a
    model with routed experts (`_layouts`) and in the tensor-parallel ranges of a budget
    after loading (`_after_load_checks`, `_tp_ranges`), and through the expert partitions
    of an engine's padding (`MemoryTerms.layout_partitions`: vLLM's), which pads routed
    experts only. A model without routed experts, under a budget of the whole device, is
    built the same on any number of GPUs."""
    engine = memory_terms(facts.get("memory.terms") or "arbiter")
    if engine.budget_after_load:
        return True
    try:
        return any(parts.experts for parts, _ in _weight_cases(facts))
    except (KeyError, TypeError, ValueError):  # facts it cannot read: keep them in the key
        return True


_READS = frozenset(
    {
        *_FACT_PATHS,
        FRAC,
        BATCH,
        NUM_TOKENS,
        TP,
        PP,
        "quant_config.quant_algo",
        "quant_config.kv_cache_quant_algo",
        KV + "dtype",
        B + "dtype",
    }
)


class MemoryComputed(Computed):
    """A memory rule's `Computed`: it reads, besides `reads`, the options any engine's
    terms place weights by (`layout_option_paths`: vLLM's data-parallel size, SGLang's
    and TensorRT-LLM's attention DP), looked up from the packs' terms when the paths are
    first asked for, so building the rules imports no pack."""

    def paths(self) -> frozenset[str]:
        return self.reads | layout_option_paths()

    def reads_under(self, terms: str) -> frozenset[str]:
        return self.reads | frozenset(memory_terms(terms).layout_options())


ONE_SEQUENCE = MemoryComputed(
    "weights + workspace + KV of one sequence <= device memory x free_gpu_memory_fraction",
    lambda facts: _one_sequence_cached(_fact_key(facts)),
    _READS | {SEQ, WINDOW, SINK, BEAM},
)
ONE_BLOCK = MemoryComputed(
    "weights + workspace + KV of one block <= device memory x free_gpu_memory_fraction"
    " (TensorRT-LLM: KV of one block <= free_gpu_memory_fraction x (device memory -"
    " weights - workspace))",
    lambda facts: _one_block_cached(_fact_key(facts)),
    _READS | {TPB},
)

FAIL_FAST = "memory_policy.fail_fast_on_attention_window_too_large"
# TensorRT-LLM clamps the window to fit one sequence unless told to fail fast: then a
# sequence that does not fit is an error, as vLLM's check is (memory.fits-one-sequence)
FAIL_FAST_FITS = MemoryComputed(
    "fail_fast_on_attention_window_too_large -> KV of one sequence <="
    " free_gpu_memory_fraction x (device memory - weights - workspace)",
    lambda facts: implies(eq(FAIL_FAST, True), _one_engine_sequence_cached(_fact_key(facts))),
    _READS | {SEQ, WINDOW, SINK, BEAM, FAIL_FAST, DRAFT_LEN, DECODING, EAGLE_LAYERS},
)

SEQ_NEED_CAP = any_of(
    ge(MAX_TOKENS, Prod(ref(BEAM), ref(SEQ))),
    all_of(
        ne(WINDOW, None),
        lt(WINDOW, ref(SEQ)),
        ge(MAX_TOKENS, Prod(ref(BEAM), ref(WINDOW) + ref(SINK))),
    ),
)
VLLM = Scope(engine="vllm")
COUNT, NODES = "device.count", "device.nodes"
MAX_REPLICAS = 64  # the schema's bound on sglang_config.dp_size


def replicas_fit(dp: str) -> list[Expr]:
    """For each dp_size d > 1: d x tp x pp ranks fit the GPUs (linear in the one shared
    product tp x pp; dp 1 is `machine.parallel-fits-devices`). A dp size above
    MAX_REPLICAS (vLLM's domain reaches 1024) is checked as MAX_REPLICAS + 1 replicas:
    fewer GPUs than it needs, so never stricter than the engine."""
    cases: list[Expr] = [
        implies(
            eq(dp, d),
            Cmp(Prod(ref(COUNT), ref(NODES)), ">=", Prod(ref(TP), ref(PP), scale=d)),
        )
        for d in range(2, MAX_REPLICAS + 1)
    ]
    if (lookup(dp).domain.hi or 0) > MAX_REPLICAS:
        bound = MAX_REPLICAS + 1
        cases.append(
            implies(
                ge(dp, bound),
                Cmp(Prod(ref(COUNT), ref(NODES)), ">=", Prod(ref(TP), ref(PP), scale=bound)),
            )
        )
    return cases


RULES = [
    Rule(
        id="memory.weights-fit",
        text="weights, activation workspace and the KV cache of one block must fit on every rank: in device memory x the memory fraction (vLLM, SGLang, MLC), or, for TensorRT-LLM, the block in free_gpu_memory_fraction of the memory the weights and workspace leave",
        source=Source(
            "TensorRT-LLM / vLLM / MLC",
            "kvCacheManager.cpp calculateFreeMemBytes, calculateMaxNumBlocks;"
            " tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory"
            " @00043967; vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory;"
            " mlc cpp/serve/config.cc EstimateMemoryUsageOnMode",
            "T45, V28, M4",
        ),
        expr=ONE_BLOCK,
        feasible={"device.memory_mib": 24576, "quant_config.quant_algo": None, TP: 1, PP: 1},
        infeasible={
            "device.memory_mib": 8192,
            "quant_config.quant_algo": None,
            TP: 1,
            PP: 1,
            FRAC: 0.9,
        },
    ),
    Rule(
        id="memory.fits-one-sequence",
        text="weights, activation workspace and the KV cache of one max_seq_len sequence (each of its max_beam_width beams) must fit in device memory x gpu_memory_utilization",
        source=Source(
            "vLLM",
            "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory",
            "V28",
            "0.10",
        ),
        expr=ONE_SEQUENCE,
        weaker=("memory.weights-fit",),  # a sequence's KV holds at least one block
        feasible={
            "device.memory_mib": 16384,
            "quant_config.quant_algo": "FP8",
            SEQ: 32768,
            FRAC: 0.9,
        },
        infeasible={
            "device.memory_mib": 16384,
            "quant_config.quant_algo": None,
            SEQ: 32768,
            WINDOW: None,
            FRAC: 0.9,
            TP: 1,
            PP: 1,
        },
        scope=VLLM,
    ),
    Rule(
        id="memory.fail-fast-needs-one-sequence",
        text="with fail_fast_on_attention_window_too_large, the KV cache must hold one whole sequence (each beam; an engine built for speculative decoding holds max_seq_len + max_draft_len, EAGLE + num_eagle_layers): TensorRT-LLM raises instead of clamping the attention window",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/llmapi/llm_args.py TrtLlmArgs.fail_fast_on_attention_window_too_large;"
            " cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp"
            " clampWindowSizesToFitAtLeastOneSequence (failFastOnAttentionWindowTooLarge)",
            "NVIDIA/TensorRT-LLM@b35ac1b6",
            "1.0",
        ),
        expr=FAIL_FAST_FITS,
        feasible={
            "device.memory_mib": 16384,
            "quant_config.quant_algo": "FP8",
            SEQ: 32768,
            FRAC: 0.9,
            FAIL_FAST: True,
        },
        infeasible={
            "device.memory_mib": 16384,
            "quant_config.quant_algo": None,
            SEQ: 32768,
            WINDOW: None,
            FRAC: 0.9,
            TP: 1,
            PP: 1,
            FAIL_FAST: True,
        },
        scope=Scope(engine="trtllm", backends=("tensorrt",), since="1.0"),
    ),
    Rule(
        id="memory.max-tokens-holds-a-sequence",
        text="a KV pool capped by max_tokens must still hold one whole sequence, each of its max_beam_width beams",
        source=Source(
            "vLLM",
            "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory",
            "V28",
            "0.10",
        ),
        expr=implies(ne(MAX_TOKENS, None), SEQ_NEED_CAP),
        feasible={MAX_TOKENS: 8192, SEQ: 8192},
        infeasible={MAX_TOKENS: 4096, SEQ: 8192, WINDOW: None},
        scope=VLLM,
    ),
    Rule(
        id="memory.host-tier-within-host-memory",
        text="the host KV tier (swap space per rank x tensor_parallel_size) may take at most 70% of host memory",
        source=Source(
            "vLLM",
            "vllm/config.py CacheConfig.verify_with_parallel_config",
            "V5",
            "0.6.6",
        ),
        # 10 * host_cache_size * tp <= 7 * host memory in bytes
        expr=implies(
            ne("device.host_memory_mib", 0),
            Cmp(
                ref("device.host_memory_mib").scale(7 * MIB),
                ">=",
                Prod(ref(TP), ref(KV + "host_cache_size"), 10),
            ),
        ),
        feasible={"device.host_memory_mib": 65536, KV + "host_cache_size": 32 * GIB, TP: 1},
        infeasible={"device.host_memory_mib": 65536, KV + "host_cache_size": 24 * GIB, TP: 2},
        scope=VLLM,
    ),
    Rule(
        id="machine.parallel-fits-devices",
        text="tensor_parallel_size x pipeline_parallel_size ranks must fit the GPUs there are (device.count per node x device.nodes)",
        source=Source(
            "TensorRT-LLM / vLLM / SGLang / MLC",
            "tensorrt_llm/mapping.py (world_size = tp * pp * cp); vllm/config/parallel.py"
            " world_size; sglang server_args tp_size * pp_size; mlc tensor_parallel_shards",
            "machine",
        ),
        expr=Cmp(Prod(ref(COUNT), ref(NODES)), ">=", Prod(ref(TP), ref(PP))),
        feasible={COUNT: 8, NODES: 1, TP: 4, PP: 2},
        infeasible={COUNT: 1, NODES: 1, TP: 1, PP: 8},
    ),
]


# ---------------------------------------------------------------------------- reports
def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


@dataclass(frozen=True)
class Capacity:
    """Memory of one rank for a solved configuration, in bytes unless named otherwise.

    `clamped_to` is the longest sequence (tokens, per beam) the pool holds when that is
    shorter than the one asked for (max_seq_len, or the window plus sinks): TensorRT-LLM
    then clamps the attention window to it and MLC caps the sequence length; 0 when one
    whole sequence fits."""

    terms: str
    budget: int
    memory: int
    fraction: float
    weights: int
    activations: int
    kv_bytes_per_token: float
    kv_tokens: int
    kv_blocks: int
    tokens_per_block: int
    kv_pool: int
    headroom: int
    limited_by: str  # "memory" or "max_tokens"
    host_blocks: int
    host_pool: int
    sequence_tokens: int
    clamped_to: int = 0
    sequence_held: str = ""  # why sequence_tokens is more than max_seq_len, in words

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def _budget_words(self) -> str:
        """The budget in words: the whole device x the fraction, or (TensorRT-LLM) the
        fraction of what is left free once the weights and workspace are loaded."""
        if memory_terms(self.terms).budget_after_load:
            free = self.memory - self.weights - self.activations
            return f"{_gib(self.memory)} - weights - workspace = {_gib(free)} x {self.fraction:.2f}"
        return f"{_gib(self.memory)} x {self.fraction:.2f}"

    def __str__(self) -> str:
        text = (
            f"KV pool {self.kv_blocks} blocks x {self.tokens_per_block} = {self.kv_tokens} tokens"
            f" ({_gib(self.kv_pool)}, limited by {self.limited_by}); weights {_gib(self.weights)},"
            f" workspace {_gib(self.activations)}, headroom {_gib(self.headroom)} of"
            f" {self._budget_words()}; host tier {self.host_blocks} blocks"
        )
        if self.sequence_held:
            text += f"; one sequence holds {self.sequence_tokens} KV tokens: {self.sequence_held}"
        if self.clamped_to:
            text += (
                f"; one sequence of {self.sequence_tokens} tokens does not fit: the attention"
                f" window is clamped to {self.clamped_to} tokens (TensorRT-LLM"
                " clampWindowSizesToFitAtLeastOneSequence; vLLM refuses)"
            )
        return text


def _case_low(n: int, cases: Sequence[tuple[int, int, int | None]]) -> int:
    """The size a layout case of `_SHARDS` / `_COPIES` checks `n` as (1 below them)."""
    for size, lo, hi in cases:
        if n >= lo and (hi is None or n <= hi):
            return size
    return 1


def checked_layout(values: Mapping[str, Any], terms: str | MemoryTerms) -> dict[str, Any]:
    """`values` at the layout the memory rule checks them as: a pipeline size as the
    largest of PP_CASES below it; under a budget after loading (TensorRT-LLM) a tensor-
    parallel size as the low end of its range (`_tp_ranges`); vLLM's data-parallel
    replicas and SGLang's attention-DP groups as their layout case (`_layouts`). So the
    arithmetic an explanation prints is the one the solver was given."""
    engine = memory_terms(terms)
    out = dict(values)
    pp = int(fact(values, PP))
    out[PP] = max(c for c in PP_CASES if c <= max(1, pp))
    if engine.budget_after_load:
        tp = int(fact(values, TP))
        out[TP] = next((lo for lo, hi in _tp_ranges(values) if lo <= tp <= hi), tp)
    if engine.layouts and engine.layout_path:
        parts = weight_parts(values, None, "bfloat16")
        plain = not parts.experts or (out[PP] > 1 and _gpus(values) is None)
        n = int(values.get(engine.layout_path) or 1)
        gpus = _gpus(values)
        cases: tuple[tuple[int, int, int | None], ...] = tuple(
            c
            for c in (_SHARDS if engine.layouts == "experts-over-dp" else _COPIES)
            if gpus is None or out[PP] * c[1] <= gpus
        )
        out[engine.layout_path] = 1 if plain else _case_low(n, cases)
        # the replicas whose MoE tokens a rank gathers, as the rule's case counts them
        gathered = 1
        if engine.layouts == "experts-over-dp" and not plain:
            gathered = next(
                (_gathered(lo, hi, gpus, out[PP]) for _, lo, hi in cases if _in(n, lo, hi)), 1
            )
        out = engine.gathering(out, gathered)
    return out


def _in(n: int, lo: int, hi: int | None) -> bool:
    return n >= lo and (hi is None or n <= hi)


def _kv_share_checked(values: Mapping[str, Any], engine: MemoryTerms) -> float:
    """The share of a token's KV the rule counts for one rank: `kv_rank_share`, except a
    tensor-parallel size below the KV heads that does not divide them, which the rule
    counts at the most heads any such size keeps together (`kv_splits`)."""
    share = kv_rank_share(values, engine)
    if engine.budget_after_load or kv_shape(values).replicated or engine.attention_dp(values):
        return share
    heads = max(1, int(fact(values, "model.num_kv_heads")))
    tp, pp = int(fact(values, TP)), int(fact(values, PP))
    sizes = tuple(range(lookup(TP).domain.lo, lookup(TP).domain.hi + 1))
    for split in kv_splits(heads, sizes):
        if tp in split.tp_sizes and split.heads_together:
            return split.heads_together / heads / pp / tp
    return share


def _per_rank(
    values: Mapping[str, Any], terms: str | MemoryTerms, checked: bool = False
) -> dict[str, float]:
    """What one rank holds, in bytes; `checked`: at the layout the memory rule checks
    (`checked_layout`), as an explanation of the rule shows it."""
    engine = memory_terms(terms)
    if checked:
        values = checked_layout(values, engine)
    c = engine.coefficients(values)
    shape = kv_shape(values)
    w = rank_weight_bytes(
        values, values.get("quant_config.quant_algo"), compute_dtype(values), engine
    )
    k_half = KV_DTYPE_HALVES[kv_dtype(values)]
    # MLA, TensorRT-LLM's attention DP: the whole KV on every tensor-parallel rank
    share = _kv_share_checked(values, engine) if checked else kv_rank_share(values, engine)
    kv_token = kv_pool_bytes_per_token(values, c.kv_extra_per_token, engine)
    seq_token = (shape.per_token * k_half / 2 + c.kv_extra_per_token) * share
    seq_fixed = (shape.window_per_token * shape.window * k_half / 2 + shape.state_bytes) * share
    act = c.act_per_token * values[NUM_TOKENS] + c.act_per_sequence * values[BATCH] + c.act_fixed
    memory = values["device.memory_mib"] * MIB
    kv_budget = engine.kv_budget(memory, values[FRAC], w, act)
    return {
        "weights": w,
        "kv_token": kv_token,
        "seq_token": seq_token,
        "seq_fixed": seq_fixed,
        "act": act,
        "memory": memory,
        # what the configuration may use in all: weights + workspace + the KV budget
        "budget": w + act + kv_budget if engine.budget_after_load else memory * values[FRAC],
        "kv_budget": kv_budget,
    }


def sequence_tokens(values: Mapping[str, Any]) -> int:
    """KV tokens one sequence needs: max_seq_len, or the window plus sinks when shorter."""
    window = values[WINDOW]
    if window is not None and window < values[SEQ]:
        return window + values[SINK]
    return values[SEQ]


def capacity(
    values: Mapping[str, Any],
    terms: str | MemoryTerms = "arbiter",
    held: tuple[int, str] | None = None,
) -> Capacity:
    """KV blocks and tokens the configuration gets, and what each memory term takes.
    `held`: the tokens one sequence holds in the engine's KV manager when that is more
    than max_seq_len, with the reason in words (TensorRT-LLM under speculative decoding,
    `kv_cache.kv_sequence_tokens`); a shorter attention window still bounds it."""
    t = _per_rank(values, terms)
    tpb = values[KV + "tokens_per_block"]
    free = t["budget"] - t["weights"] - t["act"]
    seq = sequence_tokens(values)
    reason = ""
    if held is not None and held[1] and seq == values[SEQ] and held[0] > seq:
        # the manager clamps a given window to its (longer) max_seq_len
        window = values[WINDOW]
        seq, reason = (held[0] if window is None else min(held[0], window)), held[1]
    if t["kv_token"] > 0:
        tokens = max(0, int(free // t["kv_token"]))
    else:  # recurrent state only: the pool is what the sequences need
        tokens = values[BATCH] * seq
    limited = "memory"
    if values[MAX_TOKENS] is not None and values[MAX_TOKENS] < tokens:
        tokens, limited = values[MAX_TOKENS], "max_tokens"
    # a max_tokens cap is rounded up to whole blocks, as TensorRT-LLM's KV cache manager
    # does (kvCacheManager.cpp calculateMaxNumBlocks: ceilDiv(maxTokens, tokensPerBlock))
    # and the runtime's pool (engine/pool.py); what memory holds is rounded down
    blocks = -(-tokens // tpb) if limited == "max_tokens" else tokens // tpb
    pool = blocks * tpb * t["kv_token"]
    host = values[KV + "host_cache_size"]
    host_blocks = int(host // (t["kv_token"] * tpb)) if host and t["kv_token"] else 0
    beams = values.get(BEAM) or 1
    room = min(free, pool if pool else free) / beams - t["seq_fixed"]
    fits_tokens = int(room // t["seq_token"]) if t["seq_token"] > 0 else seq
    clamped = max(0, fits_tokens) if fits_tokens < seq else 0
    return Capacity(
        terms=terms_name(terms),
        budget=int(t["budget"]),
        memory=int(t["memory"]),
        fraction=values[FRAC],
        weights=int(t["weights"]),
        activations=int(t["act"]),
        kv_bytes_per_token=t["kv_token"],
        kv_tokens=blocks * tpb,
        kv_blocks=blocks,
        tokens_per_block=tpb,
        kv_pool=int(pool),
        headroom=int(t["budget"] - t["weights"] - t["act"] - pool),
        limited_by=limited,
        host_blocks=host_blocks,
        host_pool=int(host_blocks * tpb * t["kv_token"]),
        sequence_tokens=seq,
        clamped_to=clamped,
        sequence_held=reason,
    )


def _kv_need(t: Mapping[str, float], values: Mapping[str, Any], tokens: int | None) -> float:
    """Bytes of KV one rank needs: one block of `tokens`, or one whole sequence (each
    beam)."""
    seq = sequence_tokens(values) if tokens is None else tokens
    beams = (values.get(BEAM) or 1) if tokens is None else 1
    return beams * (seq * t["seq_token"] + t["seq_fixed"])


def _pair(a: float, b: float) -> tuple[str, str]:
    """`a` and `b` in GiB with as many decimals (1 to 4) as it takes for the printed
    numbers to compare as the numbers do, so that a verdict never reads against its own
    figures (129.2 > 129.2)."""
    for digits in (1, 2, 3, 4):
        x, y = round(a / GIB, digits), round(b / GIB, digits)
        if (x > y) == (a > b) and (x < y) == (a < b):
            break
    return f"{x:.{digits}f} GiB", f"{y:.{digits}f} GiB"


def shortfall(
    values: Mapping[str, Any], terms: str | MemoryTerms = "arbiter", tokens: int | None = None
) -> str:
    """The memory rule's arithmetic for a configuration, in GiB (a term under 0.1 GiB in
    MiB), with the verdict: for one sequence of max_seq_len tokens (each beam of a beam
    search), or for one block of `tokens` tokens (the least KV an engine starts with).
    It is worked out at the layout the rule checks (`checked_layout`), so the printed
    verdict is the rule's. An engine whose fraction applies to the memory left after
    loading (TensorRT-LLM) reads `memory - weights - workspace = free; KV > free x
    fraction = budget`; the others `weights + workspace + KV = total > memory x fraction
    = budget`."""
    engine = memory_terms(terms)
    t = _per_rank(values, engine, checked=True)
    seq = sequence_tokens(values) if tokens is None else tokens
    beams = (values.get(BEAM) or 1) if tokens is None else 1
    kv = _kv_need(t, values, tokens)
    if tokens is not None:
        what = f"KV of one block ({seq} token{'s' if seq != 1 else ''})"
    elif beams > 1:
        what = f"KV of {beams} beams x {seq} tokens"
    else:
        what = f"KV of one {seq}-token sequence"
    if int(fact(values, "model.state_bytes")):
        what += " and one sequence's recurrent state"
    frac = values[FRAC]
    if engine.budget_after_load:
        free = t["memory"] - t["weights"] - t["act"]
        sign = ">" if kv > t["kv_budget"] else "<="
        if min(abs(kv), abs(t["kv_budget"])) >= GIB / 10:
            need, budget = _pair(kv, t["kv_budget"])
        else:  # MiB below 0.1 GiB (a block of 2.0 MiB against 6.3 GiB reads as it compares)
            need, budget = _size(kv), _size(t["kv_budget"])
        return (
            f"{_gib(t['memory'])} - weights {_gib(t['weights'])} - workspace"
            f" {_size(t['act'])} = {_gib(free)} free after loading; {what}"
            f" {need} {sign} {_gib(free)} x {frac:g} = {budget}"
        )
    total = t["weights"] + t["act"] + kv
    sign = ">" if total > t["budget"] else "<="
    shown, budget = _pair(total, t["budget"])
    # SGLang's static fraction holds weights and KV only: no workspace term to show
    work = f" + workspace {_size(t['act'])}" if engine.workspace_counted else ""
    return (
        f"weights {_gib(t['weights'])}{work} + {what} {_size(kv)}"
        f" = {shown} {sign} {_gib(t['memory'])} x {frac:g} = {budget}"
    )


def excess(
    values: Mapping[str, Any], terms: str | MemoryTerms = "arbiter", tokens: int | None = None
) -> float:
    """Bytes by which what one rank needs exceeds its budget in `shortfall`'s arithmetic
    (negative: it fits), at the layout the rule checks."""
    need, budget = _need(values, terms, tokens)
    return need - budget


def _size(n: float) -> str:
    """Bytes in GiB, or in MiB below 0.1 GiB (a block's KV reads 2.0 MiB, not 0.0 GiB)."""
    if abs(n) >= GIB / 10:
        return _gib(n)
    return f"{n / MIB + 0.0:.1f} MiB".replace("-0.0 MiB", "0.0 MiB")


def _need(
    values: Mapping[str, Any], terms: str | MemoryTerms, tokens: int | None
) -> tuple[float, float]:
    """(bytes one rank needs, its budget) for one block (`tokens`) or one whole sequence,
    at the layout the rule checks: weights + workspace + KV against memory x fraction, or,
    with the fraction of the memory left after loading, the KV against that budget."""
    engine = memory_terms(terms)
    t = _per_rank(values, engine, checked=True)
    kv = _kv_need(t, values, tokens)
    if engine.budget_after_load:
        return kv, t["kv_budget"]
    return t["weights"] + t["act"] + kv, t["budget"]


def _holds(need: float, budget: float, after_load: bool) -> str:
    """`need <= budget` in words for a fix: the KV and its budget after loading, or the
    whole rank's memory and its budget."""
    a, b = _pair(need, budget)
    return f"KV {a} <= {b} free x fraction" if after_load else f"{a} <= {b}"


def fixes(
    values: Mapping[str, Any], terms: str | MemoryTerms = "arbiter", one_block: bool = False
) -> list[str]:
    """Changes that make the configuration fit, each checked with the same arithmetic as
    the memory rules: more GPUs (tensor parallel), FP8 KV, a shorter max_seq_len."""
    engine = memory_terms(terms)
    after = engine.budget_after_load
    tokens = values[TPB] if one_block else None
    out: list[str] = []
    ranks = values[TP] * values[PP]
    # data-parallel replicas (the option the engine's terms name: SGLang's dp_size, vLLM's
    # data_parallel_size) each need the tensor-parallel ranks of their own: the GPUs to
    # name are n x replicas
    replicas = int(values.get(engine.replicas_path) or 1) if engine.replicas_path else 1
    for n in (2, 4, 8, 16, 32, 64):
        if n <= ranks:
            continue
        trial = {**values, TP: n, PP: 1}
        need, budget = _need(trial, terms, tokens)
        if need <= budget:
            gpus = n * replicas
            each = f", in each of {replicas} data-parallel replicas" if replicas > 1 else ""
            out.append(
                f"{gpus} GPUs (tensor_parallel_size {n}{each}, device.count {gpus}):"
                f" {_holds(need, budget, after)} per GPU"
            )
            break
    kv_q = "quant_config.kv_cache_quant_algo"
    if values.get(kv_q) is None and values.get(KV + "dtype") != "fp8":
        need, budget = _need({**values, kv_q: "FP8"}, terms, tokens)
        if need <= budget:
            out.append(f"FP8 KV cache (kv_cache_quant_algo FP8): {_holds(need, budget, after)}")
    if not one_block:
        t = _per_rank(values, engine, checked=True)
        beams = values.get(BEAM) or 1
        room = t["kv_budget"] / beams - t["seq_fixed"]
        longest = int(room // t["seq_token"]) if t["seq_token"] > 0 else 0
        if 0 < longest < sequence_tokens(values):
            out.append(f"max_seq_len <= {longest} tokens on this GPU")
    return out


MEMORY_RULE_IDS = tuple(r.id for r in RULES if r.id.startswith("memory.") and "host" not in r.id)
__all__ = [
    "ARBITER_FIXED_BYTES",
    "Capacity",
    "GIB",
    "MIB",
    "RULES",
    "TERMS",
    "capacity",
    "coefficients",
    "excess",
    "fits",
    "fixes",
    "kv_elements_per_token",
    "param_count",
    "shortfall",
]
