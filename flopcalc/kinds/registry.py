"""The kinds a model config may name, found where they are defined.

Every module of this package may define `REGISTER`, an `Entry` saying which `layer_types`
entries its mixer fills and which config blocks (YAML keys holding a mapping) it reads, with
their declarations. The registry gathers them on first use, so a new kind of mixer is one module
here; `register` adds one defined elsewhere (a test's toy kind, a user's plug-in) through the
same seam.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Entry:
    """What a kind module tells the registry: the `layer_types` names it builds a token mixer
    for (`build(config, name)`), and the config blocks it reads (name → declaration)."""

    layer_types: tuple[str, ...] = ()
    build: Optional[Callable[[Any, str], Any]] = None
    blocks: tuple[tuple[str, type], ...] = ()
    # layer_types names that may carry an instance number, `name@N` (which of several
    # weight-shared blocks a layer runs: Zamba2's `shared@1`); `build` receives the whole name
    tagged: tuple[str, ...] = ()
    # a model-level kind built from the config (None when the config has none of it): an input
    # front end counted before the encoder's layers (Whisper's convolutions over mel frames)
    frontend: Optional[Callable[[Any], Any]] = None


_added: list[Entry] = []
_generation = [0]


def register(entry: Entry) -> None:
    """Add a kind defined outside this package. Its names must be new."""
    taken = set(mixer_names()) | set(blocks())
    clash = sorted((set(entry.layer_types) | {name for name, _ in entry.blocks}) & taken)
    if clash:
        raise ValueError(f"kind names already taken: {', '.join(clash)}")
    _added.append(entry)
    _changed()


def unregister(entry: Entry) -> None:
    _added.remove(entry)
    _changed()


def _changed() -> None:
    _generation[0] += 1
    _entries.cache_clear()


@functools.lru_cache(maxsize=1)
def _builtin() -> tuple[Entry, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(_package_path()),
                       key=lambda m: m.name):
        module = importlib.import_module(f"{__package__}.{info.name}")
        entry = getattr(module, "REGISTER", None)
        if isinstance(entry, Entry):
            found.append(entry)
    return tuple(found)


def _package_path() -> list[str]:
    from pathlib import Path

    return [str(Path(__file__).resolve().parent)]


@functools.lru_cache(maxsize=1)
def _entries() -> tuple[Entry, ...]:
    return _builtin() + tuple(_added)


def generation() -> int:
    """Changes whenever a kind is added, so that what is built from the registry is rebuilt."""
    return _generation[0]


def mixer_names() -> list[str]:
    return [name for e in _entries() for name in e.layer_types]


def builder(name: str) -> Optional[Callable[[Any, str], Any]]:
    """The build function of a `layer_types` entry's mixer: `name`, or `name@N` (N a whole
    number) for a name its entry lists in `tagged`; None when no kind fills it."""
    base, tag = name.split("@", 1) if "@" in name else (name, None)
    for e in _entries():
        if base in e.layer_types and (tag is None or (base in e.tagged and tag.isdigit())):
            return e.build
    return None


def blocks() -> dict[str, type]:
    """Config key → the declaration of its block, for every kind."""
    return {name: cls for e in _entries() for name, cls in e.blocks}


def frontends() -> list[Callable[[Any], Any]]:
    """The front-end builders of every kind (see `Entry.frontend`)."""
    return [e.frontend for e in _entries() if e.frontend is not None]
