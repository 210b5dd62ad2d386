"""SGLang's engine pack."""
