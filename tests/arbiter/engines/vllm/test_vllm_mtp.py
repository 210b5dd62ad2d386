"""vLLM's MTP families (`arbiter/engines/vllm/mtp.py`) against vLLM 0.33.0's own mapping.

The record `tests/corpus/vllm/oracle/mtp_families.json` is what vLLM's
`SpeculativeConfig.hf_config_override` answered to the probe configs of
`benchmarks/oracle_vllm_mtp.py`; the first tests compare arbiter's table with it (no vLLM
needed). The last one reruns the probe with vLLM's venv (`/tmp/v-vllm`, see
docs/engines.md) and compares its live answer with the record; skipped without the venv.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arbiter.engines.vllm.mtp import FAMILIES, mtp_target
from arbiter.engines.vllm.native import check_vllm

ROOT = Path(__file__).resolve().parents[4]
RECORD = ROOT / "tests" / "corpus" / "vllm" / "oracle" / "mtp_families.json"
VENV = Path("/tmp/v-vllm/bin/python")
DATA = json.loads(RECORD.read_text())
# mapped by hf_config_override, then refused by __post_init__ (vllm_mtp's docstring)
LEFT_OUT = {"deepseek_v41"}


def _row(f) -> dict:
    """One FAMILIES entry in the record's terms."""
    out = {"match": f.match, "name": f.name, "draft_type": f.draft_type}
    if f.fixed is not None or f.field is None:
        out["fixed"] = f.fixed
    else:
        head, _, name = f.field.rpartition(".")
        if head == "text_config":
            out.update(field=name, where="text_config")
        else:
            out.update(field=f.field, where="top")
    out["fallbacks"] = [_place(d) for d in f.fallbacks]
    out.update(default=f.default, without_field=f.without_field)
    return out


def _place(dotted: str) -> dict:
    head, _, name = dotted.rpartition(".")
    return {"field": name, "where": "text_config" if head == "text_config" else "top"}


def _recorded() -> list[dict]:
    keep = (
        "match",
        "name",
        "draft_type",
        "field",
        "where",
        "fixed",
        "fallbacks",
        "default",
        "without_field",
    )
    return [
        {k: r[k] for k in keep if k in r} for r in DATA["families"] if r["name"] not in LEFT_OUT
    ]


def test_the_record_is_vllms_own():
    assert DATA["engine"] == "vllm" and DATA["version"] == "0.33.0"
    assert "deepseek_mtp" in DATA["draft_types"] and len(DATA["families"]) > 40


def test_families_are_the_recorded_mapping():
    assert [_row(f) for f in FAMILIES] == _recorded()


def test_every_draft_type_is_reached():
    """Each of vLLM's MTP draft types (MTPModelTypes) is the draft of some family."""
    assert {f.draft_type for f in FAMILIES} == set(DATA["draft_types"])


@pytest.mark.parametrize(
    ("config", "supported", "layers"),
    [
        ({"model_type": "deepseek_v3", "num_nextn_predict_layers": 2}, True, 2),
        ({"model_type": "deepseek_v3"}, True, 0),
        ({"model_type": "qwen3_5_moe", "mtp_num_hidden_layers": 1}, True, 1),
        # Qwen3.5's checkpoints keep it in the text config: vLLM's second look
        ({"model_type": "qwen3_5", "text_config": {"mtp_num_hidden_layers": 2}}, True, 2),
        (
            {
                "model_type": "qwen3_5",
                "mtp_num_hidden_layers": 3,
                "text_config": {"mtp_num_hidden_layers": 2},
            },
            True,
            3,
        ),
        ({"model_type": "qwen4_exp", "text_config": {"num_nextn_predict_layers": 2}}, True, 2),
        ({"model_type": "qwen3_next", "text_config": {"num_nextn_predict_layers": 2}}, True, 0),
        ({"model_type": "step3p5", "text_config": {"num_nextn_predict_layers": 3}}, True, 3),
        ({"model_type": "step3p5"}, True, 1),
        ({"architectures": ["MiMoV2FlashForCausalLM"], "num_nextn_predict_layers": 3}, True, 1),
        ({"model_type": "nemotron_h"}, False, 0),
        ({"model_type": "nemotron_h", "num_nextn_predict_layers": 1}, True, 1),
        ({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}, False, 0),
        ({"model_type": "deepseek_v41", "num_nextn_predict_layers": 1}, False, 0),
    ],
)
def test_mtp_target(config, supported, layers):
    found = mtp_target(config)
    assert (found.supported, found.layers) == (supported, layers)


def test_transformers_backend_drafts_from_num_mtp_layers():
    config = {"model_type": "llama", "num_mtp_layers": 2}
    assert mtp_target(config, "transformers").supported
    assert not mtp_target(config).supported


# Llama-3.1-8B, the shared fixture (no MTP layers)
LLAMA = json.loads(
    (Path(__file__).parents[3] / "fixtures" / "models" / "llama-3.1-8b.json").read_text()
)


def test_mtp_on_a_family_without_mtp_is_refused():
    """vLLM 0.33.0: NotImplementedError "Unsupported speculative method: 'mtp'"."""
    spec = {"speculative-config": {"method": "mtp", "num_speculative_tokens": 1}}
    verdict = check_vllm(spec, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "reject"
    assert verdict.rules == ("vllm.spec.mtp-target-supported",)
    ngram = {"speculative-config": {"method": "ngram", "num_speculative_tokens": 3}}
    assert check_vllm(ngram, model=LLAMA, device="H100-80GB").verdict == "accept"


@pytest.mark.slow
@pytest.mark.skipif(not VENV.exists(), reason="vLLM's venv /tmp/v-vllm is not here")
def test_live_probe_matches_the_record(tmp_path):
    out = tmp_path / "mtp.json"
    subprocess.run(
        [str(VENV), str(ROOT / "benchmarks" / "oracle_vllm_mtp.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    live = json.loads(out.read_text())
    assert live["version"] == DATA["version"]
    assert live["families"] == DATA["families"] and live["draft_types"] == DATA["draft_types"]
