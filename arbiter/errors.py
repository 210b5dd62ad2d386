"""Errors are data: every failure of arbitration is a typed exception with attributes.

Every public error of `arbiter` lives here. Each class carries what the command line and
the service answer for it: `exit_code` (0 found, 1 conflict, 2 bad input, 3 internal),
`http_status` and a stable `code` (the service's `error` field). The one mapping from an
error to (exit code, HTTP status, payload) is `arbiter.application.outcome`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar


class ArbiterError(Exception):
    """Base of every error `arbiter` raises; by default bad input (exit 2, HTTP 422)."""

    exit_code: ClassVar[int] = 2
    http_status: ClassVar[int] = 422
    code: ClassVar[str] = "invalid_request"


class InternalError(ArbiterError):
    """A fault of arbiter itself, not of the input (the CLI exits 3, the service says 500)."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"


class SolverModelInvalid(InternalError):
    """CP-SAT refused the compiled model (e.g. a sum that could overflow int64); `detail`
    is CP-SAT's own validation message."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail

    def __str__(self) -> str:
        first = self.detail.strip().splitlines()[0] if self.detail.strip() else "no detail"
        return f"internal error: CP-SAT rejected the compiled model: {first}"


def exit_code(exc: ArbiterError) -> int:
    """The CLI's exit code for an error (3 internal, 2 bad input, 1 conflict)."""
    return exc.exit_code


class InvalidClaim(ArbiterError):
    """A malformed claim, found before any solving.

    Attributes name the claim, the option path and value at fault, the allowed domain,
    close matches for an unknown path and, for an input over a limit, the limit
    (`MAX_SET_VALUES = 1024`, see `constraints.limits`).
    """

    code: ClassVar[str] = "invalid_claim"
    # the claim's place in its list, when read from one; every bad claim of a list read at
    # once, this one first (empty: only this one). Class defaults, so that a subclass
    # setting its own `problems` before this __init__ runs keeps them.
    index: int | None = None
    problems: tuple[Any, ...] = ()

    def __init__(
        self,
        reason: str,
        *,
        claim: str | None = None,
        path: str | None = None,
        value: Any = None,
        allowed: str | None = None,
        suggestions: Sequence[str] = (),
        limit: str | None = None,
    ):
        super().__init__(reason)
        self.reason = reason
        self.limit = limit

        self.file: str | None = None  # set when the claim was read from a file
        self.line: int | None = None  # 1-based line of the culprit in that file
        self.claim = claim
        self.path = path
        self.value = value
        self.allowed = allowed
        self.suggestions = tuple(suggestions)

    def __str__(self) -> str:
        where = f"claim {self.claim!r}" if self.claim is not None else "claims"
        if self.path is not None:
            where += f", option {self.path!r}"
        text = f"invalid {where}: {self.reason}"
        if self.file is not None:
            text = f"{self.file}:{self.line}: {text}" if self.line else f"{self.file}: {text}"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        if self.limit and self.limit not in text:
            text += f" (limit {self.limit})"
        return text


@dataclass(frozen=True)
class Conflict:
    """A minimal unsatisfiable set of claims (every proper subset can hold) and the rules
    that connect them. `setups` lists the setup claims in the background (never blamed)."""

    claims: tuple[str, ...]
    rules: tuple[str, ...] = ()
    setups: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        names = " and ".join(f"`{c}`" for c in self.claims) or "the setup facts"
        n = len(self.claims)
        verb = "cannot hold" if n <= 1 else "cannot both hold" if n == 2 else "cannot all hold"
        text = f"{names} {verb}"
        if self.rules:
            text += " (rules: " + ", ".join(self.rules) + ")"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": list(self.claims),
            "rules": list(self.rules),
            "setups": list(self.setups),
            "facts": dict(self.facts),
        }


class ConflictError(ArbiterError):
    """The hard part (setup facts, functional claims, rules) cannot hold together.

    `.conflicts` lists minimal conflicts; `.corrections` (when computed) lists minimal sets
    of claims whose removal makes the rest feasible; `.explanation` is the full report.
    Raised by `arbitrate()` with an `explain` callable instead: the three are then worked
    out on first access, within `limits` (the conflict search's budget; set it before
    reading them), and `explain(limits)` gives the explanation for any other budget.
    """

    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 409
    code: ClassVar[str] = "conflict"

    def __init__(
        self,
        conflicts: Sequence[Conflict] = (),
        *,
        corrections: Sequence[tuple[str, ...]] = (),
        explanation: Any = None,
        explain: Callable[[Any], Any] | None = None,
        limits: Any = None,
    ):
        super().__init__()
        self._explain = explain
        self.limits = limits
        self._found: tuple[Any, ...] | None = None
        if explain is None:
            self._found = (tuple(conflicts), tuple(corrections), explanation)

    def explain(self, limits: Any = None) -> Any:
        """The explanation within `limits` (None: this error's own `limits`)."""
        if limits is None or self._explain is None:
            return self.explanation
        return self._explain(limits)

    def _resolve(self) -> tuple[Any, ...]:
        if self._found is None:
            assert self._explain is not None
            explanation = self._explain(self.limits)
            self._found = (
                tuple(c.conflict for c in explanation.conflicts),
                tuple(fix.drop for fix in explanation.corrections),
                explanation,
            )
        return self._found

    @property
    def conflicts(self) -> tuple[Conflict, ...]:
        return self._resolve()[0]

    @property
    def corrections(self) -> tuple[tuple[str, ...], ...]:
        return self._resolve()[1]

    @property
    def explanation(self) -> Any:
        return self._resolve()[2]

    def __str__(self) -> str:
        lines = ["the functional claims cannot all hold"]
        for i, conflict in enumerate(self.conflicts, 1):
            lines.append(f"  conflict {i}: {conflict}")
        for fix in self.corrections:
            lines.append("  fix: drop " + " and ".join(f"`{c}`" for c in fix))
        return "\n".join(lines)

    def report(self, format: str = "text") -> str:
        """The conflict report in `text`, `markdown`, `json` or `html`."""
        if self.explanation is None:
            return str(self)
        return self.explanation.render(format)


class SolveTimeout(ArbiterError):
    """No configuration was found within the time limit (exit 2, HTTP 408)."""

    http_status: ClassVar[int] = 408
    code: ClassVar[str] = "time_limit"

    def __init__(self, time_limit_s: float):
        super().__init__(time_limit_s)
        self.time_limit_s = time_limit_s

    def __str__(self) -> str:
        return f"no configuration found within the time limit of {self.time_limit_s} s"


class MemoryConflictError(ConflictError):
    """A conflict through the memory model; `memory` is the arithmetic that fails, in GiB,
    for the conflicting claims on top of the defaults, and `fixes` the changes that make it
    fit, each checked with the same arithmetic (more GPUs, FP8 KV, a shorter max_seq_len).
    Both are worked out from the conflicts on first access (`memory` is None when a claim
    leaves a value the arithmetic needs unset)."""

    def __init__(
        self,
        *,
        explain: Callable[[Any], Any],
        limits: Any,
        numbers: Callable[[ConflictError], tuple[str, tuple[str, ...]] | None],
    ):
        super().__init__(explain=explain, limits=limits)
        self._numbers = numbers
        self._arithmetic: list[tuple[str, tuple[str, ...]] | None] = []

    def _memory(self) -> tuple[str, tuple[str, ...]] | None:
        if not self._arithmetic:
            self._arithmetic.append(self._numbers(self))
        return self._arithmetic[0]

    @property
    def memory(self) -> str | None:
        found = self._memory()
        return None if found is None else found[0]

    @property
    def fixes(self) -> tuple[str, ...]:
        found = self._memory()
        return () if found is None else found[1]

    def _lines(self, indent: str) -> str:
        text = f"{indent}memory: {self.memory}"
        for fix in self.fixes:
            text += f"\n{indent}  fits with: {fix}"
        return text

    def __str__(self) -> str:
        text = super().__str__()
        return text if self.memory is None else text + "\n" + self._lines("  ")

    def report(self, format: str = "text") -> str:
        text = super().report(format)
        if format == "json" or self.memory is None:
            return text
        return text + "\n" + self._lines("")


class ConfigArbitrateError(ConflictError):
    """The functional claims given to a ConfigArbitrator cannot all hold."""


class SweepError(ArbiterError):
    """A malformed grid; names the key at fault."""

    def __init__(self, key: str, reason: str):
        super().__init__(key, reason)
        self.key, self.reason = key, reason

    def __str__(self) -> str:
        return f"grid {self.key}: {self.reason}"


class DialectError(InvalidClaim):
    """Foreign input that cannot become claims; names the key and the file."""

    code: ClassVar[str] = "invalid_config"  # a key of the engine's config, not a claim

    def __init__(
        self,
        reason: str,
        *,
        key: str | None = None,
        file: str | None = None,
        value: Any = None,
        suggestions: Sequence[str] = (),
    ):
        super().__init__(reason, value=value, suggestions=suggestions)
        self.key = key
        self.file = file

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.key is not None:
            where += f", key {self.key!r}"
        text = f"{where}: {self.reason}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


class SourceError(ArbiterError):
    """A file `arbiter check` cannot check as given (empty, a claims file, a model's
    config.json, a dialect the content cannot tell); the message names the fix.
    `detection` is what the content looked like (`arbiter.sources.Detection`)."""

    code: ClassVar[str] = "invalid_source"

    def __init__(self, reason: str, *, file: str, detection: Any = None):
        super().__init__(reason)
        self.reason = reason
        self.file = file
        self.detection = detection

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


class ManifestError(DialectError):
    """A Kubernetes manifest that cannot be read (not YAML, past the input limits, a GPU
    count that is no whole number); names the file and the key."""


class EngineRefusal(ArbiterError):
    """The engine refuses a configuration for a reason no conflict of claims states (a
    default it derives once and keeps, a validator of its own, too few GPUs for the
    layout): `reasons` in the engine's words, `rules` the rule ids behind them."""

    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 409
    code: ClassVar[str] = "refused"

    def __init__(self, reasons: Sequence[str], rules: Sequence[str] = ()):
        super().__init__(*reasons)
        self.reasons, self.rules = tuple(reasons), tuple(rules)

    def __str__(self) -> str:
        return "the engine refuses the configuration: " + "; ".join(self.reasons)
