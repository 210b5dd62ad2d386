"""What the runtime checks at its front door, before a request or a model folder is used.

- `check_prompt`: a prompt is a non-empty list of integer token ids inside the model's
  vocabulary; a bad one raises `InvalidPrompt` at `add_request`, so it never reaches the
  step loop that other requests share.
- `UnknownRequest`: `abort`/`release` of an id the runtime never gave out.
- `check_model_folder`: `config.json`, `generation_config.json`, `tokenizer.json` and every
  `*.safetensors` file are read and checked (size, UTF-8, JSON shape, safetensors header
  length and tensor offsets) so a corrupt folder raises one `ModelFolderError` naming the
  file and what is wrong, instead of a traceback from deep inside a loader.
"""

from __future__ import annotations

import json
import math
import numbers
import struct
from pathlib import Path
from typing import Any

# the errors live in engine.errors; importable from here as before
from .errors import InvalidPrompt as InvalidPrompt
from .errors import ModelConfigError as ModelConfigError
from .errors import ModelFolderError as ModelFolderError
from .errors import UnknownRequest as UnknownRequest

MAX_PROMPT_TOKENS = 1 << 24
MAX_JSON_BYTES = 64 << 20  # config.json, generation_config.json, tokenizer.json
MAX_SAFETENSORS_HEADER = 100 << 20  # the safetensors format's own limit on its header
_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2, "F16": 2,
    "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8,
}  # fmt: skip


def check_prompt(prompt: Any, vocab_size: int, index: int | None = None) -> list[int]:
    """The prompt as a list of ints, or InvalidPrompt (type, emptiness, vocabulary)."""
    if prompt is None or isinstance(prompt, (str, bytes, dict)):
        raise InvalidPrompt(
            f"expected a list of token ids, got {type(prompt).__name__}", value=prompt, index=index
        )
    try:
        tokens = list(prompt)
    except TypeError:
        raise InvalidPrompt(
            f"expected a list of token ids, got {type(prompt).__name__}", value=prompt, index=index
        ) from None
    if not tokens:
        raise InvalidPrompt("a prompt needs at least one token", index=index)
    if len(tokens) > MAX_PROMPT_TOKENS:
        raise InvalidPrompt(f"more than {MAX_PROMPT_TOKENS} tokens", index=index)
    out: list[int] = []
    for i, token in enumerate(tokens):
        if isinstance(token, bool) or not isinstance(token, numbers.Integral):
            raise InvalidPrompt(
                f"token ids are integers, got {type(token).__name__}",
                value=token,
                index=index,
                position=i,
            )
        if not 0 <= token < vocab_size:
            raise InvalidPrompt(
                f"token id {int(token)} is outside the vocabulary [0, {vocab_size})",
                value=int(token),
                index=index,
                position=i,
            )
        out.append(int(token))
    return out


# ------------------------------------------------------------------ model folders
def _read_json(path: Path) -> Any:
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise ModelFolderError(path, f"{size} bytes, over the limit of {MAX_JSON_BYTES}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFolderError(path, f"not UTF-8 text (offset {exc.start})") from None

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a valid JSON number")

    try:
        return json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise ModelFolderError(path, "nested too deeply") from None
    except ValueError as exc:
        raise ModelFolderError(path, f"not valid JSON: {exc}") from None


def check_config(path: Path) -> dict[str, Any]:
    """`config.json` as a dict, its model shape checked (`ModelArgs` reads it)."""
    return read_config(path)[0]


def read_config(path: Path) -> tuple[dict[str, Any], Any]:
    """`config.json` as a dict and the `ModelArgs` read from it, its shape checked."""
    # engine.model imports its loader, which imports this module: read it when called
    from .model.config import ModelArgs

    data = _read_json(path)
    if not isinstance(data, dict):
        raise ModelFolderError(path, f"expected a JSON object, got {type(data).__name__}")
    try:
        args = ModelArgs.from_hf(data)
    except ModelConfigError as exc:
        raise ModelFolderError(path, str(exc)) from None
    except (TypeError, ValueError, ArithmeticError, KeyError, AttributeError) as exc:
        raise ModelFolderError(path, f"a value has the wrong type or range ({exc})") from None
    check_eos(path, data)
    for key in ("rms_norm_eps", "rope_theta"):
        value = data.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            raise ModelFolderError(path, f"{key} must be a positive number, got {value!r}")
    return data, args


def check_eos(path: Path, data: dict[str, Any]) -> None:
    """`eos_token_id` is absent, null, a token id or a list of token ids."""
    value = data.get("eos_token_id")
    items = value if isinstance(value, list) else [value]
    for item in items:
        if item is not None and (isinstance(item, bool) or not isinstance(item, int) or item < 0):
            raise ModelFolderError(path, f"eos_token_id must be token ids, got {value!r}")


def check_safetensors(path: Path) -> None:
    """The header of one safetensors file: its length, JSON, and every tensor's byte range
    inside the file (a truncated file or a forged header is caught here)."""
    size = path.stat().st_size
    if size < 8:
        raise ModelFolderError(path, f"{size} bytes: too short to be a safetensors file")
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > MAX_SAFETENSORS_HEADER or length > size - 8:
            raise ModelFolderError(
                path,
                f"header length {length} exceeds the file ({size} bytes) or the format's "
                f"limit of {MAX_SAFETENSORS_HEADER} bytes",
            )
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ModelFolderError(path, "the header is not valid JSON") from None
    if not isinstance(header, dict):
        raise ModelFolderError(path, "the header is not a JSON object")
    data_bytes = size - 8 - length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
            count = math.prod(int(d) for d in shape)
            need = count * _DTYPE_BYTES[dtype]
        except (KeyError, TypeError, ValueError):
            raise ModelFolderError(path, f"tensor {name!r}: malformed header entry") from None
        if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end):
            raise ModelFolderError(path, f"tensor {name!r}: bad data offsets {begin}, {end}")
        if end > data_bytes:
            raise ModelFolderError(
                path, f"tensor {name!r} ends at byte {end} of {data_bytes}: the file is truncated"
            )
        if end - begin != need:
            raise ModelFolderError(
                path, f"tensor {name!r}: {end - begin} bytes for {dtype} {shape} ({need} needed)"
            )


def check_tokenizer(path: Path) -> Any:
    """`tokenizer.json` loaded with `tokenizers`; a garbage file names itself."""
    _read_json(path)
    from tokenizers import Tokenizer  # tokenizers is optional: only text prompts need it

    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the tokenizers library raises bare Exception
        raise ModelFolderError(
            path, f"not a tokenizer the tokenizers library can read ({exc})"
        ) from None


def check_model_folder(model_dir: str | Path) -> Any:
    """Check every file the runtime will read from `model_dir` (see the module docstring);
    the `ModelArgs` its config.json was checked with (read once: the caller keeps them)."""
    folder = Path(model_dir)
    if not folder.is_dir():
        raise ModelFolderError(folder, "not a folder")
    config = folder / "config.json"
    if not config.is_file():
        raise ModelFolderError(config, "missing")
    _, args = read_config(config)
    generation = folder / "generation_config.json"
    if generation.is_file():
        data = _read_json(generation)
        if not isinstance(data, dict):
            raise ModelFolderError(generation, "expected a JSON object")
        check_eos(generation, data)
    for file in sorted(folder.glob("*.safetensors")):  # none at all: the loader says so
        check_safetensors(file)
    tokenizer = folder / "tokenizer.json"
    if tokenizer.is_file():
        check_tokenizer(tokenizer)
    return args
