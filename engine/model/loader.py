"""Load a local Hugging Face model folder (``config.json`` + ``*.safetensors``).

The folder is checked first (``engine.front_door.check_model_folder``): a corrupt file
(truncated or empty safetensors, a forged header length, config.json that is not an object
or holds strings for numbers, a garbage tokenizer.json) raises one ``ModelFolderError``
naming the file.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open

from engine.kernels import AttentionBackend

# the errors live in engine.errors; importable from here as before
from ..errors import CheckpointError as CheckpointError
from ..front_door import check_model_folder
from .config import ModelArgs
from .llama import LlamaForCausalLM

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)  # older checkpoints saved this buffer


def _resolve_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPES.values():
            raise ValueError(f"dtype {dtype} not supported (use one of {sorted(DTYPES)})")
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} not supported (use one of {sorted(DTYPES)})")
    return DTYPES[dtype]


def hf_to_ours(name: str) -> str | None:
    """Map a checkpoint tensor name to our parameter name (None = ignore it).

    Our modules reuse the HF names, so the map is the identity apart from dropped buffers.
    """
    if name.endswith(_IGNORED_SUFFIXES):
        return None
    return name


def load_model(
    model_dir: str | Path,
    dtype: torch.dtype | str = torch.float32,
    device: str | torch.device = "cpu",
    backend: AttentionBackend | None = None,
    args: ModelArgs | None = None,
) -> LlamaForCausalLM:
    """Build the model from ``model_dir/config.json`` and fill it from its safetensors.
    `args`: the folder as already checked and read by the caller (`engine.LLM`'s front
    door), so it is not read again."""
    model_dir = Path(model_dir)
    target = _resolve_dtype(dtype)
    if args is None:
        # a corrupt file raises one ModelFolderError naming it
        args = check_model_folder(model_dir)
    with torch.device("meta"):
        model = LlamaForCausalLM(args, backend)
    model = model.to_empty(device=device).to(target)
    model.tie_weights()
    load_weights(model, model_dir)
    return model.eval()


def load_weights(model: LlamaForCausalLM, model_dir: str | Path) -> None:
    """Copy every tensor of ``model_dir/*.safetensors`` into ``model`` (casting dtype)."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"no *.safetensors file in {model_dir}")
    params = dict(model.named_parameters())  # tied weights appear once, under the first name
    tied = model.args.tie_word_embeddings
    loaded: set[str] = set()
    unexpected: list[str] = []
    with torch.no_grad():
        for file in files:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                    ours = hf_to_ours(name)
                    if ours is None:
                        continue
                    if tied and ours == "lm_head.weight":
                        continue  # the head shares the embedding
                    if ours not in params:
                        unexpected.append(name)
                        continue
                    tensor = f.get_tensor(name)
                    param = params[ours]
                    if tuple(tensor.shape) != tuple(param.shape):
                        raise CheckpointError(
                            f"{name}: checkpoint shape {tuple(tensor.shape)} != "
                            f"model shape {tuple(param.shape)}"
                        )
                    param.copy_(tensor.to(dtype=param.dtype))
                    loaded.add(ours)
    missing = sorted(set(params) - loaded)
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing tensors: {', '.join(missing)}")
        if unexpected:
            parts.append(f"unexpected tensors: {', '.join(sorted(unexpected))}")
        raise CheckpointError("; ".join(parts), missing, sorted(unexpected))
