"""The front door: ``LLM(model_dir, **llm_args)`` arbitrates, then serves ``generate()``.

    llm = LLM("/models/tiny", kv_cache_config={"tokens_per_block": 16}, max_batch_size=8)
    llm.resolution.summary()          # what was kept, dropped (and why), changed
    outs = llm.generate([[1, 2, 3], "a string prompt"], SamplingParams(max_tokens=8))
    for delta in llm.generate_stream([[1, 2, 3]]): ...

Construction: ``llm_args`` (TensorRT-LLM names) become claims (``engine.args``), the
arbiter solves them, and the model, the KV pool, the kernels and the scheduler are built
from ``resolution.config`` alone plus the weights and the device. A bad argument raises
``engine.args.InvalidLlmArg`` (an ``arbiter.InvalidClaim``) or ``arbiter.InvalidClaim``
naming the argument; arguments that cannot hold together raise ``arbiter.ConflictError``
whose report names the colliding ``llm_args.*`` claims and the rules between them.

Prompts are lists of token ids, or strings when the model folder has ``tokenizer.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from arbiter import arbitrate
from engine.args import InvalidLlmArg, build_claims, device_facts, runtime_machine
from engine.front_door import InvalidPrompt, check_model_folder, check_prompt
from engine.kernels import select_backend
from engine.model import load_model
from engine.parallel.group import TensorParallelModel
from engine.pool import compute_dtype
from engine.runtime import Request, Runtime
from engine.sampling import InvalidSamplingParams, SamplingParams

Prompt = str | Sequence[int]


@dataclass(frozen=True)
class BeamOutput:
    token_ids: list[int]
    cumulative_logprob: float
    text: str | None = None


@dataclass
class RequestOutput:
    """A finished request: generated ``token_ids`` (the best beam under beam search)."""

    request_id: int
    prompt_token_ids: list[int]
    token_ids: list[int]
    finish_reason: str | None
    text: str | None = None
    beams: list[BeamOutput] = field(default_factory=list)


@dataclass(frozen=True)
class StreamDelta:
    """New tokens of prompt number ``index`` since its previous delta."""

    index: int
    request_id: int
    token_ids: list[int]
    text: str | None
    finished: bool
    finish_reason: str | None


def _eos_ids(model_dir: Path) -> tuple[int, ...]:
    """End-of-sequence ids from ``generation_config.json``, else ``config.json``."""
    for name in ("generation_config.json", "config.json"):
        path = model_dir / name
        if path.exists():
            value = json.loads(path.read_text()).get("eos_token_id")
            if value is not None:
                return tuple(value) if isinstance(value, list) else (int(value),)
    return ()


# the runtime picks its kernels from the plugin configuration (paged context FMHA) and
# honours StreamingLLM, as a TensorRT engine does: it arbitrates under that line's rules
RUNTIME_PROFILE = "trtllm-tensorrt"


class LLM:
    """A model served by the runtime that the arbitrated configuration describes."""

    def __init__(self, model: str | Path, **llm_args: Any) -> None:
        model_dir = Path(model)
        if not (model_dir / "config.json").is_file():
            raise InvalidLlmArg("model", str(model), "not a folder holding config.json")
        # one ModelFolderError naming a corrupt file; the config is read here, once
        args = check_model_folder(model_dir)
        requested = llm_args.get("device")
        eager = llm_args.get("enforce_eager", False)
        if not isinstance(eager, bool):
            raise InvalidLlmArg("enforce_eager", eager, "must be True or False")
        steps = llm_args.get("num_scheduler_steps", 1)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 256:
            raise InvalidLlmArg("num_scheduler_steps", steps, "must be an integer from 1 to 256")
        self.device = torch.device(requested or ("cuda" if torch.cuda.is_available() else "cpu"))
        # the model and device facts, read once here into the record arbiter check uses
        self.machine = runtime_machine(args, device_facts(self.device))
        self.claims = build_claims(llm_args, args, self.machine)
        self.resolution = arbitrate(self.claims, profile=RUNTIME_PROFILE)
        config = self.resolution.config
        backend = select_backend(
            use_paged_context_fmha=config.plugin_config.use_paged_context_fmha,
            context_fmha=config.plugin_config.context_fmha,
            device=self.device,
        )
        parallel = config.parallel_config
        if parallel.tensor_parallel_size > 1 or parallel.pipeline_parallel_size > 1:
            # Ranks in their own processes; pipeline stages are refused there.
            self.model = TensorParallelModel(model_dir, config, self.device)
        else:
            self.model = load_model(
                model_dir, compute_dtype(config), self.device, backend, args=args
            )
        self.runtime = Runtime(
            config,
            self.model,
            self.device,
            eos_token_ids=_eos_ids(model_dir),
            enforce_eager=eager,
            num_scheduler_steps=steps,
        )
        self.tokenizer = None
        if (model_dir / "tokenizer.json").is_file():
            from tokenizers import Tokenizer  # tokenizers is optional: only text prompts need it

            self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.vocab_size = self.model.args.vocab_size

    @property
    def config(self):
        return self.resolution.config

    def close(self) -> None:
        """Stop the tensor-parallel ranks, if any (also done at exit)."""
        if isinstance(self.model, TensorParallelModel):
            self.model.close()

    # -- prompts and text --------------------------------------------------------------

    def _encode(self, prompt: Prompt, index: int | None = None) -> list[int]:
        """Token ids of a prompt, checked against the vocabulary (InvalidPrompt if not)."""
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise InvalidLlmArg("prompts", prompt, "a string prompt needs tokenizer.json")
            return check_prompt(self.tokenizer.encode(prompt).ids, self.vocab_size, index)
        return check_prompt(prompt, self.vocab_size, index)

    def _decode(self, token_ids: list[int]) -> str | None:
        if self.tokenizer is None:
            return None
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)

    @staticmethod
    def _as_list(prompts: Prompt | Sequence[Prompt]) -> list[Prompt]:
        if isinstance(prompts, str):
            return [prompts]
        if (
            prompts is None
            or isinstance(prompts, (bytes, dict))
            or not hasattr(prompts, "__iter__")
        ):
            raise InvalidPrompt(
                f"prompts are a string, a list of token ids or a list of those, got "
                f"{type(prompts).__name__}",
                value=prompts,
            )
        items = list(prompts)
        if not items:
            raise InvalidPrompt("no prompts given")
        if items and all(isinstance(t, int) for t in items):
            return [items]  # one prompt of token ids
        return items

    def _submit(
        self,
        prompts: Prompt | Sequence[Prompt],
        params: SamplingParams | Sequence[SamplingParams] | None,
    ) -> list[Request]:
        items = self._as_list(prompts)
        if params is None or isinstance(params, SamplingParams):
            per = [params or SamplingParams()] * len(items)
        else:
            if isinstance(params, (str, bytes, dict)) or not hasattr(params, "__iter__"):
                raise InvalidSamplingParams(
                    "sampling_params", params, "a SamplingParams or a list of them"
                )
            per = list(params)
            if len(per) != len(items):
                raise InvalidLlmArg(
                    "sampling_params", len(per), f"need one per prompt ({len(items)})"
                )
            for p in per:
                if not isinstance(p, SamplingParams):
                    raise InvalidSamplingParams("sampling_params", p, "expected SamplingParams")
        # every prompt is checked before any is queued: a bad one changes nothing
        encoded = [self._encode(prompt, i) for i, prompt in enumerate(items)]
        requests: list[Request] = []
        try:
            for tokens, p in zip(encoded, per, strict=True):
                requests.append(self.runtime.add_request(tokens, p))
        except Exception:
            for req in requests:
                self.runtime.release(req.request_id)
            raise
        return requests

    # -- generation --------------------------------------------------------------------

    def generate(
        self,
        prompts: Prompt | Sequence[Prompt],
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
    ) -> list[RequestOutput]:
        """Run the prompts to completion; outputs come back in prompt order."""
        requests = self._submit(prompts, sampling_params)
        try:
            while not all(r.finished for r in requests):
                self.runtime.step()
        finally:
            outputs = [self._output(r) for r in requests]
            for req in requests:
                self.runtime.release(req.request_id)
        return outputs

    def generate_stream(
        self,
        prompts: Prompt | Sequence[Prompt],
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
    ) -> Iterator[StreamDelta]:
        """Yield each prompt's new tokens step by step (beam search: once, at the end).

        Closing the iterator early cancels the requests still running.
        """
        requests = self._submit(prompts, sampling_params)
        index = {r.request_id: i for i, r in enumerate(requests)}
        sent = {r.request_id: 0 for r in requests}
        texts = {r.request_id: "" for r in requests}
        try:
            while not all(r.finished for r in requests):
                for req in self.runtime.step():
                    if req.request_id not in index:
                        continue
                    if req.params.beam_width > 1 and not req.finished:
                        continue
                    new = req.token_ids[sent[req.request_id] :]
                    sent[req.request_id] = len(req.token_ids)
                    text = self._decode(req.token_ids)
                    delta = None
                    if text is not None:
                        delta = text[len(texts[req.request_id]) :]
                        texts[req.request_id] = text
                    yield StreamDelta(
                        index[req.request_id],
                        req.request_id,
                        new,
                        delta,
                        req.finished,
                        req.finish_reason,
                    )
        finally:
            for req in requests:
                self.runtime.release(req.request_id)

    def _output(self, req: Request) -> RequestOutput:
        beams = [
            BeamOutput(b.token_ids, b.cumulative_logprob, self._decode(b.token_ids))
            for b in req.beams
        ]
        return RequestOutput(
            request_id=req.request_id,
            prompt_token_ids=list(req.prompt),
            token_ids=list(req.token_ids),
            finish_reason=req.finish_reason,
            text=self._decode(req.token_ids),
            beams=beams,
        )
