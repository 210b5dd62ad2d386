"""SGLang's rules by topic: the server arguments' checks (`sglang`), the attention-backend
choice (`backend`), per-model overrides (`models`), the 4-bit KV cache (`kv4`) and the
data-parallel replicas (`parallel`). A module
here exporting `RULES` is found without registering it; rules that leave their scope open
get SGLang's (`SCOPE`); `release_0_5_16` holds SGLang 0.5.16's own forms where its code
differs (the audit of the 0.5.23 rules against 0.5.16: `_releases`); `release_values` the
closed-set values one release line has and another lacks."""

from __future__ import annotations

from constraints.rules.base import Scope

SCOPE = Scope(engine="sglang", since="0.5")
ORDER = (
    "sglang",
    "backend",
    "models",
    "kv4",
    "deterministic",
    "parallel",
    "release_0_5_16",
    "release_values",
)
