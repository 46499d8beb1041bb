"""One declaration of each file format flopcalc reads: frozen dataclasses whose annotations say
what each key holds. Nothing else restates them.

A format is a dataclass with type hints built from `int`, `bool`, `str`, `Literal[...]`,
`Optional[...]`, `list[...]`, `dict[...]`, nested format dataclasses and `Annotated[int, Min(n)]` (a lower
bound) or `Annotated[..., Parsed(fn)]` (a value in the command line's number syntax, parsed by
`fn`). Every value is strict: `true` is not 1, `768.0` is not 768, `"768"` is not 768, and no
integer exceeds 10^18 (`MAX_INT`: larger is a typo). A format
may define `shorthand(value)` as a static method to expand a short form before the checks
(`bias: true` for a bias everywhere).

Two readers follow the declaration: `structure` (here: plain Python, fast, used when an input is
known to have validated before) and pydantic's, built from the same classes by
`models.validation`, which reports every problem of a new input at once in readable lines.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Callable, Optional, TypeVar, Union

from .errors import FlopcalcError
from .records import dataclass as record

T = TypeVar("T")


@record(frozen=True)
class Min:
    """A lower bound on an integer (`Min(1)`: positive)."""

    value: int


@record(frozen=True)
class Parsed:
    """A figure written in the command line's number syntax (`80GB`, `989.5T`), read by
    `parse(value, what)` into an int."""

    parse: Callable[[Any, str], int]


# No dimension of a model, count of tokens or size of a device comes near this; a larger
# integer is a typo (and would overflow the floats that shares and times are printed in).
MAX_INT = 10**18


class Invalid(ValueError):
    """A value that does not match its declaration (the fast reader's error)."""


@functools.lru_cache(maxsize=None)
def hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a format's fields, in declaration order."""
    resolved = typing.get_type_hints(cls, include_extras=True)
    return {f.name: resolved[f.name] for f in dataclasses.fields(cls)}


def default_of(field: dataclasses.Field) -> Any:
    """A field's default value, or `dataclasses.MISSING` when the key is required."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def structure(cls: type[T], data: Any, where: str = "") -> T:
    """An instance of format `cls` from plain data (a YAML or JSON mapping), checked against the
    declaration; `Invalid` names the first key that does not match."""
    shorthand = getattr(cls, "shorthand", None)
    if shorthand is not None:
        data = shorthand(data)
    if not isinstance(data, dict):
        raise Invalid(f"{where or 'the document'} must be a mapping of keys to values")
    fields = hints(cls)
    for key in data:
        if key not in fields:
            raise Invalid(f"unknown key '{where}{key}'")
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in data:
            values[field.name] = _value(fields[field.name], data[field.name],
                                        f"{where}{field.name}")
        elif default_of(field) is dataclasses.MISSING:
            raise Invalid(f"missing key '{where}{field.name}' (required)")
    return cls(**values)


def _value(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        for m in meta:
            if isinstance(m, Parsed):
                try:
                    value = m.parse(value, where)
                except FlopcalcError as exc:
                    raise Invalid(str(exc)) from None
        value = _value(base, value, where)
        for m in meta:
            if isinstance(m, Min) and value < m.value:
                raise Invalid(f"{where} must be >= {m.value}, got {value!r}")
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(inner, value, where)
    if origin is typing.Literal:
        if not any(value == c and type(value) is type(c) for c in typing.get_args(tp)):
            raise Invalid(f"{where} must be one of {typing.get_args(tp)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise Invalid(f"{where} must be a list")
        (inner,) = typing.get_args(tp)
        return tuple(_value(inner, v, f"{where}.{i}") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise Invalid(f"{where} must be a mapping")
        k_tp, v_tp = typing.get_args(tp)
        return {_value(k_tp, k, where): _value(v_tp, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return structure(tp, value, f"{where}.")
    if tp in (int, bool, str):
        if type(value) is not tp:
            raise Invalid(f"{where} must be {tp.__name__}, got {value!r}")
        if tp is int and abs(value) > MAX_INT:
            raise Invalid(f"{where} is larger than 10^18; check the number")
        return value
    raise TypeError(f"{where}: unsupported declaration {tp!r}")  # a bug in a format


def dump(instance: Any, changed_only: bool = True) -> dict[str, Any]:
    """A format instance as plain data: every key, or (`changed_only`) the required keys and
    those that differ from their defaults, so that reading it back gives the same instance."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        default = default_of(field)
        if changed_only and default is not dataclasses.MISSING and value == default:
            continue
        out[field.name] = _plain(value, changed_only)
    return out


def _plain(value: Any, changed_only: bool) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value, changed_only)
    if isinstance(value, (list, tuple)):
        return [_plain(v, changed_only) for v in value]
    return value


def optional_fields(extra: dict[str, type]) -> list[tuple[str, Any, Any]]:
    """`make_dataclass` field specs for optional blocks (`name: Optional[cls] = None`)."""
    return [(name, Optional[cls], dataclasses.field(default=None))
            for name, cls in extra.items()]
