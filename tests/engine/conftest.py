"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Tiny matrices: one intra-op thread beats threads fighting over shared cores (the
    module's tests run with it, torch's setting restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
