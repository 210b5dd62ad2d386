"""Regenerate the command outputs shown in README.md and docs/: every fenced block right
after a marker line is the real output of the marker's command.

    <!-- output: arbiter check examples/vllm/typos.yaml --dialect vllm (exit 2) -->
    ```text
    ...what the command prints...
    ```

`arbiter ...` runs in-process through typer's CliRunner (the whole `arbiter` command,
`run` included); `python` runs the nearest ```python block above the marker and shows what
it prints. `(exit N)` is the exit code the command gives (omitted for 0). Timings
(`12.3 ms`, `0.4 s`) are compared as `<t>`, so a block does not go stale with the machine.

    python scripts/update_doc_outputs.py          # rewrite every block that differs
    python scripts/update_doc_outputs.py --check  # exit 1 and name the stale blocks

`tests/test_doc_outputs.py` runs every marked command and compares it with its block.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- output: (?P<command>.+?)(?: \(exit (?P<exit>\d+)\))? -->$")
FENCE = re.compile(r"^(```+)(\w*)\s*$")
TIMING = re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b")


@dataclass(frozen=True)
class Block:
    """One marked output block: where it is, its command, and what it shows now."""

    path: Path
    marker_line: int  # 0-based index of the marker line
    command: str
    exit_code: int
    fence: str
    language: str
    shown: str
    end_line: int  # 0-based index of the closing fence

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.marker_line + 1}"


class DocOutputError(ValueError):
    """A marker that is not followed by a fenced block, or a command that cannot run.

    `where` is FILE:LINE of the marker."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(where, reason)
        self.where = where
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The marked output blocks of one Markdown file, in order."""
    return blocks_in_text(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def blocks_in_text(text: str, name: str) -> list[Block]:
    """The marked output blocks of Markdown `text`; `name` is its path from the root."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        match = MARKER.match(line.strip())
        if match is None:
            continue
        where = f"{name}:{i + 1}"
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise DocOutputError(where, "the marker must be followed by a fenced block")
        end = next(
            (j for j in range(i + 2, len(lines)) if lines[j].strip() == fence.group(1)), None
        )
        if end is None:
            raise DocOutputError(where, "the fenced block after the marker is never closed")
        found.append(
            Block(
                path=ROOT / name,
                marker_line=i,
                command=match.group("command").strip(),
                exit_code=int(match.group("exit") or 0),
                fence=fence.group(1),
                language=fence.group(2),
                shown="\n".join(lines[i + 2 : end]),
                end_line=end,
            )
        )
    return found


def preceding_python(block: Block) -> str:
    """The source of the nearest ```python block above `block`'s marker."""
    lines = block.path.read_text(encoding="utf-8").split("\n")[: block.marker_line]
    end = None
    for j in range(len(lines) - 1, -1, -1):
        if lines[j].strip() == "```" and end is None:
            end = j
        elif end is not None and lines[j].strip() == "```python":
            return "\n".join(lines[j + 1 : end])
    raise DocOutputError(block.where, "`python` needs a ```python block above the marker")


def run(block: Block) -> tuple[str, int]:
    """What `block`'s command prints (stdout and stderr as a terminal shows them) and its
    exit code."""
    if block.command == "python":
        return _run_python(preceding_python(block), block.where)
    argv = shlex.split(block.command)
    if not argv or argv[0] != "arbiter":
        raise DocOutputError(block.where, f"{block.command!r}: only `arbiter ...` or `python`")
    # the whole `arbiter` command (the runtime's `run` included) loads only to run one
    from typer.testing import CliRunner

    from engine.cli import app

    previous = Path.cwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(app, argv[1:], prog_name="arbiter", env={"NO_COLOR": "1"})
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise DocOutputError(block.where, f"{block.command!r} raised {result.exception!r}")
    return result.output, result.exit_code


def _run_python(source: str, where: str) -> tuple[str, int]:
    stdout = io.StringIO()
    previous = Path.cwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(stdout):
            exec(compile(source, where, "exec"), {"__name__": "__doc_example__"})
    finally:
        os.chdir(previous)
    return stdout.getvalue(), 0


def normalise(text: str) -> str:
    """Text as compared: trailing spaces and blank lines dropped, timings as `<t>`."""
    lines = [TIMING.sub("<t>", line.rstrip()) for line in text.split("\n")]
    return "\n".join(lines).strip("\n")


def render(text: str, replacements: dict[int, tuple[str, int, Block]]) -> str:
    """`text` with each block at a marker line replaced by its new output and exit code."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replacements:
            output, code, block = replacements[i]
            suffix = f" (exit {code})" if code else ""
            out.append(f"<!-- output: {block.command}{suffix} -->")
            out.append(f"{block.fence}{block.language}")
            out.extend(line.rstrip() for line in output.rstrip("\n").split("\n"))
            out.append(block.fence)
            i = block.end_line + 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale blocks")
    opts = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    stale = []
    for path in documents():
        replacements = {}
        for block in blocks(path):
            output, code = run(block)
            if normalise(output) != normalise(block.shown) or code != block.exit_code:
                stale.append(block.where)
                replacements[block.marker_line] = (output, code, block)
        if replacements and not opts.check:
            path.write_text(render(path.read_text(encoding="utf-8"), replacements), "utf-8")
    for where in stale:
        print(f"{'stale' if opts.check else 'rewrote'} {where}")
    return 1 if stale and opts.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
