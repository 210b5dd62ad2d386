"""Inputs on which a single CP-SAT configuration once gave a wrong answer."""

from __future__ import annotations

from arbiter import arbitrate, func, setup
from constraints.profiles import get_profile
from constraints.rules import rules_for

# the models these inputs once broke were compiled with the TensorRT-engine rules (plugins,
# NCCL): they are replayed on that release line
TRT = "trtllm-tensorrt"

# Two 16 GiB Ada GPUs asked for 32k-token sequences with full attention: the memory model.
GPU = setup("gpu", {"device.memory_mib": 16384, "device.sm": 89, "device.count": 2})
LONG = {"build_config.max_seq_len": 32768, "kv_cache_config.max_attention_window": None}


def test_full_lp_false_infeasible_is_double_checked():
    # with linearization_level=2 and presolve, CP-SAT 9.15 called this feasible model
    # infeasible; the staged solve confirms an infeasible verdict with the default
    # relaxation before reporting a conflict
    claims = [
        GPU,
        func("long", LONG),
        func(
            "par",
            {
                "parallel_config.tensor_parallel_size": 1,
                "parallel_config.pipeline_parallel_size": 1,
            },
        ),
    ]
    resolution = arbitrate(claims, profile=TRT)
    assert resolution.value("build_config.max_seq_len") == 32768
    assert all(
        rule.expr.evaluate(resolution.values) for rule in rules_for(get_profile(TRT), "hard")
    )


def test_a_model_cp_sat_rejects_is_an_internal_error_naming_its_first_line():
    from arbiter import InternalError, SolverModelInvalid
    from arbiter.errors import exit_code
    from arbiter.service.jobs import error_payload

    err = SolverModelInvalid("Possible integer overflow in constraint: x\n  linear { ... }\n")
    assert str(err) == (
        "internal error: CP-SAT rejected the compiled model:"
        " Possible integer overflow in constraint: x"
    )
    assert err.detail.endswith("linear { ... }\n") and isinstance(err, InternalError)
    assert exit_code(err) == 3  # the CLI: not the user's input (2)
    assert error_payload(err) == (500, {"error": "internal", "message": str(err)})


def test_presolve_no_longer_adds_needless_changes():
    # With presolve, CP-SAT 9.15 returned this as "optimal" with seven changes, three of
    # them needless (free_gpu_memory_fraction, max_batch_size, max_num_tokens). On the
    # gpu, long_context and fp8 claims under the memory rule alone, its presolve called
    # the feasible model infeasible.
    claims = [
        GPU,
        func("long_context", LONG),
        func(
            "fp8",
            {
                "quant_config.quant_algo": "FP8",
                "quant_config.kv_cache_quant_algo": None,
                "kv_cache_config.dtype": "auto",
            },
        ),
        func("tp2", {"parallel_config.tensor_parallel_size": 2}),
        func("beams", {"build_config.max_beam_width": 1}),
    ]
    resolution = arbitrate(claims, profile=TRT)
    assert resolution.status == "optimal"
    assert sorted(c.path for c in resolution.changes) == [
        "build_config.max_seq_len",
        "parallel_config.tensor_parallel_size",
        "plugin_config.nccl_plugin",
        "quant_config.quant_algo",
    ]
