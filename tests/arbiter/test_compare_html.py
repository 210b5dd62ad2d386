"""The compare HTML report draws the explain report's conflict graph for each engine
that conflicts through a rule, and none for an engine that holds."""

from __future__ import annotations

import re

from arbiter.compare import compare
from arbiter.compare.render import render
from arbiter.report.html import conflict_section

# Llama-3.1-8B knows 131,072 positions: SGLang refuses a longer context_length
# (sglang.context-length-within-model); TensorRT-LLM takes it
LONG = {"model": "llama-3.1-8b", "device": "H100-80GB", "hard": {"context_length": 262144}}


def test_html_has_the_conflict_graph_of_the_conflicting_engine_only():
    comparison = compare(LONG, ["trtllm", "sglang"])
    assert comparison["trtllm"].status == "holds"
    assert comparison["sglang"].status == "conflicts"
    html = render(comparison, "html")
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="conflict-graph"') == 1
    graph = re.search(r'<section class="conflict" id="([\w-]+)">.*?</section>', html, re.DOTALL)
    assert graph is not None and graph[1] == "sglang-conflict-1"
    assert 'data-id="sglang.context-length-within-model"' in graph[0]
    assert '<g class="node claim func" data-id="sglang.context_length"' in graph[0]
    assert "trtllm-conflict" not in html
    assert "<script" not in html
    # the section is the explain report's own, not a second renderer
    label = comparison["sglang"].label
    assert graph[0] == conflict_section(
        comparison["sglang"].explained[0], f"{label}: conflict 1 of 1", "sglang-conflict-1", 3
    )


def test_no_graph_when_every_engine_holds():
    comparison = compare({**LONG, "hard": {"context_length": 8192}}, ["trtllm", "sglang"])
    assert comparison.all_hold
    html = render(comparison, "html")
    assert "conflict-graph" not in html and "Conflict graphs" not in html


def test_json_carries_the_conflict_for_the_graph():
    data = compare(LONG, ["trtllm", "sglang"]).to_json()
    trtllm, sglang = data["results"]
    assert trtllm["explained"] == []
    (conflict,) = sglang["explained"]
    assert [r["id"] for r in conflict["rules"]] == ["sglang.context-length-within-model"]
    assert {e[1] for e in conflict["edges"]} == {"sglang.context-length-within-model"}
