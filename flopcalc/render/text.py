"""How a number is shown: exact with a rounded form beside it, or only the rounded form when a
table is too narrow (the exact integer stays in JSON and CSV). Formatting only: no arithmetic
beyond choosing units and rounding."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .escape import one_line

FAMILY_LABELS = {"weights": "weight GEMMs", "attention": "attention matrix (s²)",
                 "scan": "state/scan (recurrent core)", "elementwise": "element-wise"}


def named(model: Any) -> str:
    """How a line names a model: 'Title (name)', each on one line whatever the file says."""
    return f"{one_line(model.title)} ({one_line(model.name)})"


def scan_words(scan: str) -> str:
    """', scan recurrent' beside the attention convention in a heading when --scan changed it;
    nothing for the default (the conventions lines say it either way)."""
    return "" if scan == "chunked" else f", scan {scan}"


def family(name: str) -> str:
    """How a table names a FLOP family."""
    return FAMILY_LABELS.get(name, name)


_SCALES = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))
_BYTES_DECIMAL = ((10**15, "PB"), (10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "KB"))
_BYTES_BINARY = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))
_TIME_UNITS = ((86_400, "days"), (3_600, "h"), (60, "min"), (1, "s"), (1e-3, "ms"), (1e-6, "µs"))


def human(n: int | float) -> str:
    """A short rounded form: 124.4M, 174.6B, 3.131e23 (>= 1e15 in scientific notation)."""
    if abs(n) >= 10**15:
        mantissa, exponent = f"{n:.3e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    for scale, suffix in _SCALES:
        if abs(n) >= scale:
            return f"{n / scale:.4g}{suffix}"
    return f"{n:.4g}" if isinstance(n, float) else str(n)


def exact(n: int | float) -> str:
    return f"{n:,}" if isinstance(n, int) else f"{n:,.6g}"


def with_human(n: int | float) -> str:
    """'174,604,259,328 (174.6B)': the exact integer and its rounded form side by side."""
    if abs(n) < 10**6 or not isinstance(n, int):
        return exact(n)
    return f"{exact(n)} ({human(n)})"


def percent(x: float) -> str:
    return f"{x:.1f}%" if x >= 0.05 or x == 0 else "<0.1%"


def signed_percent(x: float) -> str:
    """'+5.6%', '-27.7%', '+<0.1%'; '0.0%' only for an exact zero."""
    if x == 0:
        return "0.0%"
    sign = "+" if x > 0 else "-"
    return f"{sign}<0.1%" if abs(x) < 0.05 else f"{sign}{abs(x):.1f}%"


def shape(dims: Optional[Sequence[int]]) -> str:
    return " x ".join(map(str, dims)) if dims else ""


def _scaled(n: float, units: tuple[tuple[int, str], ...], unit: str) -> str:
    for scale, name in units:
        if abs(n) >= scale:
            return f"{n / scale:.4g} {name}"
    return f"{n:.4g} {unit}"


def human_bytes(n: float, binary: bool = True) -> str:
    """'17.18 GB / 16 GiB': decimal units as vendors quote memory, and (unless `binary` is
    false) binary ones as drivers report it."""
    if abs(n) < 1000:
        return f"{n:.4g} B"
    decimal = _scaled(n, _BYTES_DECIMAL, "B")
    return f"{decimal} / {_scaled(n, _BYTES_BINARY, 'B')}" if binary else decimal


def duration(seconds: float) -> str:
    """4 significant digits in the largest fitting unit: 9.155 days, 6.197 s, 9.762 ms."""
    for scale, unit in _TIME_UNITS:
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds * 1e9:.4g} ns"


def rate(value: float, unit: str) -> str:
    """989.5 TFLOP/s, 3.35 TB/s."""
    for scale, prefix in ((10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G")):
        if value >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def amount(x: float) -> str:
    """A float for a table: 4 significant digits, but whole with separators from 1,000 up."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


class Numbers:
    """The cell formats of one table layout: full (exact and rounded) or compact (rounded
    only, for narrow terminals)."""

    def __init__(self, compact: bool = False):
        self.compact = compact

    def count(self, n: int | float) -> str:
        return human(n) if self.compact and isinstance(n, int) and abs(n) >= 10**6 \
            else with_human(n)

    def bytes(self, n: int) -> str:
        """'17,179,869,184 (17.18 GB / 16 GiB)', or the rounded part alone."""
        if n < 1000:
            return exact(n)
        return human_bytes(n) if self.compact else f"{exact(n)} ({human_bytes(n)})"

    def plain(self, n: int | float) -> str:
        """A figure that is usually read exactly (a tensor's parameters): exact, or rounded in
        the compact layout."""
        return human(n) if self.compact and isinstance(n, int) and abs(n) >= 10**6 else exact(n)
