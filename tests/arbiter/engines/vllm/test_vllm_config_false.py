"""A YAML `key: false` in `vllm serve --config`, read as each release reads it: vLLM
0.24.0's FlexibleArgumentParser.load_config_file drops every false boolean; 0.33.0's turns
it into `--no-<key>` only where that option string exists for the key as written. The
verdicts are the oracle's (probed with benchmarks/oracle_vllm.py in both venvs; the
corpus cases config-false-* and config-no-key-* record them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.engines.vllm.native import check_vllm

LLAMA = json.loads((Path(__file__).parents[3] / "fixtures/models/llama-3.1-8b.json").read_text())
CHUNKED = "scheduler_config.enable_chunked_context"
REUSE = "kv_cache_config.enable_block_reuse"


def _check(config: dict, profile: str):
    return check_vllm(config, model=LLAMA, device="H100-80GB", profile=profile)


# (profile, key as written, value vLLM ends with): vLLM's defaults are on
CASES = [
    ("vllm-0.24", "enable-chunked-prefill", True),
    ("vllm-0.24", "enable_chunked_prefill", True),
    ("vllm-0.24", "enable-prefix-caching", True),
    ("vllm-0.33", "enable-chunked-prefill", False),
    ("vllm-0.33", "enable_chunked_prefill", True),
    ("vllm-0.33", "enable-prefix-caching", False),
    ("vllm-0.33", "enable_prefix_caching", True),
]


@pytest.mark.parametrize(("profile", "key", "after"), CASES)
def test_a_false_is_read_as_the_release_reads_it(profile, key, after):
    verdict = _check({key: False}, profile)
    assert verdict.verdict == "accept", verdict.reasons
    path = CHUNKED if "chunked" in key else REUSE
    assert verdict.resolution.value(path) is after
    ignored = [w for w in verdict.warnings if "false is ignored" in w]
    if after:  # dropped: said so, with the negation that does turn it off
        assert len(ignored) == 1 and key in ignored[0] and "load_config_file" in ignored[0]
        assert "no-enable-" in ignored[0]
    else:
        assert not ignored


@pytest.mark.parametrize("profile", ["vllm-0.24", "vllm-0.33"])
def test_the_negation_turns_it_off_on_both_lines(profile):
    verdict = _check({"no-enable-chunked-prefill": True, "max-num-batched-tokens": 1024}, profile)
    assert verdict.verdict == "reject"
    assert "vllm.scheduler.budget-holds-model-len-without-chunking" in verdict.rules


def test_a_dropped_false_leaves_the_budget_check_of_chunked_prefill():
    # 0.24 keeps chunked prefill on, so a budget below max_model_len is fine; on 0.33 the
    # dashed key is --no-enable-chunked-prefill and the same budget is refused
    config = {"enable-chunked-prefill": False, "max-num-batched-tokens": 1024}
    assert _check(config, "vllm-0.24").verdict == "accept"
    assert _check(config, "vllm-0.33").verdict == "reject"
