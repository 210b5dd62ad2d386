"""Agreement of arbiter with the engines' own code, replayed from the recorded oracle files.

Every `tests/corpus/<engine>/oracle/generated*.json` holds what an engine's own
configuration code answered on generated argument sets (`benchmarks/oracle_<engine>.py
generate`, run in the engine's throwaway venv). This replays each record against arbiter
with the profile of the record's release (no engine venv needed) and prints, per engine
and release:

- n: the records;
- accept/refuse: the share where arbiter refuses exactly when the engine refused;
- rewrites: over the records both accept, the share where arbiter ends with the values the
  engine ends with: the user's values it rewrote (`adjust`: field -> value after) and the
  derived values that do not hang on the platform (`Replay.derived`);
- every difference, with its reason when `Replay.known` lists it (`UNLISTED` otherwise).

    PYTHONPATH=$PWD python benchmarks/oracle_agreement.py [--engine vllm] [--release 0.24]
        [--limit N] [--json out.json]

The record format is the oracle's own (`benchmarks/oracle_common.py write_results`):
`engine`, `version`, `seed`, `batch`, `results` with `args` (the `--config` YAML form),
`model` (optional), `verdict` (accept / adjust / reject), `adjust` ({field: {before,
after}}), `derived`, `cpu_why`, `gpu` (the verdict a GPU's code path gives where the
CPU's differs). An engine is added by one `Replay` subclass in `ENGINES`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "corpus"
# an engine/release needs this many records before its figures are asserted
MIN_RECORDS = 500
TARGET = 0.98


def _oracle_common() -> Any:
    spec = importlib.util.spec_from_file_location(
        "oracle_common", ROOT / "benchmarks" / "oracle_common.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ORACLE = _oracle_common()


@dataclass(frozen=True)
class Outcome:
    """One side's answer: refused or not, and the values it ends with."""

    refused: bool
    values: dict[str, Any] = field(default_factory=dict)
    detail: str = ""  # the message or the reasons, for the listing


@dataclass(frozen=True)
class Known:
    """A difference arbiter and the engine are known to have, with its reason: `applies`
    gets (record, engine's outcome, arbiter's outcome, verdict) and says whether this
    difference is the one."""

    name: str
    reason: str
    applies: Callable[[dict[str, Any], Outcome, Outcome, Any], bool]
    # the record is not what the engine does on a GPU (its CPU platform decided it, or
    # the engine checks it past the configuration stage the oracle runs): such a
    # difference is listed and left out of the shares' denominators
    beyond_oracle: bool = True


@dataclass
class Difference:
    file: str
    index: int
    kind: str  # "accept/refuse" or "rewrites"
    args: dict[str, Any]
    engine: str
    arbiter: str
    known: str | None  # Known.name, None: unlisted

    beyond_oracle: bool = False

    def line(self) -> str:
        tag = self.known or "UNLISTED"
        return (
            f"[{tag}] {self.file}#{self.index} {self.kind}: {json.dumps(self.args)}"
            f" -- engine: {self.engine}; arbiter: {self.arbiter}"
        )


@dataclass
class Agreement:
    engine: str
    release: str
    n: int = 0
    verdicts_agree: int = 0
    both_accept: int = 0
    rewrites_agree: int = 0
    differences: list[Difference] = field(default_factory=list)

    def _beyond(self, kind: str) -> int:
        return sum(1 for d in self.differences if d.kind == kind and d.beyond_oracle)

    @property
    def verdict_share(self) -> float:
        """Agreement on accept/refuse over the records the oracle speaks for on a GPU."""
        total = self.n - self._beyond("accept/refuse")
        return self.verdicts_agree / total if total else 1.0

    @property
    def rewrite_share(self) -> float:
        """Agreement on the values over the records both accept that the oracle speaks for."""
        total = self.both_accept - self._beyond("rewrites")
        return self.rewrites_agree / total if total else 1.0

    @property
    def unlisted(self) -> list[Difference]:
        return [d for d in self.differences if d.known is None]

    def summary(self) -> str:
        verdicts = self.n - self._beyond("accept/refuse")
        rewrites = self.both_accept - self._beyond("rewrites")
        return (
            f"{self.engine} {self.release}: n={self.n}"
            f"  accept/refuse {self.verdicts_agree}/{verdicts} ({100 * self.verdict_share:.1f}%)"
            f"  rewrites {self.rewrites_agree}/{rewrites} ({100 * self.rewrite_share:.1f}%)"
            f"  differences {len(self.differences)} ({len(self.unlisted)} unlisted,"
            f" {self._beyond('accept/refuse') + self._beyond('rewrites')} beyond the oracle)"
        )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (a == b and type(a) is type(b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) < 1e-9
    return bool(a == b)


def _diff(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """field -> (engine's, arbiter's) for every field where the two differ."""
    out = {}
    for key in sorted(set(ours) | set(theirs)):
        if key not in ours or key not in theirs or not _same(theirs[key], ours[key]):
            out[key] = (theirs.get(key, "(kept)"), ours.get(key, "(kept)"))
    return out


class Replay:
    """One engine's replay: its record files, the engine's outcome of a record, and
    arbiter's. Subclasses set `engine` and implement `profile`, `expected` and `ours`."""

    engine = ""
    known: tuple[Known, ...] = ()

    def files(self) -> list[Path]:
        return sorted((CORPUS / self.engine / "oracle").glob("generated*.json"))

    def release(self, payload: dict[str, Any]) -> str:
        return ".".join(str(payload["version"]).split(".")[:2])

    def records(self, release: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """(file name, payload) of every record file, of one release if given."""
        for path in self.files():
            payload = json.loads(path.read_text())
            if payload.get("engine") != self.engine:
                continue
            if release is None or self.release(payload) == release:
                yield path.name, payload

    def profile(self, release: str) -> str:
        raise NotImplementedError

    def expected(self, record: dict[str, Any]) -> Outcome:
        raise NotImplementedError

    def ours(self, record: dict[str, Any], profile: str) -> tuple[Outcome, Any]:
        """arbiter's outcome and the verdict it came from."""
        raise NotImplementedError

    def classify(
        self, record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any
    ) -> Known | None:
        for known in self.known:
            if known.applies(record, theirs, ours, verdict):
                return known
        return None


def _difference(
    rep: Replay,
    name: str,
    index: int,
    kind: str,
    record: dict[str, Any],
    engine: str,
    arbiter: str,
    theirs: Outcome,
    ours: Outcome,
    verdict: Any,
) -> Difference:
    known = rep.classify(record, theirs, ours, verdict)
    return Difference(
        name,
        index,
        kind,
        record["args"],
        engine,
        arbiter,
        known.name if known else None,
        bool(known and known.beyond_oracle),
    )


def replay(
    rep: Replay, release: str, limit: int | None = None, only: str | None = None
) -> Agreement:
    """The agreement of arbiter with one engine release's records (`only`: the files
    whose name contains it; `limit`: the first records of each file)."""
    out = Agreement(rep.engine, release)
    profile = rep.profile(release)
    for name, payload in rep.records(release):
        if only is not None and only not in name:
            continue
        for index, record in enumerate(payload["results"][:limit]):
            if record.get("verdict") not in ("accept", "adjust", "reject"):
                continue
            out.n += 1
            theirs = rep.expected(record)
            ours, verdict = rep.ours(record, profile)
            if theirs.refused != ours.refused:
                out.differences.append(
                    _difference(
                        rep,
                        name,
                        index,
                        "accept/refuse",
                        record,
                        f"{'refuse' if theirs.refused else 'accept'} {theirs.detail}".strip(),
                        f"{'refuse' if ours.refused else 'accept'} {ours.detail}".strip(),
                        theirs,
                        ours,
                        verdict,
                    )
                )
                continue
            out.verdicts_agree += 1
            if theirs.refused:
                continue
            out.both_accept += 1
            apart = _diff(ours.values, theirs.values)
            if not apart:
                out.rewrites_agree += 1
                continue
            shown = {k: v[0] for k, v in apart.items()}, {k: v[1] for k, v in apart.items()}
            out.differences.append(
                _difference(
                    rep,
                    name,
                    index,
                    "rewrites",
                    record,
                    json.dumps(shown[0], default=str),
                    json.dumps(shown[1], default=str),
                    theirs,
                    ours,
                    verdict,
                )
            )
    return out


# ---------------------------------------------------------------------------- vLLM

# what arbiter's `changes` look like: "<field>: <before> -> <after>, because <why>"
_CHANGE = re.compile(r"^([\w.\-]+): (.*?) -> (.*?), because")
# the derived values vLLM's records hold that do not hang on the platform, and the option
# arbiter solves for each (the token budget and sequence limit are the CPU platform's)
VLLM_DERIVED = {
    "max_model_len": "build_config.max_seq_len",
    "enable_chunked_prefill": "scheduler_config.enable_chunked_context",
    "enable_prefix_caching": "kv_cache_config.enable_block_reuse",
    "gpu_memory_utilization": "kv_cache_config.free_gpu_memory_fraction",
}
VLLM_DEVICE, VLLM_GPUS = "H100-80GB", 256
# a record naming its model ran in a batch of bigger models (Mixtral-8x7B's 93 GB of bf16
# weights on one GPU): an H200
VLLM_MODEL_DEVICE = "H200"


def _word(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return 0 if value in (None, "none") else value


class VllmReplay(Replay):
    engine = "vllm"

    def __init__(self) -> None:
        self._drafts = Path(tempfile.mkdtemp(prefix="arbiter-agreement-drafts-"))

    def profile(self, release: str) -> str:
        return f"vllm-{release}"

    def device(self, record: dict[str, Any]) -> str:
        return VLLM_MODEL_DEVICE if "model" in record else VLLM_DEVICE

    def args(self, record: dict[str, Any]) -> dict[str, Any]:
        args = dict(record["args"])
        spec = args.get("speculative-config")
        if isinstance(spec, dict) and spec.get("model") in ORACLE.MODELS:
            folder = ORACLE.model_folder(spec["model"], self._drafts)
            args["speculative-config"] = {**spec, "model": str(folder)}
        return args

    def check(self, record: dict[str, Any], profile: str, device: str | None = None) -> Any:
        from arbiter.engines.vllm.native import check_vllm

        model = ORACLE.MODELS[record.get("model", "llama-3.1-8b")]
        return check_vllm(
            self.args(record),
            model=model,
            device=device or self.device(record),
            gpus=VLLM_GPUS,
            profile=profile,
        )

    def expected(self, record: dict[str, Any]) -> Outcome:
        gpu = record.get("gpu")
        final = {**record, **gpu} if gpu else record
        if final["verdict"] == "reject":
            return Outcome(True, detail=final.get("message", ""))
        values = {k: v["after"] for k, v in (final.get("adjust") or {}).items()}
        for name in VLLM_DERIVED:
            derived = (final.get("derived") or record.get("derived") or {}).get(name)
            if derived is not None and name not in values:
                values[name] = derived
        return Outcome(False, values)

    def ours(self, record: dict[str, Any], profile: str) -> tuple[Outcome, Any]:
        verdict = self.check(record, profile)
        if verdict.verdict == "reject":
            rules = ", ".join(verdict.rules) or "; ".join(verdict.reasons)[:200]
            return Outcome(True, detail=rules), verdict
        values: dict[str, Any] = {}
        for change in verdict.changes:
            found = _CHANGE.match(change)
            if found:
                values[found.group(1).rsplit(".", 1)[-1]] = _word(found.group(3))
        solved = verdict.resolution.values if verdict.resolution is not None else {}
        theirs = record.get("gpu", record).get("derived") or record.get("derived") or {}
        for name, path in VLLM_DERIVED.items():
            if name in theirs and name not in values and path in solved:
                values[name] = solved[path]
        return Outcome(False, values), verdict


def _cpu_why(record: dict[str, Any]) -> str:
    return str(record.get("cpu_why") or "")


def _graph_capped(record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any) -> bool:
    """The CPU platform sizes no CUDA graphs, so vLLM's record keeps a capture size above
    the token budget that a GPU caps at the budget (VllmConfig._set_cudagraph_sizes):
    arbiter's rewrite is the GPU's."""
    if "sizes no CUDA graphs" not in _cpu_why(record) or ours.refused:
        return False
    return bool(verdict.changes) and all("max_num_batched_tokens" in c for c in verdict.changes)


def _cpu_batch_tier(record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any) -> bool:
    """The refusal compares a field left to the CPU platform's default budget (2048 tokens
    per rank, EngineArgs.get_batch_defaults): on an A100, whose vLLM tier has the same
    2048, arbiter gives the recorded verdict (the H100 tier is 8192)."""
    if "at the CPU platform's default" not in _cpu_why(record):
        return False
    again = VLLM.check(record, VLLM.profile(_release_of(verdict)), device="A100-80GB")
    return (again.verdict == "reject") == theirs.refused


def _startup_memory(record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any) -> bool:
    """vLLM's configuration stage accepts, arbiter refuses for memory: the KV cache left
    cannot hold one max_model_len sequence, which vLLM checks only at startup on a GPU
    (v1/core/kv_cache_planning.py _check_enough_kv_cache_memory), past the CPU oracle's
    reach; counted so only when an H200 takes the same arguments."""
    if theirs.refused or not ours.refused:
        return False
    if not any(rule.startswith("memory.") for rule in verdict.rules):
        return False
    again = VLLM.check(record, VLLM.profile(_release_of(verdict)), device="H200")
    return bool(again.verdict != "reject")


def _cpu_mla(record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any) -> bool:
    """vLLM's CPU platform turns chunked prefill (0.24, 0.33) and prefix caching (0.33)
    off for an MLA model ("MLA is enabled on a non-GPU platform; forcing chunked prefill
    and prefix caching to be disabled", platforms/cpu.py check_and_update_config); a GPU
    keeps them on, as arbiter does."""
    model = ORACLE.MODELS[record.get("model", "llama-3.1-8b")]
    if "kv_lora_rank" not in model or theirs.refused or ours.refused:
        return False
    apart = _diff(ours.values, theirs.values)
    off = ("enable_chunked_prefill", "enable_prefix_caching")
    return bool(apart) and all(k in off and v[0] is False for k, v in apart.items())


def _mtp_draft_without_pp(
    record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any
) -> bool:
    """vLLM 0.24.0 builds the MTP draft's parallel config with the target's pipeline size
    (SpeculativeConfig.create_draft_parallel_config) and checks it on the draft's class
    (ModelConfig.verify_with_parallel_config: `SupportsPP`), which DeepSeekMTP lacks in
    0.24.0 (model_executor/models/deepseek_mtp.py); 0.33.0 drafts with pipeline size 1
    and DeepSeekMTP implements SupportsPP. Not modelled: arbiter has no table of 0.24's
    MTP draft classes and their PP support."""
    args = record["args"]
    spec = args.get("speculative-config") or {}
    return (
        theirs.refused
        and not ours.refused
        and spec.get("method") == "mtp"
        and int(args.get("pipeline-parallel-size", 1)) > 1
        and "Pipeline parallelism is not supported for this model" in theirs.detail
    )


def _block_fp8_at_load(
    record: dict[str, Any], theirs: Outcome, ours: Outcome, verdict: Any
) -> bool:
    """vLLM checks a block-quantized FP8 MoE's shards against the weight block when it
    builds the MoE layers (model_executor/layers/quantization/fp8.py Fp8MoEMethod
    create_weights -> utils/fp8_utils.py validate_fp8_block_shape_moe, 0.33.0), after the
    configuration stage the CPU oracle runs; arbiter refuses at check time."""
    return (
        not theirs.refused
        and ours.refused
        and "vllm.quant.block-fp8-moe-shards-whole-blocks" in verdict.rules
    )


def _release_of(verdict: Any) -> str:
    return str(verdict.profile or "vllm-0.33").removeprefix("vllm-")


VLLM_KNOWN = (
    Known(
        "cpu_graph_cap",
        "the CPU platform captures no CUDA graphs; a GPU caps the capture ceiling at the"
        " token budget (VllmConfig._set_cudagraph_sizes), as arbiter does",
        _graph_capped,
    ),
    Known(
        "cpu_batch_defaults",
        "the refusal compares the CPU platform's default token budget (2048); arbiter gives"
        " the same verdict on a device of that tier (A100)",
        _cpu_batch_tier,
    ),
    Known(
        "cpu_mla",
        "the CPU platform turns chunked prefill (and in 0.33 prefix caching) off for an MLA"
        " model (platforms/cpu.py check_and_update_config); a GPU keeps them on, as arbiter",
        _cpu_mla,
    ),
    Known(
        "startup_memory",
        "vLLM refuses a KV cache too small for one sequence only at startup on a GPU"
        " (_check_enough_kv_cache_memory), past its configuration stage; an H200 takes it",
        _startup_memory,
    ),
)
VLLM_KNOWN += (
    Known(
        "mtp_draft_without_pp",
        "vLLM 0.24 checks pipeline parallelism on the MTP draft's class (DeepSeekMTP lacks"
        " SupportsPP there); arbiter has no table of 0.24's MTP draft classes (not fixed)",
        _mtp_draft_without_pp,
        beyond_oracle=False,
    ),
)
VLLM_KNOWN += (
    Known(
        "model_load_block_fp8",
        "vLLM refuses a block-FP8 MoE shard that splits a weight block when it builds the"
        " MoE layers (validate_fp8_block_shape_moe), past the configuration stage",
        _block_fp8_at_load,
    ),
)
VllmReplay.known = VLLM_KNOWN
VLLM = VllmReplay()

# engine -> its replay; the SGLang side adds its own here
ENGINES: dict[str, Replay] = {"vllm": VLLM}


def releases(rep: Replay) -> list[str]:
    return sorted({rep.release(payload) for _, payload in rep.records()})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(ENGINES), action="append")
    parser.add_argument("--release", action="append")
    parser.add_argument("--limit", type=int, default=None, help="records per file")
    parser.add_argument("--only", default=None, help="files whose name contains this")
    parser.add_argument("--json", default=None, help="write the figures here")
    opts = parser.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)
    rows = []
    for name in opts.engine or sorted(ENGINES):
        rep = ENGINES[name]
        reasons = {k.name: k.reason for k in rep.known}
        for release in opts.release or releases(rep):
            result = replay(rep, release, opts.limit, opts.only)
            print(result.summary())
            for diff in result.differences:
                print("  " + diff.line())
            used = sorted({d.known for d in result.differences if d.known is not None})
            for key in used:
                print(f"  reason {key}: {reasons[key]}")
            rows.append(
                {
                    "engine": name,
                    "release": release,
                    "n": result.n,
                    "accept_refuse": result.verdict_share,
                    "rewrites": result.rewrite_share,
                    "both_accept": result.both_accept,
                    "differences": [d.__dict__ for d in result.differences],
                }
            )
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
