"""TensorRT-LLM's front door: LLM-API arguments (`extra_llm_api_options` YAML, keyword
arguments, trtllm-serve's command line) and prebuilt engine folders read into claims,
written back in the same YAML, judged in the engine's words.

The pack's `Dialect` object (`DIALECT`), which the registry imports on first use.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.profiles import Profile

from ...dialects.pack import PackDialect
from ...dialects.protocol import Machine, Reading
from . import native as native
from .judge import refusals


class TrtllmDialect(PackDialect):
    """The TensorRT-LLM dialect (see the package docstring)."""

    name = "trtllm"
    default_profile = "trtllm-1.2"
    reads_engine = True

    def read(
        self,
        source: Any,
        *,
        serve_args: str | None = None,
        machine: Machine,
        profile: str | Profile | None = None,
        engine: Any = None,
    ) -> Reading:
        """`engine`: a prebuilt engine folder, or its config.json as a mapping."""
        if isinstance(engine, Mapping):
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                (folder / "config.json").write_text(json.dumps(dict(engine)))
                parsed = native.read(source, serve_args=serve_args, profile=profile, engine=folder)
        else:
            parsed = native.read(source, serve_args=serve_args, profile=profile, engine=engine)
        given = dict(parsed.native.input)
        release, backend = parsed.native.release, parsed.native.backend
        return Reading(
            self.name,
            parsed.claims,
            parsed.profile,
            machine,
            source=parsed.source,
            mode=parsed.mode,
            given=given,
            carried=dict(parsed.native.reading.carried),
            notes=list(parsed.native.notes),
            refusals=refusals(given, release, backend),
            native=parsed,
        )


DIALECT = TrtllmDialect()

__all__ = ["DIALECT", "TrtllmDialect"]
