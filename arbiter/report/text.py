"""The terminal report, after rustc: a headline with a stable code, then notes and help.

Colour (ANSI) only when the caller asks for it, which the CLI does on a TTY.
"""

from __future__ import annotations

from typing import Any

_STYLE = {"error": "1;31", "warning": "1;33", "help": "1;36", "note": "1", "ok": "1;32"}


def _value(v: Any) -> str:
    return "None" if v is None else str(v)


class _Out:
    def __init__(self, color: bool):
        self.color = color
        self.lines: list[str] = []

    def head(self, level: str, code: str | None, text: str) -> None:
        label = f"{level}[{code}]" if code else level
        if self.color:
            label = f"\x1b[{_STYLE[level]}m{label}\x1b[0m"
        self.lines.append(f"{label}: {text}")

    def add(self, text: str) -> None:
        self.lines.append(text)


def _claim_line(m: dict[str, Any]) -> str:
    src = f"  <- {m['source']}" if m.get("source") else ""
    return f"    - `{m['name']}` ({m['kind']}) needs {m['requires']}{src}"


def _numbers(out: _Out, numbers: list[dict[str, Any]], indent: str) -> None:
    for n in numbers:
        out.add(f"{indent}= numbers ({n['where']}): {n['text']}")


def render_text(data: dict[str, Any], *, color: bool = False) -> str:
    out = _Out(color)
    conflicts = data["conflicts"]
    if data["status"] == "conflict":
        if not conflicts:
            out.head("error", "CFG004", "no configuration was found, yet the claims are consistent")
        elif conflicts[0]["code"] == "CFG002":
            out.head("error", "CFG002", "the setup facts contradict the rules on their own")
        else:
            out.head("error", "CFG001", "the functional claims cannot all hold")
        total = len(conflicts)
        _profile(out, data)
        for i, c in enumerate(conflicts, 1):
            n = len(c["claims"])
            names = " and ".join(f"`{m['name']}`" for m in c["claims"]) or "the setup facts"
            verb = "cannot hold" if n == 1 else "cannot both hold" if n == 2 else "cannot all hold"
            shape = "each one necessary" if n > 1 else "on its own"
            out.add(f"  conflict {i} of {total}: {names} {verb} ({shape}):")
            for m in c["claims"]:
                out.add(_claim_line(m))
            for r in c["rules"]:
                out.add(f"    via rule {r['id']}: {r['text']}  [{r['source']}]")
                if r.get("why"):
                    out.add(f"      applies: {r['why']}")
            out.add(f"    because: {c['chain']}")
            _numbers(out, c["numbers"], "    ")
        for note in data["notes"]:
            out.add(f"  = note: {note}")
        fixes = data["corrections"]
        if fixes:
            out.head("help", None, "any one of these minimal changes makes the claims consistent:")
            for i, fix in enumerate(fixes, 1):
                names = " and ".join(f"`{n}`" for n in fix["drop"])
                hits = f"(breaks conflict{'s' if len(fix['hits']) != 1 else ''} {', '.join(map(str, fix['hits']))})"
                out.add(f"  {i}. drop {names}  {hits}")
                if fix["verified"]:
                    allows = ", ".join(f"{a['path']} = {_value(a['value'])}" for a in fix["allows"])
                    out.add(
                        f"     -> verified: {'allows ' + allows if allows else 'the rest solves'}"
                    )
                else:
                    out.add("     -> not verified")
        menus = data.get("menus") or []
        if menus:
            out.add(
                "  = or choose for yourself: drop one claim from each conflict, any combination works:"
            )
            for i, menu in enumerate(menus, 1):
                out.add(f"      conflict {i}: " + " or ".join(f"`{n}`" for n in menu))
        _budget(out, data)
    else:
        dropped = data["dropped"]
        if dropped:
            out.head(
                "ok",
                None,
                f"a configuration exists; {len(dropped)} performance claim"
                f"{'s were' if len(dropped) != 1 else ' was'} dropped",
            )
        else:
            out.head("ok", None, "a configuration exists; every claim holds")
        _profile(out, data)
        for d in dropped:
            out.head(
                "warning", d["code"], f"performance claim `{d['claim']}` was dropped ({d['kind']})"
            )
            out.add(f"  = note: {d['message']}")
            for r in d["rules"]:
                out.add(f"  = via rule {r['id']}: {r['text']}")
                if r.get("why"):
                    out.add(f"    applies: {r['why']}")
            if d["chain"]:
                out.add(f"  = because: {d['chain']}")
            _numbers(out, d["numbers"], "  ")
        for note in data["notes"]:
            out.add(f"  = note: {note}")
    return "\n".join(out.lines) + "\n"


def _profile(out: _Out, data: dict[str, Any]) -> None:
    profile = data.get("profile")
    if profile:
        out.add(f"  = profile: {profile['name']} ({profile['line']})")


def _budget(out: _Out, data: dict[str, Any]) -> None:
    search = data.get("search")
    if search and not search["complete"]:
        why = "its count limit" if search["cut_by"] == "count" else "its time limit"
        out.head(
            "warning",
            "CFG003",
            f"the conflict search stopped at {why} after {search['conflicts_found']} "
            f"conflicts and {search['corrections_found']} corrections; more may exist",
        )
