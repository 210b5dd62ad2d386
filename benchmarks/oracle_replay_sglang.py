"""Replay the SGLang oracle's recorded verdicts through arbiter: per release, how often the
verdict (accept / adjust / reject) and the silently rewritten values agree, and every
difference with its reason.

Runs in arbiter's own environment (no SGLang import): the records are the JSON batches
`benchmarks/oracle_sglang.py generate` wrote under `tests/corpus/sglang/oracle/`, keyed
by the `release` each batch names (older batches without one are SGLang 0.5.23's).

    python benchmarks/oracle_replay_sglang.py            # every release's batches
    python benchmarks/oracle_replay_sglang.py --release 0.5.23 --verbose

One row per (engine, release): `n` records, `verdict_agree` and `rewrites_agree` (shares
in [0, 1]) and `differences`, each `(case, ours, theirs, reason)`. The silently rewritten
values of a record both sides accept or adjust are the explicit values SGLang rewrote
(`adjust`: field -> value after) and the values it derived for fields left unset that
arbiter derives too (`DERIVED`: the static memory fraction, the attention backend and the
page size it resolved). `reason` is the sourced entry of `KNOWN_DIFFERENCES` for the
case, or `UNLISTED` when none is listed: the slow test
(`tests/arbiter/engines/sglang/test_sglang_oracle_agreement.py`) fails on an unlisted
difference, on a listed one that now agrees, and below 98% on either figure.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "tests" / "corpus" / "sglang" / "oracle"
DEFAULT_RELEASE = "0.5.23"  # batches recorded before the generator named its release
UNLISTED = "UNLISTED"
# SGLang's derived field -> the option arbiter resolves it into
DERIVED = {
    "mem_fraction_static": "kv_cache_config.free_gpu_memory_fraction",
    "attention_backend": "sglang_config.attention_backend",
    "page_size": "kv_cache_config.tokens_per_block",
}
# SGLang 0.5.16 on an A10G (23,028 MiB) with Llama-3.1-8B (15 GiB of bf16 weights): a static
# fraction (written, or derived: below 0 where a large chunk's reserve exceeds the GPU)
# leaving no room for the weights. SGLang's configuration stage, all the CPU oracle runs,
# takes it; its model runner refuses it once the weights are loaded on the GPU
# (model_executor/pool_configurator.py, v0.5.16: "Not enough memory. Please try to
# increase --mem-fraction-static"); arbiter refuses it up front (memory.weights-fit).
# case index -> SGLang's fraction
_A10G_NO_ROOM_0_5_16 = {7: 0.416, 10: -0.165, 28: -0.121, 43: 0.5, 63: -0.106, 81: 0.5}
_A10G_NO_ROOM_0_5_16 |= {91: -0.097, 99: 0.418}
# case ("<batch file stem>#<index>") -> why arbiter and SGLang's recorded answer differ
KNOWN_DIFFERENCES: dict[str, str] = {
    f"generated-0.5.16-a10g#{i}": (
        f"out of the CPU oracle's reach: mem_fraction_static {fraction} of an A10G leaves"
        " no room for Llama-3.1-8B's 15 GiB of weights; SGLang 0.5.16 refuses it at model"
        " load on the GPU (pool_configurator.py: Not enough memory), arbiter by"
        " memory.weights-fit"
    )
    for i, fraction in _A10G_NO_ROOM_0_5_16.items()
}


# large models whose weights do not fit the static fraction SGLang 0.5.16 derives with
# unchunked prefill (chunked-prefill-size -1): batch -> ({case index: fraction}, the
# weights, the GPU)
_NO_ROOM_0_5_16 = {
    "gemma-2-l40s": (
        {1: 0.448, 9: 0.448},
        "Gemma-2-27B's bf16 weights (about 25 GiB a GPU at tp 2)",
        "an L40S",
    ),
    "gpt-oss-h100": (
        {13: 0.674, 24: 0.674},
        "gpt-oss-120b's bf16 weights (about 54 GiB a GPU at tp 4)",
        "an H100",
    ),
}
KNOWN_DIFFERENCES |= {
    f"generated-0.5.16-{batch}#{i}": (
        f"out of the CPU oracle's reach: mem_fraction_static {fraction} of {gpu} leaves no"
        f" room for {weights}; SGLang 0.5.16 refuses it at model load on the GPU"
        " (pool_configurator.py: Not enough memory), arbiter by memory.weights-fit"
    )
    for batch, (cases, weights, gpu) in _NO_ROOM_0_5_16.items()
    for i, fraction in cases.items()
}


class Difference(NamedTuple):
    """One record on which arbiter and SGLang differ: each side's answer, and why."""

    case: str
    ours: str
    theirs: str
    reason: str


class Row(NamedTuple):
    """The agreement of one engine release over its recorded configurations."""

    engine: str
    release: str
    n: int
    verdict_agree: float
    rewrites_agree: float
    differences: list[Difference]


def batches(directory: Path = RECORDS) -> list[Path]:
    """The generated batches (`generated*.json`); the corpus replay is its own test."""
    return sorted(directory.glob("generated*.json"))


def release_of(batch: Mapping[str, Any]) -> str:
    return str(batch.get("release") or DEFAULT_RELEASE)


_CHANGE = re.compile(r"^(?P<key>[^:]+): (?P<before>.*?) -> (?P<after>.*?) \(")


def our_rewrites(changes: Iterable[str]) -> dict[str, Any]:
    """arbiter's adjustments (`key: before -> after (why)`) as {field: value after}."""
    out: dict[str, Any] = {}
    for change in changes:
        match = _CHANGE.match(change)
        if match is None:
            continue
        after = match["after"]
        try:
            value: Any = ast.literal_eval(after)
        except (ValueError, SyntaxError):
            value = after
        out[match["key"].replace("-", "_")] = value
    return out


def _given(args: Mapping[str, Any]) -> set[str]:
    """The fields an argument set writes (argparse's prefix match: `mem-fraction`)."""
    names = {k.replace("-", "_") for k in args}
    if any(n.startswith("mem_fraction") for n in names):
        names.add("mem_fraction_static")
    return names


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) < 5e-4  # the fraction's three decimals
        except (TypeError, ValueError):
            return False
    return bool(a == b)


def compare(record: Mapping[str, Any], verdict: Any) -> tuple[bool, bool | None, str, str]:
    """(verdicts agree, rewrites agree or None when either side refuses, ours, theirs)."""
    theirs_kind = record["verdict"]
    ours_kind = verdict.verdict
    theirs_adj = {k: v["after"] for k, v in (record.get("adjust") or {}).items()}
    ours_adj = our_rewrites(verdict.changes)
    if "reject" in (theirs_kind, ours_kind):
        ours = ours_kind if ours_kind != "reject" else f"reject {list(verdict.rules)}"
        theirs = theirs_kind if theirs_kind != "reject" else f"reject: {record.get('message')}"
        return theirs_kind == ours_kind, None, ours, theirs
    given = _given(record["args"])
    values = verdict.resolution.values if verdict.resolution is not None else {}
    theirs_vals = dict(theirs_adj)
    ours_vals = dict(ours_adj)
    for name, path in DERIVED.items():
        recorded = (record.get("derived") or {}).get(name)
        if name in given or recorded is None:
            continue
        theirs_vals[name] = recorded
        ours_vals[name] = values.get(path)
    rewrites = set(theirs_vals) == set(ours_vals) and all(
        _same(theirs_vals[k], ours_vals[k]) for k in theirs_vals
    )
    ours = f"{ours_kind} {json.dumps(ours_vals, sort_keys=True, default=str)}"
    theirs = f"{theirs_kind} {json.dumps(theirs_vals, sort_keys=True, default=str)}"
    return theirs_kind == ours_kind, rewrites, ours, theirs


# the release of a batch -> the arbiter profile that models it (others: `sglang-<release>`)
PROFILE_OF_RELEASE: dict[str, str] = {}  # a release whose profile is not "sglang-<release>"


class UnknownRelease(LookupError):
    """Records of an SGLang release no arbiter profile models."""

    def __init__(self, release: str, known: tuple[str, ...]) -> None:
        self.release = release
        self.known = known
        super().__init__(release)

    def __str__(self) -> str:
        return (
            f"records of SGLang {self.release}: no arbiter profile models it "
            f"(sglang profiles: {', '.join(self.known) or 'none'})"
        )


def profile_for(release: str) -> str:
    from constraints.profiles import PROFILES

    name = PROFILE_OF_RELEASE.get(release, f"sglang-{release}")
    if name not in PROFILES:
        known = tuple(sorted(n for n, p in PROFILES.items() if p.engine == "sglang"))
        raise UnknownRelease(release, known)
    return name


def check_record(
    record: Mapping[str, Any], models: Mapping[str, Any], release: str = DEFAULT_RELEASE
) -> Any:
    from arbiter.engines.sglang.native import check_sglang

    model = models[record.get("model") or "llama-3.1-8b"]
    # gpus=64: the generated sets are checked for their arguments, not a machine's size
    return check_sglang(
        record["args"], model=model, device=record["gpu"], gpus=64, profile=profile_for(release)
    )


def oracle_models() -> dict[str, Any]:
    """The model configs the oracle resolved against (benchmarks/oracle_sglang.py MODELS;
    loading it imports no SGLang)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "oracle_sglang", ROOT / "benchmarks" / "oracle_sglang.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.MODELS)


def replay(
    release: str | None = None,
    *,
    directory: Path = RECORDS,
    known: Mapping[str, str] | None = None,
) -> list[Row]:
    """One `Row` per SGLang release recorded under `directory` (only `release` if given)."""
    known = KNOWN_DIFFERENCES if known is None else known
    models = oracle_models()
    by_release: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for path in batches(directory):
        batch = json.loads(path.read_text())
        rel = release_of(batch)
        if release is not None and rel != release:
            continue
        for i, record in enumerate(batch["results"]):
            by_release.setdefault(rel, []).append((f"{path.stem}#{i}", record))
    rows = []
    for rel, records in sorted(by_release.items()):
        verdicts = rewrites = compared = 0
        differences = []
        for case, record in records:
            verdict_ok, rewrite_ok, ours, theirs = compare(
                record, check_record(record, models, rel)
            )
            verdicts += verdict_ok
            if rewrite_ok is not None:
                compared += 1
                rewrites += rewrite_ok
            if not verdict_ok or rewrite_ok is False:
                differences.append(Difference(case, ours, theirs, known.get(case, UNLISTED)))
        rows.append(
            Row(
                "sglang",
                rel,
                len(records),
                verdicts / len(records),
                rewrites / compared if compared else 1.0,
                differences,
            )
        )
    return rows


def render(rows: Iterable[Row], verbose: bool = False) -> str:
    lines = ["engine  release  n     verdict  rewrites  differences"]
    for row in rows:
        lines.append(
            f"{row.engine:<7} {row.release:<8} {row.n:<5} {row.verdict_agree:7.1%}  "
            f"{row.rewrites_agree:7.1%}   {len(row.differences)}"
        )
        for d in row.differences:
            lines.append(f"  {d.case}: {d.reason}")
            if verbose or d.reason == UNLISTED:
                lines.append(f"    ours:   {d.ours}")
                lines.append(f"    theirs: {d.theirs}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default=None)
    parser.add_argument("--verbose", action="store_true")
    opts = parser.parse_args(argv)
    print(render(replay(opts.release), verbose=opts.verbose))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
