"""Work the HTTP service runs in its worker processes, with errors turned into payloads.

Each job takes plain JSON-ready data and returns `(HTTP status, JSON text)`: the text is
encoded in the worker with `constraints.edge.safe_dumps`, so a payload that echoes an odd
value can never fail to serialise, and the event loop never runs the solver itself.

Budgets: the solver gets the request's time limit and a conflict explanation half of it.
Dropped claims' reasons are worked out in order under a budget of feasibility checks
(`reason_checks`), a deterministic count rather than wall time, so the same request gets
the same reasons however loaded the machine is. A safety net stops them at
`reasons_until` (a `time.monotonic()` instant, well before the request's deadline would
stop the whole job), so an overloaded machine returns the answer with fewer reasons
rather than none. The answer says `reasons_cut: true` when some reasons are
`not_computed`, and `reasons_cut_by` says which budget did it ("checks" or "deadline"),
or "request" when the request asked for no reasons (`options.reasons: false`).

Timing: `run` takes an optional `Stopwatch` that records each phase's wall milliseconds
(`solve`, `report`: the resolution's JSON with its reasons, `encode`: the JSON text); the
service returns them in the `Server-Timing` header.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from constraints.edge import safe_dumps
from constraints.facts.errors import SpecError

from ..application.check_report import check_target, for_request, request_target
from ..application.compare import compare_job
from ..application.outcome import outcome
from ..application.solve import conflict_budget, explain, solve
from ..error_entries import from_payload
from ..errors import ArbiterError
from ..explain import Limits
from ..report.schema import from_error
from .settings import REASON_CHECKS


class Stopwatch:
    """Wall milliseconds of a job's phases, in the order they ran."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        """Charge the time since the previous lap (or the start) to `phase`."""
        now = time.perf_counter()
        self.laps[phase] = self.laps.get(phase, 0.0) + (now - self._last) * 1000
        self._last = now


def warm_up() -> bool:
    """Import the solver and the explainer and run each once, so the first real request
    a worker gets pays nothing extra."""
    run("solve", [], {"time_limit_s": 10.0})
    run("explain", [], {"time_budget_s": 1.0})
    return True


def error_payload(
    exc: BaseException, claims: list[dict[str, Any]] | None = None
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for an error (`arbiter.application.outcome`); a 4xx also lists
    every problem as `errors` (`arbiter.error_entries`), a claim's path located in the
    request's `claims` when they are given."""
    answer = outcome(exc)
    body = dict(answer.payload)
    if "errors" in body:
        body["errors"] = [_in_claims(e, claims) for e in body["errors"]]
    return answer.http_status, body


def _in_claims(entry: dict[str, Any], claims: list[dict[str, Any]] | None) -> dict[str, Any]:
    """`claims[2].build_config.x` -> `claims[2].requires.build_config.x` (or `.fixes.`)
    when the claim at that place names the option there."""
    path, option = entry.get("path") or "", None
    if claims is None or not path.startswith("claims[") or "]." not in path:
        return entry
    head, option = path.split("].", 1)
    try:
        claim = claims[int(head.removeprefix("claims["))]
    except (ValueError, IndexError):
        return entry
    for field in ("requires", "fixes"):
        section = claim.get(field) if isinstance(claim, dict) else None
        if isinstance(section, dict) and option in section:
            return {**entry, "path": f"{head}].{field}.{option}"}
    return entry


def resolution_json(
    resolution: Any,
    reason_checks: int | None,
    until: float | None = None,
    *,
    reasons: bool = True,
) -> dict[str, Any]:
    """The resolution's JSON with dropped claims' reasons worked out in order until
    `reason_checks` feasibility checks are spent (None: all of them) or, as a safety net,
    `time.monotonic()` passes `until`. With `reasons=False` (the request said so) none is
    worked out: each is `not_computed`, and `reasons_cut_by` says "request"."""
    context = getattr(resolution, "_context", None)
    cut_by = None
    if not reasons:
        body = resolution.to_json(reason_budget_s=0.0)
        cut_by = "request" if body["dropped"] else None
    elif (reason_checks is not None or until is not None) and context is not None:

        def used() -> int:
            oracle = getattr(context, "_oracle", None)
            return 0 if oracle is None else oracle.calls

        start = used()
        for dropped in resolution.dropped:
            if "reason" in dropped._memo:
                continue
            if reason_checks is not None and used() - start >= reason_checks:
                cut_by = cut_by or "checks"
            elif until is not None and time.monotonic() > until:
                cut_by = cut_by or "deadline"
            else:
                dropped.reason  # noqa: B018 - works the reason out and memoises it
        body = resolution.to_json(reason_budget_s=0.0)  # the memoised reasons, no more
    else:
        body = resolution.to_json()
    body["reasons_cut"] = cut_by is not None
    body["reasons_cut_by"] = cut_by
    return body


def run(name: str, *args: Any, watch: Stopwatch | None = None) -> tuple[int, str]:
    """Run job `name` and encode its answer; every failure becomes a payload. `watch`,
    when given, records the phases."""
    jobs: dict[str, Callable[..., tuple[int, dict[str, Any]]]] = {
        "solve": solve_job,
        "explain": explain_job,
        "check": check_job,
        "compare": compare_job,
    }
    watch = watch or Stopwatch()
    try:
        if name == "solve":  # the one job whose phases are worth telling apart
            status, body = solve_job(*args, watch=watch)
        else:
            status, body = jobs[name](*args)
            watch.lap(name)
    except Exception as exc:  # noqa: BLE001 - every failure is a payload; the worker stays
        status, body = error_payload(exc)
    verdict_report = body.get("schema") == "arbiter.verdict"  # its input_errors say it all
    if 400 <= status < 500 and status != 409 and "errors" not in body and not verdict_report:
        body = {**body, "errors": from_payload(body)}  # a job's own payload: one entry
    text = safe_dumps(body)
    watch.lap("encode")
    return status, text


def solve_job(
    claims: list[dict[str, Any]], options: dict[str, Any], *, watch: Stopwatch | None = None
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for one arbitration."""
    watch = watch or Stopwatch()
    try:
        resolution = solve(
            claims,
            rules=options.get("rules"),
            time_limit_s=options.get("time_limit_s"),
            defaults=options.get("defaults"),
            profile=options.get("profile"),
            bounded_conflict=True,
        )
    except ArbiterError as exc:
        watch.lap("solve")
        answer = error_payload(exc, claims)  # a conflict's explanation is searched here
        watch.lap("report")
        return answer
    watch.lap("solve")
    body = resolution_json(
        resolution,
        options.get("reason_checks", REASON_CHECKS),
        options.get("reasons_until"),
        reasons=options.get("reasons", True),
    )
    body["time_limited"] = resolution.status == "feasible"
    watch.lap("report")
    return 200, body


def explain_job(
    claims: list[dict[str, Any]], options: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for one explanation: the versioned JSON explanation, plus the
    report rendered in `format` when one is asked for."""
    limits = Limits(
        options.get("max_conflicts", 8), options.get("max_corrections", 8), options["time_budget_s"]
    )
    try:
        explanation = explain(
            claims,
            rules=options.get("rules"),
            defaults=options.get("defaults"),
            limits=limits,
            profile=options.get("profile"),
        )
    except ArbiterError as exc:
        return error_payload(exc, claims)
    data = json.loads(explanation.render("json"))
    fmt = options.get("format")
    rendered = explanation.render(fmt) if fmt and fmt != "json" else None
    return 200, {"feasible": not data.get("conflicts"), "explanation": data, "rendered": rendered}


# what the report names as the source of a request's config
REQUEST_SOURCE = "<request>"
# a verdict's HTTP status: a reject is a conflict (409), bad input 422 (or the error's own)
_STATUS = {"accept": 200, "adjust": 200, "reject": 409}


def _refused(rows: Any) -> tuple[Any, ...]:
    """The config values the guard refused (`guard.REFUSED` rows) as the edge's errors."""
    from constraints.edge import EdgeError  # the edge validator's own error

    out = []
    for row in rows:
        exc = EdgeError(row["reason"], where=row["where"], value=row["value"], limit=row["limit"])
        exc.allowed = row.get("allowed")
        out.append(exc)
    return tuple(out)


def check_job(request: dict[str, Any], options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for checking an engine's configuration: the `arbiter.verdict`
    report `arbiter check --format json` prints for the same input (the same facts
    resolution, `arbiter.application.check_report`), in the request's words. 200 for
    accept and adjust, 409 for a reject, a 4xx (422 mostly) for bad input, whose
    `input_errors` name every problem."""
    try:
        with conflict_budget(options.get("time_limit_s")):
            target = request_target(
                request["dialect"],
                request["config"],
                REQUEST_SOURCE,
                refused=_refused(request.get("refused") or ()),
            )
            checked = check_target(
                target,
                request["config"],
                model=request.get("model"),
                device=request.get("device"),
                gpus=request.get("gpus"),
                profile=request.get("profile"),
                serve_args=request.get("serve_args"),
                time_limit_s=options.get("time_limit_s"),
            )
    except (ArbiterError, SpecError) as exc:
        status = outcome(exc).http_status
        report = from_error(exc, dialect=request["dialect"], source=REQUEST_SOURCE)
        return status, for_request(report).to_json()
    report = for_request(checked.report)
    status = _STATUS.get(report.verdict, 422)
    if report.verdict == "error":
        status = outcome(checked.verdict.error).http_status if checked.verdict.error else 422
    return status, report.to_json()
