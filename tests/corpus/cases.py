"""The real-config corpus: load the case files under `cases/` and check their shape.

A case is one deployment or validation scenario re-authored from an engine's public
repository, with the engine's own verdict on it (accept, adjust, reject) and the reason.
Case files are YAML; each holds one case (a mapping) or a list of cases. `load_cases()`
validates every case and names the file, the case and the key at fault (`CaseError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CASE_DIR = Path(__file__).parent / "cases"
FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "models"

ENGINES = {"trtllm": ("pytorch", "tensorrt"), "mlc": ("",)}
PROFILES = {
    # trtllm-main: upstream main after the 1.2 release, a line arbiter has no field list for
    "trtllm": ("trtllm-1.0", "trtllm-1.2", "trtllm-tensorrt", "trtllm-main"),
    "mlc": ("mlc",),
}
VERDICTS = ("accept", "adjust", "reject")
REQUIRED = (
    "id",
    "provenance",
    "engine",
    "profile",
    "backend",
    "model",
    "device",
    "gpus",
    "config",
    "verdict",
    "why",
)
OPTIONAL = ("serve_args", "adjust", "reject", "checkpoint", "prebuilt_engine", "upstream_main")
PROVENANCE = ("repo", "path", "ref")


class CaseError(ValueError):
    """A case file or case that does not have the corpus shape."""

    def __init__(self, file: str, reason: str, *, case: str | None = None, key: str | None = None):
        super().__init__(reason)
        self.file = file
        self.case = case
        self.key = key
        self.reason = reason

    def __str__(self) -> str:
        where = self.file
        if self.case is not None:
            where += f", case {self.case!r}"
        if self.key is not None:
            where += f", key {self.key!r}"
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class Case:
    """One corpus case: the configuration as the engine receives it, and its verdict."""

    id: str
    provenance: Mapping[str, str]
    engine: str
    profile: str
    backend: str
    model: str | None
    device: str | None
    gpus: int
    config: Mapping[str, Any]
    verdict: str
    why: str
    file: str
    serve_args: str | None = None
    adjust: Mapping[str, Any] = field(default_factory=dict)
    reject: str | None = None
    checkpoint: str | None = None
    prebuilt_engine: Mapping[str, Any] | None = None
    # a scenario of upstream main's tests run under a release line: main's own verdict,
    # which rests on fields that release does not have (kept until a release has them)
    upstream_main: str | None = None

    @property
    def model_path(self) -> Path | None:
        """The fixture file of the model, when the case names one."""
        return None if self.model is None else FIXTURE_DIR / f"{self.model}.json"


def load_cases(directory: Path = CASE_DIR) -> list[Case]:
    """Every case of every `*.yaml` file under `directory`, validated; ids are unique."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        for case in load_file(path):
            if case.id in seen:
                raise CaseError(
                    case.file, f"duplicate id (also in {seen[case.id]})", case=case.id, key="id"
                )
            seen[case.id] = case.file
            cases.append(case)
    return cases


def load_file(path: Path) -> list[Case]:
    """The cases of one file (a mapping, or a list of mappings)."""
    where = path.name
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise CaseError(where, f"not valid YAML: {exc}") from None
    items = data if isinstance(data, list) else [data]
    if not items or any(not isinstance(item, dict) for item in items):
        raise CaseError(where, "expected a case mapping or a non-empty list of them")
    return [validate(item, where) for item in items]


def validate(raw: Mapping[str, Any], file: str) -> Case:
    """One case mapping -> `Case`, or a `CaseError` naming what is wrong."""
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id:
        raise CaseError(file, "every case needs a non-empty string id", key="id")

    def fail(reason: str, key: str | None = None) -> CaseError:
        return CaseError(file, reason, case=case_id, key=key)

    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise fail(f"missing keys: {', '.join(missing)}")
    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise fail(f"unknown keys: {', '.join(unknown)}")
    prov = raw["provenance"]
    if not isinstance(prov, dict) or any(
        not isinstance(prov.get(k), str) or not prov[k] for k in PROVENANCE
    ):
        raise fail("provenance needs non-empty repo, path and ref", "provenance")
    engine = raw["engine"]
    if engine not in ENGINES:
        raise fail(f"engine must be one of {', '.join(ENGINES)}", "engine")
    if raw["profile"] not in PROFILES[engine]:
        raise fail(f"profile must be one of {', '.join(PROFILES[engine])}", "profile")
    backend = raw["backend"] or ""
    if backend not in ENGINES[engine]:
        raise fail(f"backend must be one of {ENGINES[engine]}", "backend")
    if engine == "trtllm" and (raw["profile"] == "trtllm-tensorrt") != (backend == "tensorrt"):
        raise fail("the trtllm-tensorrt profile goes with backend tensorrt, and only it", "backend")
    model = raw["model"]
    if model is not None:
        if not isinstance(model, str) or not (FIXTURE_DIR / f"{model}.json").is_file():
            raise fail(f"no fixture tests/fixtures/models/{model}.json", "model")
    if raw["device"] is not None and not isinstance(raw["device"], str):
        raise fail("device is a catalog name or null", "device")
    gpus = raw["gpus"]
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise fail("gpus is a positive integer", "gpus")
    if not isinstance(raw["config"], dict):
        raise fail("config is a mapping (the engine's options as written)", "config")
    verdict = raw["verdict"]
    if verdict not in VERDICTS:
        raise fail(f"verdict must be one of {', '.join(VERDICTS)}", "verdict")
    if verdict == "reject" and not (isinstance(raw.get("reject"), str) and raw["reject"]):
        raise fail("a reject case says why the engine refuses it in `reject`", "reject")
    if verdict != "reject" and "reject" in raw:
        raise fail("`reject` belongs to reject cases only", "reject")
    if "adjust" in raw and (verdict != "adjust" or not isinstance(raw["adjust"], dict)):
        raise fail("`adjust` is a mapping, on adjust cases only", "adjust")
    if not isinstance(raw["why"], str) or len(raw["why"].strip()) < 10:
        raise fail("why says which validator, document or test gives the verdict", "why")
    serve_args = raw.get("serve_args")
    if serve_args is not None and (engine != "trtllm" or not isinstance(serve_args, str)):
        raise fail("serve_args is a string of trtllm-serve flags", "serve_args")
    main = raw.get("upstream_main")
    if main is not None and not (isinstance(main, str) and main.strip()):
        raise fail("upstream_main says what upstream main answers, and why", "upstream_main")
    prebuilt = raw.get("prebuilt_engine")
    if prebuilt is not None and not (
        isinstance(prebuilt, dict)
        and "build_config" in prebuilt
        and "pretrained_config" in prebuilt
    ):
        raise fail("prebuilt_engine is an engine config.json mapping", "prebuilt_engine")
    return Case(
        id=case_id,
        provenance=dict(prov),
        engine=engine,
        profile=raw["profile"],
        backend=backend,
        model=model,
        device=raw["device"],
        gpus=gpus,
        config=dict(raw["config"]),
        verdict=verdict,
        why=raw["why"].strip(),
        file=file,
        serve_args=serve_args,
        adjust=dict(raw.get("adjust") or {}),
        reject=raw.get("reject"),
        checkpoint=raw.get("checkpoint"),
        prebuilt_engine=prebuilt,
        upstream_main=main,
    )


__all__ = ["CASE_DIR", "FIXTURE_DIR", "Case", "CaseError", "load_cases", "load_file", "validate"]
