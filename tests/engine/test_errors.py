"""The engine's errors have one root, `EngineError`, and keep the built-in types callers
catch; each carries its exit code and HTTP status, like the arbiter's."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import engine
from arbiter.application import outcome
from engine import errors

ERROR_MODULES = ("engine.errors", "engine.kv.errors", "engine.parallel.errors")
# where each error used to be defined (and stays importable from)
OLD_HOMES = {
    "PoolTooSmall": "engine.pool",
    "ModelConfigError": "engine.model.config",
    "UnsupportedArchitecture": "engine.model.config",
    "CheckpointError": "engine.model.loader",
    "InvalidSamplingParams": "engine.sampling",
    "InvalidPrompt": "engine.front_door",
    "UnknownRequest": "engine.front_door",
    "ModelFolderError": "engine.front_door",
    "RequestRejected": "engine.runtime",
    "RuntimeStalled": "engine.runtime",
    "SchedulerError": "engine.scheduler",
    "InvalidSchedulerConfig": "engine.scheduler",
    "PromptTooLong": "engine.scheduler",
    "MissingSampledToken": "engine.scheduler",
    "DuplicateSequence": "engine.scheduler",
    "UnknownSequence": "engine.scheduler",
}


def _error_classes() -> list[type[BaseException]]:
    found = []
    for name in ERROR_MODULES:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == name:
                found.append(cls)
    from engine.args import InvalidLlmArg  # an arbiter InvalidClaim about llm_args too

    return [*found, InvalidLlmArg]


def test_every_engine_error_has_the_one_root_and_its_answer():
    classes = _error_classes()
    assert len(classes) >= 26
    for cls in classes:
        assert issubclass(cls, errors.EngineError), cls
        assert cls.exit_code in (2, 3) and cls.http_status in (404, 422, 500), cls
        assert isinstance(cls.code, str) and cls.code, cls


@pytest.mark.parametrize("name", sorted(OLD_HOMES))
def test_errors_keep_their_old_import_path_and_builtin_type(name):
    cls = getattr(errors, name)
    assert getattr(importlib.import_module(OLD_HOMES[name]), name) is cls
    builtin = {
        "PoolTooSmall": RuntimeError,
        "RuntimeStalled": RuntimeError,
        "UnknownRequest": KeyError,
    }.get(name, ValueError if "Scheduler" not in cls.__mro__[1].__name__ else Exception)
    if not issubclass(cls, errors.SchedulerError):
        assert issubclass(cls, builtin), (cls, builtin)


def test_engine_exports_its_root():
    assert engine.EngineError is errors.EngineError


def test_bad_input_and_faults_map_apart():
    bad = outcome(errors.PromptTooLong(1, 100, "max_num_tokens", 10))
    assert (bad.exit_code, bad.http_status, bad.code) == (2, 422, "engine_error")
    assert "can never be scheduled" in bad.payload["message"]
    assert bad.payload["limit"] == 10  # the culprit's attributes travel
    fault = outcome(errors.RuntimeStalled(3, 0))
    assert (fault.exit_code, fault.http_status, fault.code) == (3, 500, "internal")


def test_no_error_class_is_defined_outside_the_error_modules():
    root = Path(engine.__file__).parent
    allowed = {root / "errors.py", root / "kv" / "errors.py", root / "parallel" / "errors.py"}
    allowed.add(root / "args.py")  # InvalidLlmArg, an arbiter InvalidClaim (see its docstring)
    stray = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and path not in allowed:
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith(("Error", "Exception")) for b in bases):
                    stray.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert stray == []
