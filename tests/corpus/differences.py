"""Where arbiter's verdict differs from the engine's on a corpus case, and why.

`KNOWN_DIFFERENCES`: arbiter knowingly differs, for a sourced reason (the goal is an
empty dict). `AWAITING_FACTS`: the difference comes from facts arbiter cannot state yet (a
device missing from the catalog, a model it cannot read, memory it does not count); the
model-and-machine-facts work closed most of them; each listed case fails as an unexpected
pass once it agrees, until its entry is removed.
"""

from __future__ import annotations

_MAIN = (
    "the verdict is upstream main's after the 1.2 release (NVIDIA/TensorRT-LLM "
    "tensorrt_llm/llmapi/llm_args.py, the stored 256,191-character version); the field or "
    "validator it rests on is absent from the 1.2 source arbiter's field list is read from "
    "(the 139,423-character version, arbiter/engines/trtllm/fields-1.2.yaml), and arbiter "
    "has no field list for main: no release after 1.2 exists (PyPI's tensorrt-llm index, "
    "2026-11-30: newest release 1.2.1, then only 1.3.0rc0-rc29 and 1.4.0rc0-rc1)"
)
_CHUNKED = (
    "arbiter turns chunked context on so that the longest prompt the engine admits "
    "(max_input_len 1024, the 1.0 default; max_seq_len is the model's 8192 here) fits "
    "max_num_tokens 256 (rule runtime.unchunked-prompt-fits-token-budget, from llm.py "
    "_check_arguments); the engine builds the arguments and refuses a longer prompt only "
    "when a request brings one, and the test reads the sizes back unchanged "
    "(tests/unittest/llmapi/test_llm_args.py @6ee1c87595e8)"
)
_LOOKAHEAD = (
    "TestYaml only builds the arguments (tests/unittest/llmapi/test_llm_args.py "
    "@6ee1c87595e8), so the engine says nothing about the build. Building the engine, the "
    "TensorRT builder raises max_num_tokens to max_batch_size x (max_draft_len + 1) = "
    "2048 x 16 = 32768 (tensorrt_llm/builder.py build(), the stored 66,173-character "
    "version: 'New max_num_tokens is set to ...'), which is the adjustment arbiter reports "
    "for the engine it would build (the default max_batch_size is kept, as the builder "
    "keeps it); the test checks the arguments only"
)

KNOWN_DIFFERENCES: dict[str, str] = {
    **{
        case: _MAIN
        for case in (
            "trtllm-main-rejection-sampling-x-attention-dp",
            "trtllm-main-generation-config-auto",
            "trtllm-main-disk-cache-with-path",
            "trtllm-main-mamba-offsets-with-manager-v2",
            "trtllm-main-cuda-graph-encode-mode-inferred",
            "trtllm-main-mtp-vanilla-with-moe-backend",
            "trtllm-main-checkpoint-io-policy-striped",
            "trtllm-main-multimodal-side-stream",
            "trtllm-main-sparse-attention-skip-softmax",
            "trtllm-main-cold-page-kv-compression-nvfp4",
            "trtllm-spec-suffix-automaton",
            "trtllm-spec-eagle3-dynamic-tree-too-many-drafts",
            "trtllm-spec-mtp-relaxed-topk-zero",
        )
    },
    "trtllm-1.0-torch-sizes-from-build-config": _CHUNKED,
    "trtllm-trt-runtime-sizes-yaml": (
        "arbiter reports the derived build_config.max_input_len 1024 -> 128 (it must stay "
        "within max_seq_len 128) as an adjustment; TestYaml::test_llm_args_with_pydantic_"
        "options reads the given sizes back and says nothing of max_input_len "
        "(tests/unittest/llmapi/test_llm_args.py @6ee1c87595e8)"
    ),
    "trtllm-trt-lookahead-yaml": _LOOKAHEAD,
    "trtllm-trt-lookahead-explicit": _LOOKAHEAD,
    "trtllm-spec-eagle3-two-model-overlap-left-on": (
        "the guide (docs/source/features/speculative-decoding.md @35dac55716a6) describes a "
        "line where only MTP and one-model EAGLE-3 support the overlap scheduler; later "
        "sources of tensorrt_llm/_torch/speculative/interface.py add every mode with a draft "
        "model (support_overlap_scheduler ... or has_draft_model()), which arbiter's rule "
        "runtime.spec-without-overlap-scheduler follows (scope until 1.0), so under 1.2 "
        "arbiter leaves the overlap scheduler on"
    ),
}

AWAITING_FACTS: dict[str, str] = {
    # empty: the last four are modelled (quant.nvfp4-needs-blackwell,
    # moe.fp8-block-scales-not-cutlass-on-blackwell with the engine's default MoE backend
    # pinned, MLC's RNN-state refusal in mlc.refusals) or were a default rule lowering an
    # untouched max_batch_size where the engine only warns (now a warning)
}
