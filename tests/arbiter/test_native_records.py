"""Each dialect's reading travels as its pack's own typed record (`DialectInput.native`),
not as a dictionary of string keys: the record type per engine, the fields write-back
reads, and no `extra` left on the shared input."""

from __future__ import annotations

import dataclasses

import pytest

from arbiter import check
from arbiter.dialects import DIALECTS
from arbiter.dialects._base import DialectInput
from arbiter.dialects.protocol import Machine
from arbiter.engines.mlc.record import NativeMlc
from arbiter.engines.sglang.record import NativeSglang
from arbiter.engines.trtllm.record import NativeTrtllm
from arbiter.engines.vllm.record import NativeVllm

SOURCES = {
    "trtllm": (
        {"max_batch_size": 8, "kv_cache_config": {"enable_block_reuse": False}},
        NativeTrtllm,
    ),
    "vllm": ({"max-num-seqs": 8, "model": "meta-llama/Llama-3.1-8B"}, NativeVllm),
    "sglang": ({"max-running-requests": 8, "model-path": "m"}, NativeSglang),
    "mlc": ({"max_num_sequence": 8, "model": "m", "mode": "server"}, NativeMlc),
}


def test_every_registered_engine_has_a_record_case():
    assert set(SOURCES) == set(DIALECTS)


def test_the_shared_input_has_no_untyped_dictionary():
    names = {f.name for f in dataclasses.fields(DialectInput)}
    assert "extra" not in names
    assert "native" in names


@pytest.mark.parametrize("engine", sorted(SOURCES))
def test_each_reading_carries_its_packs_record(engine):
    source, record = SOURCES[engine]
    reading = DIALECTS[engine].read(source, machine=Machine())
    parsed = reading.native
    assert isinstance(parsed, DialectInput)
    assert type(parsed.native) is record
    assert dataclasses.is_dataclass(parsed.native)


def test_records_hold_what_was_read():
    trt = DIALECTS["trtllm"].read(SOURCES["trtllm"][0], machine=Machine()).native.native
    assert trt.input["max_batch_size"] == 8
    assert trt.backend == "pytorch" and trt.release
    vllm = DIALECTS["vllm"].read(SOURCES["vllm"][0], machine=Machine()).native.native
    assert vllm.input["model"] == "meta-llama/Llama-3.1-8B"
    assert vllm.given["max_num_seqs"].value == 8
    assert vllm.reading.values["max_num_seqs"][1] == 8
    sgl = DIALECTS["sglang"].read(SOURCES["sglang"][0], machine=Machine()).native.native
    assert sgl.arguments.values["max_running_requests"] == 8
    assert sgl.derived  # what SGLang derives for the fields left unset, set by the dialect
    mlc = DIALECTS["mlc"].read(SOURCES["mlc"][0], machine=Machine()).native.native
    assert mlc.passthrough == {"model": "m"}


def test_mlc_writes_its_passthrough_fields_back():
    verdict = check("mlc", SOURCES["mlc"][0])
    assert verdict.config is not None and verdict.config["model"] == "m"
