"""How the SGLang dialect words a resolution: the explicit values SGLang would rewrite
("X: a -> b (SGLang would change it because <rule>: <text>)") and what it derives for the
fields left unset ("SGLang derives X = v (unset)")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constraints.rules import get_rule

from ...resolution import Resolution
from .map import RESOLVED, SHARED, S, fa3_runs_triton, split_fa3_runs_triton, split_same
from .memory import pool_running_requests
from .serve import Arguments


def adjustments(resolution: Resolution, args: Arguments) -> list[str]:
    """Explicit values SGLang rewrites: "SGLang would change X from A to B because ..."."""
    out: list[str] = []
    values = resolution.values
    for dropped in resolution.dropped:
        name = dropped.name.removeprefix("sglang.")
        if name not in args.values:
            continue
        new = values[S + name]
        reason = dropped.reason
        rules = ", ".join(reason.rules) or ", ".join(c for c in reason.claims if c != dropped.name)
        out.append(
            f"{args.spelled[name]}: {args.values[name]!r} -> {new!r} "
            f"(SGLang would change it because {_why(rules)})"
        )
    running = pool_requests(resolution, args)
    if running is not None and running.reduced:
        written = args.values["max_running_requests"]
        out.append(
            f"{args.spelled['max_running_requests']}: {written!r} -> {running.total!r} "
            f"(SGLang would change it because its KV pool of {running.pool_tokens:,} tokens "
            f"holds at most {running.pool_tokens // 2:,} running requests per DP worker: "
            f"{RESOLVE_REQS} logs 'max_running_requests was reduced from the requested ...')"
        )
    split = {
        args.values.get("prefill_attention_backend"),
        args.values.get("decode_attention_backend"),
    }
    written_backend = args.values.get("attention_backend")
    if len(split) == 1 and None not in split and written_backend is not None:
        (both,) = split
        then = ""
        if split_fa3_runs_triton(args.values):
            both = "triton"  # then the fa3 fallback (map.split_fa3_runs_triton)
            then = ", then triton for an fp8_e5m2 KV cache: _attention_backend_fa3_fp8_fallback"
        if both != written_backend:
            out.append(
                f"{args.spelled['attention_backend']}: {written_backend!r} -> {both!r} (SGLang "
                "would change it because prefill_attention_backend and "
                "decode_attention_backend both name "
                f"{'fa3' if then else 'it'}: overrides._attention_backend_default{then})"
            )
    if fa3_runs_triton(written_backend, args.values):
        out.append(
            f"{args.spelled['attention_backend']}: 'fa3' -> 'triton' (SGLang would change it "
            f"because {_why('sglang.fa3-fp8-e5m2-runs-triton')})"
        )
    for name, (path, rule_ids) in RESOLVED.items():
        if name not in args.values:
            continue
        written = args.values[name]
        effective = _effective(name, values[path], written)
        if effective != written:
            # the rules that forced it, where the solve says which of them did
            forced = [r for r in resolution.provenance(path).rules if r in rule_ids]
            out.append(
                f"{args.spelled[name]}: {written!r} -> {effective!r} "
                f"(SGLang would change it because {_why(', '.join(forced or rule_ids))})"
            )
    return out


BATCH = SHARED["max_running_requests"]
RESOLVE_REQS = "mem_cache/kv_cache_configurator.py KVCacheConfigurator.resolve_max_num_reqs"


@dataclass(frozen=True)
class Running:
    """The running requests SGLang sizes from its KV pool: per DP worker, in all (x the
    attention DP size, the meaning of `max_running_requests`), whether an explicit value
    was lowered to it, and the source line."""

    per_worker: int
    total: int
    requested: int | None
    reduced: bool
    pool_tokens: int
    context_len: int

    @property
    def source(self) -> str:
        return (
            f"{RESOLVE_REQS} (KV pool of {self.pool_tokens:,} tokens, context length "
            f"{self.context_len:,})"
        )


def pool_requests(resolution: Resolution, args: Arguments) -> Running | None:
    """What SGLang runs as max_running_requests once the pool of this resolution is
    known (None without a pool: no model or device). An explicit value (or the 48 of a
    speculative algorithm) is the request; else SGLang estimates from the pool."""
    try:
        tokens = int(resolution.capacity.kv_tokens)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return None
    if tokens <= 0:
        return None
    v = resolution.values
    explicit = args.values.get("max_running_requests")
    requested = explicit
    if requested is None and v[S + "speculative_algorithm"] is not None:
        requested = v[BATCH]  # the speculative hook's 48 (sglang.spec-max-running-requests)
    attn_dp = int(args.values.get("attn_dp_size") or 1)
    context = _context_len(resolution, args)
    per_worker = pool_running_requests(tokens, context, requested, attn_dp)
    reduced = explicit is not None and per_worker < max(1, explicit // attn_dp)
    return Running(per_worker, per_worker * attn_dp, requested, reduced, tokens, context)


def _why(ids: str) -> str:
    texts = []
    for rule_id in (i.strip() for i in ids.split(",") if i.strip()):
        try:
            texts.append(f"{rule_id}: {get_rule(rule_id).text}")
        except Exception:
            texts.append(rule_id)
    return "; ".join(texts) or "a rule of SGLang"


def _effective(name: str, value: Any, written: Any) -> Any:
    if name == "chunked_prefill_size":
        return value if written > 0 else written
    if name == "disable_radix_cache":
        return not value
    return value


def _context_len(resolution: Resolution, args: Arguments) -> int:
    v = resolution.values
    if "context_length" in args.values:
        return int(v["build_config.max_seq_len"])
    return int(v["model.max_position_embeddings"])


def _pool_requests(resolution: Resolution, args: Arguments, requested: int | None) -> int | None:
    """The running requests SGLang allows per DP worker from the KV pool of this
    resolution (None when the pool is unknown: no model or device)."""
    try:
        tokens = int(resolution.capacity.kv_tokens)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return None
    if tokens <= 0:
        return None
    attn_dp = int(args.values.get("attn_dp_size") or 1)
    return pool_running_requests(tokens, _context_len(resolution, args), requested, attn_dp)


def _pool_why(resolution: Resolution, args: Arguments) -> str:
    tokens = int(resolution.capacity.kv_tokens)
    return (
        f"(from the KV pool of {tokens:,} tokens and context length "
        f"{_context_len(resolution, args):,}: mem_cache/kv_cache_configurator.py "
        "resolve_max_num_reqs)"
    )


def derivations(resolution: Resolution, args: Arguments) -> list[str]:
    """What SGLang derives for the fields left unset, as SGLang would log it."""
    v = resolution.values
    out = []
    unset = [
        n
        for n in (
            "chunked_prefill_size",
            "mem_fraction_static",
            "max_running_requests",
            "page_size",
            "disable_radix_cache",
            "disable_overlap_schedule",
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
        )
        if n not in args.values
    ]
    algo = v[S + "speculative_algorithm"]
    for name in unset:
        if name in RESOLVED:
            path = RESOLVED[name][0]
            value = _effective(name, v[path], v[S + name])
            plain = {
                "page_size": 1,
                "disable_radix_cache": False,
                "disable_overlap_schedule": False,
            }
            if name in plain and value == plain[name]:
                continue
        elif name == "max_running_requests":
            pooled = _pool_requests(resolution, args, None if algo is None else v[SHARED[name]])
            if pooled is None and algo is None:
                continue
            value = pooled if pooled is not None else v[SHARED[name]]
            if pooled is not None:
                spec = (
                    ""
                    if algo is None
                    else f"{v[SHARED[name]]} under speculation, within the limit "
                )
                out.append(
                    f"SGLang derives {name} = {value!r} (unset; {spec}"
                    f"{_pool_why(resolution, args)[1:]}"
                )
                continue
        elif name in SHARED:
            value = v[SHARED[name]]
        else:
            if algo is None:
                continue
            value = v[S + name]
        out.append(f"SGLang derives {name} = {value!r} (unset)")
    if "max_running_requests" in args.values:
        written = args.values["max_running_requests"]
        running = pool_requests(resolution, args)
        pooled = None if running is None or running.reduced else running.per_worker
        if pooled is not None and pooled != written:
            out.append(
                f"SGLang runs max_running_requests = {pooled} per DP worker, not {written!r} "
                f"{_pool_why(resolution, args)}"
            )
    backend = v[S + "attention_backend"]
    if "attention_backend" not in args.values and backend is not None and split_same(args.values):
        out.append(
            f"SGLang derives attention_backend = {backend!r} (unset; prefill_attention_backend"
            " and decode_attention_backend both name "
            + (
                "fa3: overrides._attention_backend_default, then triton for an fp8_e5m2 KV"
                " cache: _attention_backend_fa3_fp8_fallback)"
                if split_fa3_runs_triton(args.values)
                else "it: overrides._attention_backend_default)"
            )
        )
    elif "attention_backend" not in args.values and backend is not None:
        rule = "sglang.default-backend-" + ("mla" if v["model.kv_replicated"] else "mha")
        fallback = (
            ", and triton for fa3 with an fp8_e5m2 KV cache (sglang.fa3-fp8-e5m2-runs-triton)"
            if fa3_runs_triton("fa3", args.values) and backend == "triton"
            else ""
        )
        out.append(
            f"SGLang derives attention_backend = {backend!r} (unset; picked for the GPU and"
            f" model: {rule}{fallback})"
        )
    if not v["cuda_graph_config.enabled"]:
        prefill, decode = v[S + "prefill_attention_backend"], v[S + "decode_attention_backend"]
        backend = (
            prefill if prefill is not None and prefill == decode else v[S + "attention_backend"]
        )
        out.append(f"SGLang runs without CUDA graphs (attention backend {backend})")
    return out


__all__ = ["BATCH", "Running", "adjustments", "derivations", "pool_requests"]
