"""A cache of validated configs, so pydantic runs once per distinct config, not once per run.

Validating with pydantic costs little, but importing it and building the schema costs about
40 ms, a third of a run. A config that validated once (the same mapping, byte for byte after
`--set`, under the same flopcalc and pydantic versions) is read back from here as the `Arch` it
resolved to. Only configs that passed validation are ever stored, so an invalid file always
meets pydantic and its error message.

The cache is one small JSON file in $FLOPCALC_CACHE_DIR, else $XDG_CACHE_HOME/flopcalc, else
~/.cache/flopcalc. FLOPCALC_NO_CACHE=1 turns it off. Any problem reading or writing it (a
read-only home, a corrupt file) only means the run validates as if there were no cache.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

from . import __version__
from .arch import Arch

MAX_ENTRIES = 256
_FILE = "configs.json"


def _directory() -> Optional[Path]:
    if os.environ.get("FLOPCALC_NO_CACHE"):
        return None
    explicit = os.environ.get("FLOPCALC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "flopcalc"


def key(raw: Any) -> Optional[str]:
    """The cache key of a raw mapping: canonical JSON, so 768 and 768.0 and true stay distinct.
    None when the mapping holds something JSON cannot say (dates, sets): such a config is simply
    not cached."""
    try:
        return json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None


def _versions() -> str:
    """What a stored result depends on: flopcalc's version, a checksum of the schema's source
    (so an edited validator invalidates the cache even without a release) and of pydantic's
    version file (found without importing pydantic)."""
    import importlib.util
    import zlib

    here = Path(__file__).resolve().parent
    crc = 0
    sources = [here / "config.py", here / "arch.py"]
    spec = importlib.util.find_spec("pydantic")
    if spec is not None and spec.origin:
        sources.append(Path(spec.origin).parent / "version.py")
    for path in sources:
        try:
            crc = zlib.crc32(path.read_bytes(), crc)
        except OSError:
            return ""  # cannot fingerprint: never match
    return f"flopcalc {__version__} {crc:08x}"


def _read() -> dict[str, Any]:
    directory = _directory()
    if directory is None:
        return {}
    try:
        data = json.loads((directory / _FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or not data.get("versions") or data["versions"] != _versions():
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


_TYPES = {"str": str, "int": int, "bool": bool}


def _well_formed(entry: Any) -> bool:
    """A cheap shape check of a stored Arch, so a damaged file cannot reach the counting."""
    if not isinstance(entry, dict) or not isinstance(entry.get("bias"), dict):
        return False
    for name, kind in Arch.__annotations__.items():
        value = entry.get(name)
        if kind.startswith("Optional") and value is None:
            continue
        expected = _TYPES.get(kind.replace("Optional[", "").rstrip("]"))
        if expected is not None and (type(value) is not expected or (expected is int and value <= 0
                                                                      and name != "n_encoder_layers")):
            return False
    return set(entry) == set(Arch.__annotations__)


def lookup(cache_key: Optional[str]) -> Optional[Arch]:
    if cache_key is None:
        return None
    entry = _read().get(cache_key)
    if not _well_formed(entry):
        return None
    try:
        return Arch.from_dict(entry)
    except TypeError:
        return None


def store(cache_key: Optional[str], arch: Arch) -> None:
    directory = _directory()
    if cache_key is None or directory is None:
        return
    from dataclasses import asdict

    entries = _read()
    entries.pop(cache_key, None)
    entries[cache_key] = asdict(arch)
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f"{_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"versions": _versions(), "entries": entries}))
        os.replace(tmp, directory / _FILE)
    except OSError:
        pass
