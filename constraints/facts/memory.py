"""Memory knowledge, in one place: what a weight, a KV element, a sequence's state and a
step's activations cost in bytes. The memory rules (rules/memory.py), the capacity modes
(arbiter/capacity.py) and the runtime (engine/) all read it from here.

- Weights: `model.weight_bytes` when the checkpoint is pre-quantized (its quantization is a
  fact; bytes as stored, scales included: facts/quant.py), else `model.num_params` x bytes
  per parameter of `quant_config.quant_algo` (`WEIGHT_HALF_BYTES`: none keeps the compute
  dtype; 8-bit algorithms 1 byte; 4-bit algorithms 0.5, scales ignored). One GPU holds
  them as the parallel layout places them (`rank_weight_bytes`: experts, attention,
  embedding, head and the rest, `weight_parts`), on the heaviest pipeline stage as the
  engine splits the layers (`stage_layers`), and as the engine allocates them
  (`MemoryTerms.padded`: vLLM's MXFP4 experts padded to its kernel's tiles).
- KV: elements per token over the full-attention layers (`model.kv_elements_per_token`;
  MLA's latent counts once), plus the sliding/chunked layers' elements per token for at
  most `model.sliding_window` tokens, times the bytes of the KV dtype (`KV_HALF_BYTES`);
  plus `model.state_bytes` of recurrent state per sequence. When a config gives only the
  shape (no reader ran), elements are 2 x layers x kv_heads x head_dim. KV splits over
  tensor-parallel ranks by heads, each rank keeping at least one whole head
  (`kv_heads_per_rank`: with tp above the KV heads the heads are replicated, so a rank
  keeps 1 / kv_heads of the KV, not 1 / tp), except MLA's latent, which every rank keeps
  whole (`model.kv_replicated`). `kv_dtype` names the element type a configuration stores and
  `block_bytes` is one block of a rank's pool: the runtime allocates exactly that.
- Activations: see `coefficients` (the engine-neutral estimate `estimate_coefficients`,
  or an engine's own formulas).
- Memory terms: what differs per engine is one `MemoryTerms` object in the engine's pack
  (`constraints/engines/<engine>/memory.py`: its workspace coefficients, how it splits
  layers over pipeline stages, which parallel layouts place weights differently, and
  whether its memory fraction applies to the whole device or to the memory left free
  after the model is loaded, and which option counts its data-parallel replicas), looked
  up by the profile's `memory_terms` name (`memory_terms`): the pack of the engine whose
  profiles name it holds it, so a new engine's terms need no edit here. This module
  names no engine's option: the base `MemoryTerms` holds the neutral choices (no
  expert shards or attention copies beyond tp, nothing padded or gathered), and the
  packs hold each engine's own names and arithmetic:
  - vLLM (constraints/engines/vllm/memory.py): `--data-parallel-size` (`VLLM_DP`) and
    the experts its replicas share, the fused-MoE workspace, the replicas whose tokens
    it gathers (`GATHERED_REPLICAS`) and their dispatch buffer, the sampler's rows, the
    intermediate-size shares a layout can have; its MXFP4 padding (mxfp4.py);
  - SGLang (constraints/engines/sglang/memory.py): attention DP (`SGLANG_ATTN_DP`) and
    the attention copies it holds;
  - TensorRT-LLM (constraints/engines/trtllm/memory.py): attention DP (`TRT_ADP`);
  - MLC (constraints/engines/mlc/memory.py): the assumed temp buffer per prefill token
    (`MLC_TEMP_BYTES_PER_TOKEN`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from typing import Any, ClassVar

from .. import profiles
from ..profiles import PROFILES
from ..schema import lookup

MIB = 1 << 20
GIB = 1 << 30
ARBITER_FIXED_BYTES = 256 * MIB
EIGHT_BIT = ("FP8", "FP8_BLOCK_SCALES", "FP8_PER_CHANNEL_PER_TOKEN", "W8A16", "W8A8_SQ_PER_CHANNEL")
FOUR_BIT = ("NVFP4", "MXFP4", "W4A8_AWQ", "W4A16_AWQ", "W4A16_GPTQ", "W4A16")
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
# bytes per KV element, in halves (so FP4 stays an integer): 16-bit 4, 8-bit 2, 4-bit 1
KV_HALF_BYTES = {"float32": 8, "float16": 4, "bfloat16": 4, "fp8": 2, "FP8": 2, "INT8": 2}
KV_HALF_BYTES["NVFP4"] = 1
# the KV element type a configuration stores, in half-bytes (`kv_dtype` names it)
KV_DTYPE_HALVES = {"float32": 8, "float16": 4, "bfloat16": 4, "fp8": 2, "int8": 2, "nvfp4": 1}
_KV_QUANT_DTYPE = {"FP8": "fp8", "INT8": "int8", "NVFP4": "nvfp4"}


def weight_half_bytes(quant_algo: str | None, compute_dtype: str) -> int:
    """Half-bytes per parameter when the engine quantizes (or keeps) the weights."""
    if quant_algo is None:
        return 2 * DTYPE_BYTES[compute_dtype]
    if quant_algo in EIGHT_BIT:
        return 2
    if quant_algo in FOUR_BIT:
        return 1
    raise ValueError(f"no weight size for quant_algo {quant_algo!r}")


def fact(facts: Mapping[str, Any], path: str) -> Any:
    """A fact from `facts`, or the schema's default for it."""
    if path in facts:
        return facts[path]
    return lookup(path).default


def param_count(facts: Mapping[str, Any]) -> int:
    """`model.num_params`, or the count a dense decoder of this shape has (embedding,
    attention and gated-MLP matrices, norms, and the output head unless tied)."""
    given = fact(facts, "model.num_params")
    if given:
        return int(given)
    h = fact(facts, "model.hidden_size")
    layers = fact(facts, "model.num_layers")
    nq = fact(facts, "model.num_attention_heads")
    nkv = fact(facts, "model.num_kv_heads")
    hd = fact(facts, "model.head_dim")
    inter = fact(facts, "model.intermediate_size")
    vocab = fact(facts, "model.vocab_size")
    attention = h * nq * hd + 2 * h * nkv * hd + nq * hd * h
    mlp = 3 * h * inter
    per_layer = attention + mlp + 2 * h
    head = 0 if fact(facts, "model.tie_word_embeddings") else vocab * h
    return vocab * h + layers * per_layer + h + head


@dataclass(frozen=True)
class KvShape:
    """KV of one token and one sequence, in elements (before the KV dtype), and state."""

    per_token: int  # full-attention layers: grows with every token
    window_per_token: int  # sliding/chunked layers: up to `window` tokens
    window: int
    state_bytes: int  # recurrent state per sequence
    replicated: bool = False  # every tensor-parallel rank keeps all of it (MLA)

    @property
    def pool_per_token(self) -> int:
        """Elements a token slot of a uniform block pool holds (every attention layer)."""
        return self.per_token + self.window_per_token

    def sequence_elements(self, tokens: int) -> int:
        windowed = min(tokens, self.window) if self.window else tokens
        return self.per_token * tokens + self.window_per_token * windowed


def kv_shape(facts: Mapping[str, Any]) -> KvShape:
    per_token = int(fact(facts, "model.kv_elements_per_token"))
    window_per_token = int(fact(facts, "model.window_kv_elements_per_token"))
    state = int(fact(facts, "model.state_bytes"))
    if not (per_token or window_per_token or state):  # shape facts only
        per_token = (
            2
            * fact(facts, "model.num_layers")
            * fact(facts, "model.num_kv_heads")
            * fact(facts, "model.head_dim")
        )
    window = int(fact(facts, "model.sliding_window")) if window_per_token else 0
    return KvShape(
        per_token, window_per_token, window, state, bool(fact(facts, "model.kv_replicated"))
    )


def kv_elements_per_token(facts: Mapping[str, Any]) -> int:
    """K and V elements one token stores in a uniform pool (before any sharding)."""
    return kv_shape(facts).pool_per_token


def compute_dtype(values: Mapping[str, Any]) -> str:
    """`build_config.dtype`, with `auto` meaning the checkpoint's dtype (`model.dtype`)."""
    name = fact(values, "build_config.dtype")
    return str(fact(values, "model.dtype")) if name == "auto" else str(name)


def kv_dtype(values: Mapping[str, Any]) -> str:
    """The KV cache's element type for a configuration: the KV quantization when set
    (`fp8`, `int8`, `nvfp4`), else `kv_cache_config.dtype`, `auto` following compute."""
    quant = fact(values, "quant_config.kv_cache_quant_algo")
    if quant is not None:
        return _KV_QUANT_DTYPE[quant]
    name = fact(values, "kv_cache_config.dtype")
    return compute_dtype(values) if name == "auto" else str(name)


def kv_ranks(values: Mapping[str, Any]) -> int:
    """Ranks the KV pool is split over: tensor x pipeline ranks, except MLA's latent,
    which every tensor-parallel rank keeps whole (split over pipeline stages only)."""
    tp = int(fact(values, "parallel_config.tensor_parallel_size"))
    pp = int(fact(values, "parallel_config.pipeline_parallel_size"))
    return pp if kv_shape(values).replicated else tp * pp


def kv_heads_per_rank(num_kv_heads: int, tp: int) -> int:
    """KV heads one tensor-parallel rank keeps: ceil(kv_heads / tp), and at least one (with
    more ranks than KV heads each rank keeps a whole head, replicated, as TensorRT-LLM,
    vLLM and the runtime do). The capacity report and the memory rule both count this."""
    return max(1, -(-max(1, num_kv_heads) // tp))


@dataclass(frozen=True)
class KvSplit:
    """Tensor-parallel sizes counted alike by the memory rule. Either the ranks together
    keep at most `heads_together` KV heads' worth of KV (tp x `kv_heads_per_rank`: the
    model's KV heads when tp divides them), or, when that grows with tp
    (`heads_together` 0), each rank keeps `heads_per_rank` heads whatever tp is."""

    tp_sizes: tuple[int, ...]
    heads_together: int
    heads_per_rank: int


def kv_splits(num_kv_heads: int, tp_sizes: Iterable[int]) -> tuple[KvSplit, ...]:
    """The memory rule's cases of `kv_heads_per_rank` over `tp_sizes`: sizes dividing the
    KV heads (together the ranks keep every head once), sizes above them (one head per
    rank, replicated), and the other sizes below them counted at the most heads any of
    them keeps together (stricter, never looser; `parallel.heads-divisible-by-tp`
    refuses those sizes anyway)."""
    heads = max(1, num_kv_heads)
    sizes = sorted(set(tp_sizes))
    even = tuple(t for t in sizes if heads % t == 0)
    above = tuple(t for t in sizes if t > heads)
    rest = tuple(t for t in sizes if t < heads and heads % t)
    out = [KvSplit(even, heads, 0)] if even else []
    if rest:
        most = max(t * kv_heads_per_rank(heads, t) for t in rest)
        out.append(KvSplit(rest, most, 0))
    if above:
        out.append(KvSplit(above, 0, 1))
    return tuple(out)


def kv_rank_share(values: Mapping[str, Any], terms: str | MemoryTerms = "arbiter") -> float:
    """The part of a token's KV one rank keeps: its KV heads of the model's
    (`kv_heads_per_rank`), over the pipeline stages. MLA's latent is kept whole by every
    tensor-parallel rank, and so is every KV head under TensorRT-LLM's attention data
    parallelism (`attention_dp`: each rank attends for its own sequences)."""
    tp = int(fact(values, "parallel_config.tensor_parallel_size"))
    pp = int(fact(values, "parallel_config.pipeline_parallel_size"))
    if kv_shape(values).replicated or attention_dp(values, terms):
        return 1 / pp
    heads = max(1, int(fact(values, "model.num_kv_heads")))
    return kv_heads_per_rank(heads, tp) / (heads * pp)


def kv_pool_bytes_per_token(
    values: Mapping[str, Any], extra_per_token: int = 0, terms: str | MemoryTerms = "arbiter"
) -> float:
    """Bytes one token slot of a rank's uniform block pool takes: K and V of every
    attention layer (full and windowed) in the configuration's KV dtype, plus an engine's
    `extra_per_token` bookkeeping (`Coefficients.kv_extra_per_token`), times the rank's
    share (`kv_rank_share`)."""
    elements = kv_shape(values).pool_per_token
    halves = KV_DTYPE_HALVES[kv_dtype(values)]
    return (elements * halves / 2 + extra_per_token) * kv_rank_share(values, terms)


def block_bytes(values: Mapping[str, Any]) -> int:
    """Bytes one KV block (`kv_cache_config.tokens_per_block` token slots) takes on a
    rank: what the runtime's pool allocates per block and what `arbiter check` counts."""
    tpb = int(fact(values, "kv_cache_config.tokens_per_block"))
    return math.ceil(kv_pool_bytes_per_token(values) * tpb)


@dataclass(frozen=True)
class Coefficients:
    """Per-rank workspace coefficients in bytes."""

    act_per_token: int
    act_per_sequence: int
    act_fixed: int
    kv_extra_per_token: int  # bytes per token on top of K and V (MLC's page bookkeeping)


def estimate_coefficients(facts: Mapping[str, Any]) -> Coefficients:
    """The engine-neutral activation workspace estimate (TensorRT-LLM's terms, and the
    base of vLLM's): a step's packed tokens each hold 16-bit hidden states, Q/K/V and the
    two MLP inputs (`2 * (2*hidden + (heads + 2*kv_heads)*head_dim + 2*intermediate)`
    bytes, not sharded: an upper bound), every sequence an FP32 row of logits
    (`4 * vocab`), plus a fixed 256 MiB for library workspaces."""
    h = fact(facts, "model.hidden_size")
    nq = fact(facts, "model.num_attention_heads")
    nkv = fact(facts, "model.num_kv_heads")
    hd = fact(facts, "model.head_dim")
    inter = fact(facts, "model.intermediate_size")
    vocab = fact(facts, "model.vocab_size")
    per_token = 2 * (2 * h + (nq + 2 * nkv) * hd + 2 * inter)
    return Coefficients(per_token, 4 * vocab, ARBITER_FIXED_BYTES, 0)


class MemoryTerms:
    """What one engine's memory arithmetic is made of: the base holds the engine-neutral
    choices, each engine's pack (`constraints/engines/<engine>/memory.py`) overrides what
    its engine does differently, and `memory_terms` finds the object by the profile's
    `memory_terms` name.

    - `name`: the profile's `memory_terms` ("arbiter" is TensorRT-LLM's, for history).
    - `budget_after_load`: the memory fraction applies to what is free once the weights
      and the workspace are in memory (KV budget = fraction x (memory - weights -
      workspace): TensorRT-LLM), not to the whole device (KV budget = memory x fraction -
      weights - workspace: vLLM, SGLang, MLC).
    - `workspace_counted`: the budget holds the activation workspace (SGLang's static
      fraction holds weights and KV only).
    - `layouts`: which parallel layouts place a MoE model's weights differently ("" none,
      "experts-over-dp": vLLM's data-parallel replicas share the experts,
      "attention-copies": SGLang's attention DP copies the attention weights).
    - `attention_dp_path`: the option of an attention-DP layout in which every rank holds
      all but the routed experts whole and the KV of every head (TensorRT-LLM's).
    - `replicas_path`, `replicas_rule`: the option counting data-parallel replicas that
      each run on tensor x pipeline GPUs of their own (SGLang's `dp_size`, vLLM's
      `data_parallel_size`), and the id of the pack's rule that checks they fit the GPUs:
      the memory fixes and a conflict's arithmetic count the GPUs by them.
    - `extra_facts`: facts outside the schema the terms' arithmetic reads (MLC's compiled
      temp buffer), kept in the memory rule's build-cache key.
    - `source`: where the engine's budget comes from (repo, path, release).

    The methods place and size what the engine holds: `expert_shards` and
    `attention_copies` (how the parallel layout spreads the routed experts and the
    attention weights), `padded`, `expert_partitions` and `layout_partitions` (the
    experts as the engine allocates them), `gathering` (the workspace at another count of
    gathered data-parallel replicas), `stage_layers`, `coefficients` and `kv_budget`."""

    name: ClassVar[str] = ""
    engine: ClassVar[str] = ""
    budget_after_load: ClassVar[bool] = False
    workspace_counted: ClassVar[bool] = True
    layouts: ClassVar[str] = ""
    layout_path: ClassVar[str | None] = None  # the option `layouts` reads
    attention_dp_path: ClassVar[str | None] = None
    replicas_path: ClassVar[str | None] = None
    replicas_rule: ClassVar[str | None] = None
    extra_facts: ClassVar[tuple[str, ...]] = ()
    source: ClassVar[str] = ""

    def layout_options(self) -> tuple[str, ...]:
        """The options the terms place weights by (`layout_path`, `attention_dp_path`)."""
        return tuple(p for p in (self.layout_path, self.attention_dp_path) if p)

    def coefficients(self, facts: Mapping[str, Any]) -> Coefficients:
        """The activation workspace: `act_per_token * max_num_tokens + act_per_sequence *
        max_batch_size + act_fixed` bytes per rank."""
        return estimate_coefficients(facts)

    def stage_layers(self, layers: int, pp: int) -> tuple[int, ...]:
        """Layers each of `pp` pipeline stages holds: the extra layers of an uneven split
        on the first stages (TensorRT-LLM's Mapping.pp_layers, torch.tensor_split)."""
        pp = max(1, pp)
        base, extra = divmod(layers, pp)
        return tuple(base + (1 if i < extra else 0) for i in range(pp))

    def attention_dp(self, values: Mapping[str, Any]) -> bool:
        """Whether `values` run the attention-DP layout of `attention_dp_path`."""
        return bool(self.attention_dp_path and values.get(self.attention_dp_path))

    def expert_shards(self, values: Mapping[str, Any]) -> int:
        """How many times more ranks than tensor_parallel_size share the routed experts:
        1 by default. SGLang's `--ep-size` and TensorRT-LLM's MoE grid partition the
        tensor-parallel ranks (ep x moe_tp == tp) and SGLang's `--dp-size` replicas are
        models of their own: 1 / tp of the experts per GPU (vLLM's replicas share them:
        its terms override this)."""
        return 1

    def attention_copies(self, values: Mapping[str, Any]) -> int:
        """How many copies of the attention weights the tensor-parallel ranks hold: 1 by
        default (SGLang's attention data parallelism holds more: its terms override this)."""
        return 1

    def gathering(self, values: Mapping[str, Any], replicas: int) -> dict[str, Any]:
        """`values` with each rank's MoE layers taking in the tokens of `replicas`
        data-parallel replicas, where the memory rule counts the workspace at another
        count than the layout's own (vLLM's all-gather dispatch); unchanged by default."""
        return dict(values)

    def padded(
        self, parts: WeightParts, facts: Mapping[str, Any], partitions: Iterable[int]
    ) -> WeightParts:
        """`parts` as the engine allocates them (kernel padding), for the tensor-parallel
        shares of an expert's intermediate size in `partitions`; as stored by default."""
        return parts

    def expert_partitions(self, values: Mapping[str, Any], tp: int) -> tuple[int, ...]:
        """The tensor-parallel shares of an expert's intermediate size in `values`."""
        return (tp,)

    def layout_partitions(self, facts: Mapping[str, Any]) -> tuple[int, ...]:
        """The shares of an expert's intermediate size any layout of the engine can have
        on the machine of `facts` (the memory rule pads the experts at the most padded
        of them, `padded`); one share by default, where nothing is padded."""
        return (1,)

    def held_tokens(self, values: Mapping[str, Any]) -> tuple[int, str] | None:
        """The KV tokens one sequence holds in the engine's KV manager, with the reason,
        where the engine holds more than max_seq_len (None: max_seq_len itself)."""
        return None

    def kv_budget(self, memory: float, fraction: float, weights: float, act: float) -> float:
        """Bytes the KV cache may take on a rank of `memory` bytes holding `weights` and a
        workspace of `act` bytes, at the memory `fraction`."""
        if self.budget_after_load:
            return fraction * (memory - weights - act)
        return memory * fraction - weights - act

    def __repr__(self) -> str:
        return f"MemoryTerms({self.name!r})"


class EstimateTerms(MemoryTerms):
    """The engine-neutral terms, no engine's: the workspace estimate against the whole
    device x the fraction (what the "arbiter" terms were before TensorRT-LLM's budget
    after loading was modelled); for rule sets checked outside any engine's profile."""

    name = "estimate"


_LOADED: dict[str, MemoryTerms] = {"estimate": EstimateTerms()}


def terms_names() -> tuple[str, ...]:
    """Every memory terms name: "estimate" and those the registered profiles name."""
    return tuple(sorted({"estimate", *(p.memory_terms for p in PROFILES.values())}))


# the memory terms names of the shipped profiles (`terms_names()` reads the registry as
# it is when called, so a profile registered later is counted there)
TERMS = terms_names()


def _discovered(name: str) -> MemoryTerms | None:
    """The terms `name` from the packs: the `TERMS` object of the memory module
    (`constraints/engines/<engine>/memory.py`) of an engine whose profiles name it, the
    engines in `ENGINES` order; only those engines' modules are imported. An engine
    without a memory module keeps the terms its profiles name from another pack."""
    engines = {p.engine for p in PROFILES.values() if p.memory_terms == name}
    for engine in (e for e in profiles.ENGINES if e in engines):
        module = f"constraints.engines.{engine}.memory"
        if find_spec(module) is None:
            continue
        found = getattr(import_module(module), "TERMS", None)
        if isinstance(found, MemoryTerms) and found.name == name:
            return found
    return None


def memory_terms(terms: str | MemoryTerms) -> MemoryTerms:
    """The `MemoryTerms` object of a profile's `memory_terms` name (an object is returned
    as it is), found in the packs (`_discovered`) when first asked for; ValueError naming
    the known names for any other."""
    if isinstance(terms, MemoryTerms):
        return terms
    found = _LOADED.get(terms) if isinstance(terms, str) else None
    if found is None:
        found = _discovered(terms) if isinstance(terms, str) else None
        if found is None:
            raise ValueError(f"unknown memory terms {terms!r}; use one of {terms_names()}")
        _LOADED[terms] = found
    return found


def layout_option_paths() -> frozenset[str]:
    """The options any terms a profile names place weights by (`MemoryTerms.layout_options`):
    what the memory rules may read besides the facts and the shared options. Loads the
    packs' terms, so call it when asked, not at import."""
    return frozenset(p for name in terms_names() for p in memory_terms(name).layout_options())


def terms_name(terms: str | MemoryTerms) -> str:
    """The name of `terms` (a name or a `MemoryTerms` object)."""
    return memory_terms(terms).name


def coefficients(facts: Mapping[str, Any], terms: str | MemoryTerms = "arbiter") -> Coefficients:
    """Activation workspace of the engine of `terms` (`MemoryTerms.coefficients`):
    `act_per_token * max_num_tokens + act_per_sequence * max_batch_size + act_fixed`."""
    return memory_terms(terms).coefficients(facts)


def weight_bytes(facts: Mapping[str, Any], quant_algo: str | None, compute_dtype: str) -> float:
    """Bytes of all weights (every rank together)."""
    stored = int(fact(facts, "model.weight_bytes"))
    if stored:
        return float(stored)
    return param_count(facts) * weight_half_bytes(quant_algo, compute_dtype) / 2


@dataclass(frozen=True)
class WeightParts:
    """All ranks' weight bytes in the parts parallel layouts place differently: the
    routed experts, the attention projections, the input embedding and the output head
    (the first and the last pipeline stage hold them), and the rest (dense MLPs, shared
    experts, norms). `tied`: the head is the embedding (`head` 0), which the last
    pipeline stage then holds as well."""

    experts: float
    attention: float
    rest: float
    embedding: float = 0.0
    head: float = 0.0
    tied: bool = False

    @property
    def total(self) -> float:
        return self.experts + self.attention + self.rest + self.embedding + self.head

    def per_rank_times_tp(self, expert_shards: int, attention_copies: int) -> float:
        """tensor_parallel_size x the bytes one rank holds (before pipeline stages):
        the rest, the embedding and the head split over the tensor-parallel ranks, the
        attention over tp / `attention_copies` of them, the experts over tp x
        `expert_shards`."""
        ends = self.rest + self.embedding + self.head
        return ends + self.attention * attention_copies + self.experts / expert_shards

    def replicated(self) -> float:
        """Bytes every rank holds whole under TensorRT-LLM's attention data parallelism:
        all but the routed experts (`adp_rank_bytes`)."""
        return self.total - self.experts

    def stage(self, index: int, counts: tuple[int, ...], moe_layers: int) -> WeightParts:
        """The parts pipeline stage `index` holds when the stages hold `counts` layers:
        its share of the layers' attention and rest (counted evenly per layer), of the
        experts at most min(its layers, `moe_layers`) MoE layers' worth (never fewer
        than it holds, wherever the dense layers are), the embedding on the first stage
        and the head on the last (the embedding again when tied)."""
        layers = sum(counts)
        if len(counts) <= 1 or layers <= 0:
            return self
        n = counts[index]
        moe = max(1, moe_layers or layers)
        last = index == len(counts) - 1
        return WeightParts(
            experts=self.experts * min(n, moe) / moe,
            attention=self.attention * n / layers,
            rest=self.rest * n / layers,
            embedding=self.embedding if index == 0 else 0.0,
            head=(self.head or (self.embedding if self.tied else 0.0)) if last else 0.0,
        )


def weight_parts(
    facts: Mapping[str, Any], quant_algo: str | None, compute_dtype: str, *, halves: int = 0
) -> WeightParts:
    """`weight_bytes` split into experts, attention, embedding, head and the rest. A
    pre-quantized checkpoint's parts are as stored (`model.expert_weight_bytes`,
    `model.attention_weight_bytes`, `model.embedding_weight_bytes`); otherwise
    parameters x bytes per parameter (`halves` half-bytes when given, else those of
    `quant_algo`), the embedding and the head vocab_size x hidden_size each."""
    total = weight_bytes(facts, quant_algo, compute_dtype)
    tied = bool(fact(facts, "model.tie_word_embeddings"))
    if int(fact(facts, "model.weight_bytes")):
        experts = float(fact(facts, "model.expert_weight_bytes"))
        attention = float(fact(facts, "model.attention_weight_bytes"))
        embedding = float(fact(facts, "model.embedding_weight_bytes"))
    else:
        per = (halves or weight_half_bytes(quant_algo, compute_dtype)) / 2
        total = param_count(facts) * per
        experts = int(fact(facts, "model.expert_params")) * per
        attention = int(fact(facts, "model.attention_params")) * per
        vocab, h = int(fact(facts, "model.vocab_size")), int(fact(facts, "model.hidden_size"))
        embedding = vocab * h * per
    experts, attention = min(experts, total), min(attention, max(0.0, total - experts))
    left = max(0.0, total - experts - attention)
    embedding = min(embedding, left / (1 if tied else 2))
    head = 0.0 if tied else embedding
    return WeightParts(experts, attention, left - embedding - head, embedding, head, tied)


# How an engine places layers on pipeline stages when the count does not divide evenly
# (no user partition given): vLLM gives the extra layers to the stages before the last
# (get_pp_indices, vllm/distributed/utils.py, v0.33.0); SGLang to the last ones
# (get_pp_indices, python/sglang/srt/distributed/utils.py, v0.5.23); TensorRT-LLM's
# PyTorch backend to the first ones (Mapping.pp_layers: torch.tensor_split,
# tensorrt_llm/mapping.py). The first stage holds the embedding and the last the norm
# and head (vLLM's PPMissingLayer in models/llama.py, also the embedding when tied;
# TensorRT-LLM's DecoderModel / DecoderModelForCausalLM __pp_init__ prologue and
# epilogue, the tied embedding kept on the last stage,
# tensorrt_llm/_torch/models/modeling_utils.py @cb4c622c). MLC (terms "mlc") is split as
# TensorRT-LLM's: an assumption.
def stage_layers(layers: int, pp: int, terms: str | MemoryTerms = "arbiter") -> tuple[int, ...]:
    """Layers each of `pp` pipeline stages holds, as the engine of `terms` splits them
    (`MemoryTerms.stage_layers`)."""
    return memory_terms(terms).stage_layers(layers, pp)


def heaviest_stage_times_tp(
    parts: WeightParts,
    facts: Mapping[str, Any],
    pp: int,
    terms: str | MemoryTerms = "arbiter",
    expert_shards: int = 1,
    attention_copies: int = 1,
) -> float:
    """tensor_parallel_size x the weight bytes of one rank of the heaviest pipeline
    stage (`WeightParts.stage`), with the parts placed by the parallel layout: the routed
    experts over `expert_shards` x tp ranks, the attention in `attention_copies` (a
    configuration's: `MemoryTerms.expert_shards`, `MemoryTerms.attention_copies`)."""
    counts = stage_layers(int(fact(facts, "model.num_layers")), pp, terms)
    moe = int(fact(facts, "model.moe_layers"))
    return max(
        parts.stage(i, counts, moe).per_rank_times_tp(expert_shards, attention_copies)
        for i in range(len(counts))
    )


def stages_adp(
    parts: WeightParts, facts: Mapping[str, Any], pp: int, terms: str | MemoryTerms = "arbiter"
) -> tuple[tuple[float, float], ...]:
    """(bytes each rank of a stage holds whole, bytes its tensor-parallel ranks split)
    under TensorRT-LLM's attention data parallelism (`attention_dp`), for the stages no
    other stage outweighs in both (which is heaviest depends on tp)."""
    counts = stage_layers(int(fact(facts, "model.num_layers")), pp, terms)
    moe = int(fact(facts, "model.moe_layers"))
    pairs = {
        (p.replicated(), p.experts)
        for p in (parts.stage(i, counts, moe) for i in range(len(counts)))
    }
    return tuple(
        sorted(a for a in pairs if not any(b != a and b[0] >= a[0] and b[1] >= a[1] for b in pairs))
    )


def attention_dp(values: Mapping[str, Any], terms: str | MemoryTerms = "arbiter") -> bool:
    """TensorRT-LLM's `enable_attention_dp` (its memory terms, "arbiter"): every
    tensor-parallel rank runs the attention, the dense MLPs and the shared experts of its
    own requests, each holding those weights whole (DeepseekV3DecoderLayer
    _compute_mlp_tp_size and Deepseekv3MoE _compute_shared_expert_tp_size give tp 1
    under attention DP, the embedding has no tensor-parallel mapping and the LM head
    none unless enable_lm_head_tp_in_adp: tensorrt_llm/_torch/models/
    modeling_deepseekv3.py @000561df, DecoderModelForCausalLM in modeling_utils.py
    @cb4c622c), while the routed experts
    split over the tp ranks (moe_tp x moe_ep = tp, tensorrt_llm/mapping.py); and each
    rank keeps the KV of all KV heads for its own sequences (`kv_rank_share`)."""
    return memory_terms(terms).attention_dp(values)


def rank_weight_bytes(
    values: Mapping[str, Any],
    quant_algo: str | None,
    compute_dtype: str,
    terms: str | MemoryTerms = "arbiter",
) -> float:
    """Bytes of weights one GPU of the heaviest pipeline stage holds: `weight_parts`
    as the engine allocates them (`MemoryTerms.padded`), placed by the parallel layout
    (`MemoryTerms.expert_shards`, `MemoryTerms.attention_copies`, TensorRT-LLM's
    `attention_dp`) and split into stages the engine's way (`stage_layers`)."""
    tp = int(fact(values, "parallel_config.tensor_parallel_size"))
    pp = int(fact(values, "parallel_config.pipeline_parallel_size"))
    parts = weight_parts(values, quant_algo, compute_dtype)
    engine = memory_terms(terms)
    parts = engine.padded(parts, values, engine.expert_partitions(values, tp))
    if attention_dp(values, terms):
        return max(whole + split / tp for whole, split in stages_adp(parts, values, pp, terms))
    times_tp = heaviest_stage_times_tp(
        parts, values, pp, engine, engine.expert_shards(values), engine.attention_copies(values)
    )
    return times_tp / tp


__all__ = [
    "ARBITER_FIXED_BYTES",
    "Coefficients",
    "DTYPE_BYTES",
    "EIGHT_BIT",
    "FOUR_BIT",
    "GIB",
    "KV_DTYPE_HALVES",
    "KV_HALF_BYTES",
    "KvShape",
    "MemoryTerms",
    "KvSplit",
    "MIB",
    "TERMS",
    "WeightParts",
    "attention_dp",
    "block_bytes",
    "coefficients",
    "compute_dtype",
    "estimate_coefficients",
    "fact",
    "heaviest_stage_times_tp",
    "kv_dtype",
    "kv_elements_per_token",
    "kv_heads_per_rank",
    "kv_pool_bytes_per_token",
    "kv_rank_share",
    "kv_ranks",
    "kv_shape",
    "kv_splits",
    "layout_option_paths",
    "memory_terms",
    "param_count",
    "rank_weight_bytes",
    "stage_layers",
    "stages_adp",
    "terms_name",
    "weight_bytes",
    "weight_half_bytes",
    "weight_parts",
]
