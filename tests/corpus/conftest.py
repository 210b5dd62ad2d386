"""The `corpus` marker: the runner comparing arbiter's verdict with each engine's.

The corpus tests run in every suite (`python -m pytest`); `-m corpus` selects them alone.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "corpus: arbiter's verdict against the engine's on every corpus case"
    )
