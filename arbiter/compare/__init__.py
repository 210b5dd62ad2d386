"""One intent, four engines: an engine-neutral intent mapped onto TensorRT-LLM, vLLM,
SGLang and MLC, each engine's own checker run on it, and the results side by side.

    from arbiter.compare import read_intent, compare
    comparison = compare(read_intent("examples/compare/chat.yaml"), engines="trtllm,mlc")
    print(render(comparison, "text"))
"""

from __future__ import annotations

from .intent import FEATURES, Intent, IntentError, IntentProblem, parse_intent, read_intent
from .mapping import ENGINES, Mapped, native
from .render import FORMATS, render
from .result import Comparison, EngineResult
from .run import compare, parse_engines

__all__ = [
    "ENGINES",
    "FEATURES",
    "FORMATS",
    "Comparison",
    "EngineResult",
    "Intent",
    "IntentError",
    "Mapped",
    "IntentProblem",
    "compare",
    "native",
    "parse_engines",
    "parse_intent",
    "read_intent",
    "render",
]
