"""The renderer table is the one list of report formats, and every entry renders."""

from __future__ import annotations

from typing import get_args

import pytest

from arbiter import func, perf
from arbiter.explain.entry import explain
from arbiter.report import FORMATS, RENDERERS, ReportFormat, render


def test_the_request_models_type_names_the_same_formats():
    assert set(get_args(ReportFormat)) == set(RENDERERS) == set(FORMATS)


def test_the_command_line_and_compare_read_the_table():
    from importlib import import_module

    cli_explain = import_module("arbiter.cli.explain")
    compare_render = import_module("arbiter.compare.render")

    assert cli_explain.FORMATS is FORMATS
    assert compare_render.FORMATS is FORMATS


@pytest.mark.parametrize("format", FORMATS)
def test_every_format_renders_an_explanation(format):
    explanation = explain(
        [
            func("sink", {"plugin_config.streamingllm": True}),
            perf("reuse", {"kv_cache_config.enable_block_reuse": True}),
        ],
        profile="trtllm-tensorrt",
    )
    out = render(explanation, format)
    assert isinstance(out, str) and out.strip()


def test_an_unknown_format_names_the_choices():
    with pytest.raises(ValueError, match="text, markdown, json, html"):
        render(None, "pdf")
