"""A standalone HTML report (inline CSS, no scripts, no external resources) with an SVG
conflict graph per conflict and per dropped claim that has one."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from .svg import COLOURS, conflict_svg

CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f2328; max-width: 1100px; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
code { background: #f6f8fa; padding: 0 .25rem; border-radius: 4px; }
.code { font-weight: bold; color: #cf222e; } .warn { color: #9a6700; font-weight: bold; }
.why { background: #fff8c5; padding: .5rem .75rem; border-radius: 6px; }
.legend span { display: inline-block; padding: 0 .5rem; margin-right: .5rem; color: #fff; border-radius: 4px; }
svg text { font-family: ui-monospace, monospace; font-size: 12px; }
svg .col { font-weight: bold; fill: #57606a; } svg .edge-label { fill: #57606a; font-size: 11px; }
table { border-collapse: collapse; } td, th { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; }
"""


_TICKS = re.compile(r"`([^`\n]+)`")


def _prose(text: str) -> str:
    """Report prose as HTML: escaped, its Markdown `code` spans as <code> (no raw backticks)."""
    return _TICKS.sub(r"<code>\1</code>", escape(text))


def _v(v: Any) -> str:
    return escape("None" if v is None else str(v))


def _legend() -> str:
    items = [("func", "functional claim"), ("perf", "performance claim"), ("rule", "rule")]
    spans = "".join(f'<span style="background:{COLOURS[k]}">{t}</span>' for k, t in items)
    return f'<p class="legend">{spans}</p>'


def _claims_table(claims: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td><code>{escape(m['name'])}</code></td><td>{escape(m['kind'])}</td>"
        f"<td><code>{escape(m['requires'])}</code></td><td>{escape(m['source'] or '')}</td></tr>"
        for m in claims
    )
    return f"<table><tr><th>claim</th><th>kind</th><th>needs</th><th>source</th></tr>{rows}</table>"


def _rules_list(rules: list[dict[str, Any]]) -> str:
    if not rules:
        return ""
    items = "".join(
        f"<li><code>{escape(r['id'])}</code>: {_prose(r['text'])} <small>({escape(r['source'])})</small>"
        + (f"<br><small>applies: {escape(r['why'])}</small>" if r.get("why") else "")
        + "</li>"
        for r in rules
    )
    return f"<p>Rules:</p><ul>{items}</ul>"


def _numbers(numbers: list[dict[str, Any]]) -> str:
    if not numbers:
        return ""
    items = "".join(
        f"<li>{escape(n['where'])}: <code>{escape(n['text'])}</code></li>" for n in numbers
    )
    return f"<ul class='numbers'>{items}</ul>"


def _profile(data: dict[str, Any]) -> str:
    profile = data.get("profile")
    if not profile:
        return ""
    return f"<p>Profile: <code>{escape(profile['name'])}</code> ({escape(profile['line'])})</p>"


def legend() -> str:
    """The colour key of the conflict graph's nodes."""
    return _legend()


def conflict_section(conflict: dict[str, Any], title: str, anchor: str, level: int = 2) -> str:
    """One conflict of an explanation's JSON form (`conflicts[i]`): its graph (SVG), its
    claims, rules, the chain in words and the numbers, as a `<section class="conflict">`."""
    return "\n".join(
        (
            f'<section class="conflict" id="{escape(anchor)}"><h{level}>{escape(title)}</h{level}>',
            conflict_svg(conflict["claims"], conflict["rules"], conflict["edges"]),
            _claims_table(conflict["claims"]),
            _rules_list(conflict["rules"]),
            f'<p class="why"><b>Why:</b> {_prose(conflict["chain"])}</p>',
            _numbers(conflict["numbers"]),
            "</section>",
        )
    )


def _configuration(changes: list[dict[str, Any]]) -> str:
    """The resolved configuration: each option off its default, with the default."""
    if not changes:
        return "<h2>Configuration</h2><p>Every option keeps its default.</p>"
    rows = "".join(
        f"<tr><td><code>{escape(c['path'])}</code></td><td>{_v(c['old'])}</td>"
        f"<td><b>{_v(c['new'])}</b></td></tr>"
        for c in changes
    )
    return (
        "<h2>Configuration</h2><p>The options the solve sets off their defaults:</p>"
        f"<table><tr><th>option</th><th>default</th><th>value</th></tr>{rows}</table>"
    )


def render_html(data: dict[str, Any]) -> str:
    body: list[str] = []
    add = body.append
    if data["status"] == "conflict":
        title = "Conflict report"
        code = data["conflicts"][0]["code"] if data["conflicts"] else "CFG004"
        add(f"<h1>{title}</h1>")
        add(
            f'<p><span class="code">error[{code}]</span>: the functional claims cannot all hold.</p>'
        )
        add(_profile(data))
        add(_legend())
        total = len(data["conflicts"])
        for i, c in enumerate(data["conflicts"], 1):
            add(conflict_section(c, f"Conflict {i} of {total}", f"conflict-{i}"))
        if data["corrections"]:
            add(
                "<h2>Corrections</h2><p>Any one of these minimal changes makes the claims consistent:</p><ol>"
            )
            for fix in data["corrections"]:
                names = " and ".join(f"<code>{escape(n)}</code>" for n in fix["drop"])
                allows = ", ".join(
                    f"<code>{escape(a['path'])} = {_v(a['value'])}</code>" for a in fix["allows"]
                )
                status = "verified" if fix["verified"] else "not verified"
                add(f"<li>drop {names} ({status}{'; allows ' + allows if allows else ''})</li>")
            add("</ol>")
        if data.get("menus"):
            add("<p>Or drop one claim from each conflict; any combination works:</p><ul>")
            for i, menu in enumerate(data["menus"], 1):
                names = " or ".join(f"<code>{escape(n)}</code>" for n in menu)
                add(f"<li>conflict {i}: {names}</li>")
            add("</ul>")
        search = data.get("search")
        if search and not search["complete"]:
            add(
                f'<p><span class="warn">warning[CFG003]</span>: the search stopped at its '
                f"{escape(str(search['cut_by']))} limit; more conflicts or corrections may exist.</p>"
            )
    else:
        title = "Arbitration report"
        add(f"<h1>{title}</h1>")
        dropped = data["dropped"]
        add(
            f"<p>A configuration exists; {len(dropped)} performance claim(s) dropped.</p>"
            if dropped
            else "<p>A configuration exists; every claim holds.</p>"
        )
        add(_profile(data))
        if any(d["chain"] for d in dropped):
            add(_legend())
        for d in dropped:
            add(f'<section class="dropped"><h2><code>{escape(d["claim"])}</code> dropped</h2>')
            add(f'<p><span class="warn">warning[{d["code"]}]</span>: {_prose(d["message"])}</p>')
            if d["chain"]:
                add(conflict_svg(d["members"], d["rules"], d["edges"]))
                add(f'<p class="why"><b>Why:</b> {_prose(d["chain"])}</p>')
            add(_numbers(d["numbers"]))
            add("</section>")
        add(_configuration(data.get("changes") or []))
    if data["notes"]:
        add(
            "<h2>Notes</h2><ul>" + "".join(f"<li>{_prose(n)}</li>" for n in data["notes"]) + "</ul>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>arbiter: {title.lower()}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
