"""MLC LLM's engine pack."""
