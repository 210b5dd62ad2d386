"""Request and response models of the HTTP service (they are also its OpenAPI schema)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, WithJsonSchema, field_validator

from constraints.schema import EngineConfig

from ..dialects import DIALECTS
from ..report import ReportFormat
from ..report.schema import VerdictReport

# Numbers of a claim are checked by the in-process validator (`arbiter.claims`), not
# coerced here: `weight: true` or `weight: 2.5` is an invalid_claim, as in `arbitrate()`.
StrictIntField = Annotated[Any, WithJsonSchema({"type": "integer"})]


class AlternativeIn(BaseModel):
    requires: dict[str, Any]
    weight: StrictIntField


class ClaimIn(BaseModel):
    """A claim in the JSON form `arbiter solve` reads. Exact validation (paths, domains,
    weights) happens on arrival and fails with an `invalid_claim` error naming the culprit."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["func", "perf", "setup"]
    name: str
    requires: dict[str, Any] | None = Field(
        None, description="{path: value or predicate}, or an expression"
    )
    fixes: dict[str, Any] | None = Field(None, description="setup claims: {path: value}")
    weight: StrictIntField = None
    priority: StrictIntField = None
    alternatives: list[AlternativeIn] | None = None
    source: str | None = None


class ArbitrateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time_limit_s: float | None = Field(
        None, gt=0, description="Solver time; capped by the service limit."
    )
    rules: list[str] | None = Field(
        None, description="Rule ids to use; omit for every shipped rule."
    )
    defaults: dict[str, Any] | None = Field(
        None, description="Option defaults that 'fewest changes' counts from."
    )
    profile: str | None = Field(
        None, description="Engine release line (GET /v1/rules?profile=); default trtllm-1.2."
    )
    reasons: StrictBool = Field(
        True,
        description="Work out why each dropped claim was dropped (the default); false "
        "answers sooner, each reason not_computed and reasons_cut_by 'request'.",
    )


class ArbitrateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claims: list[ClaimIn]
    options: ArbitrateOptions = Field(default_factory=ArbitrateOptions)


class KeptOut(BaseModel):
    name: str
    weight: int
    priority: int
    alternative: int | None


class ReasonOut(BaseModel):
    kind: str = Field(
        description="conflict, outranked, outweighed, unproven, or not_computed (explanation budget spent)"
    )
    claim: str
    claims: list[str]
    rules: list[str]
    winners: list[str]
    message: str


class DroppedOut(BaseModel):
    name: str
    weight: int
    priority: int
    reason: ReasonOut


class ChangeOut(BaseModel):
    path: str
    old: Any
    new: Any


class ResolutionOut(BaseModel):
    status: Literal["optimal", "feasible"]
    time_limited: bool = Field(
        description="True when the time limit cut the search (best found so far)."
    )
    reasons_cut: bool = Field(
        False,
        description="True when a budget left some dropped claims' reasons not_computed.",
    )
    reasons_cut_by: Literal["checks", "deadline", "request"] | None = Field(
        None,
        description="checks: the count of feasibility checks (the same request always gets "
        "the same reasons); deadline: the safety net before the request's deadline; "
        "request: the request asked for no reasons (options.reasons false).",
    )
    config: EngineConfig
    kept: list[KeptOut]
    dropped: list[DroppedOut]
    changes: list[ChangeOut]
    stats: dict[str, Any]


class ConflictOut(BaseModel):
    claims: list[str]
    rules: list[str]
    setups: list[str]
    facts: dict[str, Any]


class ConflictResponse(BaseModel):
    error: Literal["conflict"] = "conflict"
    message: str
    conflicts: list[ConflictOut]
    corrections: list[list[str]] = []
    report: dict[str, Any] | None = Field(None, description="The full explanation, when available.")


class ErrorEntryOut(BaseModel):
    """One problem of a refused request (`arbiter.error_entries`)."""

    model_config = ConfigDict(extra="allow")

    path: str | None = Field(description="Where in the request body: claims[0].requires.x")
    value: Any = None
    reason: str
    suggestions: list[str] = []
    limit: str | None = Field(None, description="The limit that refused it, NAME = value.")


class ErrorResponse(BaseModel):
    error: str = Field(
        description="A stable code: malformed_json, invalid_value, invalid_request, "
        "invalid_claim, too_many_claims, body_too_large, time_limit, not_found, "
        "method_not_allowed, queue_full, queue_timeout, worker_lost, not_ready, no_workers, "
        "client_closed, internal. "
        "The same code is in the x-arbiter-error header."
    )
    message: str
    where: str | None = Field(None, description="invalid_value: where in the body")
    limit: str | None = Field(None, description="The limit that refused the input, by name.")
    retry_after: int | None = Field(None, description="503: seconds to wait (also Retry-After).")
    claim: str | None = None
    path: str | None = None
    value: Any = None
    allowed: str | None = None
    suggestions: list[str] = []
    details: list[dict[str, Any]] = []
    errors: list[ErrorEntryOut] = Field(
        [], description="Every problem, one entry each (every 4xx but a conflict)."
    )


class OptionOut(BaseModel):
    path: str
    domain: dict[str, Any]
    default: Any
    fact: bool
    description: str


class LimitOut(BaseModel):
    name: str = Field(description="The limit as errors name it (`limit`: NAME = value).")
    value: float
    unit: str
    bounds: str = Field(description="What the limit bounds.")
    http_status: int = Field(description="The status of a request over it.")


class RuleOut(BaseModel):
    id: str
    text: str
    kind: str
    topic: str
    source: dict[str, str]
    scope: dict[str, Any]
    expr: Any


class ExplainOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: ReportFormat = "json"
    max_conflicts: int = Field(8, ge=1, le=100)
    max_corrections: int = Field(8, ge=1, le=100)
    time_budget_s: float | None = Field(
        None, gt=0, description="Conflict search budget; capped by the service limit."
    )
    rules: list[str] | None = None
    defaults: dict[str, Any] | None = None
    profile: str | None = None


class ExplainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claims: list[ClaimIn]
    options: ExplainOptions = Field(default_factory=ExplainOptions)


class ExplainOut(BaseModel):
    feasible: bool = Field(description="False when the functional claims conflict.")
    explanation: dict[str, Any] = Field(
        description="The versioned explanation (schema arbiter.explanation)."
    )
    rendered: str | None = Field(
        None, description="The report in the requested format, unless json."
    )


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dialect: Annotated[str, WithJsonSchema({"type": "string", "enum": list(DIALECTS)})] = Field(
        description="The engine: one of `arbiter.dialects.DIALECTS`."
    )

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, value: str) -> str:
        if value not in DIALECTS:
            raise ValueError(f"unknown dialect; use {DIALECTS.names()}")
        return value

    config: dict[str, Any] = Field(
        description="LlmArgs / extra_llm_api_options mapping, an MLC EngineConfig, vllm"
        " serve's --config mapping, or SGLang ServerArgs fields (its --config YAML as a mapping)."
    )
    model: str | dict[str, Any] | None = Field(
        None,
        description="The model: its Hugging Face config.json, or a catalog name / Hugging Face"
        " id (as `arbiter check --model`); default: the config's own model key.",
    )
    device: str | None = Field(
        None,
        description="A catalog device such as H100-80GB, 2xH100, L4 or cpu (default"
        " H100-80GB, said as an assumption).",
    )
    gpus: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="GPUs of the device (default: what the config's layout needs, tp x pp x"
        " dp, said as an assumption), as `arbiter check --gpus`.",
    )
    profile: str | None = Field(
        None, description="The engine release line (default: the dialect's), as --profile."
    )
    serve_args: str | None = Field(
        None,
        max_length=20_000,
        description="The engine's command line beside the config, as `arbiter check"
        " --serve-args` (vLLM and SGLang: it wins key by key).",
    )
    time_limit_s: float | None = Field(None, gt=0)


# the answer of POST /v1/check: the `arbiter.verdict` report `arbiter check --format json`
# prints (docs/schema/verdict.schema.json)
CheckOut = VerdictReport


COMPARE_EXAMPLE: dict[str, Any] = {
    "intent": {
        "model": "llama-3.1-8b",
        "hard": {"prefix_caching": True, "context_length": 8192, "batch": 64},
        "soft": {"fp8_kv": True, "speculative": {"kind": "ngram", "draft_tokens": 4}},
    },
    "engines": ["trtllm", "mlc"],
    "device": "H100-80GB",
    "gpus": 1,
}


class CompareRequest(BaseModel):
    """One engine-neutral intent to check against several engines (`arbiter compare`)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [COMPARE_EXAMPLE]})

    intent: dict[str, Any] = Field(
        description="hard: {feature: value} (must hold), soft: {feature: value} (wishes); "
        "optionally model (a bundled model name), device, gpus. Features: prefix_caching, "
        "chunked_prefill, speculative {kind: ngram|eagle3|mtp|draft_model, draft_tokens, "
        "draft_model}, fp8_kv, lora {max_rank, adapters}, context_length, batch, token_budget, "
        "tensor_parallel, pipeline_parallel, expert_parallel, attention_dp, cuda_graphs, "
        "kv_page_size, kv_memory_share."
    )
    engines: list[str] | None = Field(
        None, description=f"Any of {DIALECTS.names()}; omit for all {len(DIALECTS)}."
    )
    model: dict[str, Any] | str | None = Field(
        None, description="The model's Hugging Face config.json, or a bundled model name."
    )
    device: str | None = Field(None, description="A catalog device such as H100-80GB or L4.")
    gpus: int | None = Field(None, description="GPUs available (default 1).")
    format: ReportFormat | None = Field(
        None, description="Also render the report in this format (field `rendered`)."
    )
    time_limit_s: float | None = Field(None, gt=0)


class EngineResultOut(BaseModel):
    engine: str = Field(description=f"{DIALECTS.names()}.")
    label: str = Field(description="The engine and release line checked.")
    status: Literal["holds", "holds with changes", "conflicts", "unavailable", "error"]
    config: dict[str, Any] = Field(description="The native config in the engine's own shape.")
    options: dict[str, list[str]] = Field(description="Feature -> the native keys it set.")
    missing: dict[str, str] = Field(description="Hard features the engine has no option for.")
    dropped: dict[str, str] = Field(description="Soft wishes that gave way, with the reason.")
    conflicts: list[str] = Field(description="The engine checker's minimal conflict(s).")
    rules: list[str] = Field(description="Rule ids of the conflicts.")
    changes: list[str] = Field(description="What the engine would change.")
    warnings: list[str]
    kv_tokens: int | None = Field(description="KV capacity (tokens, one rank) when it holds.")
    kv_blocks: int | None
    tokens_per_block: int | None
    reason: str | None = Field(description="Why the engine was not checked (unavailable, error).")
    checks: int = Field(description="Checker runs spent on this engine.")


class CompareOut(BaseModel):
    intent: dict[str, Any] = Field(description="The intent as read.")
    all_hold: bool = Field(description="True when every engine holds (with or without changes).")
    results: list[EngineResultOut]
    rendered: str | None = Field(
        None, description="The report in the requested format, unless json."
    )
