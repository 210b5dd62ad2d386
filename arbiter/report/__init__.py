"""Renderers of an `Explanation`: text (terminal), markdown, json and html (with SVG).

`RENDERERS` is the one table of report formats: a name, the module that renders it and
the function there. The command line (`explain --format`), the service's request models
and `compare` read their choices from it, so a new format is one renderer module plus one
line here (CONTRIBUTING.md, "A report format").

Every renderer reads the explanation's JSON form (`Explanation.to_json()`), so the formats
cannot drift apart, and each is deterministic: the same explanation gives the same bytes.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Literal

# format -> (module under arbiter.report, function); loaded only when that format is asked
RENDERERS: dict[str, tuple[str, str]] = {
    "text": ("text", "render_text"),
    "markdown": ("markdown", "render_markdown"),
    "json": ("json", "render_json"),
    "html": ("html", "render_html"),
}
FORMATS: tuple[str, ...] = tuple(RENDERERS)
# what a check's verdict is also written as: SARIF 2.1.0 (`arbiter.report.sarif`), read by
# code-scanning tools; the command line's `--format` takes these
VERDICT_FORMATS: tuple[str, ...] = (*FORMATS, "sarif")
# the same set as a type, for pydantic request models (checked against RENDERERS by a test)
ReportFormat = Literal["text", "markdown", "json", "html"]


def render(explanation: Any, format: str = "text", *, color: bool = False) -> str:
    """The explanation rendered in `format` (one of FORMATS)."""
    if format not in RENDERERS:
        raise ValueError(f"unknown report format {format!r}; use one of {', '.join(FORMATS)}")
    module, function = RENDERERS[format]
    renderer = getattr(import_module(f"{__name__}.{module}"), function)
    data = explanation.to_json()
    return renderer(data, color=color) if format == "text" else renderer(data)


__all__ = ["FORMATS", "RENDERERS", "VERDICT_FORMATS", "ReportFormat", "render"]
