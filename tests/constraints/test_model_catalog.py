"""The bundled model catalog (constraints/facts/catalog/): every entry is indexed, sourced
and checked, either against the fixture model whose facts it re-authors (the groundtruth
of tests/fixtures/models/) or against its published totals; names match case-insensitively,
with and without the organisation, and no spelling names two entries."""

from __future__ import annotations

import json

import pytest

from constraints.facts import catalog
from constraints.facts.catalog import FOLDER
from constraints.facts.sources import resolve_model

from .model_groundtruth import GROUNDTRUTH, fixture_names, record

PINNED = json.loads(GROUNDTRUTH.read_text())
TOLERANCE = 0.02
# the most deployed current families (issue 30 item 1), as a user spells them
DEPLOYED = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.1-405B-Instruct",
    "meta-llama/Llama-3.3-70B-Instruct",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-235B-A22B",
    "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-72B-Instruct",
    "deepseek-ai/DeepSeek-V3",
    "deepseek-ai/DeepSeek-R1",
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "google/gemma-3-27b-it",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "moonshotai/Kimi-K2-Instruct",
]


def test_the_index_and_the_entry_files_agree():
    files = sorted(p.stem for p in FOLDER.glob("*.yaml") if p.name != "index.yaml")
    assert files == list(catalog.names())
    for name in catalog.names():
        entry = catalog.entry(name)
        assert entry.source and "/" in entry.id
        assert (entry.fixture is None) != (not entry.published), name  # exactly one check


def test_every_fixture_model_is_in_the_catalog():
    fixtures = {catalog.entry(n).fixture for n in catalog.names()} - {None}
    assert set(fixture_names()) <= fixtures


@pytest.mark.parametrize(
    "name", [n for n in catalog.names() if catalog.entry(n).fixture is not None]
)
def test_catalog_facts_equal_the_fixture_facts(name):
    entry = catalog.entry(name)
    got = json.loads(json.dumps(record(resolve_model(name, offline=True).read())))
    assert got == PINNED[entry.fixture]


@pytest.mark.parametrize("name", [n for n in catalog.names() if catalog.entry(n).published])
def test_new_entries_match_their_published_totals(name):
    entry = catalog.entry(name)
    spec = resolve_model(name, offline=True).read()
    want = entry.published
    assert abs(spec.num_params - want["params"]) / want["params"] < TOLERANCE
    got_kv = spec.kv_bytes_per_token(2) + spec.window_kv_elements_per_token * 2
    assert got_kv == want["kv_bytes_per_token"]


def test_a_sliding_window_entry_reads_its_window():
    spec = resolve_model("mistralai/Mistral-7B-v0.1", offline=True).read()
    assert spec.sliding_window == 4096 and spec.layers_of("sliding") == 32
    assert resolve_model("Mistral-7B-Instruct-v0.3", offline=True).read().sliding_window == 0


@pytest.mark.parametrize("ref", DEPLOYED)
def test_the_deployed_families_resolve_by_id_and_by_bare_name(ref):
    by_id = resolve_model(ref, offline=True)
    assert by_id.how == "catalog" and by_id.label == ref
    bare = resolve_model(ref.split("/")[1].upper(), offline=True)
    assert bare.how == "catalog" and bare.config == by_id.config


def test_no_spelling_names_two_entries():
    seen: dict[str, str] = {}
    for name, item in catalog.index().items():
        spellings = [name, item["id"], *(item.get("aliases") or ())]
        keys = {s.lower() for s in spellings} | {s.rsplit("/", 1)[-1].lower() for s in spellings}
        for key in keys:
            assert seen.setdefault(key, name) == name, (key, seen[key], name)


def test_suggestions_come_from_the_catalog():
    assert "Qwen/Qwen3-32B" in catalog.suggestions("qwen3-23b")
    assert catalog.lookup("no-such-model") is None


def test_the_models_page_lists_every_entry_and_its_example_holds():
    page = (FOLDER.parent.parent.parent / "docs" / "models.md").read_text()
    for name in catalog.names():
        assert f"| `{name}` | `{catalog.entry(name).id}` |" in page, name
    found = resolve_model("Qwen/Qwen3-32B", offline=True)
    assert f"print(found)  # {found}" in page
    assert f"print(spec.describe())  # {found.read().describe()}" in page
