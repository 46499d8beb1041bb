"""Remembered validations, so pydantic runs once per distinct input, not once per run.

Validating with pydantic costs little, but importing it and building a schema costs about 40 ms,
a third of a run. An input mapping that validated once (byte for byte after `--set`, under the
same flopcalc version, schema source and pydantic version) is read back from here as the plain
data it validated to. Only inputs that passed validation are stored, so an invalid file always
meets pydantic and its error message; and what is read back is rebuilt through the same
invariant checks as a fresh validation (`models.spec`), so an edited or damaged entry is
validated again, never counted.

Each kind of input (model configs, accelerators) has one small JSON file in $FLOPCALC_CACHE_DIR,
else $XDG_CACHE_HOME/flopcalc, else ~/.cache/flopcalc. FLOPCALC_NO_CACHE=1 turns it off. Any
problem reading or writing it (a read-only home, a corrupt file) only means the run validates as
if there were no cache.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional, Sequence

from ..version import __version__

MAX_ENTRIES = 256


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
    None when the mapping holds something JSON cannot say (dates, sets): such an input is simply
    not cached."""
    try:
        return json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None


def _fingerprint(schema_sources: Sequence[str]) -> str:
    """What a stored result depends on: flopcalc's version, a checksum of the modules that define
    the schema (so an edited validator invalidates the cache even without a release) and of
    pydantic's version file (found without importing pydantic). Empty if any cannot be read."""
    import importlib.util
    import zlib

    here = Path(__file__).resolve().parent
    sources = [here / name for name in schema_sources]
    spec = importlib.util.find_spec("pydantic")
    if spec is None or not spec.origin:
        return ""
    sources.append(Path(spec.origin).parent / "version.py")
    crc = 0
    for path in sources:
        try:
            crc = zlib.crc32(path.read_bytes(), crc)
        except OSError:
            return ""
    return f"flopcalc {__version__} {crc:08x}"


class Store:
    """The remembered validations of one kind of input, keyed by `key(raw)`."""

    def __init__(self, kind: str, schema_sources: Sequence[str]):
        self.kind = kind
        self.schema_sources = tuple(schema_sources)

    def _path(self) -> Optional[Path]:
        directory = _directory()
        return None if directory is None else directory / f"{self.kind}.json"

    def _read(self) -> tuple[str, dict[str, Any]]:
        path = self._path()
        if path is None:
            return "", {}
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return "", {}
        fingerprint = _fingerprint(self.schema_sources)
        if not fingerprint or not isinstance(data, dict) or data.get("versions") != fingerprint:
            return fingerprint, {}
        entries = data.get("entries")
        return fingerprint, entries if isinstance(entries, dict) else {}

    def lookup(self, cache_key: Optional[str]) -> Any:
        """The stored value for `cache_key`, or None."""
        if cache_key is None:
            return None
        return self._read()[1].get(cache_key)

    def store(self, cache_key: Optional[str], value: Any) -> None:
        path = self._path()
        if cache_key is None or path is None:
            return
        fingerprint, entries = self._read()
        fingerprint = fingerprint or _fingerprint(self.schema_sources)
        if not fingerprint:
            return
        entries.pop(cache_key, None)
        entries[cache_key] = value
        while len(entries) > MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"versions": fingerprint, "entries": entries}))
            os.replace(tmp, path)
        except OSError:
            pass  # an unwritable cache only means validating again next time
