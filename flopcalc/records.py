"""`dataclass`, as the standard library's, with its methods made on first use.

The standard decorator writes the source of `__init__`, `__repr__`, `__eq__`, `__hash__` and a
frozen class's `__setattr__`/`__delattr__` and compiles it when the class is defined: about four
million instructions a class on CPython 3.11, and a run defines some fifty classes of which it
calls a few methods each (start-up, docs/startup.md). This one lets the standard decorator
gather the fields (so `dataclasses.fields`, `replace`, `asdict` and `is_dataclass` work as
ever) but generate nothing, and puts stubs in place of the methods: the first call of one
writes and compiles that class's method, exactly as the standard decorator would have, and
installs it on the class. A class whose instances are never compared pays for no `__eq__`.

Supported: the keyword arguments this package uses (`frozen`, `eq`, `repr`, `slots`,
`kw_only`), field defaults, `field(default_factory=..., init=..., repr=..., compare=...,
kw_only=...)`, `__post_init__`, and methods the class body writes itself (kept, as the standard
decorator keeps them). `tests/package/test_records.py` holds each behaviour to the standard
decorator's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, Callable

_FACTORY = object()  # the default of a parameter whose field has a default_factory


def dataclass(cls: Any = None, /, *, frozen: bool = False, eq: bool = True, repr: bool = True,
              slots: bool = False, kw_only: bool = False) -> Any:
    def wrap(c: type) -> type:
        return _record(c, frozen=frozen, eq=eq, want_repr=repr, slots=slots, kw_only=kw_only)

    return wrap if cls is None else wrap(cls)


def _record(cls: type, *, frozen: bool, eq: bool, want_repr: bool, slots: bool,
            kw_only: bool) -> type:
    own = cls.__dict__
    has_init, has_repr, has_eq = "__init__" in own, "__repr__" in own, "__eq__" in own
    class_hash = own.get("__hash__", MISSING)
    # as the standard decorator reads it: a body that writes __eq__ alone gets __hash__ = None
    # from Python, which is not a hash the class chose
    explicit_hash = not (class_hash is MISSING or (class_hash is None and has_eq))
    if not cls.__doc__:
        # the standard decorator writes a missing docstring from the class's signature, which
        # costs more than the rest of its work here; the field names say the same
        cls.__doc__ = f"{cls.__name__}({', '.join(cls.__dict__.get('__annotations__', {}))})"
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False,
                                slots=slots, kw_only=kw_only)
    if not has_init:
        cls.__init__ = _stub(cls, "__init__", _init_source)
    if want_repr and not has_repr:
        cls.__repr__ = _stub(cls, "__repr__", _repr_source)
    if eq and not has_eq:
        cls.__eq__ = _stub(cls, "__eq__", _eq_source)
    if eq and not explicit_hash:
        cls.__hash__ = _stub(cls, "__hash__", _hash_source) if frozen else None
    if frozen:
        names = frozenset(f.name for f in dataclasses.fields(cls))
        cls.__setattr__, cls.__delattr__ = _frozen(cls, names)
        if slots:
            cls.__getstate__, cls.__setstate__ = _getstate, _setstate
    cls.__record_frozen__ = frozen
    return cls


def _stub(cls: type, name: str, source: Callable[[type], tuple[str, dict[str, Any]]]) -> Any:
    def first_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        method = _compiled(cls, name, source)
        return method(self, *args, **kwargs)

    first_call.__name__ = name
    first_call.__qualname__ = f"{cls.__qualname__}.{name}"
    return first_call


def _compiled(cls: type, name: str,
              source: Callable[[type], tuple[str, dict[str, Any]]]) -> Callable[..., Any]:
    text, env = source(cls)
    scope: dict[str, Any] = {}
    exec(text, env, scope)  # noqa: S102 - source written above from the class's field names
    method = scope[name]
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    type.__setattr__(cls, name, method)
    return method


def _frozen(cls: type, names: frozenset[str]) -> tuple[Any, Any]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return __setattr__, __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state):
        object.__setattr__(self, f.name, value)


# ------------------------------------------------------------------ the methods' source

def _init_source(cls: type) -> tuple[str, dict[str, Any]]:
    frozen = cls.__dict__.get("__record_frozen__", False)
    env: dict[str, Any] = {"__object_setattr": object.__setattr__, "__FACTORY": _FACTORY}
    positional, keyword, body = [], [], []
    for f in dataclasses.fields(cls):
        if f.init:
            if f.default is not MISSING:
                env[f"__default_{f.name}"] = f.default
                param = f"{f.name}=__default_{f.name}"
            elif f.default_factory is not MISSING:
                param = f"{f.name}=__FACTORY"
            else:
                param = f.name
            (keyword if f.kw_only else positional).append(param)
        if f.default_factory is not MISSING:
            env[f"__factory_{f.name}"] = f.default_factory
            value = (f"__factory_{f.name}() if {f.name} is __FACTORY else {f.name}" if f.init
                     else f"__factory_{f.name}()")
        elif f.init:
            value = f.name
        elif f.default is not MISSING:
            env[f"__default_{f.name}"] = f.default
            value = f"__default_{f.name}"
        else:
            continue  # init=False without a default: left unset, as the standard decorator does
        body.append(f"__object_setattr(self, {f.name!r}, {value})" if frozen
                    else f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    params = ", ".join(["self"] + positional + (["*"] + keyword if keyword else []))
    lines = "\n".join(f"    {line}" for line in body or ["pass"])
    return f"def __init__({params}):\n{lines}\n", env


def _repr_source(cls: type) -> tuple[str, dict[str, Any]]:
    parts = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in dataclasses.fields(cls) if f.repr)
    from reprlib import recursive_repr

    # the standard decorator guards against a record that holds itself
    return (("@__guard\n"
            "def __repr__(self):\n"
            f"    return self.__class__.__qualname__ + f\"({parts})\"\n"),
            {"__guard": recursive_repr()})


def _compared(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.compare]


def _eq_source(cls: type) -> tuple[str, dict[str, Any]]:
    names = _compared(cls)
    mine = "".join(f"self.{n}," for n in names)
    theirs = "".join(f"other.{n}," for n in names)
    return ("def __eq__(self, other):\n"
            "    if other.__class__ is self.__class__:\n"
            f"        return ({mine})==({theirs})\n"
            "    return NotImplemented\n"), {}


def _hash_source(cls: type) -> tuple[str, dict[str, Any]]:
    names = [f.name for f in dataclasses.fields(cls)
             if (f.compare if f.hash is None else f.hash)]
    return ("def __hash__(self):\n"
            f"    return hash(({''.join(f'self.{n},' for n in names)}))\n"), {}


def make_dataclass(name: str, fields: list[Any], *, bases: tuple[type, ...] = (),
                   frozen: bool = False, eq: bool = True, repr: bool = True,
                   kw_only: bool = False) -> type:
    """`dataclasses.make_dataclass`, its methods made on first use (see `dataclass`)."""
    cls = dataclasses.make_dataclass(name, fields, bases=bases, init=False, repr=False,
                                     eq=False, frozen=False, kw_only=kw_only)
    return _record(cls, frozen=frozen, eq=eq, want_repr=repr, slots=False, kw_only=kw_only)
