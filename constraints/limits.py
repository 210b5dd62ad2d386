"""The input limits, defined once: what any claim, document or request may hold.

`constraints.edge` enforces the document limits (depth, values, numbers, strings),
`arbiter.claims` the claim limits (alternatives, weights, priorities, claim count),
`constraints.expr` the set limit (values of one `one_of`), and the HTTP service the body
size; each before anything is compiled, so `arbitrate()` and the service refuse the same
inputs with the same error (`EdgeError`, or `InvalidClaim` naming the claim) and the
limit's name. `LIMITS` lists them for the documentation and `GET /v1/limits`.

Why the claim limits keep the solver far from overflow: CP-SAT refuses an objective or a
linear constraint whose largest possible magnitude (the sum of |coefficient| x |bound|
over its terms) can leave int64. One perf tier's objective has a term per requirement
and alternative, so its magnitude is at most
`MAX_CLAIMS x (1 + MAX_ALTERNATIVES) x MAX_WEIGHT` = 2000 x 65 x 2^40 < 2^57, inside
`INT_LIMIT` = 2^62 - 1 with room to spare; the big-M folding of several stages into one
objective checks that sum of magnitudes itself (`arbiter.core.fold`).
"""

from __future__ import annotations

from dataclasses import dataclass

INT_LIMIT = (1 << 62) - 1  # largest magnitude of any integer or term the solver sees
MAX_WEIGHT = 1 << 40  # a perf claim's weight: 2^22 claims of this weight stay within INT_LIMIT
MAX_PRIORITY = (1 << 30) - 1  # tiers are sort keys; functional claims rank at 2^30
MAX_DEPTH = 64  # nesting of a JSON or YAML document
MAX_EXPR_DEPTH = 32  # nesting of one expression (all_of, any_of, not, implies)
MAX_NODES = 1_000_000  # values in one document after YAML aliases are expanded
MAX_YAML_ALIASES = 32  # aliases (*name) in one YAML document
MAX_INPUT_BYTES = 8 << 20  # a claims or config file
MAX_CLAIMS = 2000  # claims in one arbitration (one request)
MAX_ALTERNATIVES = 64  # alternatives of one perf claim
MAX_SET_VALUES = 1024  # values of one one_of (a set of allowed values)
MAX_STRING_CHARS = 65_536  # characters of one string value
MAX_KEY_CHARS = 1024  # characters of one mapping key (an option path, a field name)
MAX_NAME_CHARS = 256  # characters of a claim's name
MAX_BODY_BYTES = 1 << 20  # an HTTP request body (the service's default; `--max-body-bytes`)
MAX_LAYERS = 4096  # decoder layers of a model config (the largest published ones have ~130)


@dataclass(frozen=True)
class Limit:
    """One input limit: its `name` (the constant, as errors name it), `value`, the `unit`
    it counts, what it bounds, and the HTTP status a request over it gets."""

    name: str
    value: int
    unit: str
    bounds: str
    http_status: int = 422

    @property
    def label(self) -> str:
        """How an error names it: `MAX_SET_VALUES = 1024`."""
        return f"{self.name} = {self.value}"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "bounds": self.bounds,
            "http_status": self.http_status,
        }


LIMITS: tuple[Limit, ...] = (
    Limit("MAX_BODY_BYTES", MAX_BODY_BYTES, "bytes", "an HTTP request body", 413),
    Limit("MAX_INPUT_BYTES", MAX_INPUT_BYTES, "bytes", "a claims or config file", 413),
    Limit("MAX_DEPTH", MAX_DEPTH, "levels", "nesting of a JSON or YAML document"),
    Limit("MAX_EXPR_DEPTH", MAX_EXPR_DEPTH, "levels", "nesting of one expression"),
    Limit("MAX_NODES", MAX_NODES, "values", "values in one document, YAML aliases expanded"),
    Limit("MAX_YAML_ALIASES", MAX_YAML_ALIASES, "aliases", "aliases in one YAML document"),
    Limit("MAX_STRING_CHARS", MAX_STRING_CHARS, "characters", "one string value"),
    Limit("MAX_KEY_CHARS", MAX_KEY_CHARS, "characters", "one mapping key"),
    Limit("MAX_NAME_CHARS", MAX_NAME_CHARS, "characters", "a claim's name"),
    Limit("MAX_CLAIMS", MAX_CLAIMS, "claims", "claims in one arbitration or request"),
    Limit("MAX_ALTERNATIVES", MAX_ALTERNATIVES, "alternatives", "alternatives of a perf claim"),
    Limit("MAX_SET_VALUES", MAX_SET_VALUES, "values", "values of one one_of"),
    Limit("MAX_LAYERS", MAX_LAYERS, "layers", "decoder layers of a model config"),
    Limit("MAX_WEIGHT", MAX_WEIGHT, "", "a perf claim's or alternative's weight (>= 1)"),
    Limit("MAX_PRIORITY", MAX_PRIORITY, "", "a perf claim's priority, +/- this"),
    Limit("INT_LIMIT", INT_LIMIT, "", "any integer, +/- this (2^62 - 1)"),
)

BY_NAME = {limit.name: limit for limit in LIMITS}


def label(name: str) -> str:
    """`MAX_SET_VALUES = 1024` for the limit named `name`."""
    return BY_NAME[name].label
