"""The performance oracle: arbiter's plan points <-> AIConfigurator's estimator
(`aiconfigurator-core` 0.12.0, the optional extra `plan`).

One `Oracle` per (GPU system, engine): it opens the engine's perf database once
(`get_database_view`) and keeps one priced model per parallel layout
(`build_model_config`, `resolve_context_fmha_by_data`, `get_model`, `get_backend`); a point
(batch, token budget) is then one `run_agg` of the engine's backend (what the `aiconfigurator`
package's `InferenceSession.run_agg` calls), about a millisecond. Each priced point keeps the
oracle's own memory verdict (`check_oom`, `check_kv_cache_oom`) so the plan can say where it
disagrees with arbiter's memory model; the source mix (silicon / empirical / sol) of a point
is worked out on request.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import OracleUnavailable, PlanExtraMissing
from .layout import Layout

_SDK: dict[str, Any] = {}
MODEL_CONFIGS = "model_configs"  # the HF config.json files the oracle bundles


def sdk() -> dict[str, Any]:
    """The oracle's session API, imported on first use (the extra is optional)."""
    if _SDK:
        return _SDK
    try:
        # the optional extra `plan`: imported only when a plan is priced
        import aiconfigurator_core
        from aiconfigurator_core.sdk.backends.factory import get_backend
        from aiconfigurator_core.sdk.config import RuntimeConfig
        from aiconfigurator_core.sdk.config_builders import build_model_config
        from aiconfigurator_core.sdk.models import get_model
        from aiconfigurator_core.sdk.models.helpers import resolve_context_fmha_by_data
        from aiconfigurator_core.sdk.perf_database import (
            get_database_view,
            get_latest_database_version,
        )
    except ImportError as exc:
        raise PlanExtraMissing("aiconfigurator-core==0.12.0") from exc
    for name in ("aiconfigurator_core", "aiconfigurator"):
        logging.getLogger(name).setLevel(logging.ERROR)  # its per-table load lines
    _SDK.update(
        package=aiconfigurator_core,
        get_backend=get_backend,
        RuntimeConfig=RuntimeConfig,
        build_model_config=build_model_config,
        get_model=get_model,
        resolve_fmha=resolve_context_fmha_by_data,
        get_database_view=get_database_view,
        latest=get_latest_database_version,
    )
    return _SDK


def package_version() -> str:
    """The installed oracle's version (`aiconfigurator-core`)."""
    from importlib.metadata import version  # only asked when a plan reports its oracle

    return version("aiconfigurator-core")


def bundled_config(model: str) -> Path | None:
    """The HF config.json the oracle ships for a model ID ("Qwen/Qwen3-32B"), if any."""
    root = Path(sdk()["package"].__file__).parent / MODEL_CONFIGS
    path = root / (model.replace("/", "--") + "_config.json")
    return path if path.is_file() else None


@dataclass(frozen=True)
class Priced:
    """One priced point: the oracle's figures (ms, tokens/s) and its memory verdict."""

    ttft_ms: float
    tpot_ms: float
    tokens_per_second_per_gpu: float
    tokens_per_second_per_user: float
    memory_gib: float  # the oracle's own total per GPU
    oracle_oom: bool  # weights + activations overflow (check_oom)
    oracle_kv_oom: bool  # the batch's KV does not fit (check_kv_cache_oom)

    def to_json(self) -> dict[str, Any]:
        return {
            "ttft_ms": round(self.ttft_ms, 3),
            "tpot_ms": round(self.tpot_ms, 3),
            "tokens_per_second_per_gpu": round(self.tokens_per_second_per_gpu, 3),
            "tokens_per_second_per_user": round(self.tokens_per_second_per_user, 3),
            "oracle_memory_gib": round(self.memory_gib, 2),
            "oracle_oom": self.oracle_oom,
            "oracle_kv_oom": self.oracle_kv_oom,
        }


class Oracle:
    """AIConfigurator's estimator for one GPU system and engine (see the module doc)."""

    def __init__(self, system: str, backend: str, model: str, *, database_mode: str = "SILICON"):
        api = sdk()
        self.system, self.backend_name, self.model = system, backend, model
        started = time.perf_counter()
        try:
            self.version = api["latest"](system=system, backend=backend)
            self.db = api["get_database_view"](
                system, backend, self.version, allow_missing_data=False, database_mode=database_mode
            )
        except Exception as exc:  # the oracle's own errors: no such system or data
            raise OracleUnavailable(f"{backend} on {system}", str(exc)) from exc
        if self.db is None or self.version is None:
            raise OracleUnavailable(f"{backend} on {system}", "no perf database ships for it")
        self.load_s = time.perf_counter() - started
        self.database_mode = database_mode
        # one model and one backend per layout: a backend caches its points by (isl, osl,
        # batch, budget) alone, so a backend shared between layouts would answer for another
        self._models: dict[tuple[Layout, str, int], tuple[Any, Any]] = {}
        self.points = 0

    def session(self, layout: Layout, kv_dtype: str = "auto", nextn: int = 0) -> tuple[Any, Any]:
        """The oracle's (model, backend) for a layout (cached: built once, ~1-4 s)."""
        key = (layout, kv_dtype, nextn)
        if key not in self._models:
            api = sdk()
            kv = "fp8" if kv_dtype == "fp8" else None
            try:
                mc = api["build_model_config"](
                    layout.tp, layout.pp, layout.dp, layout.moe_tp, layout.moe_ep, None, kv
                )
                if nextn:
                    mc.nextn = nextn
                api["resolve_fmha"](
                    mc, self.model, self.db, self.backend_name, is_context_role=True
                )
                model = api["get_model"](self.model, mc, self.backend_name)
                self._models[key] = (model, api["get_backend"](self.backend_name))
            except Exception as exc:  # the oracle's own refusal (unsupported model, layout)
                raise OracleUnavailable(f"{self.model} at {layout}", str(exc)) from exc
        return self._models[key]

    def price(
        self,
        layout: Layout,
        batch: int,
        budget: int,
        isl: int,
        osl: int,
        *,
        kv_dtype: str = "auto",
        nextn: int = 0,
        nextn_accept: float | None = None,
    ) -> Priced | None:
        """The oracle's figures for one aggregated point, or None where it has no data."""
        summary = self.summary(layout, batch, budget, isl, osl, kv_dtype, nextn, nextn_accept)
        if summary is None:
            return None
        row = summary.get_result_dict()
        if not row:
            return None
        figures = [float(row[k]) for k in ("ttft", "tpot", "tokens/s/gpu", "tokens/s/user")]
        if not all(math.isfinite(f) and f > 0 for f in figures):
            return None
        ttft, tpot, per_gpu, per_user = figures
        return Priced(
            ttft,
            tpot,
            per_gpu,
            per_user,
            memory_gib=float(row.get("memory", 0.0)),
            oracle_oom=bool(summary.check_oom()),
            oracle_kv_oom=bool(summary.check_kv_cache_oom()),
        )

    def summary(
        self,
        layout: Layout,
        batch: int,
        budget: int,
        isl: int,
        osl: int,
        kv_dtype: str = "auto",
        nextn: int = 0,
        nextn_accept: float | None = None,
    ) -> Any:
        """The oracle's `InferenceSummary` of a point (None: no data for it)."""
        model, backend = self.session(layout, kv_dtype, nextn)
        runtime = sdk()["RuntimeConfig"](isl=isl, osl=osl, batch_size=batch)
        extra: dict[str, Any] = {"ctx_tokens": budget}
        if nextn and nextn_accept is not None:
            extra["decode_tokens_per_iteration"] = 1.0 + nextn_accept
        self.points += 1
        try:
            return backend.run_agg(model, self.db, runtime, **extra)
        except Exception:  # PerfDataNotAvailableError and kin: the point is not priced
            return None

    def static(
        self, layout: Layout, batch: int, isl: int, osl: int, role: str, correction: float = 1.0
    ) -> dict[str, Any] | None:
        """One phase of a disaggregated worker (`run_static`, mode `static_ctx` for the
        prefill role, `static_gen` for decode, latencies scaled by `correction`): its latency
        (ms: the context latency of the batch's prompts, or TPOT), the requests a second it
        serves (`seq/s`), the oracle's memory (GiB) and whether it overflows; None where the
        oracle has no data."""
        model, backend = self.session(layout)
        runtime = sdk()["RuntimeConfig"](isl=isl, osl=osl, batch_size=batch)
        mode = "static_ctx" if role == "prefill" else "static_gen"
        self.points += 1
        try:
            summary = backend.run_static(
                model, self.db, runtime, mode=mode, latency_correction_scale=correction
            )
        except Exception:  # PerfDataNotAvailableError and kin: the point is not priced
            return None
        row = summary.get_result_dict()
        if not row:
            return None
        latency = float(row.get("ttft" if role == "prefill" else "tpot") or 0.0)
        rate = float(row.get("seq/s") or 0.0)
        if not (math.isfinite(latency) and latency > 0 and math.isfinite(rate) and rate > 0):
            return None
        oom = bool(summary.check_oom()) or bool(summary.check_kv_cache_oom())
        return {
            "latency_ms": latency,
            "rate": rate,
            "memory_gib": float(row.get("memory", 0.0)),
            "oom": oom,
        }

    def source_mix(
        self, layout: Layout, batch: int, budget: int, isl: int, osl: int, **kw: Any
    ) -> dict[str, float]:
        """Share of the point's modelled latency by where each op's figure came from
        (silicon: measured, empirical: corrected roofline, sol: speed of light, mixed)."""
        summary = self.summary(layout, batch, budget, isl, osl, **kw)
        if summary is None:
            return {}
        data, source = summary.get_per_ops_data(), summary.get_per_ops_source()
        total: dict[str, float] = {}
        for phase, ops in source.items():
            latencies = data.get(phase, {})
            for op, where in ops.items():
                value = latencies.get(op, 0.0)
                if isinstance(value, (int, float)) and value > 0:
                    total[str(where)] = total.get(str(where), 0.0) + float(value)
        whole = sum(total.values()) or 1.0
        return {k: round(v / whole, 4) for k, v in sorted(total.items())}
