"""Renderers of a `Comparison`: text, markdown, json and html, engines side by side.

All four read the same rows (`rows()`: one per feature, a cell per engine), so they
cannot drift apart; the HTML page reuses the conflict report's stylesheet
(`arbiter.report.html.CSS`) and is standalone (inline CSS, no scripts); an engine that
conflicts gets the explain report's conflict section (`conflict_section`: its SVG graph,
claims, rules and chain) below the side-by-side table.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

import yaml

from ..report import FORMATS  # the same formats as every report (arbiter/report)
from ..report.html import CSS, conflict_section, legend
from .result import Comparison, EngineResult

_ABSENT = object()


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else value


def _get(config: Any, dotted: str) -> Any:
    head, _, rest = dotted.partition(".")
    if not isinstance(config, dict) or head not in config:
        return _ABSENT
    return config[head] if not rest else _get(config[head], rest)


def cell(result: EngineResult, feature: str) -> str:
    """What one engine does with one feature, in a few words."""
    if feature in result.missing:
        return "no option (conflict)"
    if feature in result.dropped:
        return "dropped"
    keys = result.options.get(feature)
    if keys is None:
        return "-"
    if not keys:
        return "(engine default)"
    parts = []
    for key in keys:
        value = _get(result.config, key)
        parts.append(f"{key}: {_show(value)}" if value is not _ABSENT else f"{key}: (unset)")
    return ", ".join(parts)


def rows(comparison: Comparison) -> list[tuple[str, str, list[str]]]:
    """(feature, hard|soft, one cell per engine) for every feature of the intent."""
    intent = comparison.intent
    return [
        (name, intent.strength(name), [cell(r, name) for r in comparison.results])
        for name in intent.features
    ]


def kv(result: EngineResult) -> str:
    return f"{result.kv_tokens:,}" if result.kv_tokens is not None else "-"


def native_text(result: EngineResult) -> str:
    """The native config as the engine reads it, in its pack's format (MLC: JSON)."""
    if result.format == "json":
        return json.dumps(result.config, indent=2, sort_keys=True)
    return yaml.safe_dump(result.config, sort_keys=False).rstrip()


def details(result: EngineResult) -> list[str]:
    """The lines explaining one engine's result (reason, conflicts, drops, changes)."""
    lines = []
    if result.reason:
        lines.append(f"not checked: {result.reason}")
    lines += [f"hard feature {f} has no option: {why}" for f, why in result.missing.items()]
    if result.in_words:  # the conflict in the engine's own keys, with its fixes
        lines += list(result.in_words)
    else:
        lines += [f"conflict: {c}" for c in result.conflicts]
        if result.rules:
            lines.append("rules: " + ", ".join(result.rules))
    lines += [f"soft wish {f} dropped: {why}" for f, why in result.dropped.items()]
    lines += [f"change: {c}" for c in result.changes]
    # what the engine sets by itself is information, not a warning (D-L13)
    lines += [
        f"{'engine sets' if w in result.engine_changes else 'warning'}: {w}"
        for w in result.warnings
    ]
    return lines


def _heading(comparison: Comparison) -> str:
    intent = comparison.intent
    model = intent.to_json()["model"]
    facts = [f"model {model or '(none)'}", f"device {intent.device or '(none)'}"]
    facts.append(f"{intent.gpus} GPU" + ("s" if intent.gpus > 1 else ""))
    return f"{intent.source}: " + ", ".join(facts)


def render_text(comparison: Comparison, width: int | None = None) -> str:
    """The side-by-side table, then each engine's details. With `width` (the terminal's),
    the engines' columns share what the feature columns leave and a cell too long for its
    column breaks after a comma (an overlong item within itself), so that no table line is
    wider than `width`; None keeps each cell on one line."""
    labels = [r.label for r in comparison.results]
    table = [("feature", "", labels)]
    table += rows(comparison)
    table.append(("status", "", [r.status for r in comparison.results]))
    table.append(("KV tokens", "", [kv(r) for r in comparison.results]))
    widths = [max(len(t[0]) for t in table), max(len(t[1]) for t in table)]
    widths += [max(len(t[2][i]) for t in table) for i in range(len(labels))]
    if width is not None and labels:
        room = width - widths[0] - widths[1] - 2 * (len(widths) - 1)
        share = max(MIN_COLUMN, room // len(labels))
        widths[2:] = [min(w, share) for w in widths[2:]]
    out = [_heading(comparison), ""]
    for name, strength, cells in table:
        wrapped = [_wrap(c, w) for c, w in zip(cells, widths[2:], strict=True)]
        for i in range(max(len(w) for w in wrapped) if wrapped else 1):
            first = i == 0
            parts = [(name if first else "").ljust(widths[0])]
            parts.append((strength if first else "").ljust(widths[1]))
            parts += [
                (w[i] if i < len(w) else "").ljust(cw)
                for w, cw in zip(wrapped, widths[2:], strict=True)
            ]
            out.append("  ".join(parts).rstrip())
    for result in comparison.results:
        out += ["", f"{result.label}: {result.status}"]
        out += [f"  {line}" for line in details(result)]
        if result.config:
            out += ["  config:", *(f"    {line}" for line in native_text(result).splitlines())]
    return "\n".join(out) + "\n"


MIN_COLUMN = 24  # an engine's column never narrower: a key and its value stay readable


def _wrap(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width`, broken after the commas of its list of
    settings, an item longer than a line broken within itself."""
    import textwrap  # only a table wider than the terminal is wrapped

    if len(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    items = text.split(", ")
    for n, item in enumerate(items):
        piece = item + ("," if n < len(items) - 1 else "")
        candidate = f"{line} {piece}" if line else piece
        if len(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        if len(piece) <= width:
            line = piece
        else:
            *full, line = textwrap.wrap(piece, width, break_on_hyphens=False) or [""]
            lines += full
    if line:
        lines.append(line)
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(comparison: Comparison) -> str:
    labels = [r.label for r in comparison.results]
    out = [f"# arbiter compare: {_md(_heading(comparison))}", ""]
    out.append("| feature | strength | " + " | ".join(labels) + " |")
    out.append("|---|---|" + "---|" * len(labels))
    for name, strength, cells in rows(comparison):
        out.append(f"| {name} | {strength} | " + " | ".join(f"`{_md(c)}`" for c in cells) + " |")
    out.append("| **status** | | " + " | ".join(r.status for r in comparison.results) + " |")
    out.append("| **KV tokens** | | " + " | ".join(kv(r) for r in comparison.results) + " |")
    for result in comparison.results:
        out += ["", f"## {result.label}: {result.status}", ""]
        out += [f"- {_md(line)}" for line in details(result)]
        if result.config:
            lang = result.format
            out += ["", f"```{lang}", native_text(result), "```"]
    return "\n".join(out) + "\n"


def render_json(comparison: Comparison) -> str:
    return json.dumps(comparison.to_json(), indent=2, sort_keys=True) + "\n"


# the page takes the window's width (the engines sit side by side), and long option names,
# rule sources and configs wrap inside their column or box instead of spilling out
STATUS_CSS = """
body { max-width: none; }
td.cell, .engines li { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.holds { background: #dafbe1; } .holds-with-changes { background: #fff8c5; }
.conflicts { background: #ffebe9; } .unavailable, .error { background: #eaeef2; }
td.cell { font-family: ui-monospace, monospace; font-size: 12px; }
pre { background: #f6f8fa; padding: .5rem; border-radius: 6px; }
.engines { display: flex; gap: 1rem; align-items: flex-start; }
.engines section { flex: 1; min-width: 0; }
"""


def render_html(comparison: Comparison) -> str:

    results = comparison.results
    head = "".join(f"<th>{escape(r.label)}</th>" for r in results)
    body = []
    for name, strength, cells in rows(comparison):
        tds = "".join(f'<td class="cell">{escape(c)}</td>' for c in cells)
        body.append(f"<tr><td><code>{escape(name)}</code></td><td>{strength}</td>{tds}</tr>")
    status = "".join(
        f'<td class="{r.status.replace(" ", "-")}"><b>{escape(r.status)}</b></td>' for r in results
    )
    body.append(f"<tr><th>status</th><td></td>{status}</tr>")
    body.append(
        "<tr><th>KV tokens</th><td></td>" + "".join(f"<td>{kv(r)}</td>" for r in results) + "</tr>"
    )
    sections = []
    graphs = []
    for r in results:
        items = "".join(f"<li>{escape(line)}</li>" for line in details(r))
        sections.append(
            f'<section><h2 class="{r.status.replace(" ", "-")}">{escape(r.label)}: '
            f"{escape(r.status)}</h2>"
            + (f"<ul>{items}</ul>" if items else "<p>Every feature holds as written.</p>")
            + (f"<pre>{escape(native_text(r))}</pre>" if r.config else "")
            + "</section>"
        )
        graphs += _conflict_graphs(r)
    if graphs:
        graphs.insert(0, "<h2>Conflict graphs</h2>" + legend())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>arbiter: compare</title><style>{CSS}{STATUS_CSS}</style></head>\n<body>\n"
        f"<h1>One intent, {len(results)} engine(s)</h1>\n<p>{escape(_heading(comparison))}</p>\n"
        f"<table><tr><th>feature</th><th>strength</th>{head}</tr>{''.join(body)}</table>\n"
        f'<div class="engines">{"".join(sections)}</div>\n'
        + "".join(f"{g}\n" for g in graphs)
        + "</body></html>\n"
    )


def _conflict_graphs(result: EngineResult) -> list[str]:
    """The explain report's conflict sections (graph, claims, rules, chain) for an
    engine that conflicts; none for one that holds."""
    total = len(result.explained)
    return [
        conflict_section(
            conflict,
            f"{result.label}: conflict {i} of {total}",
            f"{result.engine}-conflict-{i}",
            level=3,
        )
        for i, conflict in enumerate(result.explained, 1)
    ]


def render(comparison: Comparison, format: str = "text", *, width: int | None = None) -> str:
    """The comparison in `format` (text, markdown, json, html); `width` fits the text
    table to a terminal (`render_text`)."""
    if format == "text":
        return render_text(comparison, width)
    renderers = {
        "text": render_text,
        "markdown": render_markdown,
        "json": render_json,
        "html": render_html,
    }
    if format not in renderers:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    return renderers[format](comparison)


__all__ = ["FORMATS", "cell", "details", "render", "rows"]
