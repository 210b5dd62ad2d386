"""The front door of model facts: `read_model(path or dict)` reads a Hugging Face
`config.json` or an MLC `mlc-chat-config.json` (a path to either, a folder holding one,
or the dict) and hands it to its reader: model.py `read_hf` or mlc.py
`read_mlc_chat_config`. Every caller that takes a model from a user goes through here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .mlc import FILE_NAME, is_mlc_chat_config, read_mlc_chat_config
from .model import HF_FILE_NAME, ModelSpec, load_json, read_hf


def read_model(config: str | Path | Mapping[str, Any]) -> ModelSpec:
    """The facts of a model config, Hugging Face or MLC (a file, a folder or a dict).

    A folder is read through its `config.json`, or through its `mlc-chat-config.json`
    when it holds only that one."""
    name = HF_FILE_NAME
    if not isinstance(config, Mapping) and Path(config).is_dir():
        folder = Path(config)
        if not (folder / HF_FILE_NAME).exists() and (folder / FILE_NAME).exists():
            name = FILE_NAME
    data, source = load_json(config, name)
    if is_mlc_chat_config(data):
        return read_mlc_chat_config(data, source)
    return read_hf(data, source)


__all__ = ["read_model"]
