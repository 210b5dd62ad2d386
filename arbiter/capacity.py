"""Capacity: MLC-style mode stages that infer batch, prefill chunk and KV capacity, and
the memory arithmetic attached to conflicts that run through the memory model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from constraints.expr import And, Cmp, Eq, all_of, le, ne, ref
from constraints.facts.memory import memory_terms
from constraints.schema import lookup
from constraints.shared.rules.memory import (
    BATCH,
    COUNT,
    MAX_TOKENS,
    MEMORY_RULE_IDS,
    NODES,
    NUM_TOKENS,
    PP,
    SEQ,
    TP,
    fits,
    fixes,
    shortfall,
)

from .claims import FuncClaim, SetupClaim
from .errors import MemoryConflictError as MemoryConflictError  # its old import path

# the shared rule that counts GPUs; an engine whose replicas take GPUs of their own names
# its own rule and the option counting them in its memory terms (`MemoryTerms.replicas_rule`,
# `replicas_path`): when one of them is in a memory conflict, the machine's GPUs decide,
# and the arithmetic is shown at the layout that uses all of them
GPU_COUNT_RULES = ("machine.parallel-fits-devices",)


def memory_numbers(err, claims, defaults, facts, terms) -> tuple[str, tuple[str, ...]] | None:
    """The memory arithmetic of a conflict that runs through the memory model: (the
    shortfall, the fixes that make it fit), or None when it does not.

    It is worked out for the configuration asked for: the defaults, the facts and what the
    functional claims fix (every one of them: they hold together once the memory rules are
    left out, and a claim the conflict does not need, such as a tensor-parallel size when
    no layout of the machine fits, is still the user's configuration). When a GPU-count
    rule is in the conflict, the parallel sizes no claim fixes are those of the layout
    that uses every GPU (`machine_layout`), not the defaults' single GPU."""
    rules = {r for c in err.conflicts for r in c.rules}
    if not rules & set(MEMORY_RULE_IDS):
        return None
    one_block = "memory.fits-one-sequence" not in rules
    values = {**defaults, **facts}
    fixed = set(facts)
    for claim in claims:
        if isinstance(claim, FuncClaim):
            asked = equalities(claim.expr)
            values.update(asked)
            fixed |= set(asked)
    try:
        engine = memory_terms(terms)
        own = (engine.replicas_rule,) if engine.replicas_rule else ()
        if rules & {*GPU_COUNT_RULES, *own}:
            path = engine.replicas_path
            replicas = [path] if path and engine.replicas_rule in rules else []
            values.update(machine_layout(values, fixed, replicas))
        block = values["kv_cache_config.tokens_per_block"] if one_block else None
        return shortfall(values, terms, block), tuple(fixes(values, terms, one_block))
    except (KeyError, TypeError, ValueError):  # a claim left a needed value unset
        return None


def machine_layout(
    values: Mapping[str, Any], fixed: set[str], replicas: Sequence[str] = ()
) -> dict[str, int]:
    """Tensor and pipeline sizes that use every GPU of the machine (`device.count` x
    `device.nodes`, shared by the data-parallel replicas the `replicas` paths count): the
    sizes `fixed` names stay, the free one takes the GPUs left (tensor parallelism first),
    so a memory conflict decided by the GPU count is shown at the most ranks the machine
    has, where each holds the least."""
    gpus = int(values[COUNT]) * int(values[NODES])
    for path in replicas:
        gpus //= max(1, int(values.get(path) or 1))
    tp, pp = int(values[TP]), int(values[PP])
    if TP in fixed and PP in fixed:
        return {}
    if TP in fixed:
        return {PP: max(pp, gpus // max(1, tp))}
    if PP in fixed:
        return {TP: max(tp, gpus // max(1, pp))}
    return {TP: max(tp, gpus), PP: 1} if gpus > tp * pp else {}


def equalities(expr: Any) -> dict[str, Any]:
    if isinstance(expr, Eq):
        return {expr.path: expr.value}
    if isinstance(expr, And):
        out: dict[str, Any] = {}
        for item in expr.items:
            out.update(equalities(item))
        return out
    return {}


def mode_targets(claims) -> tuple[str, ...]:
    """The options a mode infers: batch, prefill chunk and KV capacity, unless a func or
    setup claim names them."""
    fixed: set[str] = set()
    for c in claims:
        if isinstance(c, (FuncClaim, SetupClaim)):
            fixed |= c.expr.paths()
    return tuple(p for p in (BATCH, NUM_TOKENS, MAX_TOKENS) if p not in fixed)


def mode_stages(stages, cm, mode, targets, defaults, facts) -> None:
    """MLC-style capacity inference: batch, then prefill chunk, then KV capacity.

    A target is enforced by a literal: the stage maximises (literal, value)
    lexicographically, so a target the higher tiers rule out gives way instead of
    failing. Every other option is already pinned by "fewest changes"."""
    fixed = {BATCH, NUM_TOKENS, MAX_TOKENS} - set(targets)

    def stage(path: str, target: Any, upper: int, required: Any = None) -> None:
        # maximise (required part holds, target holds, then the value); when the target
        # cannot hold, the value closest to it (the smallest) instead of the largest
        var = cm.var(path).var
        lit = cm.model.new_bool_var(f"mode:{path}")
        cm.enforce(target, [lit])
        score = cm.model.new_int_var(-upper, upper, f"mode:{path}:score")
        cm.model.add(score == var).only_enforce_if(lit)
        cm.model.add(score == -var).only_enforce_if(~lit)
        objective = lit * (2 * upper + 1) + score
        if required is not None:
            need = cm.model.new_bool_var(f"mode:{path}:required")
            cm.enforce(required, [need])
            objective += need * (4 * upper + 3)
        stages.run(objective, 1)

    if BATCH not in fixed:
        cap = mode.batch_cap or defaults[BATCH]
        stage(BATCH, le(BATCH, cap), lookup(BATCH).domain.hi)
    if NUM_TOKENS not in fixed:
        target = le(NUM_TOKENS, defaults[NUM_TOKENS])
        if mode.prefill_within_sequence:
            target = all_of(target, le(NUM_TOKENS, ref(SEQ)))
        stage(NUM_TOKENS, target, lookup(NUM_TOKENS).domain.hi)
    if MAX_TOKENS not in fixed:
        required = all_of(ne(MAX_TOKENS, None), fits(facts, ref(MAX_TOKENS)))
        parts = [required]
        if mode.kv_per_sequence:
            batch = stages.values[BATCH]
            parts.append(Cmp(ref(MAX_TOKENS), "<=", ref(SEQ).scale(batch)))
        else:
            parts.append(le(MAX_TOKENS, ref(SEQ)))
        if mode.kv_cap is not None:
            parts.append(le(MAX_TOKENS, mode.kv_cap))
        stage(MAX_TOKENS, all_of(*parts), lookup(MAX_TOKENS).domain.hi, required)
