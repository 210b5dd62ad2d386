"""Field lists of engine releases (`<engine>-<line>.yaml`): every field of a release by
name, type, default, choices and flags, as facts read from the engine's wheel by
`scripts/extract_fields.py`. Loaded by `arbiter.dialects.surface`."""
