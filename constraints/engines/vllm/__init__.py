"""vLLM's engine pack."""
