"""The option surfaces of this engine's profiles (generated)."""
