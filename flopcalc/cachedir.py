"""Where flopcalc keeps what it remembers between runs (validated inputs, the kinds listing):
$FLOPCALC_CACHE_DIR, else $XDG_CACHE_HOME/flopcalc, else ~/.cache/flopcalc; none when
FLOPCALC_NO_CACHE is set or the home directory does not exist (it is never created)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def cache_directory() -> Optional[Path]:
    if os.environ.get("FLOPCALC_NO_CACHE"):
        return None
    explicit = os.environ.get("FLOPCALC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "flopcalc"
    home = os.path.expanduser("~")
    if home == "~" or not os.path.isdir(home):
        return None  # no home: no cache, and never create one
    return Path(home) / ".cache" / "flopcalc"
