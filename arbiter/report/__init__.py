"""Renderers of an `Explanation`: text (terminal), markdown, json and html (with SVG).

Every renderer reads the explanation's JSON form (`Explanation.to_json()`), so the four
formats cannot drift apart, and each is deterministic: the same explanation gives the same
bytes.
"""

from __future__ import annotations

from typing import Any

FORMATS = ("text", "markdown", "json", "html")


def render(explanation: Any, format: str = "text", *, color: bool = False) -> str:
    data = explanation.to_json()
    if format == "text":
        from .text import render_text  # only the renderer of the format asked for loads

        return render_text(data, color=color)
    if format == "markdown":
        from .markdown import render_markdown  # only the renderer of the format asked for loads

        return render_markdown(data)
    if format == "json":
        from .json import render_json  # only the renderer of the format asked for loads

        return render_json(data)
    if format == "html":
        from .html import render_html  # only the renderer of the format asked for loads

        return render_html(data)
    raise ValueError(f"unknown report format {format!r}; use one of {', '.join(FORMATS)}")


__all__ = ["FORMATS", "render"]
