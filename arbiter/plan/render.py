"""Renderers of a plan (text, markdown, json, html), all from its JSON shape
(`PlanReport.to_json`): structure apart from rendering, as the conflict reports do
(`arbiter.report`); the HTML page uses their stylesheet."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from ..report import FORMATS  # what `render` writes: the formats of every report


def render(data: dict[str, Any], format: str = "text") -> str:
    if format == "json":
        return json.dumps(data, indent=2, ensure_ascii=False)
    if format == "markdown":
        return "\n".join(_markdown(data)) + "\n"
    if format == "html":
        return _html(data)
    return "\n".join(_text(data)) + "\n"


def _summary(p: dict[str, Any]) -> str:
    w = p["workers"][0]
    return (
        f"{p['replicas']} x [{_layout_text(p['layout'])}] batch {w['batch']}, token budget"
        f" {w['token_budget']}, KV {w['kv_dtype']}"
        + (
            f", MTP {w['draft_tokens']} draft tokens"
            f" ({w['draft_accepted_per_step']:.2f} accepted a step)"
            if w.get("draft_tokens")
            else ""
        )
    )


def _figures(p: dict[str, Any]) -> str:
    return (
        f"{p['tokens_per_second_per_gpu']:.1f} tok/s/GPU, {p['tokens_per_second_per_user']:.1f}"
        f" tok/s/user, TTFT {p['ttft_ms']:.0f} ms, TPOT {p['tpot_ms']:.2f} ms"
    )


def _mix(p: dict[str, Any]) -> str:
    mix = p["oracle"]["source_mix"]
    return ", ".join(f"{k} {v:.0%}" for k, v in mix.items()) or "unknown"


def _memory(p: dict[str, Any]) -> str:
    m = p["memory"]
    text = (
        f"arbiter: {m['arbiter_kv_blocks_needed']} of {m['arbiter_kv_blocks']} KV blocks per"
        f" rank, weights {m['arbiter_weights_gib']} GiB of {m['arbiter_budget_gib']} GiB;"
        f" oracle: {m['oracle_memory_gib']} GiB per GPU"
    )
    return text if m["agree"] else text + " -- they DISAGREE on whether it fits"


def _proof(e: dict[str, Any]) -> str:
    if not e["proven_optimal"]:
        return f"not proven (solver: {e['lattice']['status']})"
    return "proven optimal" if e["pick"] else "proven infeasible"


def _text(data: dict[str, Any]) -> list[str]:
    r = data["request"]
    out = [
        f"plan: {r['model']} on {r['device']} ({r['nodes']} node(s)), ISL {r['isl']} / OSL"
        f" {r['osl']}, TTFT <= {r['ttft_ms']:g} ms, TPOT <= {r['tpot_ms']:g} ms"
    ]
    for e in data["engines"]:
        lat = e["lattice"]
        out.append("")
        out.append(f"{e['engine']} (profile {e['profile']}; {e['oracle']['version_skew']})")
        out.append(
            f"  lattice: {lat['points']} points over {len(lat['layouts'])} layouts"
            f" ({lat['points'] - lat.get('fine_points', 0)} on the first lattice,"
            f" {lat.get('fine_points', 0)} on the denser one around each layout's best;"
            f" {lat['priced']} priced, {lat['admissible']} within arbiter's memory model,"
            f" {lat['pruned_beyond_memory']} beyond it, {lat['cut_beyond_latency']} past"
            f" {lat['latency_cutoff']} x a target, {lat['refused_points']} in refused layouts); "
            + _proof(e)
        )
        if e["pick"]:
            p = e["pick"]
            out.append(f"  pick: {_summary(p)}")
            out.append(f"        {_figures(p)}")
            out.append(f"        oracle sources: {_mix(p)}; memory: {_memory(p)}")
            out.append(f"        arbiter check: {p['workers'][0]['arbiter_check']}; config:")
            for key, value in p["workers"][0]["config"].items():
                out.append(f"          {key}: {json.dumps(value)}")
            for i, q in enumerate(e["runners_up"], 1):
                out.append(f"  runner-up {i}: {_summary(q)}: {_figures(q)}")
        else:
            out.append("  no configuration meets the targets")
        out += _disagg_text(e)
        if e["why_not"]:
            w = e["why_not"]
            out.append(f"  binding: {', '.join(w['binding'])}")
            out += [f"    {line}" for line in w["findings"]]
            for rel in w["relaxations"]:
                conf = rel["confirmed"]
                tail = f" -> {_summary(conf)}: {_figures(conf)}" if conf else ""
                nxt = f" ({rel['next_step_infeasible']})" if rel["next_step_infeasible"] else ""
                out.append(f"  would meet it: {rel['relaxation']}{nxt}{tail}")
        d = e["memory_disagreements"]
        if d["points"]:
            out.append(
                f"  memory: arbiter and the oracle disagree on {d['points']} points"
                f" (arbiter fits, oracle not: {d['arbiter_fits_oracle_not']}; oracle fits,"
                f" arbiter not: {d['oracle_fits_arbiter_not']})"
            )
            for ex in d["examples"][:2]:
                out.append(
                    f"    {ex['layout']} batch {ex['batch']}: arbiter {ex['arbiter']}; oracle {ex['oracle']}"
                )
        if e["refused_layouts"]:
            out.append(f"  refused layouts: {len(e['refused_layouts'])}")
            for ref in e["refused_layouts"][:3]:
                out.append(f"    {ref['layout']}: {ref['reason'][:160]}")
        t = e["timings_s"]
        out.append(
            f"  time: database load {t.get('database_load', 0):.1f} s, lattice"
            f" {t.get('lattice', 0):.1f} s, solve {t.get('solve', 0):.1f} s"
        )
    if data["best_engine"]:
        out.append("")
        out.append(f"best engine: {data['best_engine']}")
    out.append(f"note: {data['promise']}")
    return out


def _disagg_text(e: dict[str, Any]) -> list[str]:
    dis = e.get("disagg")
    if not dis:
        return []
    if not dis["pick"]:
        return [
            f"  disaggregated: none meets the targets ({dis['pool_combinations']} pool"
            " combinations searched)"
        ]
    p = dis["pick"]
    pools = " + ".join(
        f"{w['count']} x [{_layout_text(w['layout'])}] {w['role']} batch {w['batch']}"
        for w in p["workers"]
    )
    better = " (faster than aggregated)" if e.get("best_mode") == "disaggregated" else ""
    out = [
        f"  disaggregated{better}: {pools} on {p['gpus']} GPUs",
        f"        {p['tokens_per_second_per_gpu']:.1f} tok/s/GPU,"
        f" {p['tokens_per_second_per_user']:.1f} tok/s/user, TTFT {p['ttft_ms']:.0f} ms,"
        f" TPOT {p['tpot_ms']:.2f} ms ({dis['pool_combinations']} pool combinations; {dis['model']})",
    ]
    for w in p["workers"]:
        out.append(f"        {w['role']} config (arbiter check: {w['arbiter_check']}):")
        out += [f"          {k}: {json.dumps(v)}" for k, v in w["config"].items()]
    return out


def _layout_text(lay: dict[str, Any]) -> str:
    parts = [f"tp{lay['tp']}"]
    if lay["pp"] > 1:
        parts.append(f"pp{lay['pp']}")
    if lay["attention_dp"] > 1:
        parts.append(f"dp{lay['attention_dp']}")
    if lay["moe_tp"] is not None:
        parts.append(f"moe_tp{lay['moe_tp']} ep{lay['moe_ep']}")
    return " ".join(parts)


def _markdown(data: dict[str, Any]) -> list[str]:
    r = data["request"]
    out = [
        f"# Plan: {r['model']} on {r['device']}",
        "",
        f"ISL {r['isl']} / OSL {r['osl']}, TTFT <= {r['ttft_ms']:g} ms, TPOT <= {r['tpot_ms']:g} ms",
        "",
        "| engine | pick | tok/s/GPU | tok/s/user | TTFT ms | TPOT ms | lattice | check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in data["engines"]:
        p = e["pick"]
        if p:
            out.append(
                f"| {e['engine']} | {_summary(p)} | {p['tokens_per_second_per_gpu']:.1f} |"
                f" {p['tokens_per_second_per_user']:.1f} | {p['ttft_ms']:.0f} | {p['tpot_ms']:.2f} |"
                f" {e['lattice']['points']} | {p['workers'][0]['arbiter_check']} |"
            )
        else:
            out.append(f"| {e['engine']} | none | - | - | - | - | {e['lattice']['points']} | - |")
        dis = (e.get("disagg") or {}).get("pick")
        if dis:
            pools = " + ".join(
                f"{w['count']} x [{_layout_text(w['layout'])}] {w['role']} batch {w['batch']}"
                for w in dis["workers"]
            )
            checks = "/".join(w["arbiter_check"] for w in dis["workers"])
            out.append(
                f"| {e['engine']} (disaggregated) | {pools} | {dis['tokens_per_second_per_gpu']:.1f} |"
                f" {dis['tokens_per_second_per_user']:.1f} | {dis['ttft_ms']:.0f} |"
                f" {dis['tpot_ms']:.2f} | {e['disagg']['pool_combinations']} pools | {checks} |"
            )
    for e in data["engines"]:
        out += ["", f"## {e['engine']}", "", f"{e['oracle']['version_skew']}", ""]
        if e["pick"]:
            out += ["```yaml"] + [
                f"{k}: {json.dumps(v)}" for k, v in e["pick"]["workers"][0]["config"].items()
            ]
            out += ["```", "", f"Memory: {_memory(e['pick'])}; oracle sources: {_mix(e['pick'])}"]
            for i, q in enumerate(e["runners_up"], 1):
                out.append(f"- runner-up {i}: {_summary(q)}: {_figures(q)}")
        if e["why_not"]:
            w = e["why_not"]
            out += [f"**Binding:** {', '.join(w['binding'])}", ""]
            out += [f"- {line}" for line in w["findings"]]
            out += [
                f"- **would meet it:** {rel['relaxation']} ({rel['next_step_infeasible']})"
                for rel in w["relaxations"]
            ]
    out += ["", f"_{data['promise']}_"]
    return out


def _html(data: dict[str, Any]) -> str:
    from ..report.html import CSS  # the conflict reports' stylesheet, for one look

    body = "".join(
        f"<p>{escape(line)}</p>" if not line.startswith("|") else ""
        for line in _markdown(data)
        if line and not line.startswith(("#", "```", "|"))
    )
    table = "".join(
        "<tr>"
        + "".join(f"<td>{escape(c.strip())}</td>" for c in line.strip("|").split("|"))
        + "</tr>"
        for line in _markdown(data)
        if line.startswith("|") and not line.startswith("|---")
    )
    pre = "".join(f"<pre>{escape(chr(10).join(_text(data)))}</pre>")
    r = data["request"]
    title = escape(f"Plan: {r['model']} on {r['device']}")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{CSS}</style></head><body><h1>{title}</h1><table>{table}</table>"
        f"{body}<h2>Details</h2>{pre}</body></html>\n"
    )


__all__ = ["FORMATS", "render"]
