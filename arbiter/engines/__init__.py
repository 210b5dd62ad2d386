"""Engine packs, the arbiter side: one folder per engine with the same role names
(`__init__` holds the engine's `Dialect`, `judge` its verdict in the engine's words).
`arbiter.dialects.DIALECTS` registers them; no pack imports another."""
