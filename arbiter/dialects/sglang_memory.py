"""The old import path of `arbiter.engines.sglang.memory` (callers outside arbiter still use it):
this name is that module, not a copy, so what is set on one is set on the other."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..engines.sglang import memory as _moved

if TYPE_CHECKING:  # what the checker sees under the old name
    from ..engines.sglang.memory import *  # noqa: F403

sys.modules[__name__] = _moved
