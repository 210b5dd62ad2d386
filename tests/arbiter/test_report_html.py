"""The HTML report in a real headless browser: it loads, and a screenshot shows the graph.

Needs Chromium (Debian package `chromium`, which `.ci/run` installs); skipped only when no
Chromium binary is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from arbiter import func
from arbiter.explain import explain
from arbiter.report.svg import COLOURS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
# the plugin rules these claims meet are the TensorRT engine's (scope tensorrt)
PROFILE = "trtllm-tensorrt"
CLAIMS = [
    func("chunked_context", {"scheduler_config.enable_chunked_context": True}),
    func("fp8_kv", {"quant_config.kv_cache_quant_algo": "FP8"}),
    func("no_fp8_fmha", {"plugin_config.use_fp8_context_fmha": False}),
]


def _chromium(args: list[str], workdir: Path) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(dir=workdir, prefix="profile-")
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=workdir,
    )


def test_svg_has_one_node_per_claim_and_rule():
    explanation = explain(CLAIMS, profile=PROFILE)
    html = explanation.render("html")
    (conflict,) = explanation.conflicts
    assert len(re.findall(r'<g class="node claim ', html)) == len(conflict.claims) == 3
    assert len(re.findall(r'<g class="node rule"', html)) == len(conflict.rules) == 2
    assert html == explain(CLAIMS, profile=PROFILE).render("html")  # deterministic


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_report_renders_in_headless_chromium(tmp_path):
    explanation = explain(CLAIMS, profile=PROFILE)
    (conflict,) = explanation.conflicts
    page = tmp_path / "report.html"
    page.write_text(explanation.render("html"))

    dom = _chromium(["--dump-dom", page.as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    claims = re.findall(r'<g class="node claim func" data-id="([^"]+)"', dom.stdout)
    rules = re.findall(r'<g class="node rule" data-id="([^"]+)"', dom.stdout)
    assert sorted(claims) == sorted(c.name for c in conflict.claims)
    assert sorted(rules) == sorted(r.id for r in conflict.rules)

    shot = tmp_path / "report.png"
    result = _chromium([f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()], tmp_path)
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    Image = pytest.importorskip("PIL.Image")
    with Image.open(shot) as img:
        pixels = {colour for _, colour in img.convert("RGB").getcolors(maxcolors=1 << 24)}

    def rgb(hex_colour: str) -> tuple[int, int, int]:
        return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]

    # the claim boxes (blue) and rule boxes (orange) are painted
    assert rgb(COLOURS["func"]) in pixels
    assert rgb(COLOURS["rule"]) in pixels
