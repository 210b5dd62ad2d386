"""Sweeps: solve a grid of models x devices x modes x feature sets, write a CSV, a markdown
table and PNG plots.

A grid file (YAML or JSON):
    models:                       # name -> model facts, or {hf_config: path/to/config.json}
      llama-3-8b: {hf_config: llama3-8b.json}
    devices: [H100-80GB, L4]      # catalog names, or {name: {device.sm: 89, device.memory_mib: 23034}}
    modes: [server, local]        # capacity modes; omit (or null) for none
    features:                     # name -> claims (the JSON form `arbiter solve` reads)
      baseline: []
      streamingllm: [{kind: func, name: streamingllm, requires: {plugin_config.streamingllm: true}}]
    pairs: true                   # also solve every pair of feature sets together
    profile: trtllm-tensorrt      # the release line whose rules and defaults apply

Every grid point is one `arbitrate()` call; points run in a process pool (`workers`), or
on an existing Ray cluster (`ray_address`, with the optional `ray` package). Results are
plain dicts, one per point, in grid order whatever the pool did.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from constraints import specs
from constraints.errors import SchemaError
from constraints.profiles import get_profile

from .errors import ConflictError, InvalidClaim, SweepError
from .solve import arbitrate

COLUMNS = (
    "model",
    "device",
    "mode",
    "features",
    "status",
    "conflict",
    "dropped",
    "kept",
    "max_batch_size",
    "max_num_tokens",
    "tokens_per_block",
    "kv_tokens",
    "solve_ms",
)


@dataclass
class Grid:
    models: dict[str, dict[str, Any]]
    devices: dict[str, dict[str, Any]]
    modes: list[str | None]
    features: dict[str, list[dict[str, Any]]]
    pairs: bool = False
    base: Path = field(default_factory=Path.cwd)
    profile: str | None = None

    def feature_sets(self) -> list[tuple[str, ...]]:
        names = list(self.features)
        sets: list[tuple[str, ...]] = [(n,) for n in names]
        if self.pairs:
            sets += list(itertools.combinations(names, 2))
        return sets

    def points(self) -> list[dict[str, Any]]:
        """One job per grid point: names and the claims to solve, in grid order."""
        jobs = []
        for model, device, mode, fset in itertools.product(
            self.models, self.devices, self.modes, self.feature_sets()
        ):
            claims = [
                {"kind": "setup", "name": f"model:{model}", "fixes": self.models[model]},
                {"kind": "setup", "name": f"device:{device}", "fixes": self.devices[device]},
            ]
            for name in fset:
                claims.extend(self.features[name])
            jobs.append(
                {
                    "model": model,
                    "device": device,
                    "mode": mode,
                    "features": "+".join(fset),
                    "claims": claims,
                    "profile": self.profile,
                }
            )
        return jobs


def load_grid(source: str | Path) -> Grid:
    path = Path(source)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SweepError(str(path), exc.strerror or "cannot read") from None
    except yaml.YAMLError as exc:
        raise SweepError(str(path), f"not YAML or JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, Mapping):
        raise SweepError(str(path), "expected a mapping with models, devices and features")
    return grid_from_dict(data, base=path.parent)


def grid_from_dict(data: Mapping[str, Any], base: Path | None = None) -> Grid:
    base = base or Path.cwd()
    for key in ("models", "devices", "features"):
        if key not in data:
            raise SweepError(key, "is missing")
    unknown = set(data) - {"models", "devices", "modes", "features", "pairs", "profile"}
    if unknown:
        raise SweepError(
            sorted(unknown)[0],
            "unknown key; use models, devices, modes, features, pairs, profile",
        )
    profile = data.get("profile")
    if profile is not None:
        try:
            get_profile(str(profile))
        except SchemaError as exc:
            raise SweepError("profile", str(exc)) from None
    models = {
        name: _model_facts(name, spec, base)
        for name, spec in _named(data["models"], "models").items()
    }
    devices = {
        name: _device_facts(name, spec) for name, spec in _named(data["devices"], "devices").items()
    }
    modes = data.get("modes") or [None]
    if not isinstance(modes, list):
        raise SweepError("modes", "expected a list")
    features = _named(data["features"], "features")
    for name, claims in features.items():
        if not isinstance(claims, list):
            raise SweepError(f"features.{name}", "expected a list of claims")
    return Grid(
        models,
        devices,
        list(modes),
        {k: list(v) for k, v in features.items()},
        bool(data.get("pairs")),
        base,
        None if profile is None else str(profile),
    )


def _named(value: Any, key: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list):
        return {str(v): None for v in value}
    raise SweepError(key, "expected a mapping or a list of names")


def _model_facts(name: str, spec: Any, base: Path) -> dict[str, Any]:
    if isinstance(spec, Mapping) and "hf_config" in spec:
        path = base / spec["hf_config"]
        try:
            return specs.read_model(path).facts()
        except Exception as exc:  # a bad config.json: name it
            raise SweepError(f"models.{name}.hf_config", f"{path}: {exc}") from None
    if isinstance(spec, Mapping):
        return dict(spec)
    raise SweepError(f"models.{name}", "expected model facts or {hf_config: path}")


def _device_facts(name: str, spec: Any) -> dict[str, Any]:
    if isinstance(spec, Mapping):
        return dict(spec)

    try:
        return specs.DeviceSpec.named(name).facts()
    except Exception as exc:
        raise SweepError(f"devices.{name}", str(exc)) from None


# ----------------------------------------------------------------------------- solving
def solve_point(job: dict[str, Any]) -> dict[str, Any]:
    """Solve one grid point into a result row (runs in a worker)."""
    row: dict[str, Any] = {k: job[k] for k in ("model", "device", "mode", "features")}
    row.update({c: "" for c in COLUMNS if c not in row})
    kwargs: dict[str, Any] = {"mode": job["mode"]} if job["mode"] else {}
    if job.get("profile"):
        kwargs["profile"] = job["profile"]
    try:
        resolution = arbitrate(job["claims"], **kwargs)
    except ConflictError as exc:
        row["status"] = "conflict"
        row["conflict"] = " | ".join(" & ".join(c.claims) for c in exc.conflicts)
        return row
    except InvalidClaim as exc:
        row["status"] = "invalid"
        row["conflict"] = str(exc)
        return row
    row["status"] = resolution.status
    row["dropped"] = " ".join(resolution.dropped_names)
    row["kept"] = len(resolution.kept)
    row["max_batch_size"] = resolution.value("build_config.max_batch_size")
    row["max_num_tokens"] = resolution.value("build_config.max_num_tokens")
    row["tokens_per_block"] = resolution.value("kv_cache_config.tokens_per_block")
    capacity = getattr(resolution, "capacity", None)
    kv_tokens = getattr(capacity, "kv_tokens", None) if capacity is not None else None
    row["kv_tokens"] = "" if kv_tokens is None else kv_tokens
    row["solve_ms"] = resolution.stats["total_ms"]
    return row


def run_sweep(
    grid: Grid,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows in grid order. `progress(done, total)` is called as points finish."""
    jobs = grid.points()
    total = len(jobs)
    rows: list[dict[str, Any] | None] = [None] * total
    done = 0

    def finished(index: int, row: dict[str, Any]) -> None:
        nonlocal done
        rows[index] = row
        done += 1
        if progress:
            progress(done, total)

    if ray_address:
        for index, row in _ray_map(jobs, ray_address):
            finished(index, row)
    elif workers <= 1:
        for index, job in enumerate(jobs):
            finished(index, solve_point(job))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(solve_point, job): i for i, job in enumerate(jobs)}

            for future in as_completed(futures):
                finished(futures[future], future.result())
    return [r for r in rows if r is not None]


def _ray_map(jobs: list[dict[str, Any]], address: str) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        import ray  # ray is optional: only --ray needs it
    except ImportError:
        raise SweepError(
            "--ray", "the optional 'ray' package is not installed (pip install ray)"
        ) from None
    ray.init(
        address=None if address == "local" else address,
        ignore_reinit_error=True,
        log_to_driver=False,
    )
    remote = ray.remote(solve_point)
    pending = {remote.remote(job): i for i, job in enumerate(jobs)}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            yield pending.pop(ref), ray.get(ref)


# ----------------------------------------------------------------------------- outputs
def to_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in COLUMNS})
    return buffer.getvalue()


def to_markdown(rows: list[dict[str, Any]]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    body = [
        "| " + " | ".join(str(r.get(k, "")).replace("|", "/") for k in COLUMNS) + " |" for r in rows
    ]
    return "\n".join([head, rule, *body]) + "\n"


def conflict_matrix(rows: list[dict[str, Any]], features: list[str]) -> list[list[int]]:
    """How many grid points conflict, for each pair of feature sets (diagonal: alone)."""
    index = {f: i for i, f in enumerate(features)}
    matrix = [[0] * len(features) for _ in features]
    for row in rows:
        if row["status"] != "conflict":
            continue
        names = row["features"].split("+")
        a, b = (names[0], names[0]) if len(names) == 1 else names
        matrix[index[a]][index[b]] += 1
        if a != b:
            matrix[index[b]][index[a]] += 1
    return matrix


def plot(rows: list[dict[str, Any]], grid: Grid, out: Path) -> list[Path]:
    """capacity.png (per device: the KV tokens on a log axis, and how many feature sets
    solve) and conflicts.png (heatmap)."""
    import matplotlib  # matplotlib loads only when plots are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the headless backend

    written = []
    solved = [r for r in rows if r["status"] in ("optimal", "feasible")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels = sorted({(r["model"], r["mode"] or "-") for r in solved})
    devices = list(grid.devices)
    width = 0.8 / max(1, len(labels))
    for j, (model, mode) in enumerate(labels):
        kv, solved_sets = [], []
        for device in devices:
            here = [
                r
                for r in solved
                if r["device"] == device and r["model"] == model and (r["mode"] or "-") == mode
            ]
            kv.append(max((r["kv_tokens"] for r in here if r["kv_tokens"] != ""), default=0))
            solved_sets.append(len({r["features"] for r in here}))
        at = [i + j * width for i in range(len(devices))]
        axes[0].bar(at, kv, width, label=f"{model} / {mode}")
        axes[1].bar(at, solved_sets, width, label=f"{model} / {mode}")
    for axis, title, ylabel in (
        (axes[0], "KV cache capacity", "KV tokens (log scale)"),
        (axes[1], "feature sets that solve", f"of {len({r['features'] for r in rows})} sets"),
    ):
        axis.set_xticks([i + width * (len(labels) - 1) / 2 for i in range(len(devices))], devices)
        axis.set_title(title)
        axis.set_xlabel("device")
        axis.set_ylabel(ylabel)
    # a log axis: the local mode's few thousand tokens stay visible beside millions
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path = out / "capacity.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    features = list(grid.features)
    matrix = conflict_matrix(rows, features)
    fig, axis = plt.subplots(figsize=(1.2 + 0.7 * len(features), 1.0 + 0.6 * len(features)))
    image = axis.imshow(matrix, cmap="Reds")
    axis.set_xticks(range(len(features)), features, rotation=45, ha="right")
    axis.set_yticks(range(len(features)), features)
    for i, line in enumerate(matrix):
        for j, count in enumerate(line):
            axis.text(j, i, str(count), ha="center", va="center", fontsize=8)
    axis.set_title("conflicting grid points per feature pair")
    fig.colorbar(image, ax=axis)
    fig.tight_layout()
    path = out / "conflicts.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def write_outputs(rows: list[dict[str, Any]], grid: Grid, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.csv").write_text(to_csv(rows))
    (out / "results.md").write_text(to_markdown(rows))
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    return [out / "results.csv", out / "results.md", out / "results.json", *plot(rows, grid, out)]
