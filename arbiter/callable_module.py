"""A package attribute that is both a submodule and its main function (`arbiter.check`,
`arbiter.plan`): the submodule's class is made callable, so the name works as a call
whether it holds the function or, once the submodule is imported, the module."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any


def make_callable(module_name: str, function: Callable[..., Any]) -> None:
    """Calling the module `module_name` calls `function`."""

    class CallableModule(types.ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

    CallableModule.__doc__ = f"The module {module_name}; calling it runs {function.__name__}."
    sys.modules[module_name].__class__ = CallableModule
