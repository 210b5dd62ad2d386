"""TensorRT-LLM's rules, one module per topic; every rule here is scoped to trtllm unless
it narrows its own scope (a backend, a release range). A new module exporting `RULES` is
found without registering it; `ORDER` only fixes the order of the existing ones."""

from __future__ import annotations

ORDER = (
    "attention",
    "kv_cache",
    "build",
    "scheduler",
    "speculative",
    "quantization",
    "device",
    "plugin",
    "runtime",
    "model",
    "torch_llm_args",
)
