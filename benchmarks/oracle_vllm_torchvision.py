"""A stand-in `torchvision` for the vLLM oracle's process only, where the real one cannot load.

vLLM 0.33.0 inspects a target's model class at its configuration stage
(`ModelConfig` -> the model registry). For `Qwen3_5ForConditionalGeneration` that imports
`vllm/model_executor/models/qwen3_5.py` -> `qwen3_vl.py` -> transformers' Qwen2-VL image
processor, whose module does `from torchvision.transforms.v2 import functional` at import
time. The CPU venv has no torchvision that loads against its torch (a torchvision 0.28.0
wheel installed with --no-deps did not register its operators against torch 2.13.0+cpu),
so vLLM reports "Model architectures [...] failed to be inspected" and the Qwen3.5 MTP
cases could not be run.

What the configuration stage checks of such a model (its architecture is known, its
interfaces, `SpeculativeConfig.hf_config_override`'s n_predict) uses no image code: the
import only binds names. The stand-in makes those imports succeed and nothing more: any
attribute of any `torchvision.*` module is a placeholder, and *calling* one raises
`RuntimeError` and appends its name to the file named by `ARBITER_TORCHVISION_STUB_LOG`.
`calls()` reads that file back: the oracle records a non-empty list with the case's
verdict (it would mean the stage did use torchvision, and the verdict is not vLLM's
own). `install()` is called by `benchmarks/oracle_vllm.py` only when `import torchvision`
fails; it puts the stand-in first on `sys.path` and on `PYTHONPATH` (for the registry's
inspection subprocess), in a temporary folder; nothing is installed into the venv.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

LOG_ENV = "ARBITER_TORCHVISION_STUB_LOG"

SOURCE = '''"""Stand-in torchvision written by arbiter's benchmarks/oracle_vllm_torchvision.py."""
import importlib.machinery
import os
import sys
import types

__version__ = "0.0.0+arbiter-stub"


class _Placeholder:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(self._name + "." + attr)

    def __call__(self, *args, **kwargs):
        log = os.environ.get("ARBITER_TORCHVISION_STUB_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write(self._name + "\\n")
        raise RuntimeError("torchvision stand-in: " + self._name + " was called")

    def __mro_entries__(self, bases):
        return (object,)


class _Module(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(self.__name__ + "." + attr)


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Placeholder("torchvision." + attr)
'''


def needed() -> bool:
    """True when the real torchvision is missing or does not import."""
    if importlib.util.find_spec("torchvision") is None:
        return True
    try:
        import torchvision  # noqa: F401
    except Exception:
        return True
    return False


def install() -> Path:
    """Put the stand-in first on sys.path and PYTHONPATH; returns its folder."""
    folder = Path(tempfile.mkdtemp(prefix="arbiter-torchvision-stub-"))
    (folder / "torchvision").mkdir()
    (folder / "torchvision" / "__init__.py").write_text(SOURCE)
    sys.modules.pop("torchvision", None)
    sys.path.insert(0, str(folder))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(folder) + (os.pathsep + old if old else "")
    os.environ[LOG_ENV] = str(folder / "calls.log")
    return folder


def calls() -> list[str]:
    """The stand-in's functions called so far (empty: none), and reset the record."""
    log = os.environ.get(LOG_ENV)
    if not log or not Path(log).exists():
        return []
    names = Path(log).read_text().split()
    Path(log).unlink()
    return names
