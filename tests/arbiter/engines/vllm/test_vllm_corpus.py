"""check_vllm against vLLM 0.33.0's own verdict on every case of tests/corpus/vllm.

Each case is checked with the inputs the recorded verdict was computed from
(benchmarks/oracle_vllm.py): the oracle's local model config (`oracle_common.MODELS`,
whose `oracle_model` stands Llama-3.1-8B in for a model it has no config of: the recipes
for gpt-oss-120b, Llama-4-Scout and Llama-3.3-70B-FP8, whose verdicts hang on the
arguments), the case's device and GPU count; a draft model it names is its local
config.json folder, as the oracle passes it. Agreement is on accept / adjust / reject;
`KNOWN_DIFFERENCES` lists any case where arbiter knowingly differs, with the sourced
reason (empty: every case agrees), and such a case fails once it agrees.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import pytest
import yaml

from arbiter.engines.vllm.native import check_vllm

ROOT = Path(__file__).resolve().parents[4]
CASES = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "tests/corpus/vllm").glob("*.yaml"))]
KNOWN_DIFFERENCES: dict[str, str] = {}


def _oracle_common():
    spec = importlib.util.spec_from_file_location(
        "oracle_common", ROOT / "benchmarks" / "oracle_common.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ORACLE = _oracle_common()
# this run's own folder of draft configs (the oracle rewrites those of its default root)
DRAFTS = Path(tempfile.mkdtemp(prefix="arbiter-vllm-drafts-"))


def _config(case: dict) -> dict:
    """The case's arguments as the oracle ran them: a draft model named in MODELS is a
    local config.json folder (vLLM and arbiter read its vocabulary there)."""
    config = dict(case["config"])
    spec = config.get("speculative-config")
    if isinstance(spec, dict) and spec.get("model") in ORACLE.MODELS:
        folder = ORACLE.model_folder(spec["model"], DRAFTS)
        config["speculative-config"] = {**spec, "model": str(folder)}
    return config


_VERDICTS: dict = {}


def _verdict(case: dict):
    """The case's verdict, checked once per session (two tests read each refusal)."""
    if case["id"] not in _VERDICTS:
        model = ORACLE.MODELS[ORACLE.oracle_model(case)]
        _VERDICTS[case["id"]] = check_vllm(
            _config(case),
            model=model,
            device=case["device"],
            gpus=case["gpus"],
            profile=case["profile"],
        )
    return _VERDICTS[case["id"]]


def _param(case: dict):
    """A case marked `slow: true` is extra coverage of a rule another case already proves
    (a refusal costs 1-2 s of explanation): it runs with -m slow."""
    return pytest.param(case, id=case["id"], marks=pytest.mark.slow if case.get("slow") else ())


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_check_vllm_gives_vllms_verdict(case):
    ours = _verdict(case)
    if case["id"] in KNOWN_DIFFERENCES:
        assert ours.verdict != case["verdict"], f"{case['id']} agrees now: remove it"
        return
    assert ours.verdict == case["verdict"], (
        f"vLLM: {case['verdict']} ({case.get('reject') or case['why']}); "
        f"arbiter: {ours.verdict}: {'; '.join(ours.reasons or ours.changes)}"
    )
    if ours.verdict == "reject":
        assert ours.reasons, "a refusal names its reason"
    for name, after in (case.get("adjust") or {}).items():
        assert any(c.startswith(f"{name}: ") and f"-> {after}," in c for c in ours.changes), (
            name,
            ours.changes,
        )


# the rule behind vLLM's refusal, where one rule of the pack states it
REFUSED_BY = {
    "vllm-active-seqs-above-seqs": "vllm.scheduler.active-seqs-within-seqs",
    "vllm-budget-below-len-no-chunking": "vllm.scheduler.budget-holds-model-len-without-chunking",
    "vllm-budget-below-seqs": "vllm.scheduler.budget-holds-seqs",
    "vllm-dcp-tp-not-above-kv-heads": "vllm.parallel.dcp-within-kv-heads",
    "vllm-draft-tp-not-one-or-target": "vllm.spec.draft-tp-one-or-target",
    "vllm-eplb-without-ep": "vllm.parallel.eplb-needs-expert-parallel",
    "vllm-long-prefill-threshold-above-len": "vllm.scheduler.long-prefill-within-model-len",
    "vllm-lora-cpu-below-gpu": "vllm.lora.cpu-cache-holds-batch",
    "vllm-lora-spec-budget": "vllm.lora.budget-holds-speculative-tokens",
    "vllm-max-model-len-above-model": "vllm.model.len-within-positions",
    "vllm-ngram-bounds-inverted": "vllm.spec.ngram-bounds",
    "vllm-numa-nodes-without-bind": "vllm.parallel.numa-lists-need-bind",
    "vllm-redundant-experts-without-eplb": "vllm.parallel.redundant-experts-need-eplb",
    "vllm-tp-not-dividing-heads": "parallel.heads-divisible-by-tp",
    "vllm-ep-dense-model": "vllm.parallel.expert-parallel-needs-moe",
    "vllm-dcp-pcp-neither": "vllm.parallel.dcp-with-pcp",
    "vllm-eagle3-target-unsupported": "vllm.spec.eagle3-target-supported",
    "vllm-mtp-tokens-not-multiple": "vllm.spec.mtp-tokens-multiple-of-layers",
    "vllm-mtp-tokens-not-given": "vllm.spec.tokens-given",
    "vllm-encdec-chunked-prefill-budget": "vllm.scheduler.budget-holds-model-len-without-chunking",
    "vllm-mtp-target-without-mtp": "vllm.spec.mtp-target-supported",
    "vllm-pcp-dbo-falls-back-to-v1": "vllm.parallel.pcp-needs-model-runner-v2",
    "vllm-pcp-parallel-drafting-falls-back-to-v1": "vllm.parallel.pcp-needs-model-runner-v2",
    "vllm-draft-model-vocab-differs": "vllm.spec.draft-vocab-matches-target",
    "vllm-heterogeneous-vocab-ngram": "vllm.spec.heterogeneous-vocab-needs-draft-model",
    "vllm-heterogeneous-vocab-probabilistic": "vllm.spec.heterogeneous-vocab-greedy",
    "vllm-heterogeneous-vocab-local-argmax": "vllm.spec.heterogeneous-vocab-full-logits",
    "vllm-pcp-heterogeneous-vocab-falls-back-to-v1": "vllm.parallel.pcp-needs-model-runner-v2",
    "vllm-qwen3.5-mtp-text-config-not-multiple": "vllm.spec.mtp-tokens-multiple-of-layers",
    "vllm-mamba-block-size-without-prefix-caching": (
        "vllm.cache.mamba-block-size-needs-prefix-caching"
    ),
    "vllm-async-pp-heterogeneous-vocab-v1": "vllm.runner.v1-async-without-pp",
    "vllm-async-padded-drafter-v1": "vllm.runner.v1-async-padded-drafter-batch",
    "vllm-v1-adaptive-verification": "vllm.runner.v1-no-adaptive-verification",
    "vllm-v1-batch-sharded-sampling": "vllm.runner.v1-no-batch-sharded-sampling",
    "vllm-v1-draft-lm-head-quantization": "vllm.runner.v1-no-draft-lm-head-quantization",
    "vllm-draft-lm-head-quantization-draft-model": "vllm.spec.draft-lm-head-quantization-methods",
    "vllm-batch-sharded-sampling-tp1": "vllm.parallel.batch-sharded-sampling-needs-tp",
    "vllm-adaptive-verification-lora": "vllm.spec.adaptive-verification-without-lora",
    "vllm-quant-awq-no-config": "vllm.quant.offline-needs-checkpoint-config",
    "vllm-quant-mismatch-checkpoint": "vllm.quant.matches-checkpoint",
    "vllm-quant-online-on-fp8-checkpoint": "vllm.quant.matches-checkpoint",
    "vllm-device-bfloat16-on-volta": "vllm.device.bfloat16-needs-ampere",
    "vllm-quant-fp8-checkpoint-on-volta": "vllm.quant.checkpoint-min-capability",
    "vllm-quant-nvfp4-checkpoint-on-volta": "vllm.quant.checkpoint-min-capability",
    "vllm-block-fp8-moe-tp8": "vllm.quant.block-fp8-moe-shards-whole-blocks",
    "vllm-qwen3-coder-480b-fp8-dp8-ep-full-context": "memory.fits-one-sequence",
}
SLOW = {c["id"] for c in CASES if c.get("slow")}


@pytest.mark.parametrize(
    "case_id",
    [pytest.param(i, marks=pytest.mark.slow if i in SLOW else ()) for i in sorted(REFUSED_BY)],
)
def test_a_refusal_names_the_rule_vllm_raises_from(case_id):
    case = next(c for c in CASES if c["id"] == case_id)
    assert REFUSED_BY[case_id] in _verdict(case).rules


def test_unknown_keys_and_bad_values_are_refused_before_solving():
    by_id = {c["id"]: c for c in CASES}
    typo = _verdict(by_id["vllm-unknown-key-typo"])
    assert typo.unknown_keys == ("max-num-batch-tokens",)
    assert "'max-num-batched-tokens'" in typo.reasons[0]  # dashed, as the key was
    old = _verdict(by_id["vllm-recipe-gpt-oss-hopper-old-graph-sizes"])
    assert old.unknown_keys == ("cuda-graph-sizes",)
    passes = _verdict(by_id["vllm-recipe-llama3.3-blackwell-old-pass-names"])
    assert len(passes.reasons) == 3 and all("pass_config" in r for r in passes.reasons)


def test_known_differences_name_corpus_cases():
    assert set(KNOWN_DIFFERENCES) <= {c["id"] for c in CASES}
    assert len(CASES) >= 40
