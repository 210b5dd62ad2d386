"""TensorRT-LLM's engine pack."""
