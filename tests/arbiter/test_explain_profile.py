"""D-H2: `explain FILE` read the claims but dropped the file's `profile:`, so `solve` and
`explain` answered on different release lines. Both now read the file as one scenario."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from arbiter.cli import app

runner = CliRunner()
EXAMPLE = "examples/claims_streamingllm.yaml"  # profile: trtllm-0.10


def test_explain_reads_the_files_profile_as_solve_does():
    solved = runner.invoke(app, ["solve", EXAMPLE, "--format", "json"])
    explained = runner.invoke(app, ["explain", EXAMPLE, "--format", "json"])
    assert solved.exit_code == 0 and explained.exit_code == 0, explained.output
    assert "trtllm-0.10" in solved.output
    report = json.loads(explained.output)
    assert report["profile"]["name"] == "trtllm-0.10"
    # the same two wishes solve drops, for the same rule
    dropped = {d["claim"] for d in report["dropped"]}
    assert {"block_reuse", "chunked_context"} <= dropped
    assert all(d["claim"] in solved.output for d in report["dropped"])


def test_the_flag_still_wins_over_the_file():
    explained = runner.invoke(
        app, ["explain", EXAMPLE, "--format", "json", "--profile", "trtllm-tensorrt"]
    )
    assert explained.exit_code == 0, explained.output
    assert json.loads(explained.output)["profile"]["name"] == "trtllm-tensorrt"
