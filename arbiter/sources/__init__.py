"""Knowing what arbiter was given: dialect detection, serve command lines, Kubernetes
manifests, and the line of every key (for SARIF and input errors).

- `detect(source) -> Detection`: the dialect of a config mapping, YAML/JSON text, command
  line or file, or the other kind of file it is (claims, intent, grid, model config);
  `mismatch_message`, `command_message` and `dialect_hint` say it in a sentence.
- `read_manifest(text) -> list[Workload]`: the engine servers a manifest's containers
  start, with their arguments, model, GPU counts, engine variables and lines.
- `find_serve_command(words) -> ServeCommand | None`: the launcher of a command line.
- `key_lines(text) -> {path: line}`.
- `targets(text, dialect=, source=) -> (Detection, [Target])`: what `arbiter check` is to
  check in a file, or a `SourceError` that names the fix.
"""

from __future__ import annotations

from .command import ServeCommand, find_serve_command
from .detect import Detection, command_message, detect, dialect_hint, mismatch_message
from .lines import key_lines, line_of
from .manifest import Manifest, ManifestError, Workload, read_manifest, scan_manifest
from .targets import SourceError, Target, config_model, targets

__all__ = [
    "Detection",
    "Manifest",
    "ManifestError",
    "ServeCommand",
    "SourceError",
    "Target",
    "Workload",
    "command_message",
    "config_model",
    "detect",
    "dialect_hint",
    "find_serve_command",
    "key_lines",
    "line_of",
    "mismatch_message",
    "read_manifest",
    "scan_manifest",
    "targets",
]
