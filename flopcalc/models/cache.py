"""Remembered validations, so that pydantic runs once per distinct input, not once per run.

Validating with pydantic costs little, but importing it and building its models costs tens of
milliseconds, a third of a run. An input mapping that validated once (byte for byte after
`--set`, under the same flopcalc and format declarations) is remembered here by a digest, and
next time it is read by the fast reader of the same declaration (`flopcalc.declare.structure`)
instead of pydantic. The cache holds nothing but those digests: every figure is computed from the
input itself, so an edited or planted cache can at most send an input to the fast reader, which
applies the same checks (and any failure there falls back to pydantic and its message).

One small file per sort of input (model configs, accelerators) in $FLOPCALC_CACHE_DIR, else
$XDG_CACHE_HOME/flopcalc, else ~/.cache/flopcalc (never created when the home directory does not
exist; not used when it is a link or another user's). FLOPCALC_NO_CACHE=1 turns it off. A cache
file is read under the same rules as model files (a regular file of bounded size) and written
as `writing.write_cache` writes (never through a link); any problem reading or writing it only
means the run validates as if there were no cache.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any, Optional, Sequence

from ..cachedir import cache_directory
from ..version import __version__

MAX_ENTRIES = 256
MAX_BYTES = 64 * 1024  # 256 digests of 32 characters, with room to spare


def _directory() -> Optional[Path]:
    return cache_directory()


def key(raw: Any) -> Optional[str]:
    """The digest of a raw mapping: of its canonical JSON, so 768 and 768.0 and true stay
    distinct. None when the mapping holds something JSON cannot say (dates, sets): such an input
    is simply not cached."""
    try:
        text = json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None
    # Not a secret: a marker only lets an input skip pydantic for the fast reader, which checks
    # the same rules, so a collision or a forged marker cannot change a figure.
    return f"{zlib.crc32(text.encode()):08x}{len(text):x}"


def _fingerprint(sources: Sequence[str]) -> str:
    """What a remembered validation depends on: flopcalc's version and a checksum of the
    modules that declare the format (so an edited declaration forgets everything even without a
    release). Empty if any cannot be read."""
    import zlib

    package = Path(__file__).resolve().parent.parent
    crc = 0
    for name in sources:
        for path in sorted(package.glob(name)):
            try:
                crc = zlib.crc32(path.read_bytes(), crc)
            except OSError:
                return ""
    return f"flopcalc {__version__} {crc:08x}"


class Store:
    """The remembered validations of one sort of input (`name`: configs, accelerators, the
    file it is kept in): digests of `key(raw)`."""

    def __init__(self, name: str, sources: Sequence[str]):
        self.name = name
        self.sources = tuple(sources)

    def _path(self) -> Optional[Path]:
        directory = _directory()
        return None if directory is None else directory / f"{self.name}.json"

    def _read(self) -> tuple[str, list[str]]:
        path = self._path()
        fingerprint = _fingerprint(self.sources)
        if path is None or not fingerprint:
            return fingerprint, []
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
                return fingerprint, []
            with open(path, "rb") as fh:
                data = json.loads(fh.read(MAX_BYTES + 1))
        except (OSError, ValueError, RecursionError):
            return fingerprint, []
        if not isinstance(data, dict) or data.get("versions") != fingerprint:
            return fingerprint, []
        seen = data.get("validated")
        return fingerprint, [k for k in seen if isinstance(k, str)] if isinstance(seen, list) \
            else []

    def seen(self, cache_key: Optional[str]) -> bool:
        """Whether this input validated before."""
        return cache_key is not None and cache_key in self._read()[1]

    def remember(self, cache_key: Optional[str]) -> None:
        path = self._path()
        if cache_key is None or path is None:
            return
        fingerprint, seen = self._read()
        if not fingerprint or cache_key in seen:
            return
        from ..writing import write_cache

        seen = (seen + [cache_key])[-MAX_ENTRIES:]
        # an unwritable cache only means validating again next time
        write_cache(path, json.dumps({"versions": fingerprint, "validated": seen}).encode())
