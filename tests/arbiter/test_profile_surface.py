"""A profile owns its surface: no solve changes an option the profile's release lacks.

For every profile: the compiled model has no variable outside the surface; every in-scope
rule's examples (restricted to the surface) and generated claim sets (Hypothesis, bounded)
resolve with every off-surface option at the profile's default; a claim naming an
off-surface option is bad input naming the option and the profile.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter import ConflictError, InvalidClaim, arbitrate, func, perf, setup
from arbiter.problem import ArbitrationProblem, OffSurface
from constraints.domains import BoolDomain, EnumDomain, IntDomain
from constraints.profiles import PROFILES, get_profile
from constraints.rules import rules_for
from constraints.schema import lookup, options

NAMES = sorted(PROFILES)
TPB = "kv_cache_config.tokens_per_block"
FACT = ("device.", "model.")


def _off_surface_held(resolution: Any, profile: str) -> None:
    """Every option outside the profile's surface has the profile's default."""
    surface = get_profile(profile).surface
    moved = [c.path for c in resolution.changes if c.path not in surface]
    assert moved == [], f"{profile}: a solve changed options its release lacks: {moved}"
    problem = ArbitrationProblem.prepare([], profile=profile)
    for path, default in problem.frozen.items():
        assert resolution.value(path) == default, (profile, path)


def _claims(requirement: dict[str, Any], profile: str) -> list[Any]:
    surface = get_profile(profile).surface
    facts = {p: v for p, v in requirement.items() if p.startswith(FACT)}
    wanted = {p: v for p, v in requirement.items() if p in surface}
    claims: list[Any] = [func("example", wanted)] if wanted else []
    if facts:
        claims.append(setup("machine", facts))
    return claims


@pytest.mark.parametrize("profile", NAMES)
def test_every_surface_is_options_of_the_schema_at_the_profile_defaults(profile):
    prof = get_profile(profile)
    assert prof.surface, profile
    for path, default in prof.surface.items():
        spec = lookup(path)
        assert not spec.fact, (profile, path)  # setup facts are never surface
        assert default == prof.defaults.get(path, spec.default), (profile, path)


def test_each_release_lacks_the_other_backends_options():
    assert "runtime_config.attn_backend" in get_profile("trtllm-1.2").surface
    for name in ("trtllm-0.10", "trtllm-tensorrt"):
        surface = get_profile(name).surface
        assert "runtime_config.attn_backend" not in surface  # a PyTorch-backend field
        assert "plugin_config.use_paged_context_fmha" in surface
    assert not any(p.startswith("plugin_config.") for p in get_profile("trtllm-1.2").surface)
    assert not any(p.startswith("sglang_config.") for p in get_profile("vllm-0.33").surface)
    assert not any(p.startswith("vllm_config.") for p in get_profile("sglang-0.5").surface)


@pytest.mark.parametrize("profile", NAMES)
def test_the_compiled_model_has_variables_only_on_the_surface(profile):
    problem = ArbitrationProblem.prepare([], profile=profile)
    model = problem.compile()
    surface = get_profile(profile).surface
    assert set(model.vars) <= set(surface), sorted(set(model.vars) - set(surface))
    assert problem.frozen and not set(problem.frozen) & set(surface)


@pytest.mark.parametrize("profile", ["trtllm-0.10", "trtllm-tensorrt"])
def test_tokens_per_block_48_is_a_conflict_on_the_tensorrt_engine_line(profile):
    with pytest.raises(ConflictError) as err:
        arbitrate([func("tpb", {TPB: 48})], profile=profile)
    assert err.value.conflicts[0].rules == ("kv.tokens-per-block-power-of-two",)
    assert "kv.tokens-per-block-power-of-two" in str(err.value)


@pytest.mark.parametrize("profile", ["trtllm-1.2", "trtllm-1.0"])
def test_tokens_per_block_48_moves_only_pytorch_fields(profile):
    try:
        resolution = arbitrate([func("tpb", {TPB: 48})], profile=profile)
    except ConflictError:
        return  # a conflict changes nothing
    _off_surface_held(resolution, profile)


def test_a_claim_off_the_surface_is_bad_input_naming_option_and_profile():
    with pytest.raises(OffSurface) as err:
        arbitrate([func("attn", {"runtime_config.attn_backend": "VANILLA"})], profile="trtllm-0.10")
    exc = err.value
    assert isinstance(exc, InvalidClaim)
    assert exc.path == "runtime_config.attn_backend" and exc.profile == "trtllm-0.10"
    assert exc.claim == "attn"
    assert "runtime_config.attn_backend" in str(exc) and "trtllm-0.10" in str(exc)
    with pytest.raises(OffSurface):  # a perf claim's alternative counts too
        arbitrate([perf("p", {"sglang_config.page_size": 16})], profile="vllm-0.33")
    with pytest.raises(OffSurface):  # a setup claim moving one from the default too
        arbitrate([setup("s", {"plugin_config.streamingllm": True})], profile="trtllm-1.2")
    # restating the profile's own default is no claim on the option
    arbitrate([setup("s", {"plugin_config.streamingllm": False})], profile="trtllm-1.2")


def _rule_cases() -> list[tuple[str, str, str]]:
    return [
        (name, rule.id, which)
        for name in NAMES
        for rule in rules_for(get_profile(name))
        for which in ("feasible", "infeasible")
    ]


@pytest.mark.slow  # about 700 solves (45 s of CPU); the model test above is the fast guarantee
@pytest.mark.parametrize(("profile", "rule_id", "which"), _rule_cases())
def test_rule_examples_never_move_an_option_off_the_surface(profile, rule_id, which):
    (rule,) = [r for r in rules_for(get_profile(profile)) if r.id == rule_id]
    claims = _claims(dict(getattr(rule, which)), profile)
    try:
        resolution = arbitrate(claims, profile=profile)
    except ConflictError:
        return
    _off_surface_held(resolution, profile)


def _value(spec: Any) -> st.SearchStrategy[Any]:
    d = spec.domain
    if isinstance(d, BoolDomain) and not d.nullable:
        return st.booleans()
    if isinstance(d, EnumDomain):
        return st.sampled_from(list(d.values))
    if isinstance(d, IntDomain):
        lo, hi = d.bounds()
        return st.integers(max(lo, 0), min(hi, 1 << 16)) if lo <= min(hi, 1 << 16) else st.just(lo)
    return st.just(spec.default)


def _surface_specs(profile: str) -> list[Any]:
    surface = get_profile(profile).surface
    return [s for s in options() if s.path in surface and isinstance(s.default, (bool, int, str))]


@st.composite
def _claim_sets(draw: Any, profile: str) -> list[Any]:
    specs = _surface_specs(profile)
    chosen = draw(st.lists(st.sampled_from(specs), min_size=1, max_size=4, unique_by=id))
    claims: list[Any] = []
    for i, spec in enumerate(chosen):
        value = draw(_value(spec))
        if draw(st.booleans()):
            claims.append(func(f"f{i}", {spec.path: value}))
        else:
            claims.append(perf(f"p{i}", {spec.path: value}, weight=draw(st.integers(1, 5))))
    return claims


@pytest.mark.parametrize("profile", NAMES)
def test_generated_claims_never_move_an_option_off_the_surface(profile):
    @settings(max_examples=8, deadline=None)
    @given(claims=_claim_sets(profile))
    def check(claims: list[Any]) -> None:
        try:
            resolution = arbitrate(claims, profile=profile, time_limit_s=20)
        except (ConflictError, InvalidClaim):
            return
        _off_surface_held(resolution, profile)

    check()
