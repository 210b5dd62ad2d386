"""Detection on every shipped example and every corpus config: it names the dialect the
file lives under, or abstains only where the content cannot tell (every key is a field,
natively spelled, of each dialect it ties), or it is one of the listed cases whose content
belongs elsewhere on purpose (each with its reason)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from arbiter.sources import detect
from arbiter.sources.detect import detect_mapping
from arbiter.sources.vocab_data import vocabularies
from tests.corpus.cases import load_cases

ROOT = Path(__file__).parents[3]
CORPUS = ROOT / "tests" / "corpus"

# case -> (what detection says, why the case lives elsewhere)
ELSEWHERE = {
    "vllm-unknown-key-trtllm-name": (
        "trtllm",
        "its only key is trtllm-serve's --kv_cache_free_gpu_memory_fraction: the case checks "
        "that vLLM refuses a TensorRT-LLM name",
    ),
    "sglang-unknown-vllm-name": (
        "vllm",
        "its only key is vLLM's gpu-memory-utilization: the case checks that SGLang refuses it",
    ),
    "trtllm-main-generation-config-invalid": (
        "vllm",
        "generation_config is a vLLM field and a field of TensorRT-LLM main only, after 1.2",
    ),
    "trtllm-main-generation-config-auto": ("vllm", "as above"),
}
# cases whose only keys are fields of no release arbiter has a list for: nothing to tell
NO_EVIDENCE = {
    "trtllm-1.0-torch-unknown-top-level-key": "invalid_arg, the unit test's junk key",
    "trtllm-1.0-torch-unsupported-option": "unsupported_option, the unit test's junk key",
    "trtllm-trt-unknown-key": "invalid_setting, the unit test's junk key",
    "trtllm-main-checkpoint-io-policy-unknown": "a main-only field after 1.2",
    "trtllm-main-checkpoint-io-policy-striped": "a main-only field after 1.2",
    "trtllm-main-multimodal-graph-and-side-stream": "a main-only field after 1.2",
    "trtllm-main-multimodal-side-stream": "a main-only field after 1.2",
    "trtllm-main-cold-page-kv-compression-nvfp4": "a main-only field after 1.2",
    "trtllm-main-cold-page-kv-compression-fp8": "a main-only field after 1.2",
    "trtllm-main-low-latency-dispatch-not-a-bool": "a main-only field after 1.2",
    "trtllm-main-encoder-graphs-need-encoder-batch": (
        "a main-only field; cuda_graph_config, its closest name, is SGLang's and TensorRT-LLM's"
    ),
    "trtllm-trt-deprecated-pytorch-backend-config": "a field removed before 1.0",
}


def _corpus() -> list[tuple[str, str, dict]]:
    out = []
    for dialect in ("vllm", "sglang"):
        for path in sorted((CORPUS / dialect).glob("*.yaml")):
            case = yaml.safe_load(path.read_text())
            out.append((case["id"], dialect, case["config"]))
    out += [(c.id, c.engine, dict(c.config)) for c in load_cases() if c.config]
    return out


@cache
def detections() -> tuple[tuple[str, str, Any], ...]:
    """(case id, the dialect it lives under, its detection) for every corpus config."""
    return tuple((cid, exp, detect_mapping(cfg)) for cid, exp, cfg in _corpus())


def _examples() -> list[Path]:
    return sorted(
        p
        for d in ("vllm", "sglang", "trtllm", "mlc")
        for p in (ROOT / "examples" / d).rglob("*")
        if p.suffix in (".yaml", ".json") and p.is_file()
    )


def _fits_all(config: dict, dialects: tuple[str, ...]) -> bool:
    vocab = vocabularies()
    return all(
        vocab[d].field_of(key) is not None and vocab[d].is_native(key)
        for key in config
        for d in dialects
    )


def _judge(case_id: str, expected: str, config: dict) -> None:
    found = detect_mapping(config)
    if case_id in ELSEWHERE:
        assert found.dialect == ELSEWHERE[case_id][0], (case_id, found)
        return
    if case_id in NO_EVIDENCE:
        assert found.dialect is None, (case_id, found)
        assert expected in found.candidates or not found.candidates
        return
    if found.dialect is None:
        # an abstention: only a tie that includes the truth, on keys every tied dialect
        # writes the same way
        assert expected in found.candidates, (case_id, found)
        assert _fits_all(config, found.candidates), (case_id, found)
        return
    assert found.dialect == expected, (case_id, str(found))


@pytest.mark.parametrize(("case_id", "expected", "config"), _corpus(), ids=lambda v: str(v)[:60])
def test_corpus_config(case_id: str, expected: str, config: dict) -> None:
    _judge(case_id, expected, config)


def test_corpus_serve_lines_name_their_engine() -> None:
    lines = [(c.id, c.serve_args) for c in load_cases() if c.serve_args]
    assert lines
    for case_id, line in lines:
        found = detect(line)
        assert found.kind == "serve-command"
        assert found.dialect == "trtllm", (case_id, str(found))


@pytest.mark.parametrize("path", _examples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_example(path: Path) -> None:
    found = detect(path)
    expected = path.relative_to(ROOT / "examples").parts[0]
    if path.name == "config.json":
        assert found.kind in ("model", "trtllm-engine"), found
        return
    assert found.kind == "engine-config"
    data = yaml.safe_load(path.read_text())
    _judge(str(path), expected, data)


def test_abstentions_are_few_and_counted() -> None:
    """How often detection cannot tell: printed, and bounded so a regression shows."""
    cases = detections()
    ties = [cid for cid, _, found in cases if found.dialect is None]
    wrong = [
        cid
        for cid, exp, found in cases
        if found.dialect is not None and found.dialect != exp and cid not in ELSEWHERE
    ]
    print(f"{len(cases)} corpus configs: {len(ties)} ties or no evidence, {len(wrong)} wrong")
    assert not wrong
    assert len(ties) <= 29  # 18 ties and 11 without evidence, measured; more is a regression
