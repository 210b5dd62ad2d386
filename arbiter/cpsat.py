"""OR-Tools' CP-SAT Python API, imported without paying for pandas.

`ortools.sat.python.cp_model` (OR-Tools 9.10 to 9.15 at least) runs `import pandas as pd`
at module level, for its `*_series` builders only (`new_int_var_series`,
`new_bool_var_series`, the interval series); the rest of the API never touches pandas.
Importing pandas (and pyarrow behind it) costs about 0.2-0.5 s of CPU, a large share of
`arbiter check`. So, when pandas is not imported yet, `cp_model` is imported against a
placeholder `pandas` holding only the two names it reads at import time (`Index`,
`Series`, for a type alias), the placeholder is taken out of `sys.modules` at once, and
the module's `pd` becomes a proxy that imports the real pandas on first use. A series
builder called later therefore gets real pandas; no one else ever sees the placeholder.

Any surprise (a release reading more of pandas at import time) falls back to the plain
import, so the cost is the only thing that can change. Import CP-SAT from here:
`from arbiter.cpsat import cp_model, cp_model_helper`.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["cp_model", "cp_model_helper"]

_MODULE = "ortools.sat.python.cp_model"


class _RealPandas:
    """Stands for `pandas` inside `cp_model`: imports it on the first attribute read."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("pandas"), name)


def _placeholder() -> types.ModuleType:
    stub = types.ModuleType("pandas", "import-time placeholder (arbiter.cpsat)")
    stub.Index = type("Index", (), {})  # type: ignore[attr-defined]
    stub.Series = type("Series", (), {})  # type: ignore[attr-defined]
    return stub


def _import_without_pandas() -> None:
    if _MODULE in sys.modules or "pandas" in sys.modules:
        return
    stub = _placeholder()
    sys.modules["pandas"] = stub
    try:
        module = importlib.import_module(_MODULE)
    except Exception:  # noqa: BLE001 - any surprise: the plain import below decides
        sys.modules.pop(_MODULE, None)
        return
    finally:
        if sys.modules.get("pandas") is stub:
            del sys.modules["pandas"]
    module.pd = _RealPandas()  # type: ignore[attr-defined]


_import_without_pandas()

from ortools.sat.python import cp_model, cp_model_helper  # noqa: E402
