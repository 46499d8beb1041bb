"""Checking what users write, and turning pydantic's validation errors into one readable line
per problem.

A file format is declared once, as dataclasses (`flopcalc.declare`); pydantic's reader is built
from the same declaration here (`pydantic_model`), so both readers accept exactly the same
inputs: pydantic reports every problem of an input at once, and the fast reader builds the
result.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Optional, Type, TypeVar, Union, get_args

from pydantic import BaseModel, ValidationError

from ..declare import MAX_INT, Min, Parsed, default_of, hints, structure
from ..errors import FlopcalcError, suggest

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def show_value(value: Any) -> str:
    """A value as the user wrote it in YAML (true, 768.5, 'abc')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return str(value)


def _describe(err: dict[str, Any], model: Type[BaseModel]) -> str:
    loc = ".".join(map(str, err["loc"]))
    kind, value = err["type"], err.get("input")
    got = f", got {show_value(value)}"
    if kind == "extra_forbidden":
        fields = _field_names(model, err["loc"][:-1])
        hint = suggest(str(err["loc"][-1]), fields) or (
            f" valid keys: {', '.join(fields)}" if fields else "")
        return f"unknown key '{loc}'" + (f";{hint}" if hint else "")
    if kind == "missing":
        return f"missing key '{loc}' (required)"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{loc} must be a whole number{got}" + (
            " (write it without a decimal point)" if isinstance(value, float) else "")
    if kind == "greater_than":
        return f"{loc} must be a positive integer{got}"
    if kind == "greater_than_equal":
        return f"{loc} must be >= {err['ctx']['ge']}{got}"
    if kind in ("less_than_equal", "int_from_large") or (kind == "int_parsing_size"):
        return f"{loc} is larger than 10^18; check the number"
    if kind == "bool_type":
        return f"{loc} must be true or false{got}"
    if kind == "string_type":
        return f"{loc} must be text{got}"
    if kind == "list_type":
        return f"{loc} must be a list{got}"
    if kind == "literal_error":
        return f"{loc} must be {err['ctx']['expected']}{got}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{loc or 'the document'} must be a mapping of keys to values{got}"
    if kind == "value_error":
        message = str(err["ctx"]["error"]) if "ctx" in err else err["msg"]
        return f"{loc}: {message}" if loc else message
    return f"{loc}: {err['msg']}{got}" if loc else f"{err['msg']}{got}"


def _model_in(annotation: Any) -> Optional[Type[BaseModel]]:
    """The pydantic model an annotation holds: itself, or inside Optional[...] / List[...]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _field_names(model: Type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the (possibly nested) model at `loc`; list indices are skipped."""
    for key in loc:
        if isinstance(key, int):
            continue
        field = model.model_fields.get(str(key))
        sub = _model_in(field.annotation) if field else None
        if sub is None:
            return []
        model = sub
    return list(model.model_fields)


def validate(model: Type[M], raw: Any, label: str) -> M:
    """Validate `raw` against a pydantic `model`; every problem in one FlopcalcError, one line
    each."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = [_describe(e, model) for e in exc.errors(include_url=False)]
        if len(problems) == 1:
            raise FlopcalcError(f"{label}: {problems[0]}") from None
        raise FlopcalcError(f"{label}: " + "; ".join(problems)) from None


def validate_declared(cls: type[T], raw: Any, label: str) -> T:
    """`raw` read as format `cls`: checked by pydantic (every problem reported), then built."""
    validate(pydantic_model(cls), raw, label)
    return structure(cls, raw)


# ------------------------------------------------------------- pydantic from the declaration


@functools.lru_cache(maxsize=None)
def pydantic_model(cls: type) -> Type[BaseModel]:
    """The pydantic model of a declared format: strict types, unknown keys refused, the same
    bounds, parsers and short forms."""
    from pydantic import ConfigDict, Field, create_model, model_validator

    config = ConfigDict(extra="forbid", frozen=True)
    shorthand = getattr(cls, "shorthand", None)
    if shorthand is not None:
        class Base(BaseModel):
            model_config = config

            @model_validator(mode="before")
            @classmethod
            def _short(cls_, value: Any) -> Any:
                return shorthand(value)
        base: type = Base
    else:
        class Plain(BaseModel):
            model_config = config
        base = Plain
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        default = default_of(field)
        # Defaults are the declaration's; pydantic only needs to know the key may be absent.
        fields[field.name] = (_translate(hints(cls)[field.name]),
                              ... if default is dataclasses.MISSING else Field(default=None))
    return create_model(cls.__name__, __base__=base, **fields)


def _translate(tp: Any) -> Any:
    from pydantic import BeforeValidator, Field, StrictBool, StrictInt, StrictStr

    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        inner, *meta = typing.get_args(tp)
        extras: list[Any] = []
        for m in meta:
            if isinstance(m, Min):
                extras.append(Field(gt=0) if m.value == 1 else Field(ge=m.value))
            elif isinstance(m, Parsed):
                extras.append(BeforeValidator(_reader(m.parse)))
        return typing.Annotated[(_translate(inner), *extras)]  # type: ignore[return-value]
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return Optional[_translate(args[0])]
    if origin is typing.Literal:
        return tp
    if origin is list:
        return list[_translate(typing.get_args(tp)[0])]  # type: ignore[misc]
    if origin is dict:
        k_tp, v_tp = typing.get_args(tp)
        return dict[_translate(k_tp), _translate(v_tp)]  # type: ignore[misc]
    if dataclasses.is_dataclass(tp):
        return pydantic_model(tp)
    if tp is int:
        return typing.Annotated[StrictInt, Field(le=MAX_INT, ge=-MAX_INT)]
    return {bool: StrictBool, str: StrictStr}[tp]


def _reader(parse: Any) -> Any:
    def read(value: Any) -> int:
        try:
            return parse(value, "value")
        except FlopcalcError as exc:
            raise ValueError(str(exc).removeprefix("value: ")) from None
    return read


# ------------------------------------------------------------------------------- models


def validate_model(raw: Any, label: str) -> tuple[Any, Any]:
    """A model file's mapping as a validated model config (`models.config`) and the model it
    describes (`models.spec`, whose building checks the cross-field rules)."""
    from .config import model_config
    from .spec import build_spec

    config = validate_declared(model_config(_keys(raw)), raw, label)
    return config, resolve(config, label, build_spec)


def _keys(raw: Any) -> Any:
    """The blocks to validate `raw` with: those it names, unless it holds a key that is no
    block or base key (then every block, so that the error can suggest the nearest)."""
    import dataclasses

    from ..kinds import registry
    from .config import BaseConfig

    if not isinstance(raw, dict):
        return None
    known = {f.name for f in dataclasses.fields(BaseConfig)} | set(registry.block_names())
    return raw.keys() if all(isinstance(k, str) and k in known for k in raw) else None


def resolve(config: Any, label: str, build: Any) -> Any:
    try:
        return build(config)
    except ValueError as exc:
        raise FlopcalcError(f"{label}: {exc}") from None
