"""The `corpus` marker: the runner comparing arbiter's verdict with each engine's.

Until the TensorRT-LLM dialect provides `check_trtllm`, today's agreement is measured, not
required: corpus tests run when asked (`-m corpus`, or ARBITER_CORPUS=1) and are skipped
with that reason otherwise. Once `check_trtllm` exists they run in every suite. The
schema test (`test_schema.py`) always runs.
"""

from __future__ import annotations

import os

import pytest

from .adapter import check_trtllm


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "corpus: arbiter's verdict against the engine's on every corpus case"
    )


def corpus_required(config: pytest.Config) -> bool:
    """Whether corpus tests run: asked for, or the dialect they wait for has landed."""
    asked = "corpus" in (config.getoption("markexpr", "") or "")
    return asked or bool(os.environ.get("ARBITER_CORPUS")) or check_trtllm() is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if corpus_required(config):
        return
    skip = pytest.mark.skip(
        reason="corpus agreement is measured, not yet required: run with -m corpus "
        "(required once arbiter.dialects.trtllm.check_trtllm exists)"
    )
    for item in items:
        if item.get_closest_marker("corpus") is not None:
            item.add_marker(skip)
