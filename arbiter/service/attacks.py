"""Hostile requests for the HTTP service: what the attack tests and the fuzz benchmark send.

`hostile_request(rng)` draws one request `(method, path, params, body bytes)` from a
seeded `random.Random`: schema-shaped bodies for every endpoint whose values are drawn
from the edges (NaN, Infinity, 1e400, integers beyond int64 and near 2^62, lone
surrogates, deep nesting, fractional coefficients, `{"const": "false"}`, `weight: true`,
products of any two option paths, model shapes with zero heads or strings for numbers),
plus raw byte bodies that are not JSON or not UTF-8. Every answer must be a 4xx or a
2xx JSON object; a 5xx is a defect.

`hostile_check_body(rng, dialect)` draws a `/v1/check` body for one dialect: real field
names of its release (every field list the dialect reads: its pack's `vocab.config_keys`)
holding values of the wrong JSON type, edge numbers, objects where scalars go and the
reverse, nested configs with bad inner values, built engine `config.json` shapes (a pack's
`vocab.PREBUILT`), and hostile model configs;
`hostile_compare_body` an intent for `/v1/compare`; `hostile_json` any JSON object, for a
POST route that has no generator of its own (`route_body` picks by path).
"""

from __future__ import annotations

import copy
import json
import random
from functools import cache
from typing import Any

from constraints.schema import options

from ..dialects import DEFAULT_DIALECT
from ..dialects import DIALECTS as _REGISTRY

PATHS = [s.path for s in options()]
NUMERIC = [s.path for s in options() if s.domain.kind in ("int", "fraction")]
PLAIN_NUMBERS: list[Any] = [
    0,
    -1,
    1,
    2,
    3,
    8,
    16,
    64,
    4096,
    8192,
    0.5,
    0.9,
    1.7,
    -0.0,
    True,
    None,
    "1",
]
EDGE_NUMBERS: list[Any] = [
    2**31,
    2**40,
    2**53 + 1,
    2**62,
    2**62 + 1,
    2**63 - 1,
    2**63,
    -(2**63),
    2**64,
    10**30,
    -(10**40),
    1e308,
    "false",
]
RAW_TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 400]
STRINGS = ["", "a", "x" * 300, "\ud800", "\udfff", "é", "名前", "\x00", "kv_cache_config", "..."]
VALID_STRINGS = ["", "a", "é", "名前", "kv_cache_config", "fp8", "auto", "FP8", "float16"]
ENDPOINTS = ["/v1/arbitrate", "/v1/explain", "/v1/check"]
DIALECTS = tuple(_REGISTRY)  # the registry's engines
# values of every JSON type, for a field whatever type it wants
WRONG_TYPES: list[Any] = [[1, 2], [], {"a": 1}, {}, "x", "", 7, -1, 0, 1.5, True, False, None]


class Raw:
    """A JSON token written as is (NaN, Infinity, 1e400, a 401-digit integer)."""

    def __init__(self, text: str):
        self.text = text


def encode(value: Any) -> str:
    """JSON text that may hold Raw tokens and lone surrogates (escaped as \\udXXX)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode(v) for v in value) + "]"
    if isinstance(value, float) and value != value:  # noqa: PLR0124 - NaN
        return "NaN"
    return json.dumps(value)


class Draw(random.Random):
    """A random stream with `edge`: how often a number is drawn from the far edges."""

    edge = 0.1


def _number(rng: random.Random) -> Any:
    if rng.random() < getattr(rng, "edge", 0.1):
        return Raw(rng.choice(RAW_TOKENS)) if rng.random() < 0.4 else rng.choice(EDGE_NUMBERS)
    return rng.choice(PLAIN_NUMBERS)


def _scalar(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return _number(rng)
    if roll < 0.8:
        edgy = rng.random() < getattr(rng, "edge", 0.1)
        return rng.choice(STRINGS if edgy else VALID_STRINGS)
    return rng.choice([True, False, None])


def _name(rng: random.Random, i: int) -> Any:
    if rng.random() < getattr(rng, "edge", 0.1):
        return rng.choice([*STRINGS, 7, None])
    return f"c{i}"


def _junk(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return _scalar(rng)
    if roll < 0.75:
        return [_junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(STRINGS + PATHS[:5]): _junk(rng, depth + 1) for _ in range(rng.randint(0, 3))
    }


def _deep(rng: random.Random) -> Raw:
    """An expression (or list) nested 20 to 2,000 levels deep, as JSON text."""
    depth = rng.choice([20, 40, 70, 150, 400, 2000])
    key = rng.choice(["not", "all_of", "any_of", "list"])
    inner = json.dumps({"eq": [rng.choice(PATHS), True]})
    opening, closing = {
        "not": ('{"not": ', "}"),
        "list": ("[", "]"),
        "all_of": ('{"all_of": [', "]}"),
        "any_of": ('{"any_of": [', "]}"),
    }[key]
    return Raw(opening * depth + inner + closing * depth)


def _term(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(PATHS)
    if roll < 0.5:
        return _number(rng)
    if roll < 0.75:
        term: dict[str, Any] = {"mul": [rng.choice(NUMERIC), rng.choice(NUMERIC)]}
        if rng.random() < 0.4:
            term["scale"] = _number(rng)
        if rng.random() < 0.3:
            term["offset"] = _number(rng)
        return term
    return {
        "sum": [[_number(rng), rng.choice(NUMERIC)] for _ in range(rng.randint(0, 3))],
        "const": _number(rng),
    }


def _expr(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.03:
        return _deep(rng)
    if roll < 0.15:
        return {"const": rng.choice([True, False, "false", "true", 0, 1, None])}
    if roll < 0.35 or depth > 2:
        return {"eq": [rng.choice(PATHS + STRINGS), _scalar(rng)]}
    if roll < 0.45:
        return {"one_of": [rng.choice(PATHS), [_scalar(rng) for _ in range(rng.randint(0, 3))]]}
    if roll < 0.7:
        return {
            "cmp": [_term(rng), rng.choice([">=", "<=", "==", "!=", ">", "<", "=>", 1]), _term(rng)]
        }
    key = rng.choice(["all_of", "any_of", "not", "implies"])
    if key == "not":
        return {"not": _expr(rng, depth + 1)}
    if key == "implies":
        return {"implies": [_expr(rng, depth + 1), _expr(rng, depth + 1)]}
    return {key: [_expr(rng, depth + 1) for _ in range(rng.randint(0, 3))]}


def _requires(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.4:
        return _expr(rng)
    if roll < 0.9:
        preds = ["ge", "le", "ne", "eq", "gt", "lt", "one_of", "between"]
        out: dict[str, Any] = {}
        for _ in range(rng.randint(1, 3)):
            value = _scalar(rng)
            if rng.random() < 0.5:
                value = {rng.choice(preds): _number(rng) if rng.random() < 0.7 else _junk(rng)}
            out[rng.choice(PATHS + STRINGS[:5])] = value
        return out
    return _junk(rng)


def hostile_claim(rng: random.Random, i: int) -> Any:
    if rng.random() < 0.03:
        return _junk(rng)
    kind: Any = rng.choice(["func", "perf", "perf", "setup"])
    if rng.random() < getattr(rng, "edge", 0.1):
        kind = rng.choice(["other", None, 1, "FUNC"])
    claim: dict[str, Any] = {"kind": kind, "name": _name(rng, i)}
    if kind == "setup":
        claim["fixes"] = {rng.choice(PATHS): _scalar(rng) for _ in range(rng.randint(0, 2))}
    else:
        claim["requires"] = _requires(rng)
    if kind == "perf" or rng.random() < 0.1:
        if rng.random() < 0.7:
            claim["weight"] = _number(rng)
        if rng.random() < 0.4:
            claim["priority"] = _number(rng)
        if rng.random() < 0.2:
            claim["alternatives"] = [
                {"requires": _requires(rng), "weight": _number(rng)}
                for _ in range(rng.randint(0, 2))
            ]
    if rng.random() < 0.05:
        claim[rng.choice(STRINGS)] = _junk(rng)
    return claim


def _options(rng: random.Random, endpoint: str) -> Any:
    if rng.random() < 0.1:
        return _junk(rng)
    out: dict[str, Any] = {}
    limit_key = "time_budget_s" if endpoint == "/v1/explain" else "time_limit_s"
    if rng.random() < 0.8:
        out[limit_key] = rng.choice([0.2, 0.5, 1, 0, -1, "1", True, Raw("NaN"), Raw("1e400"), 1e-9])
    if rng.random() < 0.2:
        out["rules"] = [rng.choice(["kv.reuse-needs-paged-context-fmha", "nope", "", 3])]
    if rng.random() < 0.2:
        out["defaults"] = {rng.choice(PATHS + STRINGS): _scalar(rng)}
    if endpoint == "/v1/explain" and rng.random() < 0.3:
        out["format"] = rng.choice(["json", "text", "markdown", "html", "pdf", 1])
        out["max_conflicts"] = rng.choice([1, 2, 0, 101, True, 2.5])
    return out


def _model_config(rng: random.Random) -> Any:
    base: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
    for _ in range(rng.randint(0, 3)):
        base[rng.choice([*base, "head_dim", "rope_scaling", "sliding_window"])] = _scalar(rng)
    return base if rng.random() < 0.9 else _junk(rng)


def hostile_body(rng: random.Random, endpoint: str) -> Any:
    if endpoint == "/v1/check":
        body: dict[str, Any] = {
            "dialect": rng.choice([*_REGISTRY, 1]),
            "config": {
                rng.choice(
                    ["max_batch_size", "kv_cache_config", "max_num_tokens", "mode", "x", "\ud800"]
                ): _junk(rng)
                for _ in range(rng.randint(0, 3))
            },
        }
        if rng.random() < 0.7:
            body["model"] = _model_config(rng)
        if rng.random() < 0.5:
            body["device"] = rng.choice(["H100-80GB", "L4", "cpu", "nope", "", 3, "\ud800"])
        if rng.random() < 0.5:
            body["time_limit_s"] = rng.choice([0.5, 1, 0, Raw("NaN"), "2"])
        return body
    claims = [hostile_claim(rng, i) for i in range(rng.choice([0, 1, 1, 2, 3, 5, 12]))]
    body = {"claims": claims}
    if rng.random() < 0.8:
        body["options"] = _options(rng, endpoint)
    if rng.random() < 0.03:
        body["unexpected"] = 1
    return body


def hostile_request(rng: random.Random) -> tuple[str, str, dict[str, str], bytes]:
    """(method, path, query params, body) of one hostile request."""
    roll = rng.random()
    draw = Draw(rng.random())
    draw.edge = rng.choice([0.0, 0.02, 0.1, 0.3])
    if roll < 0.04:
        path = rng.choice(["/v1/schema", "/v1/rules"])
        key = "path" if path == "/v1/schema" else "grep"
        value = rng.choice([*PATHS[:3], "kv_cache_config", "x.y", "", "\ud800", "%", "a" * 500])
        return "GET", path, {key: value.encode("utf-8", "surrogatepass").decode("latin-1")}, b""
    if roll < 0.06:
        return rng.choice(["GET", "PUT", "DELETE"]), rng.choice(ENDPOINTS + ["/nope"]), {}, b""
    endpoint = rng.choice(ENDPOINTS)
    if roll < 0.1:
        raw = rng.choice(
            [b"{not json", b"\xff\xfe{}", b"", b"[" * 5000, b'{"claims": [' + b"1," * 1000 + b"1]}",
             b'{"claims": []}\x00', "{\"claims\": [{\"name\": \"\xe9\"}]}".encode("latin-1")]
        )  # fmt: skip
        return "POST", endpoint, {}, raw
    return (
        "POST",
        endpoint,
        {},
        encode(hostile_body(rng, endpoint)).encode("utf-8", "surrogatepass"),
    )


@cache
def dialect_keys(dialect: str) -> tuple[str, ...]:
    """Every field name the dialect reads for its release, in the user's spelling, with
    nested ones as dotted paths (`build_config.plugin_config.gemm_plugin`): its pack's
    `vocab.config_keys()`."""
    return tuple(_REGISTRY.part(dialect, "vocab").config_keys())


def _put(config: dict[str, Any], path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if not rest:
        config[head] = value
        return
    inner = config.get(head)
    if not isinstance(inner, dict):
        inner = config[head] = {}
    _put(inner, rest, value)


def _field_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(WRONG_TYPES)
    if roll < 0.8:
        return _scalar(rng)
    return _junk(rng)


def hostile_check_body(rng: random.Random, dialect: Any = None) -> dict[str, Any]:
    """A `/v1/check` body for `dialect` (drawn when None) with hostile field values."""
    dialect = dialect if dialect is not None else rng.choice(DIALECTS)
    known = dialect in DIALECTS
    keys = dialect_keys(dialect if known else DEFAULT_DIALECT)
    # a built engine's config.json, where the pack's vocabulary has one (TensorRT-LLM's)
    vocab: Any = _REGISTRY.part(dialect, "vocab") if known else None
    prebuilt = getattr(vocab, "PREBUILT", None)
    config: dict[str, Any] = {}
    if prebuilt is not None and rng.random() < 0.15:
        config = copy.deepcopy(prebuilt)
        for _ in range(rng.randint(1, 3)):
            where = rng.choice(list(vocab.PREBUILT_SECTIONS))
            _put(
                config,
                rng.choice([where, f"{where}.{rng.choice(PATHS).split('.')[-1]}"]),
                _field_value(rng),
            )
    for _ in range(rng.randint(0, 4)):
        key = rng.choice(keys) if rng.random() < 0.9 else rng.choice(STRINGS)
        _put(config, key, _field_value(rng))
    body: dict[str, Any] = {"dialect": dialect, "config": config}
    if rng.random() < 0.5:
        body["model"] = _model_config(rng)
    if rng.random() < 0.4:
        body["device"] = rng.choice(["H100-80GB", "L4", "cpu", "nope", "", 3, None])
    if rng.random() < 0.3:
        body["gpus"] = rng.choice([1, 2, 8, 0, -1, 2000, "2", 1.5, True])
    body["time_limit_s"] = rng.choice([1, 2, 0.5]) if rng.random() < 0.9 else rng.choice([0, "1"])
    return body


FEATURES = (
    "prefix_caching", "chunked_prefill", "speculative", "fp8_kv", "lora", "context_length",
    "batch", "token_budget", "tensor_parallel", "pipeline_parallel", "expert_parallel",
    "attention_dp", "cuda_graphs", "kv_page_size", "kv_memory_share", "nope",
)  # fmt: skip


def hostile_compare_body(rng: random.Random) -> dict[str, Any]:
    """A `/v1/compare` body: an intent whose features hold hostile values."""
    intent: dict[str, Any] = {}
    for part in ("hard", "soft"):
        if rng.random() < 0.8:
            intent[part] = {
                rng.choice(FEATURES): _field_value(rng) for _ in range(rng.randint(0, 3))
            }
    if rng.random() < 0.5:
        intent["model"] = rng.choice(["llama-3.1-8b", "nope", 3, {"a": 1}, [], ""])
    if rng.random() < 0.3:
        intent["speculative"] = {
            "kind": rng.choice(["ngram", "eagle3", "x", 1]),
            "draft_tokens": _number(rng),
        }
    body: dict[str, Any] = {"intent": intent if rng.random() < 0.95 else _junk(rng)}
    if rng.random() < 0.5:
        body["engines"] = rng.sample([*DIALECTS, "nope"], rng.randint(0, 3))
    if rng.random() < 0.3:
        body["gpus"] = rng.choice([1, 2, 0, -3, "2", None])
    if rng.random() < 0.3:
        body["device"] = rng.choice(["H100-80GB", "L4", "nope", 1])
    body["time_limit_s"] = 2
    return body


def hostile_json(rng: random.Random) -> dict[str, Any]:
    """Any JSON object: the body for a POST route with no generator of its own."""
    return {
        rng.choice([*STRINGS, "claims", "config", "intent", "options"]): _junk(rng)
        for _ in range(rng.randint(0, 4))
    }


def route_body(rng: random.Random, path: str) -> Any:
    """A hostile body for the POST route at `path` (unknown routes: any JSON object)."""
    if path in ("/v1/arbitrate", "/v1/explain"):
        return hostile_body(rng, path)
    if path == "/v1/check":
        return hostile_check_body(rng)
    if path == "/v1/compare":
        return hostile_compare_body(rng)
    return hostile_json(rng)
