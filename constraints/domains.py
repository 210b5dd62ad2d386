"""Option domains: what values an option may take and how the solver encodes them.

Every option in the schema carries one domain object. The same object validates values
inside pydantic models (it is used as `Annotated` metadata) and tells the compiler how to
turn the option into CP-SAT variables:

- `BoolDomain`: True / False, encoded 1 / 0.
- `EnumDomain`: a fixed tuple of values (strings, possibly None), encoded as the index.
- `IntDomain`: integers in [lo, hi], encoded as themselves.
- `FractionDomain`: decimals in [lo, hi] stored in fixed point (`scale` steps per unit).

Any domain may be `nullable`: None then means "not set", and the solver gives the option a
presence literal besides its value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import core_schema

from .errors import DomainError


class Domain:
    """Base class; subclasses are frozen dataclasses."""

    nullable: bool = False
    kind: str = "?"

    def check(self, value: Any, path: str = "<value>") -> Any:
        """Return the value normalised to this domain, or raise DomainError."""
        if value is None:
            if self.nullable:
                return None
            raise DomainError(path, value, self.describe(), "this option cannot be None")
        return self._check(value, path)

    def _check(self, value: Any, path: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, value: Any) -> int:
        """The integer the solver uses for a (non-None) value of this domain."""
        raise NotImplementedError

    def decode(self, number: int) -> Any:
        """The value for a solver integer."""
        raise NotImplementedError

    def bounds(self) -> tuple[int, int]:
        """Smallest and largest solver integer of the domain."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def _null(self) -> str:
        return " or None" if self.nullable else ""

    # pydantic integration: the domain validates model fields it annotates.
    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        def validate(value: Any) -> Any:
            try:
                return self.check(value)
            except DomainError as exc:
                raise ValueError(f"{value!r} is outside {exc.domain}") from None

        return core_schema.no_info_before_validator_function(validate, handler(source))


@dataclass(frozen=True)
class BoolDomain(Domain):
    nullable: bool = False
    kind: str = "bool"

    def _check(self, value: Any, path: str) -> bool:
        if isinstance(value, bool):
            return value
        raise DomainError(
            path, value, self.describe(), f"expected a bool, got {type(value).__name__}"
        )

    def encode(self, value: Any) -> int:
        return int(bool(value))

    def decode(self, number: int) -> bool:
        return bool(number)

    def bounds(self) -> tuple[int, int]:
        return (0, 1)

    def describe(self) -> str:
        return "bool" + self._null()

    def to_json(self) -> dict[str, Any]:
        return {"kind": "bool", "nullable": self.nullable}


@dataclass(frozen=True)
class EnumDomain(Domain):
    values: tuple[Any, ...] = ()
    nullable: bool = False
    kind: str = "enum"

    def _check(self, value: Any, path: str) -> Any:
        if isinstance(value, bool) or value not in self.values:
            # accept case-insensitive spellings of string members, keep the canonical one
            if isinstance(value, str):
                for member in self.values:
                    if isinstance(member, str) and member.lower() == value.lower():
                        return member
            raise DomainError(path, value, self.describe())
        return value

    def encode(self, value: Any) -> int:
        return self.values.index(value)

    def decode(self, number: int) -> Any:
        return self.values[number]

    def bounds(self) -> tuple[int, int]:
        return (0, len(self.values) - 1)

    def describe(self) -> str:
        return "one of {" + ", ".join(_show(v) for v in self.values) + "}" + self._null()

    def to_json(self) -> dict[str, Any]:
        return {"kind": "enum", "values": list(self.values), "nullable": self.nullable}


@dataclass(frozen=True)
class IntDomain(Domain):
    lo: int = 0
    hi: int = 1 << 30
    nullable: bool = False
    kind: str = "int"

    def _check(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise DomainError(
                    path, value, self.describe(), f"expected an int, got {type(value).__name__}"
                )
        if not self.lo <= value <= self.hi:
            raise DomainError(path, value, self.describe())
        return value

    def encode(self, value: Any) -> int:
        return int(value)

    def decode(self, number: int) -> int:
        return int(number)

    def bounds(self) -> tuple[int, int]:
        return (self.lo, self.hi)

    def describe(self) -> str:
        return f"int in [{self.lo}, {self.hi}]" + self._null()

    def to_json(self) -> dict[str, Any]:
        return {"kind": "int", "lo": self.lo, "hi": self.hi, "nullable": self.nullable}


@dataclass(frozen=True)
class FractionDomain(Domain):
    lo: float = 0.0
    hi: float = 1.0
    scale: int = 1000
    nullable: bool = False
    kind: str = "fraction"

    def _check(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DomainError(
                path, value, self.describe(), f"expected a number, got {type(value).__name__}"
            )
        if not self.lo <= value <= self.hi:
            raise DomainError(path, value, self.describe())
        steps = value * self.scale
        if abs(steps - round(steps)) > 1e-6:
            raise DomainError(path, value, self.describe(), f"precision is 1/{self.scale}")
        return float(value)

    def encode(self, value: Any) -> int:
        return int(round(float(value) * self.scale))

    def decode(self, number: int) -> float:
        return number / self.scale

    def bounds(self) -> tuple[int, int]:
        return (self.encode(self.lo), self.encode(self.hi))

    def describe(self) -> str:
        return f"number in [{self.lo}, {self.hi}] in steps of 1/{self.scale}" + self._null()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "fraction",
            "lo": self.lo,
            "hi": self.hi,
            "scale": self.scale,
            "nullable": self.nullable,
        }


def _show(value: Any) -> str:
    return "None" if value is None else str(value)
