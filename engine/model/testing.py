"""Seeded random tiny Hugging Face models for tests and benchmarks (needs transformers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=160,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=False,
    # Wider than the usual 0.02 so logits are well separated and greedy argmax is stable.
    initializer_range=0.1,
)


def make_tiny_model_dir(
    path: str | Path, arch: str = "llama", seed: int = 0, **overrides: Any
) -> Path:
    """Write ``config.json`` and ``model.safetensors`` of a random tiny model to ``path``.

    ``arch`` is ``llama``, ``mistral`` (sliding window 16 unless overridden) or ``qwen2``
    (q/k/v bias). ``overrides`` go to the transformers config. Returns ``path``.
    """
    import torch  # transformers (a test extra) loads only when a tiny model is made
    import transformers

    kinds = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM, {}),
        "mistral": (
            transformers.MistralConfig,
            transformers.MistralForCausalLM,
            {"sliding_window": 16},
        ),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, {}),
    }
    if arch not in kinds:
        raise ValueError(f"arch must be one of {sorted(kinds)}, got {arch!r}")
    config_cls, model_cls, extra = kinds[arch]
    config = config_cls(**{**TINY, **extra, **overrides})
    torch.manual_seed(seed)
    model = model_cls(config).eval()
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m engine.model.testing DIR [--arch A] [--seed N]`: write a tiny model to
    DIR, for `arbiter run DIR -p 1,2,3` (needs transformers, in the dev extra)."""
    import argparse  # only the command line needs it

    parser = argparse.ArgumentParser(
        prog="python -m engine.model.testing",
        description="Write a seeded random tiny Hugging Face model (config.json and"
        " model.safetensors) to DIR.",
    )
    parser.add_argument("dir", type=Path, help="the folder to write (created if missing)")
    parser.add_argument("--arch", default="llama", choices=("llama", "mistral", "qwen2"))
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args(argv)
    try:
        written = make_tiny_model_dir(opts.dir, opts.arch, opts.seed)
    except ImportError as exc:
        parser.exit(
            2,
            f"error: a tiny model needs transformers ({exc.name} is missing):"
            ' pip install -e ".[dev]"\n',
        )
    except OSError as exc:
        parser.exit(2, f"error: {opts.dir}: cannot write: {exc.strerror}\n")
    print(f"wrote {written / 'config.json'} and {written / 'model.safetensors'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
