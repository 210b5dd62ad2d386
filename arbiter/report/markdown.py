"""The markdown report: one section per conflict, a list of corrections, dropped claims."""

from __future__ import annotations

from typing import Any


def _value(v: Any) -> str:
    return "None" if v is None else str(v)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _profile(add: Any, data: dict[str, Any]) -> None:
    profile = data.get("profile")
    if profile:
        add("")
        add(f"Profile: `{profile['name']}` ({profile['line']}).")


def render_markdown(data: dict[str, Any]) -> str:
    lines: list[str] = []
    add = lines.append
    if data["status"] == "conflict":
        code = data["conflicts"][0]["code"] if data["conflicts"] else "CFG004"
        add("# Conflict report")
        add("")
        add(f"**error[{code}]**: the functional claims cannot all hold.")
        _profile(add, data)
        total = len(data["conflicts"])
        for i, c in enumerate(data["conflicts"], 1):
            add("")
            add(f"## Conflict {i} of {total}")
            add("")
            add("| claim | kind | needs | source |")
            add("|---|---|---|---|")
            for m in c["claims"]:
                add(
                    f"| `{_cell(m['name'])}` | {m['kind']} | `{_cell(m['requires'])}` | {_cell(m['source'] or '')} |"
                )
            if c["rules"]:
                add("")
                add("Rules:")
                add("")
                for r in c["rules"]:
                    add(f"- `{r['id']}`: {r['text']} ({r['source']})")
                    if r.get("why"):
                        add(f"  - applies: {r['why']}")
            add("")
            add(f"**Why:** {c['chain']}")
            if c["numbers"]:
                add("")
                for n in c["numbers"]:
                    add(f"- numbers ({n['where']}): `{n['text']}`")
        if data["corrections"]:
            add("")
            add("## Corrections")
            add("")
            add("Any one of these minimal changes makes the claims consistent:")
            add("")
            for i, fix in enumerate(data["corrections"], 1):
                names = " and ".join(f"`{n}`" for n in fix["drop"])
                status = "verified" if fix["verified"] else "not verified"
                allows = ", ".join(f"`{a['path']} = {_value(a['value'])}`" for a in fix["allows"])
                tail = f"; allows {allows}" if allows else ""
                add(f"{i}. drop {names} ({status}{tail})")
        if data.get("menus"):
            add("")
            add("Or drop one claim from each conflict; any combination works:")
            add("")
            for i, menu in enumerate(data["menus"], 1):
                add(f"- conflict {i}: " + " or ".join(f"`{n}`" for n in menu))
        search = data.get("search")
        if search and not search["complete"]:
            add("")
            add(
                f"> **warning[CFG003]**: the search stopped at its {search['cut_by']} limit; "
                "more conflicts or corrections may exist."
            )
    else:
        add("# Arbitration report")
        add("")
        dropped = data["dropped"]
        add(
            f"A configuration exists; {len(dropped)} performance claim(s) dropped."
            if dropped
            else "A configuration exists; every claim holds."
        )
        _profile(add, data)
        for d in dropped:
            add("")
            add(f"## `{d['claim']}` dropped ({d['code']}, {d['kind']})")
            add("")
            add(d["message"])
            for r in d["rules"]:
                add("")
                add(
                    f"- via `{r['id']}`: {r['text']}"
                    + (f" (applies: {r['why']})" if r.get("why") else "")
                )
            if d["chain"]:
                add("")
                add(f"**Why:** {d['chain']}")
            for n in d["numbers"]:
                add(f"- numbers ({n['where']}): `{n['text']}`")
    if data["notes"]:
        add("")
        add("## Notes")
        add("")
        for note in data["notes"]:
            add(f"- {note}")
    return "\n".join(lines) + "\n"
