"""The profiles' surfaces in `constraints/engines/` are what scripts/gen_surfaces.py writes
from the field lists and dialect maps today: regenerated and compared, so they cannot drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from constraints.profiles import PROFILES, get_profile, surface_module

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_surfaces.py"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_surfaces", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_profile_has_its_generated_surface_file():
    gen = _generator()
    files = gen.targets()
    assert len(files) == len(PROFILES)
    stale = [str(p) for p in gen.stale(files)]
    assert stale == [], f"run python scripts/gen_surfaces.py: {stale}"


def test_the_generated_data_is_what_the_profiles_load():
    gen = _generator()
    for name, profile in PROFILES.items():
        assert dict(get_profile(name).surface) == gen.surface_of(profile), name
        assert surface_module(profile).startswith(f"constraints.engines.{profile.engine}.")


def test_check_mode_names_a_stale_file(tmp_path):
    gen = _generator()
    files = gen.targets()
    path = next(iter(files))
    edited = {tmp_path / path.name: files[path] + "# edited\n"}
    (tmp_path / path.name).write_text(files[path])
    assert gen.stale(edited) == [tmp_path / path.name]
