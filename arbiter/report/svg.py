"""An SVG conflict graph: claims on the left, rules on the right, an edge for each option a
claim and a rule share (labelled with the option path), arcs between rules that share one.

Nodes are `<g class="node claim func">`, `<g class="node claim perf">` or
`<g class="node rule">` with a `data-id`, so a test can count them.
"""

from __future__ import annotations

from html import escape
from typing import Any

COLOURS = {"func": "#1f6feb", "perf": "#8250df", "setup": "#6e7781", "rule": "#d97706"}
NODE_W, NODE_H, GAP_Y, COL_GAP, MARGIN = 320, 40, 28, 220, 24
CHAR_W, LABEL_PAD = 7.3, 12  # a character of the 12 px monospace label; text inset


def _label(text: str, limit: int = 42) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def conflict_svg(
    claims: list[dict[str, Any]], rules: list[dict[str, Any]], edges: list[list[str]]
) -> str:
    rows = max(len(claims), len(rules), 1)
    # every node as wide as the longest claim name or rule id: ids are never cut
    longest = max([len(c["name"]) for c in claims] + [len(r["id"]) for r in rules] + [0])
    node_w = max(NODE_W, round(CHAR_W * longest) + 2 * LABEL_PAD)
    height = 2 * MARGIN + rows * NODE_H + (rows - 1) * GAP_Y + 20
    width = 2 * MARGIN + 2 * node_w + COL_GAP + 120
    pos: dict[tuple[str, str], tuple[int, int]] = {}

    def place(column: list[dict[str, Any]], x: int, kind: str, key: str) -> None:
        offset = (rows - len(column)) * (NODE_H + GAP_Y) // 2
        for i, item in enumerate(column):
            pos[(kind, item[key])] = (x, MARGIN + 20 + offset + i * (NODE_H + GAP_Y))

    place(claims, MARGIN, "claim", "name")
    place(rules, MARGIN + node_w + COL_GAP, "rule", "id")
    claim_names = {c["name"] for c in claims}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="conflict-graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f'<text x="{MARGIN}" y="{MARGIN}" class="col">claims</text>',
        f'<text x="{MARGIN + node_w + COL_GAP}" y="{MARGIN}" class="col">rules</text>',
    ]
    for a, b, path in edges:
        ka = ("claim", a) if a in claim_names else ("rule", a)
        kb = ("rule", b)
        if ka not in pos or kb not in pos:
            continue
        (xa, ya), (xb, yb) = pos[ka], pos[kb]
        ya += NODE_H // 2
        yb += NODE_H // 2
        if ka[0] == "claim":
            x1, x2 = xa + node_w, xb
            parts.append(
                f'<line class="edge" x1="{x1}" y1="{ya}" x2="{x2}" y2="{yb}" '
                f'stroke="#8c959f" stroke-width="1.5"><title>{escape(path)}</title></line>'
            )
            parts.append(
                f'<text class="edge-label" x="{x1 + 12}" y="{ya + (yb - ya) * 12 // (x2 - x1) - 5}" '
                f'text-anchor="start">{escape(_label(path.split(".")[-1], 28))}</text>'
            )
        else:
            x = xa + node_w
            bend = x + 60 + abs(yb - ya) // 4
            parts.append(
                f'<path class="edge" d="M {x} {ya} C {bend} {ya}, {bend} {yb}, {x} {yb}" '
                f'fill="none" stroke="#8c959f" stroke-dasharray="4 3"><title>{escape(path)}</title></path>'
            )
    for c in claims:
        x, y = pos[("claim", c["name"])]
        parts.append(
            _node(
                x,
                y,
                "claim " + c["kind"],
                c["name"],
                COLOURS.get(c["kind"], "#1f6feb"),
                c["requires"],
                node_w,
            )
        )
    for r in rules:
        x, y = pos[("rule", r["id"])]
        parts.append(_node(x, y, "rule", r["id"], COLOURS["rule"], r["text"], node_w))
    parts.append("</svg>")
    return "\n".join(parts)


def _node(x: int, y: int, cls: str, ident: str, colour: str, tip: str, width: int = NODE_W) -> str:
    return (
        f'<g class="node {cls}" data-id="{escape(ident)}">'
        f"<title>{escape(ident)}: {escape(tip)}</title>"
        f'<rect x="{x}" y="{y}" width="{width}" height="{NODE_H}" rx="8" fill="{colour}" />'
        f'<text x="{x + LABEL_PAD}" y="{y + NODE_H // 2 + 5}" fill="#ffffff">{escape(ident)}</text>'
        "</g>"
    )
