"""explain(): conflicts, corrections, chains, numbers, drop reports, budgets, the CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arbiter import ConflictError, func, perf, setup
from arbiter import arbitrate as _arbitrate
from arbiter.cli import app
from arbiter.explain import CODES, SCHEMA_VERSION, Explainer, Limits, explain_infeasible
from arbiter.explain import explain as _explain
from arbiter.solve import (
    find_conflict,
    prepare_claims,
    resolve_defaults,
    resolve_facts,
)
from arbiter.solve import prepare_rules as _prepare_rules

# The conflicts these tests take apart (StreamingLLM, block reuse, beam search, Medusa and
# EAGLE budgets) are rules of TensorRT engines in the LLM-API arbitrator era: the tests run
# under that release line's rules, from the TensorRT line's defaults they were written for.
PROFILE = "trtllm-0.10"
TRT_DEFAULTS = {
    "runtime_config.backend": "tensorrt",
    "plugin_config.use_paged_context_fmha": True,
    "kv_cache_config.tokens_per_block": 32,
    "kv_cache_config.enable_block_reuse": True,
    "build_config.max_num_tokens": 8192,
}


def arbitrate(claims, **kw):
    return _arbitrate(claims, **{"profile": PROFILE, "defaults": TRT_DEFAULTS, **kw})


def explain(claims, **kw):
    return _explain(claims, **{"profile": PROFILE, "defaults": TRT_DEFAULTS, **kw})


def prepare_rules(rules):
    return _prepare_rules(rules, PROFILE)


REUSE = func("block_reuse", {"kv_cache_config.enable_block_reuse": True})
STREAMING = func("streamingllm", {"plugin_config.streamingllm": True})
BEAM = func("beam_search", {"build_config.max_beam_width": 4})
MEDUSA = func(
    "medusa", {"speculative_config.decoding_type": "Medusa", "build_config.max_draft_len": 4}
)


def _explainer(claims):
    ordered = prepare_claims(claims)
    facts, source = resolve_facts(ordered)
    return Explainer(
        ordered, prepare_rules(None), facts, resolve_defaults(facts, TRT_DEFAULTS), source
    )


def test_first_conflict_matches_the_solver_and_is_minimal():
    claims = [STREAMING, REUSE, BEAM, func("tokens", {"build_config.max_num_tokens": 4096})]
    ex = _explainer(claims)
    first = ex.first_conflict()
    ordered = prepare_claims(claims)
    facts, source = resolve_facts(ordered)
    solver_view = find_conflict(
        ordered, prepare_rules(None), facts, resolve_defaults(facts, TRT_DEFAULTS), source
    )
    assert tuple(first) == solver_view.claims
    assert not ex.feasible(first)
    assert all(ex.feasible([n for n in first if n != drop]) for drop in first)


def test_overlapping_conflicts_and_their_corrections():
    e = explain([STREAMING, REUSE, BEAM])
    assert e.status == "conflict" and e.search.complete
    # StreamingLLM needs a window (0.9-0.12 LLM API), and beam search a full one there
    # (kv.beam-search-no-cyclic-kv): three pairwise conflicts
    assert [c.conflict.claims for c in e.conflicts] == [
        ("beam_search", "block_reuse"),
        ("beam_search", "streamingllm"),
        ("block_reuse", "streamingllm"),
    ]
    # every claim sits in two conflicts: each fix drops two claims and breaks all three
    assert {c.drop for c in e.corrections} == {
        ("beam_search", "block_reuse"),
        ("beam_search", "streamingllm"),
        ("block_reuse", "streamingllm"),
    }
    assert all(c.verified and c.hits == (1, 2, 3) for c in e.corrections)


def test_correction_says_what_it_allows():
    e = explain([BEAM, REUSE])
    by_drop = {c.drop: dict(c.allows) for c in e.corrections}
    assert by_drop[("beam_search",)] == {"kv_cache_config.enable_block_reuse": True}
    assert by_drop[("block_reuse",)]["build_config.max_beam_width"] == 4


def test_setup_facts_are_notes_never_blame_or_fixes():
    e = explain([setup("gpu", {"device.sm": 75}), func("bf16", {"build_config.dtype": "bfloat16"})])
    (conflict,) = e.conflicts
    assert conflict.conflict.claims == ("bf16",) and conflict.conflict.setups == ("gpu",)
    assert [c.drop for c in e.corrections] == [("bf16",)]
    assert any("setup `gpu` fixes device.sm = 75" in note for note in e.notes)
    assert "the setup `gpu` fixes device.sm = 75" in conflict.chain


def test_setup_alone_contradicting_the_rules_is_cfg002():
    e = explain(
        [
            setup("gpu", {"device.sm": 75}),
            setup("prebuilt", {"kv_cache_config.enable_block_reuse": True}),
        ]
    )
    assert e.status == "conflict"
    (conflict,) = e.conflicts
    assert conflict.code == "CFG002" and conflict.conflict.claims == ()
    assert e.corrections == ()
    assert "error[CFG002]" in e.render("text")


def test_numbers_show_current_values_from_a_witness():
    # nothing fixes max_draft_len: the witness takes its most favourable value, 1
    claims = [
        func("eagle", {"speculative_config.decoding_type": "Eagle"}),
        func("batch", {"build_config.max_batch_size": 64}),
        func("budget", {"build_config.max_num_tokens": 100}),
    ]
    e = explain(claims)
    (conflict,) = e.conflicts
    assert set(conflict.conflict.rules) == {
        "speculative.drafts-need-draft-len",
        "speculative.token-budget-covers-drafts",
    }
    (note,) = [n for n in conflict.numbers if n.where == "speculative.token-budget-covers-drafts"]
    assert note.lhs == 100 and note.rhs == 128 and note.holds is False
    assert "build_config.max_draft_len [=1]" in note.text and "but 100 < 128" in note.text


def test_numbers_with_every_value_fixed_by_claims():
    e = explain(
        [
            MEDUSA,
            func("batch", {"build_config.max_batch_size": 64}),
            func("budget", {"build_config.max_num_tokens": 256}),
        ]
    )
    (note,) = e.conflicts[0].numbers
    assert note.text == (
        "build_config.max_num_tokens [=256] must be >= build_config.max_batch_size [=64] * "
        "(build_config.max_draft_len [=4] + 1) = 320, but 256 < 320"
    )


def test_budget_cut_is_reported():
    many = [
        STREAMING,
        REUSE,
        BEAM,
        func("ctx_logits", {"build_config.gather_context_logits": True}),
        func("draft", {"speculative_config.decoding_type": "DraftTarget"}),
    ]
    e = explain(many, limits=Limits(max_conflicts=1, max_corrections=1))
    assert len(e.conflicts) == 1 and len(e.corrections) == 1
    assert not e.search.complete and e.search.cut_by == "count"
    assert "warning[CFG003]" in e.render("text")
    assert json.loads(e.render("json"))["search"]["cut_by"] == "count"


def test_conflict_error_carries_conflicts_corrections_and_the_explanation():
    with pytest.raises(ConflictError) as err:
        arbitrate([STREAMING, REUSE])
    exc = err.value
    assert exc.explanation is not None
    assert [c.claims for c in exc.conflicts] == [("block_reuse", "streamingllm")]
    assert set(exc.corrections) == {("block_reuse",), ("streamingllm",)}
    assert exc.report("markdown").startswith("# Conflict report")


def test_resolution_explain_gives_every_dropped_claim_a_reason():
    seen = []
    claims = [
        BEAM,
        perf("reuse", {"kv_cache_config.enable_block_reuse": True}, fallback=seen.append),
        perf("paged_off", {"plugin_config.use_paged_context_fmha": False}, weight=1),
        perf("chunked", {"scheduler_config.enable_chunked_context": True}, priority=1),
    ]
    r = arbitrate(claims)
    e = r.explain()
    assert e.status == "resolved"
    codes = {d.claim: d.code for d in e.dropped}
    assert codes == {"reuse": "PERF010", "paged_off": "PERF011"}
    reuse = next(d for d in e.dropped if d.claim == "reuse")
    assert reuse.against == ("beam_search",) and "so they cannot both hold" in reuse.chain
    assert seen[0].kind == "conflict" and seen[0].claims == ("beam_search",)
    outranked = next(d for d in e.dropped if d.claim == "paged_off")
    assert outranked.winners == ("chunked",)
    for fmt in ("text", "markdown", "json", "html"):
        assert r.explain(fmt) == r.explain(fmt)


def test_json_schema_is_versioned_and_complete():
    data = json.loads(explain([BEAM, REUSE]).render("json"))
    assert data["schema"] == "arbiter.explanation" and data["version"] == SCHEMA_VERSION == 1
    assert set(data) == {
        "schema",
        "version",
        "profile",
        "status",
        "conflicts",
        "corrections",
        "menus",
        "dropped",
        "notes",
        "search",
    }
    conflict = data["conflicts"][0]
    assert conflict["code"] == "CFG001" and conflict["code"] in CODES
    assert set(conflict) >= {"claims", "rules", "setups", "facts", "chain", "numbers", "edges"}
    assert {c["name"] for c in conflict["claims"]} == {"beam_search", "block_reuse"}
    assert conflict["edges"] == [
        ["beam_search", "kv.beam-search-no-block-reuse", "build_config.max_beam_width"],
        ["block_reuse", "kv.beam-search-no-block-reuse", "kv_cache_config.enable_block_reuse"],
    ]


def test_text_colour_only_when_asked():
    e = explain([BEAM, REUSE])
    assert "\x1b[" not in e.render("text")
    assert "\x1b[1;31merror[CFG001]\x1b[0m" in e.render("text", color=True)
    with pytest.raises(ValueError, match="unknown report format"):
        e.render("pdf")


runner = CliRunner()


def _write(tmp_path, text, name="claims.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_cli_explain_exit_codes_and_formats(tmp_path):
    conflict = _write(
        tmp_path,
        "- {kind: func, name: beam, requires: {build_config.max_beam_width: 4}}\n"
        "- {kind: func, name: reuse, requires: {kv_cache_config.enable_block_reuse: true}}\n",
    )
    old = ["--profile", PROFILE]  # beam search x block reuse is a 0.9-0.12 rule
    assert runner.invoke(app, ["explain", conflict]).exit_code == 0  # not on 1.2
    result = runner.invoke(app, ["explain", conflict, *old])
    assert result.exit_code == 1 and "error[CFG001]" in result.output
    assert "profile: trtllm-0.10" in result.output
    result = runner.invoke(app, ["explain", conflict, "--format", "json", *old])
    assert result.exit_code == 1 and json.loads(result.output)["status"] == "conflict"
    target = tmp_path / "report.html"
    result = runner.invoke(app, ["explain", conflict, "-f", "html", "-o", str(target), *old])
    assert result.exit_code == 1 and target.read_text().startswith("<!DOCTYPE html>")
    fine = _write(
        tmp_path,
        '[{"kind": "func", "name": "beam", "requires": {"build_config.max_beam_width": 4}},'
        ' {"kind": "perf", "name": "reuse", "requires": {"kv_cache_config.enable_block_reuse": true}}]',
        "claims.json",
    )
    result = runner.invoke(app, ["explain", fine, "-f", "markdown", *old])
    assert result.exit_code == 0 and "`reuse` dropped (PERF010" in result.output


def test_cli_explain_bad_input_exits_2(tmp_path):
    typo = _write(
        tmp_path, "- {kind: func, name: t, requires: {kv_cache_config.enable_blok_reuse: true}}\n"
    )
    result = runner.invoke(app, ["explain", typo])
    assert result.exit_code == 2 and "did you mean" in result.output
    assert runner.invoke(app, ["explain", str(tmp_path / "missing.yaml")]).exit_code == 2
    assert runner.invoke(app, ["explain", typo, "--format", "pdf"]).exit_code == 2


def test_a_solver_disagreement_is_not_blamed_on_claims():
    # explain_infeasible on claims that do hold: it must say so instead of inventing blame
    claims = prepare_claims([BEAM, setup("gpu", {"device.sm": 90})])
    facts, source = resolve_facts(claims)
    e = explain_infeasible(
        claims, prepare_rules(None), facts, resolve_defaults(facts, TRT_DEFAULTS), source
    )
    assert e.status == "conflict" and e.conflicts == () and e.corrections == ()
    assert e.render("text").startswith("error[CFG004]")
    assert "CFG004" in CODES
