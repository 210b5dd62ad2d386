"""Each pack's stored vocabulary (`arbiter/engines/<engine>/vocab.json`) is what its
`vocab.vocabulary()` builds now, and reads back as the same record: detection reads the
data instead of importing the packs, so the data must not drift from the field lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.dialects import DIALECTS
from arbiter.sources.vocab_data import data_path, from_data, render, stored, to_data

ROOT = Path(__file__).resolve().parents[3]
STORED = [name for name in DIALECTS if not DIALECTS.entries[name].surface]


def test_every_pack_without_a_registry_surface_stores_its_vocabulary():
    assert STORED  # trtllm, vllm and mlc build theirs from more than one surface
    for name in STORED:
        assert data_path(name).is_file(), name
    for name in DIALECTS:
        if DIALECTS.entries[name].surface:
            assert not data_path(name).is_file(), name  # read from its surface


@pytest.mark.parametrize("name", STORED)
def test_the_stored_vocabulary_is_what_the_pack_builds(name):
    built = DIALECTS.part(name, "vocab").vocabulary()
    assert data_path(name).read_text() == render(built), "run scripts/gen_vocab.py"
    read = stored(name)
    assert read is not None
    assert to_data(read) == to_data(built)
    # the record answers detection's questions as the built one does
    for key in sorted(built.keys)[:50]:
        assert read.field_of(key) == built.field_of(key), key


def test_data_round_trips_a_surface_by_name():
    vllm = DIALECTS.part("vllm", "vocab").vocabulary()
    data = to_data(vllm)
    assert data["surface"] == "vllm-0.33"
    again = from_data(json.loads(json.dumps(data)))
    assert again.surface is not None and again.surface.name == "vllm-0.33"
    assert again.field_of("--max-num-seqs") == "max_num_seqs"


def test_the_generator_finds_nothing_to_change():
    done = subprocess.run(
        [sys.executable, "scripts/gen_vocab.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
