"""SGLang's rules by topic: the server arguments' checks (`sglang`), the attention-backend
choice (`backend`), per-model overrides (`models`), the 4-bit KV cache (`kv4`) and the
data-parallel replicas (`parallel`). A module
here exporting `RULES` is found without registering it; rules that leave their scope open
get SGLang's (`SCOPE`)."""

from __future__ import annotations

from constraints.rules.base import Scope

SCOPE = Scope(engine="sglang", since="0.5")
ORDER = ("sglang", "backend", "models", "kv4", "deterministic", "parallel")
