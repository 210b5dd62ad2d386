"""The runtime's front door: typed errors for bad prompts, sampling parameters, request
ids and corrupt model folders, and a bad request never poisons the shared step loop."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from engine import (
    LLM,
    InvalidPrompt,
    InvalidSamplingParams,
    ModelFolderError,
    SamplingParams,
    UnknownRequest,
)
from engine.front_door import check_model_folder
from engine.model.testing import make_tiny_model_dir

pytest.importorskip("transformers")
VOCAB = 160  # engine.model.testing.TINY


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("front"), "llama", seed=1)


@pytest.fixture(scope="module")
def llm(folder):
    return LLM(folder, kv_cache_config={"tokens_per_block": 4, "max_tokens": 256})


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": 2.5}, "max_tokens"),
        ({"max_tokens": "8"}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"seed": "x"}, "seed"),
        ({"seed": 2**70}, "seed"),
        ({"stop_token_ids": [None]}, "stop_token_ids"),
        ({"stop_token_ids": "8"}, "stop_token_ids"),
        ({"stop_token_ids": [-1]}, "stop_token_ids"),
        ({"temperature": float("nan")}, "temperature"),
        ({"temperature": 1e-30}, "temperature"),
        ({"top_p": "0.5"}, "top_p"),
        ({"top_k": 1.5}, "top_k"),
        ({"beam_width": 0}, "beam_width"),
        ({"ignore_eos": 1}, "ignore_eos"),
    ],
)
def test_sampling_params_are_checked_by_type_and_range(kwargs, field):
    with pytest.raises(InvalidSamplingParams) as err:
        SamplingParams(**kwargs)
    assert err.value.field == field and field in str(err.value)


def test_max_tokens_is_never_rounded(llm):
    out = llm.generate([[1, 2, 3]], SamplingParams(max_tokens=3, ignore_eos=True))[0]
    assert len(out.token_ids) == 3
    with pytest.raises(InvalidSamplingParams):
        llm.generate([[1, 2, 3]], SamplingParams(max_tokens=2.5))


@pytest.mark.parametrize(
    ("prompts", "word"),
    [
        ([[1, VOCAB]], "outside the vocabulary"),
        ([[1, -1]], "outside the vocabulary"),
        ([[1, 2.0]], "integers"),
        ([[1, "8"]], "integers"),
        ([[1, None]], "integers"),
        ([[]], "at least one token"),
        (None, "prompts are"),
        ([None], "expected a list of token ids"),
        ([], "no prompts"),
    ],
)
def test_bad_prompts_raise_invalid_prompt_and_queue_nothing(llm, prompts, word):
    before = dict(llm.runtime.requests)
    with pytest.raises(InvalidPrompt, match=word):
        llm.generate(prompts, SamplingParams(max_tokens=2))
    assert llm.runtime.requests == before and not llm.runtime.has_unfinished


def test_a_bad_request_in_a_batch_changes_nothing_and_names_its_place(llm):
    with pytest.raises(InvalidPrompt) as err:
        llm.generate([[1, 2], [3, 10**6], [4]], SamplingParams(max_tokens=2))
    assert err.value.index == 1 and err.value.position == 1
    assert not llm.runtime.requests


def test_a_bad_request_never_poisons_the_shared_step_loop(llm):
    runtime = llm.runtime
    good = runtime.add_request([5, 6, 7], SamplingParams(max_tokens=4, ignore_eos=True))
    with pytest.raises(InvalidPrompt):
        runtime.add_request([5, VOCAB + 7], SamplingParams(max_tokens=4))
    with pytest.raises(InvalidSamplingParams):
        runtime.add_request([5, 6], {"max_tokens": 4})
    while not good.finished:
        runtime.step()
    assert len(good.token_ids) == 4
    runtime.release(good.request_id)
    alone = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=4, ignore_eos=True))[0]
    assert alone.token_ids == good.token_ids  # the refused requests changed nothing


def test_abort_of_an_unknown_request_is_typed(llm):
    with pytest.raises(UnknownRequest, match="unknown request id 123456"):
        llm.runtime.abort(123456)
    with pytest.raises(UnknownRequest):
        llm.runtime.abort("x")


def corrupt(tmp_path, folder, name):
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def test_corrupt_model_folders_name_the_file(tmp_path, folder):
    weights = next(folder.glob("*.safetensors")).name
    cases = []

    empty = corrupt(tmp_path, folder, "empty")
    (empty / weights).write_bytes(b"")
    cases.append((empty, weights, "too short"))

    truncated = corrupt(tmp_path, folder, "truncated")
    data = (truncated / weights).read_bytes()
    (truncated / weights).write_bytes(data[: len(data) // 2])
    cases.append((truncated, weights, "truncated"))

    huge = corrupt(tmp_path, folder, "huge")
    (huge / weights).write_bytes(struct.pack("<Q", 2**63) + data[8:])
    cases.append((huge, weights, "header length"))

    garbage_tok = corrupt(tmp_path, folder, "tok")
    (garbage_tok / "tokenizer.json").write_text('{"not": "a tokenizer"}')
    cases.append((garbage_tok, "tokenizer.json", "tokenizer"))

    as_list = corrupt(tmp_path, folder, "list")
    (as_list / "config.json").write_text("[1, 2]")
    cases.append((as_list, "config.json", "JSON object"))

    strings = corrupt(tmp_path, folder, "strings")
    config = json.loads((strings / "config.json").read_text())
    config["hidden_size"] = "64"
    (strings / "config.json").write_text(json.dumps(config))
    cases.append((strings, "config.json", "hidden_size"))

    eos = corrupt(tmp_path, folder, "eos")
    config = json.loads((eos / "config.json").read_text())
    config["eos_token_id"] = "x"
    (eos / "config.json").write_text(json.dumps(config))
    cases.append((eos, "config.json", "eos_token_id"))

    binary = corrupt(tmp_path, folder, "binary")
    (binary / "config.json").write_bytes(b"\xff\xfe{}")
    cases.append((binary, "config.json", "UTF-8"))

    for path, file, word in cases:
        with pytest.raises(ModelFolderError) as err:
            LLM(path)
        assert err.value.file.endswith(file) and word in err.value.reason, str(err.value)
    check_model_folder(folder)  # the intact folder passes


def test_cli_run_on_a_corrupt_folder_is_a_clean_exit_2(tmp_path, folder):
    from typer.testing import CliRunner

    from engine.cli import app

    broken = corrupt(tmp_path, folder, "cli")
    (broken / "config.json").write_text('{"hidden_size": "64"}')
    result = CliRunner().invoke(app, ["run", str(broken), "-p", "1,2"])
    assert result.exit_code == 2 and "config.json" in result.output, result.output
