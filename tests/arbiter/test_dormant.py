"""Dormant rules (arbiter/dormant.py): a guarded rule nothing else reads sleeps without a
body, wakes as soon as its guard option is declared, and never changes an answer."""

from __future__ import annotations

from pathlib import Path

from arbiter import arbitrate, func, load_claims, perf
from arbiter.compile import CompiledModel
from arbiter.dormant import asleep, guarded_rules
from arbiter.oracle import Oracle
from arbiter.problem import ArbitrationProblem
from constraints.expr import Implies, eq, ge, implies
from constraints.rules import Rule
from constraints.rules.base import Source

SCENARIO = Path(__file__).resolve().parents[2] / "arbiter" / "scenarios" / "server_h100.yaml"
PROFILE = "trtllm-tensorrt"
FAIL_FAST = "memory_policy.fail_fast_on_attention_window_too_large"
RULE = "memory.fail-fast-needs-one-sequence"
SRC = Source("test", "test", "test")


def _problem(claims) -> ArbitrationProblem:
    return ArbitrationProblem.prepare(claims, profile=PROFILE)


def test_the_fail_fast_memory_rule_sleeps_unless_a_claim_reads_its_flag():
    problem = _problem(load_claims(SCENARIO))
    guards = guarded_rules([*problem.rules, *problem.soft_rules], problem.facts, problem.defaults)
    assert guards[RULE] == frozenset({FAIL_FAST})
    assert RULE in asleep(guards, problem.claims)
    woken = [*problem.claims, func("fail_fast", {FAIL_FAST: True})]
    assert RULE not in asleep(guards, woken)


def test_a_guard_true_at_the_defaults_or_read_by_another_rule_keeps_the_rule_awake():
    flag = "plugin_config.streamingllm"
    guarded = Rule(
        id="t.guarded",
        text="t",
        source=SRC,
        expr=implies(eq(flag, True), ge("build_config.max_seq_len", 64)),
    )
    other = Rule(
        id="t.other",
        text="t",
        source=SRC,
        expr=implies(eq(flag, True), eq("plugin_config.paged_kv_cache", True)),
    )
    problem = _problem([])
    facts, defaults = problem.facts, problem.defaults
    assert set(guarded_rules([guarded], facts, defaults)) == {"t.guarded"}
    assert guarded_rules([guarded, other], facts, defaults) == {}
    assert guarded_rules([guarded], facts, {**defaults, flag: True}) == {}


def test_a_dormant_body_is_compiled_when_a_claim_added_later_reads_the_guard():
    problem = _problem(load_claims(SCENARIO))
    rules = [r for r in problem.rules if r.id == RULE]
    assert isinstance(rules[0].expr, Implies)
    setups = [c for c in problem.claims if c.kind == "setup"]
    cm = CompiledModel(setups, rules, problem.facts, problem.defaults, objective=False)
    before = len(cm.model.proto.constraints)
    assert RULE in cm._asleep
    # one 128k-token sequence of FP32 KV beside FP32 weights does not fit one H100
    huge = func(
        "huge",
        {
            FAIL_FAST: True,
            "build_config.max_seq_len": 131072,
            "kv_cache_config.max_attention_window": None,
            "build_config.max_beam_width": 8,
            "build_config.dtype": "float32",
            "quant_config.quant_algo": None,
            "quant_config.kv_cache_quant_algo": None,
            "parallel_config.tensor_parallel_size": 1,
            "parallel_config.pipeline_parallel_size": 1,
        },
    )
    cm.add_claim(huge)
    assert RULE not in cm._asleep
    assert len(cm.model.proto.constraints) > before + 100
    oracle = Oracle(cm)
    setup_lits = [cm.claim_lit[c.name] for c in setups if c.name in cm.claim_lit]
    feasible, _ = oracle.check([*setup_lits, cm.claim_lit["huge"], cm.rule_lit[RULE]])
    assert not feasible
    feasible, _ = oracle.check([*setup_lits, cm.claim_lit["huge"]])
    assert feasible  # the rule, not the claim alone, rules it out


def test_the_answer_is_the_same_with_the_rule_asleep_or_awake():
    claims = load_claims(SCENARIO)
    asleep_ = arbitrate(claims, profile=PROFILE)
    # a perf claim that holds at the default reads the flag: the body is compiled
    awake = arbitrate([*claims, perf("flag_default", {FAIL_FAST: False})], profile=PROFILE)
    assert awake.values == asleep_.values
    assert [k.name for k in asleep_.kept] == [
        k.name for k in awake.kept if k.name != "flag_default"
    ]
    assert [d.name for d in asleep_.dropped] == [d.name for d in awake.dropped]
    # the body is compiled: its cases for the precisions and the tensor-parallel size the
    # func claims fix fold away (arbiter.fixed), the pipeline and sequence cases remain
    # (26 of them since TensorRT-LLM's budget after loading is checked per tp range, whose
    # cases the fixed tp folds too; 30 before)
    assert awake.stats["constraints"] > asleep_.stats["constraints"] + 20
