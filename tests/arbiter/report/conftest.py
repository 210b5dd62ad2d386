"""Real verdicts of the dialects, built once per session for the report tests: an accept
with what vLLM derives, an adjust, a conflict, bad keys, and bad input that raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[3]
LLAMA = ROOT / "tests" / "fixtures" / "models" / "llama-3.1-8b.json"
# a vLLM config with a typo and a bad value, written as a user would (one key a line)
BAD_VLLM = "max-num-seqs: x\nmax-num-batch-tokens: 8192\ntensor-parallel-size: 2\n"
LONG_VLLM = "# too long for the model\nmax-model-len: 262144\nmax-num-seqs: 64\n"


@pytest.fixture(scope="session")
def verdicts() -> dict[str, Any]:
    """name -> (Verdict, dialect, file text)."""
    import yaml

    from arbiter.dialects.sglang import check_sglang
    from arbiter.dialects.vllm import check_vllm

    out: dict[str, Any] = {}
    accept = {"max-num-seqs": 64, "tensor-parallel-size": 2}
    out["accept"] = (
        check_vllm(accept, model=LLAMA, device="H100", gpus=2),
        "vllm",
        yaml.safe_dump(accept),
    )
    out["bad-keys"] = (
        check_vllm(yaml.safe_load(BAD_VLLM), model=LLAMA, device="H100"),
        "vllm",
        BAD_VLLM,
    )
    out["conflict"] = (
        check_vllm(yaml.safe_load(LONG_VLLM), model=LLAMA, device="H100"),
        "vllm",
        LONG_VLLM,
    )
    adjust = "page-size: 64\nattention-backend: fa4\n"
    out["adjust"] = (
        check_sglang(yaml.safe_load(adjust), model=LLAMA, device="B200"),
        "sglang",
        adjust,
    )
    return out
