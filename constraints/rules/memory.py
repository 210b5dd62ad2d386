"""The memory model: what one GPU (one tensor/pipeline-parallel rank) must hold.

Terms, all in bytes per rank (`tp` tensor-parallel ranks, `pp` pipeline stages):

- weights: parameter count x bytes per parameter / (tp * pp). Bytes per parameter follow
  `quant_config.quant_algo` (none: the compute dtype, 2 or 4 bytes; 8-bit algorithms: 1;
  4-bit algorithms: 0.5, scales and unquantized embeddings ignored). The parameter count
  is `model.num_params`, or computed from the shape facts when that is 0.
- activation workspace: `a_tok * max_num_tokens + a_seq * max_batch_size + a_fixed`.
  Our estimate ("arbiter" terms): a step's packed tokens each hold 16-bit hidden states,
  Q/K/V and the two MLP inputs (`2 * (2*hidden + (heads + 2*kv_heads)*head_dim +
  2*intermediate)` bytes, not sharded: an upper bound), every sequence an FP32 row of
  logits (`4 * vocab`), plus a fixed 256 MiB for library workspaces. The "mlc" terms are
  MLC's `EstimateMemoryUsageOnMode` formulas (catalog 2.4) with max_num_tokens as the
  prefill chunk and max_batch_size as max_num_sequence.
- KV pool: tokens x KV bytes per token, where KV bytes per token = 2 (K and V) x layers x
  kv_heads x head_dim x bytes of the KV dtype / (tp * pp); the KV dtype is the KV
  quantization (FP8, INT8: 1 byte; NVFP4: 0.5), else `kv_cache_config.dtype`, else the
  compute dtype.
- budget: `device.memory_mib` x `kv_cache_config.free_gpu_memory_fraction` (the fraction
  of the whole device the engine may use, as MLC's gpu_memory_utilization; TensorRT-LLM
  applies its fraction to the memory left after weights, which is not linear).
- host pool: `host_cache_size` bytes of host memory; it never counts against the device.

The hard rule `memory.fits-one-sequence` asks that weights + workspace + the KV of one
sequence fit the budget: a sequence of `max_seq_len` tokens, or of `max_attention_window
+ sink_token_length` tokens when a shorter window is set. To stay linear for CP-SAT the
rule is built per case of (weight bytes, KV bytes, pipeline size) once the facts are
known, and multiplied through by tp, which leaves one product `tp * (budget - workspace)`
for the solver. Pipeline sizes 1, 2, 4 and 8 are checked exactly; any other size as the
largest of those below it (3 as 2, 5-7 as 4, above 8 as 8), which is stricter than the
formula, never looser. (Exact cases for 3 and 6 as well made the 1,000-claim benchmark
about 70% slower.) Everything is counted in KiB and scaled
by 1000 (the fixed point of the fraction); fractional counts of what is needed are rounded
up, so the check is never looser than the formula.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..expr import Cmp, Expr, Lin, Prod, all_of, any_of, eq, ge, implies, lt, ne, one_of, ref
from ..schema import options
from .base import Computed, Rule, Source

MIB = 1 << 20
GIB = 1 << 30
FRACTION_SCALE = 1000
# The rule counts bytes in KiB (times FRACTION_SCALE): with 1024 beams of a 4M-token
# sequence of a model holding megabytes of KV a token, bytes would overflow CP-SAT's int64.
UNIT = 1024
# Pipeline sizes the memory rule checks exactly; a size between two of them is checked as
# the smaller one (more weights and KV per rank than it really has: stricter, never looser),
# and any size from the last one up as the last one.
PP_CASES = (1, 2, 4, 8)
TERMS = ("arbiter", "mlc")
ARBITER_FIXED_BYTES = 256 * MIB

B = "build_config."
KV = "kv_cache_config."
TP = "parallel_config.tensor_parallel_size"
PP = "parallel_config.pipeline_parallel_size"
FRAC = KV + "free_gpu_memory_fraction"
SEQ = B + "max_seq_len"
WINDOW = KV + "max_attention_window"
SINK = KV + "sink_token_length"
MAX_TOKENS = KV + "max_tokens"
BATCH = B + "max_batch_size"
NUM_TOKENS = B + "max_num_tokens"
BEAM = B + "max_beam_width"

EIGHT_BIT = ("FP8", "FP8_BLOCK_SCALES", "FP8_PER_CHANNEL_PER_TOKEN", "W8A16", "W8A8_SQ_PER_CHANNEL")
FOUR_BIT = ("NVFP4", "W4A8_AWQ", "W4A16_AWQ", "W4A16_GPTQ", "W4A16")


# ---------------------------------------------------------------------------- facts
def _fact(facts: Mapping[str, Any], path: str) -> Any:
    if path in facts:
        return facts[path]
    return next(s.default for s in options() if s.path == path)


def param_count(facts: Mapping[str, Any]) -> int:
    """`model.num_params`, or the count a decoder of this shape has (embedding, attention
    and gated-MLP matrices, norms, and the output head unless tied)."""
    given = _fact(facts, "model.num_params")
    if given:
        return int(given)
    h = _fact(facts, "model.hidden_size")
    layers = _fact(facts, "model.num_layers")
    nq = _fact(facts, "model.num_attention_heads")
    nkv = _fact(facts, "model.num_kv_heads")
    hd = _fact(facts, "model.head_dim")
    inter = _fact(facts, "model.intermediate_size")
    vocab = _fact(facts, "model.vocab_size")
    attention = h * nq * hd + 2 * h * nkv * hd + nq * hd * h
    mlp = 3 * h * inter
    per_layer = attention + mlp + 2 * h
    head = 0 if _fact(facts, "model.tie_word_embeddings") else vocab * h
    return vocab * h + layers * per_layer + h + head


def kv_elements_per_token(facts: Mapping[str, Any]) -> int:
    """K and V elements one token stores over all layers (before any sharding)."""
    return (
        2
        * _fact(facts, "model.num_layers")
        * _fact(facts, "model.num_kv_heads")
        * _fact(facts, "model.head_dim")
    )


@dataclass(frozen=True)
class Coefficients:
    """Per-rank workspace coefficients in bytes and totals over all ranks."""

    act_per_token: int
    act_per_sequence: int
    act_fixed: int
    kv_extra_per_token: int  # bytes per token on top of K and V (MLC's page bookkeeping)


def coefficients(facts: Mapping[str, Any], terms: str = "arbiter") -> Coefficients:
    h = _fact(facts, "model.hidden_size")
    nq = _fact(facts, "model.num_attention_heads")
    nkv = _fact(facts, "model.num_kv_heads")
    hd = _fact(facts, "model.head_dim")
    inter = _fact(facts, "model.intermediate_size")
    vocab = _fact(facts, "model.vocab_size")
    if terms == "mlc":
        qo_hidden = hd * nq  # MLC's hidden_size in the workspace formula
        per_token = (nq + 1) * 8 + hd * (nq + nkv) * 4 + 4 + 2 * qo_hidden * 2
        per_seq = 88 + 4 + qo_hidden * 2 + 20 + math.ceil(vocab * 16.125)
        fixed = 88 + 48 * MIB + int(facts.get("memory.mlc_temp_buffer_bytes") or 0)
        return Coefficients(per_token, per_seq, fixed, 2)  # 1.25 bytes, rounded up
    if terms != "arbiter":
        raise ValueError(f"unknown memory terms {terms!r}; use one of {TERMS}")
    per_token = 2 * (2 * h + (nq + 2 * nkv) * hd + 2 * inter)
    return Coefficients(per_token, 4 * vocab, ARBITER_FIXED_BYTES, 0)


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


def _halves(values: Mapping[str, Any], cases: list[tuple[int, Expr]]) -> int:
    for halves, when in cases:
        if when.evaluate(values):
            return halves
    raise ValueError("no precision case matches")  # pragma: no cover - cases are exhaustive


# ---------------------------------------------------------------------------- the rule
def _budget_minus_workspace(facts: Mapping[str, Any], c: Coefficients) -> Lin:
    mem_units = int(_fact(facts, "device.memory_mib")) * MIB // UNIT
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


def fits(
    facts: Mapping[str, Any],
    tokens: Lin | list[tuple[Expr, Lin]],
    terms: str | None = None,
    *,
    per_beam: bool = False,
) -> Expr:
    """The memory holds weights, workspace and the KV of `tokens` tokens, on every rank.

    `tokens` may be a list of (condition, tokens) pairs; the cases are nested (weight
    precision, KV precision, pipeline stages) so each condition is reified once. With
    `per_beam`, every beam of a `max_beam_width` search holds `tokens` of its own."""
    terms = terms or facts.get("memory.terms") or "arbiter"
    needs = [(None, tokens)] if isinstance(tokens, Lin) else tokens
    c = coefficients(facts, terms)
    params = param_count(facts)
    elements = kv_elements_per_token(facts)
    lhs = Prod(ref(TP), _budget_minus_workspace(facts, c))
    by_weight = []
    for w_halves, w_when in weight_cases():
        by_kv = []
        for k_halves, k_when in kv_cases():
            kv_token = elements * k_halves / 2 + c.kv_extra_per_token
            by_pp = []
            for index, pp in enumerate(PP_CASES):
                weights = _units(params * w_halves / 2 / pp)
                per_token = _units(kv_token / pp)
                checks = []
                for when, need in needs:
                    kv = (
                        Prod(ref(BEAM), need, per_token, weights)
                        if per_beam
                        else need.scale(per_token) + weights
                    )
                    check = Cmp(lhs, ">=", kv)
                    checks.append(check if when is None else implies(when, check))
                by_pp.append(implies(_pp_case(index), all_of(*checks)))
            by_kv.append(implies(k_when, all_of(*by_pp)))
        by_weight.append(implies(w_when, all_of(*by_kv)))
    return all_of(*by_weight)


def _one_sequence(facts: Mapping[str, Any]) -> Expr:
    full = any_of(eq(WINDOW, None), ge(WINDOW, ref(SEQ)))
    short = all_of(ne(WINDOW, None), lt(WINDOW, ref(SEQ)))
    return fits(facts, [(full, ref(SEQ)), (short, ref(WINDOW) + ref(SINK))], per_beam=True)


_FACT_PATHS = tuple(s.path for s in options() if s.fact)


@lru_cache(maxsize=64)
def _one_sequence_cached(key: tuple) -> Expr:
    return _one_sequence(dict(key))


def _fact_key(facts: Mapping[str, Any]) -> tuple:
    keys = (*_FACT_PATHS, "memory.terms", "memory.mlc_temp_buffer_bytes")
    return tuple((k, facts[k]) for k in keys if k in facts)


ONE_SEQUENCE = Computed(
    "weights + workspace + KV of one sequence <= device memory x free_gpu_memory_fraction",
    lambda facts: _one_sequence_cached(_fact_key(facts)),
    frozenset(
        {
            *_FACT_PATHS,
            FRAC,
            SEQ,
            WINDOW,
            SINK,
            BATCH,
            NUM_TOKENS,
            TP,
            PP,
            "quant_config.quant_algo",
            "quant_config.kv_cache_quant_algo",
            KV + "dtype",
            B + "dtype",
            BEAM,
        }
    ),
)

SEQ_NEED_CAP = any_of(
    ge(MAX_TOKENS, Prod(ref(BEAM), ref(SEQ))),
    all_of(
        ne(WINDOW, None),
        lt(WINDOW, ref(SEQ)),
        ge(MAX_TOKENS, Prod(ref(BEAM), ref(WINDOW) + ref(SINK))),
    ),
)

RULES = [
    Rule(
        id="memory.fits-one-sequence",
        text="weights, activation workspace and the KV cache of one max_seq_len sequence (each of its max_beam_width beams) must fit in device memory x free_gpu_memory_fraction",
        source=Source(
            "TensorRT-LLM / vLLM / MLC",
            "kvCacheManager.cpp calculateMaxNumBlocks; vllm/v1/core/kv_cache_planning.py; mlc cpp/serve/config.cc",
            "T45, V28, M4",
        ),
        expr=ONE_SEQUENCE,
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
    ),
    Rule(
        id="memory.max-tokens-holds-a-sequence",
        text="a KV pool capped by max_tokens must still hold one whole sequence, each of its max_beam_width beams",
        source=Source(
            "TensorRT-LLM / vLLM",
            "kvCacheManager.cpp calculateMaxNumBlocks; vllm/v1/core/kv_cache_planning.py",
            "T45, V28",
        ),
        expr=implies(ne(MAX_TOKENS, None), SEQ_NEED_CAP),
        feasible={MAX_TOKENS: 8192, SEQ: 8192},
        infeasible={MAX_TOKENS: 4096, SEQ: 8192, WINDOW: None},
    ),
    Rule(
        id="memory.host-tier-within-host-memory",
        text="the host KV tier (host_cache_size) may take at most 70% of host memory",
        source=Source("vLLM", "vllm/config.py CacheConfig swap space check", "V5", "0.6.6"),
        # 10 * host_cache_size <= 7 * host memory in bytes
        expr=implies(
            ne("device.host_memory_mib", 0),
            ge(ref("device.host_memory_mib").scale(7 * MIB), ref(KV + "host_cache_size").scale(10)),
        ),
        feasible={"device.host_memory_mib": 65536, KV + "host_cache_size": 32 * GIB},
        infeasible={"device.host_memory_mib": 65536, KV + "host_cache_size": 48 * GIB},
    ),
]


# ---------------------------------------------------------------------------- reports
def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


@dataclass(frozen=True)
class Capacity:
    """Memory of one rank for a solved configuration, in bytes unless named otherwise."""

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

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def __str__(self) -> str:
        return (
            f"KV pool {self.kv_blocks} blocks x {self.tokens_per_block} = {self.kv_tokens} tokens"
            f" ({_gib(self.kv_pool)}, limited by {self.limited_by}); weights {_gib(self.weights)},"
            f" workspace {_gib(self.activations)}, headroom {_gib(self.headroom)} of"
            f" {_gib(self.memory)} x {self.fraction:.2f}; host tier {self.host_blocks} blocks"
        )


def _per_rank(values: Mapping[str, Any], terms: str) -> dict[str, float]:
    c = coefficients(values, terms)
    ranks = values[TP] * values[PP]
    w = param_count(values) * _halves(values, weight_cases()) / 2 / ranks
    kv_token = (
        kv_elements_per_token(values) * _halves(values, kv_cases()) / 2 + c.kv_extra_per_token
    ) / ranks
    act = c.act_per_token * values[NUM_TOKENS] + c.act_per_sequence * values[BATCH] + c.act_fixed
    memory = values["device.memory_mib"] * MIB
    return {
        "weights": w,
        "kv_token": kv_token,
        "act": act,
        "memory": memory,
        "budget": memory * values[FRAC],
    }


def sequence_tokens(values: Mapping[str, Any]) -> int:
    """KV tokens one sequence needs: max_seq_len, or the window plus sinks when shorter."""
    window = values[WINDOW]
    if window is not None and window < values[SEQ]:
        return window + values[SINK]
    return values[SEQ]


def capacity(values: Mapping[str, Any], terms: str = "arbiter") -> Capacity:
    """KV blocks and tokens the configuration gets, and what each memory term takes."""
    t = _per_rank(values, terms)
    tpb = values[KV + "tokens_per_block"]
    free = t["budget"] - t["weights"] - t["act"]
    tokens = max(0, int(free // t["kv_token"]))
    limited = "memory"
    if values[MAX_TOKENS] is not None and values[MAX_TOKENS] < tokens:
        tokens, limited = values[MAX_TOKENS], "max_tokens"
    blocks = tokens // tpb
    pool = blocks * tpb * t["kv_token"]
    host = values[KV + "host_cache_size"]
    host_blocks = int(host // (t["kv_token"] * tpb)) if host else 0
    return Capacity(
        terms=terms,
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
        sequence_tokens=sequence_tokens(values),
    )


def shortfall(values: Mapping[str, Any], terms: str = "arbiter") -> str:
    """The memory rule's arithmetic for a configuration, in GiB, with the verdict."""
    t = _per_rank(values, terms)
    seq = sequence_tokens(values)
    beams = values.get(BEAM) or 1
    kv = beams * seq * t["kv_token"]
    total = t["weights"] + t["act"] + kv
    sign = ">" if total > t["budget"] else "<="
    return (
        f"weights {_gib(t['weights'])} + workspace {_gib(t['act'])} + KV for {beams} x {seq}"
        " tokens"
        f" {_gib(kv)} = {_gib(total)} {sign} {_gib(t['memory'])} x {values[FRAC]:g}"
        f" = {_gib(t['budget'])}"
    )


MEMORY_RULE_IDS = tuple(r.id for r in RULES)
