"""Sweeps: grid expansion, solving in a process pool, CSV/markdown/plots, bad grids."""

from __future__ import annotations

import csv
import io

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.sweep import (
    COLUMNS,
    SweepError,
    conflict_matrix,
    grid_from_dict,
    run_sweep,
    to_csv,
    to_markdown,
    write_outputs,
)

GRID = {
    "models": {"llama-3-8b": {"model.num_layers": 32, "model.max_position_embeddings": 8192}},
    "devices": {
        "H100": {"device.sm": 90, "device.memory_mib": 81559},
        "V100": {"device.sm": 70, "device.memory_mib": 16384},
    },
    "features": {
        "baseline": [],
        "streamingllm": [
            {
                "kind": "func",
                "name": "streamingllm",
                "requires": {"plugin_config.streamingllm": True},
            }
        ],
        "block_reuse": [
            {
                "kind": "func",
                "name": "block_reuse",
                "requires": {"kv_cache_config.enable_block_reuse": True},
            }
        ],
    },
    "pairs": True,
    # StreamingLLM and the Volta limits are the TensorRT engine's
    "profile": "trtllm-tensorrt",
}


def test_grid_points_cover_the_product():
    grid = grid_from_dict(GRID)
    points = grid.points()
    assert len(points) == 1 * 2 * 1 * (3 + 3)
    assert {p["features"] for p in points} >= {"streamingllm+block_reuse", "baseline"}


def test_process_pool_gives_the_serial_rows_in_grid_order():
    grid = grid_from_dict(GRID)
    serial = run_sweep(grid, workers=1)
    seen = []
    pooled = run_sweep(grid, workers=2, progress=lambda done, total: seen.append((done, total)))
    strip = [{k: v for k, v in r.items() if k != "solve_ms"} for r in serial]
    assert [{k: v for k, v in r.items() if k != "solve_ms"} for r in pooled] == strip
    assert seen[-1] == (len(serial), len(serial))
    by = {(r["device"], r["features"]): r for r in serial}
    assert by[("H100", "streamingllm+block_reuse")]["status"] == "conflict"
    # Volta: no paged context FMHA, which block reuse needs
    assert by[("V100", "block_reuse")]["status"] == "conflict"
    assert by[("H100", "baseline")]["status"] == "optimal"
    assert by[("H100", "baseline")]["max_batch_size"] == 2048
    # a 16 GiB V100 holds the 8B model's weights only in bf16 (FP8 weights need sm >= 89:
    # rule quant.fp8-needs-ada), which leaves it one KV block and a smaller batch
    v100 = by[("V100", "baseline")]
    assert v100["kv_tokens"] == v100["tokens_per_block"] and v100["max_batch_size"] < 2048


def test_outputs_and_conflict_matrix(tmp_path):
    grid = grid_from_dict(GRID)
    rows = run_sweep(grid)
    parsed = list(csv.DictReader(io.StringIO(to_csv(rows))))
    assert list(parsed[0]) == list(COLUMNS) and len(parsed) == len(rows)
    assert to_markdown(rows).count("\n") == len(rows) + 2
    matrix = conflict_matrix(rows, list(grid.features))
    # streamingllm+block_reuse conflicts on both devices; block_reuse alone on V100
    assert matrix[1][2] == matrix[2][1] == 2
    assert matrix[2][2] == 1
    written = write_outputs(rows, grid, tmp_path)
    for path in written:
        assert path.exists() and path.stat().st_size > 0
    assert (tmp_path / "capacity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("grid", "key"),
    [
        ({"devices": {}, "features": {}}, "models"),
        ({**GRID, "colour": 1}, "colour"),
        ({**GRID, "features": {"x": {"kind": "func"}}}, "features.x"),
        ({**GRID, "modes": "server"}, "modes"),
        ({**GRID, "profile": "trtllm-9"}, "profile"),
    ],
)
def test_bad_grids_name_the_key(grid, key):
    with pytest.raises(SweepError) as err:
        grid_from_dict(grid)
    assert err.value.key == key and key in str(err.value)


def test_sweep_command(tmp_path):
    import yaml

    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(GRID))
    result = CliRunner().invoke(
        app, ["sweep", str(path), "-o", str(tmp_path / "out"), "--workers", "2", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "results.csv").exists() and (
        tmp_path / "out" / "conflicts.png"
    ).exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {}\n")
    result = CliRunner().invoke(app, ["sweep", str(bad)])
    assert result.exit_code == 2 and "devices" in result.output


def test_ray_cluster_gives_the_same_rows():
    ray = pytest.importorskip(
        "ray",
        reason="the optional ray package is not installed; the process pool path is tested above",
    )
    grid = grid_from_dict({**GRID, "pairs": False})
    try:
        rows = run_sweep(grid, ray_address="local")
    finally:
        ray.shutdown()
    expected = run_sweep(grid)
    assert [{k: v for k, v in r.items() if k != "solve_ms"} for r in rows] == [
        {k: v for k, v in r.items() if k != "solve_ms"} for r in expected
    ]
