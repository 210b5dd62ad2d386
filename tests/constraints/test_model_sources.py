"""Where a model is found (constraints/facts/sources.py): a file, a folder (Hugging Face or
MLC layout), a local folder named like an id, the Hugging Face cache (laid out as
huggingface_hub lays it out, in a temporary folder), the bundled catalog, and the Hub
(replaced by a fake: no test touches the network); the typed errors of each miss; and
which key of an engine config names its model."""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

from constraints.facts import sources
from constraints.facts.errors import SpecError
from constraints.facts.sources import (
    ModelNotFound,
    ModelUnavailable,
    hub_offline,
    model_of_config,
    resolve_model,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
LLAMA = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())
TINY = {**LLAMA, "num_hidden_layers": 2, "_provenance": None}
COMMIT = "a" * 40


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Offline by default, and a probe that would reach out fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(sources.socket, "create_connection", refuse)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)


def cache_repo(
    cache: Path, repo_id: str, config: dict, commit: str = COMMIT, name: str = "config.json"
) -> Path:
    """A model repo in huggingface_hub's documented cache layout: blobs/<hash>, a snapshot
    file linking to it, and refs/main naming the snapshot's commit."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    blob = repo / "blobs" / ("b" * 40)
    blob.parent.mkdir(parents=True)
    blob.write_text(json.dumps(config))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / name).symlink_to(Path("../../blobs") / blob.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot / name


def test_a_config_file_is_read_as_a_file():
    found = resolve_model(str(FIXTURES / "llama-3.1-8b.json"))
    assert found.how == "file" and found.read().num_layers == 32
    assert resolve_model(FIXTURES / "llama-3.1-8b.json").how == "file"


def test_a_folder_holding_a_config_json_or_an_mlc_config(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps(TINY))
    found = resolve_model(str(tmp_path / "hf"))
    assert found.how == "folder" and found.read().num_layers == 2
    mlc = {
        "model_type": "llama",
        "quantization": "q4f16_1",
        "model_config": {k: v for k, v in TINY.items() if k != "_provenance"},
    }
    (tmp_path / "mlc").mkdir()
    (tmp_path / "mlc" / "mlc-chat-config.json").write_text(json.dumps(mlc))
    spec = resolve_model(tmp_path / "mlc").read()
    assert spec.num_layers == 2 and spec.quant is not None


def test_a_folder_without_a_config_names_the_folder(tmp_path):
    with pytest.raises(ModelNotFound) as err:
        resolve_model(str(tmp_path))
    assert str(tmp_path) in str(err.value) and "config.json" in str(err.value)
    assert err.value.exit_code == 2 and err.value.code == "model_not_found"


def test_a_missing_path_is_named_with_what_to_pass(tmp_path):
    with pytest.raises(ModelNotFound) as err:
        resolve_model(str(tmp_path / "nope" / "config.json"))
    assert "no such file" in str(err.value) and err.value.ref.endswith("config.json")
    with pytest.raises(ModelNotFound):
        resolve_model(tmp_path / "nope")
    with pytest.raises(ModelNotFound, match="empty"):
        resolve_model("  ")
    with pytest.raises(ModelNotFound, match="got int"):
        resolve_model(8)  # type: ignore[arg-type]  # a YAML's `model: 8`


def test_a_local_folder_named_like_the_id_comes_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "meta-llama" / "Llama-3.1-8B-Instruct").mkdir(parents=True)
    (tmp_path / "meta-llama" / "Llama-3.1-8B-Instruct" / "config.json").write_text(json.dumps(TINY))
    found = resolve_model("meta-llama/Llama-3.1-8B-Instruct", cache_dir=tmp_path / "cache")
    assert found.how == "folder" and found.read().num_layers == 2


def test_the_hf_cache_comes_before_the_catalog(tmp_path):
    cache = tmp_path / "hub"
    path = cache_repo(cache, "meta-llama/Llama-3.1-8B-Instruct", TINY)
    for ref in ("meta-llama/Llama-3.1-8B-Instruct", "META-LLAMA/llama-3.1-8b-instruct"):
        found = resolve_model(ref, cache_dir=cache)
        assert found.how == "hf-cache" and found.path == path
        assert found.label == "meta-llama/Llama-3.1-8B-Instruct"
        assert found.read().num_layers == 2  # the cached file, not the catalog's 32
    bare = resolve_model("Llama-3.1-8B-Instruct", cache_dir=cache)
    assert bare.how == "hf-cache" and str(bare) == "meta-llama/Llama-3.1-8B-Instruct (hf-cache)"


def test_the_hf_cache_is_found_through_its_environment_and_huggingface_hub_reads_it(
    tmp_path, monkeypatch
):
    cache = tmp_path / "home" / "hub"
    path = cache_repo(cache, "acme/Tiny-2L", TINY)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert resolve_model("acme/tiny-2l").path == path
    monkeypatch.setenv("HF_HOME", str(tmp_path / "elsewhere"))
    with pytest.raises(ModelNotFound):
        resolve_model("acme/tiny-2l")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))  # wins over HF_HOME
    assert resolve_model("Tiny-2L").path == path
    # the layout is the one huggingface_hub itself reads
    assert huggingface_hub.try_to_load_from_cache("acme/Tiny-2L", "config.json", cache_dir=cache)
    repos = huggingface_hub.scan_cache_dir(cache).repos
    assert [r.repo_id for r in repos] == ["acme/Tiny-2L"]


def test_a_cached_revision_without_refs_main_is_still_found(tmp_path):
    cache = tmp_path / "hub"
    path = cache_repo(cache, "acme/Detached", TINY)
    (cache / "models--acme--Detached" / "refs" / "main").unlink()
    assert resolve_model("acme/Detached", cache_dir=cache).path == path


def test_a_cached_mlc_build_is_read_through_its_mlc_chat_config(tmp_path):
    mlc = {
        "model_type": "llama",
        "quantization": "q4f16_1",
        "model_config": {k: v for k, v in TINY.items() if k != "_provenance"},
    }
    cache = tmp_path / "hub"
    path = cache_repo(cache, "mlc-ai/Tiny-q4f16_1-MLC", mlc, name="mlc-chat-config.json")
    found = resolve_model("mlc-ai/Tiny-q4f16_1-MLC", cache_dir=cache)
    assert found.how == "hf-cache" and found.path == path
    assert found.read().quant is not None


def test_the_catalog_answers_when_nothing_local_does(tmp_path):
    found = resolve_model("Qwen/Qwen3-32B", cache_dir=tmp_path)
    assert found.how == "catalog" and found.path is None and found.config is not None
    assert found.read().source == "catalog:Qwen/Qwen3-32B"


def test_an_offline_id_outside_the_catalog_is_a_typed_error_saying_what_to_pass(tmp_path):
    with pytest.raises(ModelNotFound) as err:
        resolve_model("acme/Unknown-7B", cache_dir=tmp_path)
    text = str(err.value)
    assert "offline" in text and "--model PATH/config.json" in text
    assert "`hf download acme/Unknown-7B config.json`" in text
    assert "`huggingface-cli download acme/Unknown-7B config.json`" in text  # older clients
    assert err.value.tried and "catalog" in err.value.tried[-1]
    with pytest.raises(ModelNotFound) as bare:
        resolve_model("Qwen3-33B", cache_dir=tmp_path)
    assert "Qwen/Qwen3-32B" in bare.value.suggestions


def test_offline_is_the_argument_else_the_environment_else_a_quick_probe(monkeypatch):
    assert hub_offline(True) and not hub_offline(False)
    assert hub_offline()  # HF_HUB_OFFLINE=1 (the fixture): no probe
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def unreachable(address, timeout):
        assert timeout <= sources.PROBE_SECONDS
        raise OSError("unreachable")

    monkeypatch.setattr(sources.socket, "create_connection", unreachable)
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    assert hub_offline()
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")  # only the proxy reaches out
    assert not hub_offline()


def test_online_only_config_json_is_downloaded(tmp_path, monkeypatch):
    asked = []

    def download(repo_id, filename, **kwargs):
        asked.append((repo_id, filename))
        path = tmp_path / "downloaded.json"
        path.write_text(json.dumps(TINY))
        return str(path)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    found = resolve_model("acme/Fresh-2L", offline=False, cache_dir=tmp_path / "hub")
    assert found.how == "hub" and found.read().num_layers == 2
    assert asked == [("acme/Fresh-2L", "config.json")]


def _http_error(cls, message):
    error = cls.__new__(cls)  # huggingface_hub's HTTP errors need a response to build
    Exception.__init__(error, message)
    return error


@pytest.mark.parametrize(
    ("error", "raised", "words"),
    [
        (GatedRepoError, ModelUnavailable, "gated"),
        (RepositoryNotFoundError, ModelNotFound, "no such repository"),
    ],
)
def test_a_gated_or_missing_repo_names_the_id_and_the_fix(
    tmp_path, monkeypatch, error, raised, words
):
    def download(repo_id, filename, **kwargs):
        raise _http_error(error, "401")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    with pytest.raises(raised) as err:
        resolve_model("acme/Locked-70B", offline=False, cache_dir=tmp_path)
    assert words in str(err.value) and "acme/Locked-70B" in str(err.value)
    assert "--model PATH/config.json" in str(err.value)


@pytest.mark.parametrize(
    ("dialect", "config", "model"),
    [
        ("vllm", {"model": "meta-llama/Llama-3.1-8B-Instruct"}, "meta-llama/Llama-3.1-8B-Instruct"),
        ("vllm", {"model": "a", "model_tag": "b"}, "b"),  # the positional wins
        ("sglang", {"model-path": "Qwen/Qwen3-8B"}, "Qwen/Qwen3-8B"),
        ("sglang", {"model_path": "Qwen/Qwen3-8B"}, "Qwen/Qwen3-8B"),
        ("sglang", {"model": "Qwen/Qwen3-8B"}, "Qwen/Qwen3-8B"),
        ("trtllm", {"model": "x"}, "x"),
        ("trtllm", {"hf_model_dir": "/m"}, "/m"),
        ("trtllm", {"model_dir": "/m"}, "/m"),
        ("trtllm", {"checkpoint_dir": "/c"}, "/c"),
        ("mlc", {"model": "dist/Llama-q4f16_1-MLC"}, "dist/Llama-q4f16_1-MLC"),
        ("vllm", {"max-model-len": 8192}, None),
        ("vllm", {"model": ""}, None),
        ("sglang", {"model": 3}, None),
    ],
)
def test_the_model_an_engine_config_names(dialect, config, model):
    assert model_of_config(config, dialect) == model


def test_an_unknown_dialect_has_no_model_keys():
    with pytest.raises(SpecError, match="vllm"):
        model_of_config({"model": "x"}, "tgi")
