"""Every repository path quoted in backticks in `docs/**/*.md` and `CONTRIBUTING.md`
exists, and none names an old import path kept only for callers (a module whose docstring
starts "The old import path"): the docs point at the engine packs, not at the flat
modules they replaced.

A quoted path is a repository path when its first part is an entry of the repository's
root (`arbiter/...`, `constraints/...`, `tests/...`); `<engine>`-style placeholders and
`*` match any name. Upstream paths under the same first parts are listed in EXTERNAL,
and identifiers spelled like paths (SARIF rule ids) in NOT_PATHS."""

from __future__ import annotations

import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "CONTRIBUTING.md"]
QUOTED = re.compile(r"`([^`\s]+)`")
# upstream files whose path starts like one of ours (mistralai/platform-docs-public)
EXTERNAL = ("docs/getting-started/",)
# SARIF rule ids of the report (arbiter/report/sarif.py), not files
NOT_PATHS = {"arbiter/conflict", "arbiter/input-error", "arbiter/warning", "arbiter/engine-change"}
OLD_IMPORT_PATH = '"""The old import path'


def quoted_paths() -> list[tuple[str, int, str]]:
    roots = {p.name for p in ROOT.iterdir() if p.name != ".git"}
    out = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for found in QUOTED.finditer(line):
                text = found.group(1).rstrip(".,;)")
                text = text.split(":")[0]  # `file.py: name`, `file.py:42`
                if "/" not in text or text.split("/")[0] not in roots:
                    continue
                if text in NOT_PATHS or text.startswith(EXTERNAL):
                    continue
                out.append((str(doc.relative_to(ROOT)), number, text))
    return out


def _matches(path: str) -> list[str]:
    pattern = re.sub(r"<[^>]+>", "*", path).rstrip("/")
    return glob.glob(str(ROOT / pattern))


def test_the_docs_quote_repository_paths():
    assert len(quoted_paths()) > 100  # the scan sees the docs' paths


def test_every_quoted_repository_path_exists():
    missing = [f"{doc}:{n}: {p}" for doc, n, p in quoted_paths() if not _matches(p)]
    assert not missing, "\n".join(missing)


def test_no_quoted_path_is_an_old_import_path():
    stale = [
        f"{doc}:{n}: {p}"
        for doc, n, p in quoted_paths()
        for hit in _matches(p)
        if hit.endswith(".py") and Path(hit).read_text().startswith(OLD_IMPORT_PATH)
    ]
    assert not stale, "\n".join(stale)


def test_the_exceptions_are_not_repository_files():
    for path in (*EXTERNAL, *NOT_PATHS):
        assert not (ROOT / path).exists(), path
