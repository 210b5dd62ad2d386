"""`arbiter sweep GRID`: solve a grid and write results.csv, results.md, results.json and
the plots capacity.png and conflicts.png. `--format json` prints the summary as JSON (the
grid points, their count by status, the files written) and no progress bar; its errors
are the `arbiter.verdict` error report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import SweepError
from .console import fail, out, print_json
from .options import FormatOption, JsonOption, output_format


def sweep(
    grid_file: Annotated[
        Path,
        typer.Argument(help="The grid in YAML or JSON (models, devices, modes, features, pairs)."),
    ],
    out_dir: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            "--out",
            metavar="FOLDER",
            help="Folder for the results and plots (--out: the old name).",
        ),
    ] = Path("sweep-out"),
    workers: Annotated[
        int, typer.Option("--workers", "-w", help="Solver processes on this machine.")
    ] = 1,
    ray: Annotated[
        str | None,
        typer.Option("--ray", help="Run on a Ray cluster at this address ('local' starts one)."),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")
    ] = False,
    format_: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Solve every grid point (models x devices x modes x feature sets).

    Example: arbiter sweep examples/sweep.yaml --workers 2 -o sweep-out
    """
    fmt = output_format(format_, as_json)
    # the sweep (the solver, OR-Tools, matplotlib) loads only when the command runs
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from ..sweep import load_grid, run_sweep, write_outputs  # (the same reason)

    if workers < 1:
        fail("--workers must be at least 1", 2)
    try:
        grid = load_grid(grid_file)
        total = len(grid.points())
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            disable=quiet or fmt == "json",
            console=out,
        ) as bar:
            task = bar.add_task("solving", total=total)
            rows = run_sweep(
                grid,
                workers=workers,
                ray_address=ray,
                progress=lambda done, _total: bar.update(task, completed=done),
            )
        written = write_outputs(rows, grid, out_dir)
    except SweepError as exc:
        fail(f"{grid_file}: {exc}", 2, exc)
    statuses: dict[str, int] = {}
    for row in rows:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    if fmt == "json":
        print_json(
            {
                "points": len(rows),
                "statuses": dict(sorted(statuses.items())),
                "written": [str(path) for path in written],
            }
        )
    elif not quiet:
        out.print(
            f"{len(rows)} grid points: "
            + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        )
        for path in written:
            out.print(f"wrote {path}")
