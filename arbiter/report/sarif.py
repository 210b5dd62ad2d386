"""SARIF 2.1.0 from a `VerdictReport`, so that CI code scanning shows a problem on its line.

One `run`; the tool is `arbiter` with its version; `tool.driver.rules` holds every rule the
report cites (id, text, source) plus arbiter's own result kinds (`arbiter/conflict`,
`arbiter/input-error`, `arbiter/warning`, `arbiter/engine-change`); one `result` per
conflict (level `error`), input error (`error`), warning (`warning`) and engine change
(`note`). A result's location is the checked file and the line of the offending key,
from `key_lines` (`arbiter.sources.lines`) over the file's text, falling back to line 1
when the key is not in the file (a default, or a command-line flag).

The object model follows the OASIS SARIF 2.1.0 schema (oasis-tcs/sarif-spec,
`Schemata/sarif-schema-2.1.0.json`): `version` and `runs` are required at the top, `tool`
in a run, `driver` in a tool, `name` in a driver, `id` in a rule, `message` in a result;
`level` is one of none, note, warning, error; `region.startLine` is at least 1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .schema import VerdictReport

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
OWN_RULES = {
    "arbiter/conflict": "The configuration's settings cannot all hold under the engine's rules.",
    "arbiter/input-error": "A key or value that the engine release does not accept.",
    "arbiter/warning": "Something the engine warns about while running the config as written.",
    "arbiter/engine-change": "A value the engine changes or derives without being asked.",
}


def _version() -> str:
    import arbiter  # the version, once the package states one

    found = getattr(arbiter, "__version__", None)
    if found:
        return str(found)
    from importlib.metadata import (  # the installed distribution's version, as a fallback
        PackageNotFoundError,
        version,
    )

    try:
        return version("arbiter")
    except PackageNotFoundError:
        return "0+unknown"


def _location(uri: str | None, line: int | None) -> list[dict[str, Any]]:
    if uri is None:
        return []
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    physical["region"] = {"startLine": max(1, line or 1)}
    return [{"physicalLocation": physical}]


def _line(lines: Mapping[str, int], path: str | None) -> int | None:
    if not path:
        return None
    from ..sources.lines import line_of  # the key-line lookup only where a path is known

    for candidate in (path, path.lstrip("-"), path.lstrip("-").replace("-", "_")):
        found = line_of(dict(lines), candidate)
        if found is not None:
            return found
    return None


def to_sarif(
    report: VerdictReport,
    *,
    uri: str | None = None,
    lines: Mapping[str, int] | None = None,
    line: int | None = None,
) -> dict[str, Any]:
    """The SARIF log of one check: `uri` is the checked file as the repository names it
    (default: the report's `source`), `lines` its `key_lines`, `line` the line every result
    falls back to (a manifest's container args)."""
    uri = uri or report.source
    lines = lines or {}
    rules = [
        {
            "id": rule_id,
            "name": rule_id.split("/", 1)[1].replace("-", " "),
            "shortDescription": {"text": text},
        }
        for rule_id, text in OWN_RULES.items()
    ]
    for rule in report.rules:
        entry: dict[str, Any] = {
            "id": rule.id,
            "shortDescription": {"text": rule.text or rule.id},
        }
        if rule.source:
            entry["fullDescription"] = {"text": f"{rule.text} (source: {rule.source})"}
            entry["properties"] = {"source": rule.source}
        rules.append(entry)
    index = {r["id"]: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []

    def add(
        rule_id: str, level: str, text: str, path: str | None, extra: dict | None = None
    ) -> None:
        result: dict[str, Any] = {
            "ruleId": rule_id,
            "ruleIndex": index[rule_id],
            "level": level,
            "message": {"text": text},
            "locations": _location(uri, _line(lines, path) or line),
        }
        if extra:
            result["properties"] = extra
        results.append(result)

    for conflict in report.conflicts:
        rule_id = (
            conflict.rules[0]
            if conflict.rules and conflict.rules[0] in index
            else "arbiter/conflict"
        )
        fixes = [f.text for f in report.fixes]
        add(
            rule_id,
            "error",
            conflict.text + ("; fixes: " + "; ".join(fixes) if fixes else ""),
            conflict.path,
            {"claims": conflict.claims, "rules": conflict.rules},
        )
    for error in report.input_errors:
        text = f"{error.path}: {error.reason}" if error.path else error.reason
        if error.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in error.suggestions) + "?"
        add(
            "arbiter/input-error",
            "error",
            text,
            error.path,
            {"suggestions": error.suggestions} if error.suggestions else None,
        )
    for warning in report.warnings:
        add("arbiter/warning", "warning", warning.text, warning.path)
    for change in report.engine_changes:
        add("arbiter/engine-change", "note", change.text, change.path, {"kind": change.kind})
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "arbiter",
                "version": _version(),
                "rules": rules,
            }
        },
        "results": results,
    }
    if uri is not None:
        run["artifacts"] = [{"location": {"uri": uri}}]
    if report.assumptions.summary:
        run["properties"] = {"assumptions": report.assumptions.summary, "verdict": report.verdict}
    else:
        run["properties"] = {"verdict": report.verdict}
    return {"version": SARIF_VERSION, "$schema": SARIF_SCHEMA, "runs": [run]}


def render_sarif(report: VerdictReport, **context: Any) -> str:
    return json.dumps(to_sarif(report, **context), indent=2, ensure_ascii=False) + "\n"
