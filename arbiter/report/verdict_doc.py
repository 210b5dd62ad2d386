"""`arbiter check --format markdown|html`: a check's verdict as a document.

Rendered from the one verdict object the JSON and SARIF outputs come from
(`arbiter.report.schema.VerdictReport`), so the three say the same thing: the verdict and
what it was checked against, then input errors, conflicts and their fixes, what the engine
will change on its own, warnings, keys written back unarbitrated, the rules cited, and the
accepted configuration. HTML is standalone (inline CSS, no scripts, no external resources).
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

import yaml

from .schema import VerdictReport

TITLES = {
    "accept": "the configuration holds",
    "adjust": "the configuration holds, with adjustments",
    "reject": "the configuration cannot hold",
    "error": "the input could not be checked",
}


def _sections(report: VerdictReport) -> list[tuple[str, list[str]]]:
    """(heading, bullet texts) for every part of the verdict that has something to say."""
    sections: list[tuple[str, list[str]]] = []
    if report.input_errors:
        sections.append(
            (
                "Input errors",
                [_input_error(e) for e in report.input_errors],
            )
        )
    if report.conflicts:
        sections.append(("Conflicts", [c.text for c in report.conflicts]))
    if report.fixes:
        sections.append(
            ("Fixes", [f.text + (" (verified)" if f.verified else "") for f in report.fixes])
        )
    if report.engine_changes:
        sections.append(("What the engine will change", [c.text for c in report.engine_changes]))
    if report.warnings:
        sections.append(("Warnings", [w.text for w in report.warnings]))
    if report.not_arbitrated:
        sections.append(
            (
                "Written back as given",
                [f"`{key}`: {why}" for key, why in report.not_arbitrated.items()],
            )
        )
    if report.rules:
        sections.append(
            (
                "Rules",
                [
                    f"`{r.id}`: {r.text}" + (f" ({r.source})" if r.source else "")
                    for r in report.rules
                ],
            )
        )
    return sections


def _input_error(entry: Any) -> str:
    text = f"`{entry.path or entry.file or 'input'}`: {entry.reason}"
    if entry.suggestions:
        text += " (did you mean " + " or ".join(f"`{s}`" for s in entry.suggestions) + "?)"
    return text


def _config_text(report: VerdictReport) -> tuple[str, str] | None:
    """The accepted configuration as (language, text), or None."""
    written = report.written
    if written is None or written.config is None:
        return None
    if written.format == "json":
        return "json", json.dumps(written.config, indent=2)
    return "yaml", yaml.safe_dump(written.config, sort_keys=False).rstrip("\n")


def _title(report: VerdictReport) -> str:
    return f"arbiter check: {report.verdict}, {TITLES[report.verdict]}"


def render_markdown(report: VerdictReport) -> str:
    """The verdict as a Markdown document."""
    lines = [f"# {_title(report)}", ""]
    if report.source:
        lines += [
            f"Checked: `{report.source}`" + (f" ({report.dialect})" if report.dialect else "")
        ]
    if report.assumptions.summary:
        lines += [f"Against: {report.assumptions.summary}"]
    for heading, items in _sections(report):
        lines += ["", f"## {heading}", "", *(f"- {item}" for item in items)]
    config = _config_text(report)
    if config is not None:
        lines += ["", "## Configuration", "", f"```{config[0]}", config[1], "```"]
    return "\n".join(lines) + "\n"


_TICKS = re.compile(r"`([^`\n]+)`")


def _prose(text: str) -> str:
    return _TICKS.sub(r"<code>\1</code>", escape(text))


CSS = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:1100px}"
    "code,pre{background:#f6f8fa;border-radius:4px}code{padding:0 .25rem}"
    "pre{padding:.75rem;overflow-x:auto}.accept,.adjust{color:#1a7f37}"
    ".reject,.error{color:#cf222e}"
)


def render_html(report: VerdictReport) -> str:
    """The verdict as a standalone HTML page."""
    body = [f'<h1 class="{report.verdict}">{escape(_title(report))}</h1>']
    if report.source:
        dialect = f" ({escape(report.dialect)})" if report.dialect else ""
        body.append(f"<p>Checked: <code>{escape(report.source)}</code>{dialect}</p>")
    if report.assumptions.summary:
        body.append(f"<p>Against: {_prose(report.assumptions.summary)}</p>")
    for heading, items in _sections(report):
        body.append(f"<h2>{escape(heading)}</h2><ul>")
        body += [f"<li>{_prose(item)}</li>" for item in items]
        body.append("</ul>")
    config = _config_text(report)
    if config is not None:
        body.append(f"<h2>Configuration</h2><pre><code>{escape(config[1])}</code></pre>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(_title(report))}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def render(report: VerdictReport, fmt: str) -> str:
    """`fmt` is markdown or html."""
    renderers: dict[str, Any] = {"markdown": render_markdown, "html": render_html}
    return str(renderers[fmt](report))
