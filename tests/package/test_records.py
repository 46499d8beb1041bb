"""`flopcalc.records.dataclass` behaves as the standard library's decorator, whose methods it
makes on first use (docs/startup.md): the standard decorator is the referee, class by class."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import ClassVar, Optional

import pytest

from flopcalc import records

pytestmark = pytest.mark.invariant


def pair(body: str, **options: object) -> tuple[type, type]:
    """The same class body under the standard decorator and under flopcalc's."""
    made = []
    for decorate in (dataclasses.dataclass, records.dataclass):
        scope: dict[str, object] = {"Optional": Optional, "ClassVar": ClassVar,
                                    "field": dataclasses.field}
        exec(f"class Sample:\n{body}", scope)  # noqa: S102
        made.append(decorate(**options)(scope["Sample"]))
    return made[0], made[1]


BODIES = {
    "plain": "    a: int\n    b: str = 'x'\n    c: Optional[int] = None\n",
    "factory": "    a: int\n    b: list = field(default_factory=list)\n"
               "    c: tuple = field(default=(), init=False, repr=False, compare=False)\n",
    "post_init": "    a: int\n    b: int = 0\n"
                 "    def __post_init__(self):\n        if self.a < 0: raise ValueError(self.a)\n",
    "classvar": "    a: int\n    seen: ClassVar[int] = 3\n    b: int = field(compare=False, default=2)\n",
    "kw_only": "    a: int = 1\n    b: int = field(default=2, kw_only=True)\n",
    "own_repr": "    a: int\n    def __repr__(self):\n        return 'mine'\n",
    "own_eq": "    a: int\n    def __eq__(self, other):\n        return True\n",
}
OPTIONS = [dict(), dict(frozen=True), dict(frozen=True, slots=True), dict(eq=False),
           dict(repr=False, eq=False), dict(frozen=True, kw_only=True)]


def build(cls: type, name: str) -> object:
    return cls(a=5, b="y") if name == "plain" else cls(a=5)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
@pytest.mark.parametrize("name", BODIES)
def test_each_method_is_the_standard_one(name, options):
    std, ours = pair(BODIES[name], **options)
    a, b = build(std, name), build(ours, name)
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(std)]
    assert dataclasses.is_dataclass(ours) and dataclasses.asdict(b) == dataclasses.asdict(a)
    if options.get("repr", True):
        assert repr(b).replace(ours.__qualname__, "S") == repr(a).replace(std.__qualname__, "S")
    twin_a, twin_b = build(std, name), build(ours, name)
    assert (b == twin_b) == (a == twin_a) and (b != twin_b) == (a != twin_a)
    assert (ours.__hash__ is None) == (std.__hash__ is None)
    if std.__hash__ is not None and options.get("frozen"):
        # a frozen record hashes its compared fields: equal records hash equal (a list among
        # them cannot be hashed, by either)
        try:
            hash(a)
        except TypeError:
            with pytest.raises(TypeError):
                hash(b)
        else:
            assert hash(b) == hash(twin_b)
    changed = dataclasses.replace(b, a=9)
    assert changed.a == 9 and type(changed) is ours
    if options.get("frozen"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.a = 1  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del b.a  # type: ignore[misc]
    else:
        b.a = 1  # type: ignore[misc]
        assert b.a == 1
    if name != "own_eq":
        assert copy.deepcopy(b) == b if options.get("eq", True) else True
    assert getattr(copy.copy(b), "a") == b.a


def test_post_init_and_factories_run():
    std, ours = pair(BODIES["post_init"], frozen=True)
    for cls in (std, ours):
        with pytest.raises(ValueError):
            cls(-1)
    std, ours = pair(BODIES["factory"])
    x, y = ours(1), ours(1)
    assert x.b == [] and x.b is not y.b and x.c == ()  # a fresh list each, init=False default


def test_compare_false_fields_are_left_out_of_eq_and_hash():
    _, ours = pair(BODIES["classvar"], frozen=True)
    assert ours(1, b=2) == ours(1, b=3) and hash(ours(1, b=2)) == hash(ours(1, b=3))
    assert ours(1) != ours(2)


def test_a_frozen_slotted_record_pickles():
    global Pickled

    @records.dataclass(frozen=True, slots=True)
    class Pickled:
        a: int
        b: tuple = ()

    Pickled.__qualname__ = "Pickled"
    value = Pickled(3, (1, 2))
    assert pickle.loads(pickle.dumps(value)) == value


def test_a_subclass_gets_its_own_methods():
    @records.dataclass(frozen=True)
    class Base:
        a: int

    @records.dataclass(frozen=True)
    class Child(Base):
        b: int = 0

    assert Base(1) == Base(1) and Child(1, 2) == Child(1, 2) and Child(1, 2) != Child(1, 3)
    assert repr(Child(1, 2)).endswith("Child(a=1, b=2)") and repr(Base(1)).endswith("Base(a=1)")
    assert Base(1) != Child(1)  # a record equals only a record of its own class


def test_methods_are_made_only_when_used():
    @records.dataclass(frozen=True)
    class Lazy:
        a: int

    stub = Lazy.__dict__["__eq__"]
    Lazy(1)
    assert Lazy.__dict__["__eq__"] is stub  # building one compiled __init__ alone
    assert Lazy(1) == Lazy(1)
    assert Lazy.__dict__["__eq__"] is not stub
