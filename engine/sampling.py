"""Sampling parameters, token sampling and beam-search candidate selection.

- Greedy (``temperature == 0``) is an exact ``argmax`` of the logits (ties: lowest id).
- Otherwise logits are divided by the temperature, cut to the ``top_k`` largest and to the
  smallest set whose probability reaches ``top_p``, and one token is drawn with the
  request's own ``torch.Generator`` (seeded from ``seed``), so a seeded request gives the
  same tokens whatever else shares its batch.
- Beam search keeps ``beam_width`` hypotheses ranked by cumulative log-probability (no
  length penalty). Each step looks at the best ``2 * beam_width`` continuations over all
  live beams: a stop token closes a hypothesis when it ranks within the first
  ``beam_width``, the other continuations fill the next beams in rank order.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

# the errors live in engine.errors; importable from here as before
from .errors import InvalidSamplingParams as InvalidSamplingParams

MAX_TOKENS = 1 << 24  # tokens one request may generate
MIN_TEMPERATURE = 1e-5  # below it logits / temperature can overflow; 0 means greedy
MAX_TEMPERATURE = 1e5
MAX_BEAM_WIDTH = 1024


def _integer(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidSamplingParams(name, value, f"must be an integer, got {type(value).__name__}")


def _real(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidSamplingParams(name, value, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(float(value)):
        raise InvalidSamplingParams(name, value, "must be finite")


@dataclass(frozen=True)
class SamplingParams:
    """How one request generates. ``top_k=0`` and ``top_p=1.0`` switch those cuts off."""

    max_tokens: int = 16
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    beam_width: int = 1
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        # types first, with no silent rounding: max_tokens=2.5 or seed="x" is an error
        for name in ("max_tokens", "top_k", "beam_width"):
            _integer(name, getattr(self, name))
        for name in ("temperature", "top_p"):
            _real(name, getattr(self, name))
        if self.seed is not None:
            _integer("seed", self.seed)
            if not -(1 << 63) <= self.seed < (1 << 64):
                raise InvalidSamplingParams("seed", self.seed, "must fit in 64 bits")
        if not isinstance(self.ignore_eos, bool):
            raise InvalidSamplingParams("ignore_eos", self.ignore_eos, "must be a bool")
        stops = self.stop_token_ids
        if isinstance(stops, (str, bytes)) or not isinstance(stops, Iterable):
            raise InvalidSamplingParams("stop_token_ids", stops, "must be a list of token ids")
        stops = tuple(stops)
        for t in stops:
            _integer("stop_token_ids", t)
            if t < 0:
                raise InvalidSamplingParams("stop_token_ids", t, "token ids are >= 0")
        object.__setattr__(self, "stop_token_ids", stops)
        checks = (
            ("max_tokens", 1 <= self.max_tokens <= MAX_TOKENS, f"must be in [1, {MAX_TOKENS}]"),
            (
                "temperature",
                self.temperature == 0.0 or MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE,
                f"must be 0 (greedy) or in [{MIN_TEMPERATURE}, {MAX_TEMPERATURE}]",
            ),
            ("top_k", self.top_k >= 0, "must be >= 0 (0 = off)"),
            ("top_p", 0.0 < self.top_p <= 1.0, "must be in (0, 1]"),
            (
                "beam_width",
                1 <= self.beam_width <= MAX_BEAM_WIDTH,
                f"must be in [1, {MAX_BEAM_WIDTH}]",
            ),
        )
        for name, ok, reason in checks:
            if not ok:
                raise InvalidSamplingParams(name, getattr(self, name), reason)
        if self.beam_width > 1 and self.temperature != 0.0:
            raise InvalidSamplingParams(
                "temperature", self.temperature, "beam search ranks by log-probability; use 0"
            )

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def make_generator(self, device: torch.device | str) -> torch.Generator | None:
        """The request's own random stream (None for greedy and beam search)."""
        if self.greedy:
            return None
        gen = torch.Generator(device=torch.device(device))
        if self.seed is None:
            gen.seed()
        else:
            gen.manual_seed(self.seed)
        return gen


def filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """``logits [V]`` with everything outside the top-k / top-p set at ``-inf``."""
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Keep a token while the mass before it is below top_p (the first is always kept).
        before = torch.cumsum(probs, dim=-1) - probs
        drop = torch.zeros_like(logits, dtype=torch.bool)
        drop[order] = before >= top_p
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_token(
    logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None
) -> int:
    """One token id from ``logits [V]``."""
    if params.greedy:
        return int(torch.argmax(logits))
    scaled = filter_logits(logits.float() / params.temperature, params.top_k, params.top_p)
    probs = torch.softmax(scaled, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


@dataclass(frozen=True)
class BeamCandidate:
    """A continuation: beam ``parent`` (an index into the live beams) extended by ``token``."""

    parent: int
    token: int
    score: float  # cumulative log-probability after the token


@dataclass
class BeamStep:
    """What one beam-search step decided for a group."""

    next_beams: list[BeamCandidate]
    finished: list[BeamCandidate]


def beam_step(
    logits: torch.Tensor,
    scores: Sequence[float],
    beam_width: int,
    stop_ids: frozenset[int] | set[int],
) -> BeamStep:
    """Rank the continuations of the live beams (``logits [num_beams, V]``, their
    cumulative ``scores``) and pick the next beams and the hypotheses that stop here."""
    logprobs = torch.log_softmax(logits.double(), dim=-1)
    total = logprobs + torch.tensor(list(scores), dtype=torch.float64)[:, None]
    flat = total.reshape(-1)
    k = min(2 * beam_width, flat.shape[0])
    values, index = torch.topk(flat, k)
    vocab = logits.shape[-1]
    step = BeamStep([], [])
    for rank, (value, idx) in enumerate(zip(values.tolist(), index.tolist(), strict=True)):
        cand = BeamCandidate(idx // vocab, idx % vocab, value)
        if cand.token in stop_ids:
            if rank < beam_width:
                step.finished.append(cand)
        elif len(step.next_beams) < beam_width:
            step.next_beams.append(cand)
    return step
