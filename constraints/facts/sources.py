"""Where a model's config is found: `resolve_model(ref)` turns what a user passes (a path to a
`config.json`, a folder holding one, or a Hugging Face id) into a `ResolvedModel` that says
how it was found; `model_of_config(mapping, dialect)` names the model an engine config
itself names.

An id resolves, in order, through:
1. a local folder of that name (a Hugging Face layout, or an MLC folder with
   `mlc-chat-config.json`);
2. the local Hugging Face cache (`HF_HUB_CACHE`, else `HF_HOME`/hub, else
   huggingface_hub's default), read with huggingface_hub's own `try_to_load_from_cache`
   and `scan_cache_dir` (`config.json`, or an MLC build's `mlc-chat-config.json`);
3. the bundled catalog (catalog/: re-authored config keys of the models the project knows);
4. only where the machine is online: `huggingface_hub.hf_hub_download(id, "config.json")`
   (that file only). Offline is `HF_HUB_OFFLINE` or a Hub that does not answer within
   `PROBE_SECONDS`.

Ids match case-insensitively, with and without the organisation; a miss is a
`ModelNotFound` naming what was tried, the catalog's closest names and what to pass instead.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

from . import catalog
from .errors import SpecError
from .mlc import read_mlc_chat_config
from .model import HF_FILE_NAME, MLC_FILE_NAME, ModelSpec, is_mlc_chat_config, read_hf
from .read import read_model

How = Literal["file", "folder", "hf-cache", "catalog", "hub"]
PROBE_SECONDS = 1.5  # how long the Hub may take to accept a connection before "offline"
DOWNLOAD_SECONDS = 10.0  # huggingface_hub's etag_timeout for the one download
_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_TRUE = ("1", "on", "yes", "true")


class ModelNotFound(SpecError):
    """A model reference that names no config: `ref`, what was `tried` (in order), the
    catalog's close `suggestions`, and the `fix` (what to pass instead)."""

    http_status: ClassVar[int] = 404
    code: ClassVar[str] = "model_not_found"

    def __init__(
        self,
        ref: str,
        reason: str,
        *,
        tried: tuple[str, ...] = (),
        suggestions: tuple[str, ...] = (),
        fix: str = "",
    ):
        super().__init__(reason, source=ref, value=ref)
        self.ref, self.tried, self.suggestions, self.fix = ref, tried, suggestions, fix

    def __str__(self) -> str:
        text = f"model {self.ref!r}: {self.reason}"
        if self.tried:
            text += " (tried: " + "; ".join(self.tried) + ")"
        text += "."
        if self.suggestions:
            text += " Did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        if self.fix:
            text += f" {self.fix}."
        return text


class ModelUnavailable(ModelNotFound):
    """A Hugging Face id the Hub knows but will not give (gated, private, no config.json)."""

    http_status: ClassVar[int] = 403
    code: ClassVar[str] = "model_unavailable"


@dataclass(frozen=True)
class ResolvedModel:
    """A model reference resolved: the config file or folder (`path`) or the catalog's
    config (`config`), `how` it was found, and the `label` a report names it by."""

    ref: str
    how: How
    label: str
    path: Path | None = None
    config: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def spec_source(self) -> Path | Mapping[str, Any]:
        """What `read_model` reads: the file or folder, or the catalog's config dict."""
        if self.path is not None:
            return self.path
        assert self.config is not None  # a catalog entry always carries its config
        return self.config

    def read(self) -> ModelSpec:
        """The model's facts (the catalog's named `catalog:<label>` in errors)."""
        if self.path is not None:
            return read_model(self.path)
        assert self.config is not None  # a catalog entry always carries its config
        data = dict(self.config)
        source = f"catalog:{self.label}"
        if is_mlc_chat_config(data):
            return read_mlc_chat_config(data, source)
        return read_hf(data, source)

    def __str__(self) -> str:
        return f"{self.label} ({self.how})"


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache as huggingface_hub finds it, read now (not at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants  # lazy: only ids need huggingface_hub

    return Path(constants.HF_HUB_CACHE)


def _looks_like_path(ref: str) -> bool:
    return (
        ref.endswith(".json")
        or ref.startswith(("/", "./", "../", "~", "\\"))
        or ref.count("/") > 1
        or "\\" in ref
        or not _ID.match(ref)
    )


def _local(ref: str | Path) -> ResolvedModel | None:
    """A file or folder at `ref`; a folder must hold config.json or mlc-chat-config.json."""
    path = Path(ref).expanduser()
    if path.is_file():
        return ResolvedModel(str(ref), "file", str(path), path=path)
    if path.is_dir():
        if (path / HF_FILE_NAME).is_file() or (path / MLC_FILE_NAME).is_file():
            return ResolvedModel(str(ref), "folder", str(path), path=path)
        raise ModelNotFound(
            str(ref),
            f"the folder {path} holds neither {HF_FILE_NAME} nor {MLC_FILE_NAME}",
            fix=f"pass the folder that holds the model's {HF_FILE_NAME}, or the file itself",
        )
    return None


def _same(a: str, b: str) -> bool:
    return a.lower() == b.lower() or a.rsplit("/", 1)[-1].lower() == b.lower()


def _from_cache(ref: str, cache: Path) -> ResolvedModel | None:
    """`config.json` (or, for an MLC build, `mlc-chat-config.json`) of a cached model repo
    whose id is `ref` (any case, org optional): refs/main's snapshot first, else the newest
    snapshot holding the file."""
    # lazy: huggingface_hub is needed only for ids, not for files and folders
    from huggingface_hub import CacheNotFound, scan_cache_dir, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    if not cache.is_dir():
        return None
    try:
        repos = sorted(scan_cache_dir(cache).repos, key=lambda r: r.repo_id)
    except (CacheNotFound, OSError):
        return None
    for repo in repos:
        if repo.repo_type != "model" or not _same(repo.repo_id, ref):
            continue
        revisions = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
        for name in (HF_FILE_NAME, MLC_FILE_NAME):
            try:
                hit = try_to_load_from_cache(repo.repo_id, name, cache_dir=cache)
            except HFValidationError:
                hit = None
            if isinstance(hit, str):
                return ResolvedModel(ref, "hf-cache", repo.repo_id, path=Path(hit))
            for revision in revisions:
                for file in revision.files:
                    if file.file_name == name and file.file_path.parent == revision.snapshot_path:
                        return ResolvedModel(ref, "hf-cache", repo.repo_id, path=file.file_path)
    return None


def _from_catalog(ref: str) -> ResolvedModel | None:
    found = catalog.lookup(ref)
    if found is None:
        return None
    entry, spelled = found
    return ResolvedModel(ref, "catalog", spelled, config=entry.config)


def hub_offline(offline: bool | None = None) -> bool:
    """Whether the Hub is out of reach: `offline` when given, else `HF_HUB_OFFLINE`, else
    (without an HTTPS proxy) whether `HF_ENDPOINT` (huggingface.co) refuses a connection
    within PROBE_SECONDS."""
    if offline is not None:
        return offline
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return True
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return False  # only the proxy reaches out: let the download's own timeout decide
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    reached: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
            reached.append(True)
        except OSError:
            pass

    thread = threading.Thread(target=probe, daemon=True)  # name lookups have no timeout
    thread.start()
    thread.join(PROBE_SECONDS)
    return not reached


def _fix(ref: str) -> str:
    return (
        f"Pass --model PATH/config.json, a catalog name, or fetch the file where the machine "
        f"is online: `hf download {ref} {HF_FILE_NAME}` (huggingface_hub before 1.0: "
        f"`huggingface-cli download {ref} {HF_FILE_NAME}`)"
    )


def _from_hub(ref: str, cache: Path, tried: tuple[str, ...]) -> ResolvedModel:
    """Download the id's `config.json` only; a gated, missing or unreachable one is a
    ModelNotFound / ModelUnavailable naming the id and what to pass instead."""
    # lazy: huggingface_hub is needed only for ids, not for files and folders
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HFValidationError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    tried = (*tried, "the Hugging Face Hub")
    try:
        path = hf_hub_download(ref, HF_FILE_NAME, cache_dir=cache, etag_timeout=DOWNLOAD_SECONDS)
    except GatedRepoError:
        raise ModelUnavailable(
            ref,
            "a gated repository: accept its license on huggingface.co and log in "
            "(`hf auth login`, or HF_TOKEN)",
            tried=tried,
            fix=_fix(ref),
        ) from None
    except (RepositoryNotFoundError, RevisionNotFoundError, HFValidationError):
        raise ModelNotFound(
            ref,
            "no such repository on the Hugging Face Hub (or a private one)",
            tried=tried,
            suggestions=catalog.suggestions(ref),
            fix=_fix(ref),
        ) from None
    except EntryNotFoundError:
        raise ModelUnavailable(
            ref, f"the repository has no {HF_FILE_NAME}", tried=tried, fix=_fix(ref)
        ) from None
    except OSError as exc:
        raise ModelNotFound(
            ref, f"the Hub did not answer ({exc.__class__.__name__})", tried=tried, fix=_fix(ref)
        ) from None
    return ResolvedModel(ref, "hub", ref, path=Path(str(path)))


def resolve_model(
    ref: str | Path, *, offline: bool | None = None, cache_dir: str | Path | None = None
) -> ResolvedModel:
    """Where the model `ref` names is: a file, a folder, the Hugging Face cache, the
    bundled catalog or (online only) the Hub, tried in that order; a ModelNotFound
    naming what was tried and what to pass otherwise."""
    if isinstance(ref, Path):
        local = _local(ref)
        if local is None:
            raise ModelNotFound(
                str(ref),
                "no such file or folder",
                fix="Pass an existing config.json or a folder holding one",
            )
        return local
    if not isinstance(ref, str):
        raise ModelNotFound(
            repr(ref),
            f"expected a path or a Hugging Face id, got {type(ref).__name__}",
            fix="Pass --model PATH/config.json, a folder, a catalog name or ORG/NAME",
        )
    ref = ref.strip()
    if not ref:
        raise ModelNotFound(ref, "an empty model reference", fix=_fix("ORG/NAME"))
    local = _local(ref)
    if local is not None:
        return local
    if _looks_like_path(ref):
        raise ModelNotFound(
            ref,
            "no such file or folder (and not a Hugging Face id or a catalog name)",
            suggestions=catalog.suggestions(ref),
            fix="Pass an existing config.json, a folder holding one, a catalog name or a "
            "Hugging Face id (ORG/NAME)",
        )
    cache = Path(cache_dir).expanduser() if cache_dir is not None else hf_cache_dir()
    tried: tuple[str, ...] = (f"no folder ./{ref}", f"not in the Hugging Face cache {cache}")
    found = _from_cache(ref, cache) or _from_catalog(ref)
    if found is not None:
        return found
    tried = (*tried, "not in the bundled catalog")
    if "/" not in ref:
        raise ModelNotFound(
            ref,
            "no model of that name, and without an organisation it is no Hugging Face id",
            tried=tried,
            suggestions=catalog.suggestions(ref),
            fix=_fix(f"ORG/{ref}"),
        )
    if hub_offline(offline):
        raise ModelNotFound(
            ref,
            "not found locally, and the machine is offline (HF_HUB_OFFLINE, or the Hub "
            "does not answer)",
            tried=tried,
            suggestions=catalog.suggestions(ref),
            fix=_fix(ref),
        )
    return _from_hub(ref, cache, tried)


# ---------------------------------------------------------------------------- engine configs
# Which keys of an engine's own config name its model, in the order the engine prefers them,
# each with where the engine reads it.
MODEL_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "vllm": (
        # vllm/entrypoints/cli/serve.py ServeSubcommand.cmd: the positional `vllm serve
        # MODEL` (dest `model_tag`) wins over `model`; vllm/config/model.py ModelConfig.model
        # (`--model`, the `model:` key of a `--config` YAML; arbiter/engines/vllm/fields-0.33.yaml)
        ("model_tag", "vllm serve MODEL (the positional)"),
        ("model", "ModelConfig.model (--model)"),
    ),
    "sglang": (
        # python/sglang/srt/server_args.py ServerArgs.model_path, flags `--model-path` and
        # `--model` (arbiter/engines/sglang/fields-0.5.yaml, sglang 0.5.23); a `--config`
        # YAML spells it either way
        ("model_path", "ServerArgs.model_path (--model-path)"),
        ("model-path", "ServerArgs.model_path (--model-path)"),
        ("model", "ServerArgs.model_path (--model)"),
    ),
    "trtllm": (
        # tensorrt_llm/llmapi/llm_args.py BaseLlmArgs.model, the positional `trtllm-serve
        # MODEL` (tensorrt_llm/commands/serve.py; arbiter/engines/trtllm/fields-1.2.yaml);
        # the examples' runners take `--hf_model_dir` / `--model_dir` (examples/summarize.py),
        # trtllm-build a TensorRT-LLM checkpoint folder `--checkpoint_dir`
        # (tensorrt_llm/commands/build.py; not a Hugging Face layout)
        ("model", "LlmArgs.model (trtllm-serve MODEL)"),
        ("model_dir", "--model_dir"),
        ("hf_model_dir", "--hf_model_dir"),
        ("checkpoint_dir", "trtllm-build --checkpoint_dir"),
    ),
    "mlc": (
        # python/mlc_llm/serve/config.py EngineConfig.model (the positional `mlc_llm serve
        # MODEL`: a folder with mlc-chat-config.json or an HF:// id)
        ("model", "EngineConfig.model (mlc_llm serve MODEL)"),
    ),
}


def model_of_config(mapping: Mapping[str, Any], dialect: str) -> str | None:
    """The model an engine config names itself (`model:`, `model_path`, `model_dir` ...),
    None when it names none; a SpecError for a dialect with no known keys."""
    keys = MODEL_KEYS.get(dialect)
    if keys is None:
        raise SpecError(
            f"no model keys known for dialect {dialect!r} (known: {', '.join(MODEL_KEYS)})",
            source="model_of_config",
            value=dialect,
        )
    for key, _where in keys:
        value = mapping.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


__all__ = [
    "MODEL_KEYS",
    "ModelNotFound",
    "ModelUnavailable",
    "ResolvedModel",
    "hf_cache_dir",
    "hub_offline",
    "model_of_config",
    "resolve_model",
]
