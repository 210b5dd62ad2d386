"""The shared base of the packs' dialects: labels from the registry, inputs an engine does
not take refused by name, writing in the pack's format."""

from __future__ import annotations

import pytest

from arbiter.dialects import DIALECTS
from arbiter.dialects.pack import PackDialect
from arbiter.dialects.protocol import Dialect, Machine
from arbiter.errors import DialectError


@pytest.mark.parametrize("name", list(DIALECTS))
def test_every_registered_dialect_keeps_the_protocol_and_speaks_its_entrys_label(name):
    dialect = DIALECTS[name]
    assert isinstance(dialect, Dialect) and isinstance(dialect, PackDialect)
    assert dialect.name == name
    assert dialect.label == DIALECTS.entries[name].label
    assert dialect.format in {"yaml", "json"}


@pytest.mark.parametrize("name", [n for n in DIALECTS if not DIALECTS[n].reads_engine])
def test_an_engine_folder_is_refused_naming_the_dialect_that_reads_one(name):
    with pytest.raises(DialectError) as err:
        DIALECTS[name].read({}, machine=Machine(), engine="/some/engine")
    assert err.value.key == "engine" and err.value.value == "/some/engine"
    assert "takes no prebuilt engine folder (that is the trtllm dialect's)" in str(err.value)
    assert DIALECTS[name].label in str(err.value)


@pytest.mark.parametrize("name", [n for n in DIALECTS if not DIALECTS[n].reads_serve_args])
def test_serve_arguments_are_refused_by_an_engine_without_a_serving_command_line(name):
    with pytest.raises(DialectError) as err:
        DIALECTS[name].read({}, machine=Machine(), serve_args="--max-num-seqs 8")
    assert err.value.key == "serve_args" and err.value.value == "--max-num-seqs 8"
    assert DIALECTS.entries[name].config_label in str(err.value)


def test_the_refusal_lists_are_not_empty():
    # the parametrized cases above run: one engine reads engine folders, one no serve args
    assert [n for n in DIALECTS if DIALECTS[n].reads_engine] == ["trtllm"]
    assert [n for n in DIALECTS if not DIALECTS[n].reads_serve_args] == ["mlc"]
