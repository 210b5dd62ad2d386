"""Shared plans for the plan tests: small lattices priced through the real oracle, built
once per test session (the oracle's database loads once per GPU and engine)."""

from __future__ import annotations

import importlib.util

import pytest

HAS_ORACLE = importlib.util.find_spec("aiconfigurator_core") is not None
needs_oracle = pytest.mark.skipif(
    not HAS_ORACLE,
    reason='the oracle extra is not installed (pip install ".[plan]"); CI installs it',
)

MODEL = "Qwen/Qwen3-32B"
TTFT, TPOT = 2000.0, 40.0


def small_lattice():
    from arbiter.plan import Lattice

    return Lattice(
        batches=tuple(range(4, 129, 4)), budgets=(512, 2048, 4000, 8192), max_pp=2, disagg=False
    )


def small_request(engine: str = "trtllm", **kw):
    from arbiter.plan import PlanRequest

    args = dict(
        model=MODEL, device="2xH200", isl=4000, osl=1000, ttft=TTFT, tpot=TPOT, engine=engine
    )
    args.update(kw)
    args.setdefault("lattice", small_lattice())
    return PlanRequest.make(**args)


_PLANS: dict = {}


def planned(engine: str = "trtllm", **kw):
    """The report of a small plan, cached per session by its arguments."""
    from arbiter.plan import plan_request

    key = (engine, tuple(sorted(kw.items())))
    if key not in _PLANS:
        _PLANS[key] = plan_request(small_request(engine, **kw))
    return _PLANS[key]
