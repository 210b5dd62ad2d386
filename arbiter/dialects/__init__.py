"""Dialects: foreign configuration surfaces <-> claims and resolutions.

`trtllm`: TensorRT-LLM `LlmArgs` keyword arguments, `extra_llm_api_options` YAML, and
prebuilt engine folders. `mlc`: MLC LLM's serving `EngineConfig` JSON. `sglang`: SGLang's
`ServerArgs` fields (`--config` YAML and launch command lines). Each reads into a
`DialectInput` (claims plus the profile and mode to arbitrate with) and writes a
resolution back in its own shape.
"""

from __future__ import annotations

from ._base import DialectError, DialectInput, Verdict, machine_claims

__all__ = ["DialectError", "DialectInput", "Verdict", "machine_claims"]
