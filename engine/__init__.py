"""The runtime that a solved EngineConfig drives: paged KV cache, scheduler, kernels, model."""
