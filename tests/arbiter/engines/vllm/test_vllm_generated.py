"""check_vllm against vLLM 0.33.0's own verdicts on generated argument combinations.

Five records hold what vLLM's code answered, each of 200 seeded combinations:
`tests/corpus/vllm/oracle/generated.json` (`/tmp/v-vllm/bin/python
benchmarks/oracle_vllm.py generate --count 200 --seed 7`: scheduler, parallel, LoRA,
speculative, cache and CUDA-graph arguments on Llama-3.1-8B) and `generated-targets.json`
(`generate --batch targets --count 200 --seed 11`: EAGLE-3 targets vLLM supports or not,
MTP token counts against the model's MTP layers, decode/prefill context parallel and
data-parallel sizes, each on one of five models), and the same two generators with other
seeds (`generated-seed23.json`: `generate --count 200 --seed 23`;
`generated-targets-seed31.json`: `generate --batch targets --count 200 --seed 31`), and
the model-runner batch (`generated-runner-seed41.json`: `generate --batch runner --count
200 --seed 41`: async scheduling, the V1 fallbacks and what V1 refuses, quantization
against an FP8 and an unquantized Llama-3.1-8B; a draft model it names is checked as its
config.json folder, as the oracle passed it). The
test reads the records only, so it
needs no vLLM install. Each combination is checked for the record's model
(`benchmarks/oracle_common.py`; Llama-3.1-8B when it names none) on an H100 with GPUs
enough for any parallel size (the oracle's CPU platform counts no devices).

Agreement is on accept / adjust / reject, and for a refusal on the reason: the rule or
the key arbiter names is the one vLLM's message is about (`REASONS`). The oracle runs on
vLLM's CPU platform; a record whose verdict hangs on that platform carries `cpu_why`
(see the oracle's docstring) and may differ only in the ways `CPU_ONLY` lists, each
checked for what vLLM does on a GPU instead.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from arbiter.engines.vllm.native import check_vllm

ROOT = Path(__file__).resolve().parents[4]
RECORD = ROOT / "tests" / "corpus" / "vllm" / "oracle" / "generated.json"
TARGETS = RECORD.parent / "generated-targets.json"
DEVICE, GPUS = "H100-80GB", 256
# the targets batch runs Mixtral-8x7B on one GPU: its 93 GB of bf16 weights need an H200
DEVICES = {"mixed": DEVICE, "targets": "H200"}


def _oracle_common() -> Any:
    spec = importlib.util.spec_from_file_location(
        "oracle_common", ROOT / "benchmarks" / "oracle_common.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ORACLE = _oracle_common()
MODELS = ORACLE.MODELS
# this run's folder of draft configs: the oracle passed a draft model it names as its
# local config.json folder, where vLLM (and arbiter) read its vocabulary and heads
DRAFTS = Path(tempfile.mkdtemp(prefix="arbiter-vllm-generated-drafts-"))


def _args(record: dict[str, Any]) -> dict[str, Any]:
    args = dict(record["args"])
    spec = args.get("speculative-config")
    if isinstance(spec, dict) and spec.get("model") in MODELS:
        args["speculative-config"] = {
            **spec,
            "model": str(ORACLE.model_folder(spec["model"], DRAFTS)),
        }
    return args


DATA = json.loads(RECORD.read_text())
# the two batches again with other seeds (generate --seed 23; --batch targets --seed 31)
BATCHES = {
    "mixed": DATA,
    "targets": json.loads(TARGETS.read_text()),
    "mixed-23": json.loads((RECORD.parent / "generated-seed23.json").read_text()),
    "targets-31": json.loads((RECORD.parent / "generated-targets-seed31.json").read_text()),
    # the model runners and quantization (generate --batch runner --seed 41)
    "runner-41": json.loads((RECORD.parent / "generated-runner-seed41.json").read_text()),
}


def _parts() -> list[dict[str, Any]]:
    """vLLM's recorded refusals of argument sets for the same model: the generated ones,
    and the corpus cases the oracle ran against Llama-3.1-8B (oracle/corpus.json)."""
    corpus = json.loads((RECORD.parent / "corpus.json").read_text())["results"]
    cases = {}
    for path in (RECORD.parent.parent).glob("*.yaml"):
        case = yaml.safe_load(path.read_text())
        if case.get("model") == "llama-3.1-8b":
            cases[case["id"]] = case["config"]
    parts = [
        r
        for batch in BATCHES.values()
        for r in batch["results"]
        if r["verdict"] == "reject" and r.get("model", "llama-3.1-8b") == "llama-3.1-8b"
    ]
    for row in corpus:
        if row["verdict"] == "reject" and row["id"] in cases:
            parts.append({"args": cases[row["id"]], **row})
    return parts


PARTS = _parts()

# a fragment of vLLM's refusal -> the rules arbiter may name for it (a decode context
# parallel size that does not divide TP on a GQA model breaks both of vLLM's DCP checks;
# vLLM raises ParallelConfig's first, arbiter may name the ModelConfig one)
DCP = ("vllm.parallel.dcp-divides-tp", "vllm.parallel.dcp-within-kv-heads")
REASONS = {
    "must be divisible by dcp_size": DCP,
    "Decode context parallelism for GQA/MQA": DCP,
    "Number of experts in the model must be greater than 0": (
        "vllm.parallel.expert-parallel-needs-moe",
    ),
    "is greater than the derived max_model_len": ("vllm.model.len-within-positions",),
    "max_cpu_loras": ("vllm.lora.cpu-cache-holds-batch",),
    "prompt_lookup_min": ("vllm.spec.ngram-bounds",),
    "speculative_draft_tensor_parallel_size": ("vllm.spec.draft-tp-one-or-target",),
    "Total number of attention heads": (
        "parallel.heads-divisible-by-tp",
        "vllm.spec.draft-heads-divisible-by-draft-tp",
    ),
    "must be greater than or equal to max_num_seqs": ("vllm.scheduler.budget-holds-seqs",),
    "is smaller than max_model_len": ("vllm.scheduler.budget-holds-model-len-without-chunking",),
    "Model does not support EAGLE3 interface": ("vllm.spec.eagle3-target-supported",),
    "Unsupported speculative method: 'mtp'": ("vllm.spec.mtp-target-supported",),
    "must be divisible by n_predict": ("vllm.spec.mtp-tokens-multiple-of-layers",),
    "When PCP is enabled, DCP must": ("vllm.parallel.dcp-with-pcp",),
    "Model Runner V1 does not support": (
        "vllm.parallel.pcp-needs-model-runner-v2",
        "vllm.runner.v1-no-dspark",
        "vllm.runner.v1-no-adaptive-verification",
        "vllm.runner.v1-no-draft-lm-head-quantization",
        "vllm.runner.v1-no-batch-sharded-sampling",
        "vllm.runner.v1-async-without-pp",
    ),
    "Async scheduling is not supported by the V1 model runner": (
        "vllm.runner.v1-async-without-pp",
        "vllm.runner.v1-async-speculation-method",
        "vllm.runner.v1-async-padded-drafter-batch",
    ),
    "Cannot find the config file for": ("vllm.quant.offline-needs-checkpoint-config",),
    "does not match the quantization method": ("vllm.quant.matches-checkpoint",),
    "draft_lm_head_quantization is not supported for method": (
        "vllm.spec.draft-lm-head-quantization-methods",
    ),
    "Adaptive verification is not currently compatible with LoRA": (
        "vllm.spec.adaptive-verification-without-lora",
    ),
    "Adaptive verification is not currently compatible with pipeline": (
        "vllm.spec.adaptive-verification-without-pp",
    ),
    "tensor_parallel_size is 1, so there is nothing to shard": (
        "vllm.parallel.batch-sharded-sampling-needs-tp",
    ),
    "is below tensor_parallel_size": ("vllm.parallel.batch-sharded-sampling-seqs-cover-tp",),
}
# the refusals the oracle reruns on the V2 runner (benchmarks/oracle_vllm.py resolve)
V1_ONLY = ("Model Runner V1", "Async scheduling is not supported by the V1 model runner")
# a fragment of vLLM's refusal of a value or key -> the key arbiter's reason names
KEYS = {
    "unrecognized arguments: --swap-space": "swap-space",
    "argument --max-lora-rank": "max-lora-rank",
    "Invalid kv_cache_dtype": "kv-cache-dtype",
    "gpu_memory_utilization Input should be less than or equal": "gpu-memory-utilization",
}
# vLLM's CPU platform refuses EPLB before its other EPLB checks (ParallelConfig.
# _validate_parallel_config: "only supported on CUDA devices or ROCm devices or XPU
# devices"); on a GPU those checks run, so arbiter's reason is whichever one fails
CPU_EPLB = "Expert parallelism load balancing is only supported on"


def check(record: dict[str, Any], device: str | None = None):
    model = MODELS[record.get("model", "llama-3.1-8b")]
    device = device or DEVICES["targets" if "model" in record else "mixed"]
    return check_vllm(_args(record), model=model, device=device, gpus=GPUS)


def _gpu_caps_the_graph_ceiling(record: dict[str, Any], ours: Any) -> bool:
    """vLLM's GPU platform caps a capture size above the budget at the budget
    (VllmConfig._set_cudagraph_sizes); its CPU platform sizes no CUDA graphs."""
    return ours.verdict == "adjust" and all(
        "capped at max_num_batched_tokens" in c for c in ours.changes
    )


def _same_on_the_cpu_tier(record: dict[str, Any], ours: Any) -> bool:
    """The refusal compares a field left to the CPU platform's default (2048 tokens per
    rank, EngineArgs.get_batch_defaults); on a device whose vLLM tier has the same 2048
    tokens (an A100) arbiter gives the recorded verdict, on the H100 the tier's 8192."""
    return check(record, device="A100-80GB").verdict == record["verdict"]


# cpu_why fragment -> how arbiter's (GPU) verdict is checked instead
CPU_ONLY = {
    "the CPU platform sizes no CUDA graphs": _gpu_caps_the_graph_ceiling,
    "at the CPU platform's default": _same_on_the_cpu_tier,
}


def _refused_at_startup(record: dict[str, Any], ours: Any) -> bool:
    """vLLM's configuration stage accepts what arbiter refuses for memory: the KV cache
    left after weights and the profiled forward of max_num_batched_tokens cannot hold one
    max_model_len sequence, which vLLM checks only at startup on a GPU
    (v1/core/kv_cache_planning.py _check_enough_kv_cache_memory), past the CPU oracle's
    reach. Counted apart, and only when a larger device (an H200) takes the same
    arguments, so memory is the whole reason."""
    if record["verdict"] != "accept" or ours.verdict != "reject":
        return False
    if not any(rule.startswith("memory.") for rule in ours.rules):
        return False
    return check(record, device="H200").verdict == "accept"


# batch -> (seed, agree, CPU-only differences, refusals naming vLLM's reason, refusals
# naming a check vLLM itself fails the arguments on: for part of them, or the one it runs
# next, memory refusals at startup)
FIGURES = {
    "mixed": (7, 198, 2, 110, 0, 0),
    "targets": (11, 200, 0, 78, 2, 0),
    "mixed-23": (23, 198, 1, 112, 2, 1),
    "targets-31": (31, 200, 0, 82, 6, 0),
    "runner-41": (41, 200, 0, 121, 4, 0),
}


@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_the_record_is_vllms_own(batch):
    data = BATCHES[batch]
    assert data["engine"] == "vllm" and data["version"] == "0.33.0"
    assert data["seed"] == FIGURES[batch][0] and len(data["results"]) == 200
    for record in data["results"]:
        assert record["verdict"] in ("accept", "adjust", "reject")
        assert bool(record.get("cpu_limited")) == bool(record.get("cpu_why")), record
        if record["verdict"] == "reject":
            assert record["message"] and "OSError" not in record["message"], record
        if "gpu" in record:  # a refusal of the CPU platform's V1 runner only
            assert any(m in record["message"] for m in V1_ONLY), record
            assert record["gpu"]["verdict"]


def agreement(batch: str) -> tuple[tuple[int, int, int, int, int], list[str]]:
    """(agree, CPU-only differences, same reason, reason for part, memory refusals at
    startup) and the disagreements.
    A record with `gpu` (a refusal only the CPU platform's V1 model runner gives) is
    compared with vLLM's verdict on its V2 runner, a GPU's."""
    agree, cpu_only, same, other, startup, wrong = 0, 0, 0, 0, 0, []
    for record in BATCHES[batch]["results"]:
        ours = check(record)
        expected = {**record, **record["gpu"]} if "gpu" in record else record
        where = f"{record.get('model', 'llama-3.1-8b')} {record['args']}"
        if ours.verdict != expected["verdict"]:
            why = expected.get("cpu_why") or ""
            checked = next((f for k, f in CPU_ONLY.items() if k in why), None)
            if checked is not None and checked(expected, ours):
                cpu_only += 1
            elif _refused_at_startup(expected, ours):
                startup += 1
            else:
                wrong.append(f"{where}: vLLM {expected['verdict']}, arbiter {ours.verdict}")
            continue
        agree += 1
        if expected["verdict"] != "reject":
            continue
        problem = _reason_problem(expected, ours)
        if problem is None:
            same += 1
        elif _refused_for_part(expected, ours) or _refused_next(expected, ours):
            other += 1
        else:
            wrong.append(f"{where}: {problem}")
    return (agree, cpu_only, same, other, startup), wrong


@pytest.mark.slow
@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_generated_combinations_agree_with_vllm(batch):
    """Every verdict agrees but the CPU-platform ones (`CPU_ONLY`) and memory refusals
    vLLM makes at startup (`_refused_at_startup`); every refusal names
    vLLM's reason, or another refusal vLLM itself gives for part of the same arguments
    (vLLM raises at its first failing check, arbiter names one minimal conflict). The
    README's figures are this test's counts."""
    counts, wrong = agreement(batch)
    assert not wrong, "\n".join(wrong)
    assert counts == FIGURES[batch][1:]


def _reason_problem(record: dict[str, Any], ours: Any) -> str | None:
    """None when arbiter's refusal names what vLLM's message is about."""
    message = record["message"]
    if CPU_EPLB in message:
        return None if ours.reasons else "no reason"
    for fragment, rules in REASONS.items():
        if fragment in message:
            return None if set(rules) & set(ours.rules) else f"{rules} not in {ours.rules}"
    for fragment, key in KEYS.items():
        if fragment in message:
            named = key in ours.unknown_keys or any(key in r for r in ours.reasons)
            return None if named else f"{key} not named in {ours.reasons}"
    return f"no reason mapped for vLLM's {message!r}"


def _v1_with(args: dict[str, Any], feature: str) -> bool:
    """The arguments send vLLM to its V1 runner (a heterogeneous-vocabulary draft or EAGLE
    parallel drafting, _get_v2_model_runner_unsupported_features) and ask for `feature`,
    a speculative_config key or a top-level flag."""
    spec = args.get("speculative-config") or {}
    v1 = bool(spec.get("use_heterogeneous_vocab") or spec.get("parallel_drafting"))
    return v1 and bool(spec.get(feature) or args.get(feature))


# a rule arbiter names -> the arguments fail that check of vLLM's, which vLLM runs after
# the one it raised from: the runner checks of VllmConfig.__post_init__
# (_validate_v1_model_runner, then _validate_batch_sharded_sampling) come after the
# SpeculativeConfig and ModelConfig checks
NEXT = {
    "vllm.parallel.batch-sharded-sampling-needs-tp": lambda args: bool(
        args.get("enable-batch-sharded-sampling") and args.get("tensor-parallel-size", 1) <= 1
    ),
    "vllm.runner.v1-no-adaptive-verification": lambda args: _v1_with(
        args, "enable_adaptive_verification"
    ),
    "vllm.runner.v1-no-batch-sharded-sampling": lambda args: _v1_with(
        args, "enable-batch-sharded-sampling"
    ),
}


def _refused_next(record: dict[str, Any], ours: Any) -> bool:
    """arbiter names a check vLLM runs after the one it raised from, and which these
    arguments fail too: `NEXT`, or vLLM's DCP check against the KV heads (ModelConfig.
    verify_with_parallel_config: tensor_parallel_size above the KV heads), which vLLM runs
    after the ParallelConfig check."""
    if any(rule in NEXT and NEXT[rule](record["args"]) for rule in ours.rules):
        return True
    if "vllm.parallel.dcp-within-kv-heads" not in ours.rules:
        return False
    args = record["args"]
    model = MODELS[record.get("model", "llama-3.1-8b")]
    dcp, tp = args.get("decode-context-parallel-size", 1), args.get("tensor-parallel-size", 1)
    return dcp > 1 and tp <= model["num_key_value_heads"] and "kv_lora_rank" not in model


def _refused_for_part(record: dict[str, Any], ours: Any) -> bool:
    """arbiter's reason is vLLM's own for a recorded subset of the same arguments
    (`PARTS`, on Llama-3.1-8B)."""
    if record.get("model", "llama-3.1-8b") != "llama-3.1-8b":
        return False
    args = record["args"].items()
    for part in PARTS:
        if part["args"] == record["args"]:
            continue
        if all(item in args for item in part["args"].items()):
            if _reason_problem(part, ours) is None:
                return True
    return False
