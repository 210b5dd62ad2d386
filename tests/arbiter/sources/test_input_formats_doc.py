"""docs/input-formats.md: every Python block runs as written, and the corpus figures it
states are the ones measured now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_detect_corpus import detections

DOC = Path(__file__).parents[3] / "docs" / "input-formats.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_python_block_runs(code: str) -> None:
    exec(compile(code, str(DOC), "exec"), {})


def test_the_stated_corpus_figures() -> None:
    cases = detections()
    found = [d for _, _, d in cases]
    ties = sum(1 for d in found if d.dialect is None and len(d.candidates) > 1)
    none = sum(1 for d in found if d.dialect is None and len(d.candidates) <= 1)
    text = DOC.read_text()
    assert f"{len(cases)} corpus configs it is {ties} ties, {none} configs" in " ".join(
        text.split()
    )
