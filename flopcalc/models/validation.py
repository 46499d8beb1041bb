"""Turning pydantic's validation errors into one readable line per problem."""

from __future__ import annotations

from typing import Any, Optional, Type, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from ..errors import FlopcalcError, suggest

M = TypeVar("M", bound=BaseModel)


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
    if kind == "bool_type":
        return f"{loc} must be true or false{got}"
    if kind == "string_type":
        return f"{loc} must be text{got}"
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
    """Validate `raw` against `model`; every problem in one FlopcalcError, one line each."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = [_describe(e, model) for e in exc.errors(include_url=False)]
        if len(problems) == 1:
            raise FlopcalcError(f"{label}: {problems[0]}") from None
        raise FlopcalcError(f"{label}: " + "; ".join(problems)) from None


def validate_model(raw: Any, label: str) -> Any:
    from .schema import ModelConfig

    return validate(ModelConfig, raw, label)
