"""Where flopcalc keeps what it remembers between runs (validated inputs, the kinds listing):
$FLOPCALC_CACHE_DIR, else $XDG_CACHE_HOME/flopcalc, else ~/.cache/flopcalc; none when
FLOPCALC_NO_CACHE is set or the home directory does not exist (it is never created).

A directory that is a symbolic link or belongs to another user is not used at all (neither read
nor written): whoever can write it could plant files there, and the cache is only an
optimisation. It is created 0700 and its files 0600 (`writing.write_cache`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional


def cache_directory() -> Optional[Path]:
    if os.environ.get("FLOPCALC_NO_CACHE"):
        return None
    explicit = os.environ.get("FLOPCALC_CACHE_DIR")
    if explicit:
        return usable(Path(explicit))
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return usable(Path(xdg) / "flopcalc")
    home = os.path.expanduser("~")
    if home == "~" or not os.path.isdir(home):
        return None  # no home: no cache, and never create one
    return usable(Path(home) / ".cache" / "flopcalc")


def owned(info: os.stat_result) -> bool:
    """A directory (not a link) of the user running flopcalc."""
    uid = getattr(os, "geteuid", None)
    return stat.S_ISDIR(info.st_mode) and (uid is None or info.st_uid == uid())


def usable(directory: Path) -> Optional[Path]:
    """`directory`, if it is missing (it will be created) or `owned`; else None."""
    try:
        return directory if owned(os.lstat(directory)) else None
    except FileNotFoundError:
        return directory
    except OSError:
        return None
