"""The kinds a model config may name, found where they are defined.

Every module of this package may define `REGISTER`, an `Entry` saying which `layer_types`
entries its mixer fills and which config blocks (YAML keys holding a mapping) it reads, with
their declarations. The registry gathers them on first use, so a new kind of mixer is one module
here; `register` adds one defined elsewhere (a test's toy kind, a user's plug-in) through the
same seam.

A run imports only the kind modules its model names. Which module names what is read from a
listing (module → its layer types and blocks) kept in flopcalc's cache directory next to the
remembered validations, valid while the package's kind modules are the same files (names, sizes,
modification times); without it, or when it is stale, every module is imported once and the
listing written again. The listing holds names only, and every name it points to is checked
against the module's own `REGISTER`: a wrong or forged listing costs a full import, never a
wrong kind.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from ..records import dataclass


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
    # a model-level tower built from the config (None when it has none): an image encoder and
    # its projector, counted as its own stack and run on the images a command is given
    tower: Optional[Callable[[Any], Any]] = None
    # every decoder layer's feed-forward block, built from the config and the layer's
    # `layer_types` entry in place of the MLP or mixture of experts (Gemma 4's MLP with experts
    # beside it and per-layer inputs); None: the model's own
    ffn: Optional[Callable[[Any, str], Any]] = None


_added: list[Entry] = []
_generation = [0]


def register(entry: Entry) -> None:
    """Add a kind defined outside this package. Its names must be new."""
    taken = set(mixer_names()) | set(block_names())
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
    """Every kind module's entry (imports them all)."""
    found = []
    for name in _module_names():
        entry = _entry_of(name)
        if entry is not None:
            found.append(entry)
    return tuple(found)


def _package_path() -> list[str]:
    return [str(Path(__file__).resolve().parent)]


def _module_names() -> list[str]:
    """The package's modules, as pkgutil.iter_modules names them (.py files and packages), read
    from the folder directly: the listing is checked at every start, and pkgutil is an import
    more."""
    names = set()
    try:
        with os.scandir(_package_path()[0]) as entries:
            for item in entries:
                stem, dot, ext = item.name.rpartition(".")
                if dot and ext == "py" and stem != "__init__" and stem.isidentifier() \
                        and item.is_file():
                    names.add(stem)
                elif not dot and item.name.isidentifier() and item.is_dir() \
                        and os.path.isfile(os.path.join(item.path, "__init__.py")):
                    names.add(item.name)
    except OSError:
        return []
    return sorted(names)


def _entry_of(module: str) -> Optional[Entry]:
    entry = getattr(importlib.import_module(f"{__package__}.{module}"), "REGISTER", None)
    return entry if isinstance(entry, Entry) else None


@functools.lru_cache(maxsize=1)
def _entries() -> tuple[Entry, ...]:
    return _builtin() + tuple(_added)


# ------------------------------------------------------------------ the listing: lazy imports

MAX_LISTING_BYTES = 64 * 1024


def _listing_of(entry: Entry) -> dict[str, Any]:
    return {"layer_types": list(entry.layer_types), "blocks": [n for n, _ in entry.blocks],
            "frontend": entry.frontend is not None, "tower": entry.tower is not None,
            "ffn": entry.ffn is not None}


def _fingerprint() -> str:
    """The kind modules as files: names, sizes and modification times (empty if unreadable)."""
    from ..version import __version__

    parts = [__version__]
    try:
        with os.scandir(_package_path()[0]) as entries:
            for item in sorted(entries, key=lambda e: e.name):
                if item.name.endswith(".py"):
                    info = item.stat()
                    parts.append(f"{item.name}:{info.st_size}:{info.st_mtime_ns}")
    except OSError:
        return ""
    return "|".join(parts)


def _listing_path() -> Optional[Path]:
    from ..cachedir import cache_directory

    directory = cache_directory()
    return None if directory is None else directory / "kinds.json"


@functools.lru_cache(maxsize=1)
def _listing() -> dict[str, dict[str, Any]]:
    """Module → what its REGISTER names, from the cache when it matches the files, else built
    by importing every module (and remembered)."""
    fingerprint, path = _fingerprint(), _listing_path()
    if fingerprint and path is not None:
        try:
            info = os.stat(path)
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_LISTING_BYTES:
                with open(path, "rb") as fh:
                    data = json.loads(fh.read(MAX_LISTING_BYTES + 1))
                if isinstance(data, dict) and data.get("files") == fingerprint and \
                        _well_formed(data.get("modules")):
                    return data["modules"]
        except (OSError, ValueError, RecursionError):
            pass
    modules = {name: _listing_of(e) for name in _module_names() if (e := _entry_of(name))}
    if fingerprint and path is not None:
        from ..writing import write_cache

        # an unwritable cache only means importing every kind next time
        write_cache(path, json.dumps({"files": fingerprint, "modules": modules}).encode())
    return modules


def _well_formed(modules: Any) -> bool:
    names = set(_module_names())
    return isinstance(modules, dict) and all(
        m in names and isinstance(v, dict)
        and all(isinstance(v.get(k), list) and all(isinstance(x, str) for x in v[k])
                for k in ("layer_types", "blocks"))
        for m, v in modules.items())


def _find(predicate: Callable[[dict[str, Any]], bool], check: Callable[[Entry], bool],
          expected: bool = True) -> list[Entry]:
    """The entries of the modules the listing says match, each checked against its own
    REGISTER; if any is not what the listing says, or none is listed where one is `expected`,
    every module's (a full import: an unknown name is looked for everywhere before it is called
    unknown)."""
    found = []
    for module, listed in _listing().items():
        if predicate(listed):
            entry = _entry_of(module)
            if entry is None or not check(entry):
                return [e for e in _builtin() if check(e)]
            found.append(entry)
    return found if found or not expected else [e for e in _builtin() if check(e)]


def generation() -> int:
    """Changes whenever a kind is added, so that what is built from the registry is rebuilt."""
    return _generation[0]


def mixer_names() -> list[str]:
    return [name for v in _listing().values() for name in v["layer_types"]] + \
        [name for e in _added for name in e.layer_types]


def block_names() -> list[str]:
    """Every config block a kind reads (names only: nothing imported)."""
    return [name for v in _listing().values() for name in v["blocks"]] + \
        [name for e in _added for name, _ in e.blocks]


def builder(name: str) -> Optional[Callable[[Any, str], Any]]:
    """The build function of a `layer_types` entry's mixer: `name`, or `name@N` (N a whole
    number) for a name its entry lists in `tagged`; None when no kind fills it."""
    base, tag = name.split("@", 1) if "@" in name else (name, None)

    def fills(e: Entry) -> bool:
        return base in e.layer_types and (tag is None or (base in e.tagged and tag.isdigit()))

    for e in _added:
        if fills(e):
            return e.build
    found = _find(lambda v: base in v["layer_types"], lambda e: base in e.layer_types)
    return next((e.build for e in found if fills(e)), None)


def blocks(names: Optional[Iterable[str]] = None) -> dict[str, type]:
    """Config key → the declaration of its block: for every kind, or for the blocks `names`
    (only their modules are imported)."""
    if names is None:
        return {name: cls for e in _entries() for name, cls in e.blocks}
    wanted = set(names) & set(block_names())
    if not wanted:
        return {}
    entries = _find(lambda v: bool(wanted & set(v["blocks"])),
                    lambda e: bool(wanted & {n for n, _ in e.blocks})) + _added
    return {name: cls for e in entries for name, cls in e.blocks if name in wanted}


def _model_level(flag: str, present: Optional[Iterable[str]]) -> list[Entry]:
    """Entries with a front end or tower, of the kinds whose blocks are in `present` (None:
    all of them)."""
    given = None if present is None else set(present)

    def wanted(names: Iterable[str]) -> bool:
        return given is None or bool(given & set(names))

    found = _find(lambda v: bool(v.get(flag)) and wanted(v["blocks"]),
                  lambda e: getattr(e, flag) is not None and wanted(n for n, _ in e.blocks),
                  expected=False)
    return found + [e for e in _added if getattr(e, flag) is not None
                    and wanted(n for n, _ in e.blocks)]


def frontends(present: Optional[Iterable[str]] = None) -> list[Callable[[Any], Any]]:
    """The front-end builders of the kinds whose blocks are `present` (see `Entry.frontend`)."""
    return [e.frontend for e in _model_level("frontend", present) if e.frontend is not None]


def towers(present: Optional[Iterable[str]] = None) -> list[Callable[[Any], Any]]:
    """The tower builders of the kinds whose blocks are `present` (see `Entry.tower`)."""
    return [e.tower for e in _model_level("tower", present) if e.tower is not None]


def ffns(present: Optional[Iterable[str]] = None) -> list[Callable[[Any, str], Any]]:
    """The feed-forward builders of the kinds whose blocks are `present` (see `Entry.ffn`)."""
    return [e.ffn for e in _model_level("ffn", present) if e.ffn is not None]
