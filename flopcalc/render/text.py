"""How a number is shown: exact with a rounded form beside it, or only the rounded form when a
table is too narrow or the number too long to read (the exact integer stays in JSON and CSV).
Formatting only: no arithmetic beyond choosing units and rounding.

The rule for tables: a count of up to 15 digits (below 10^15, which holds every parameter count)
is printed exactly with its rounded form beside it, `174,604,259,328 (174.6B)`; one of 16 digits
or more (FLOPs of a long sequence, training totals, bytes beyond a petabyte) only rounded, to 4
significant digits, `3.131e23`, with a note under the table: 24 digits cannot be read, and a
reader who needs them has `--brief` (the headline totals), JSON and CSV."""

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


def packed_form(lengths: Any) -> str:
    """Packed sample lengths as --packed takes them, runs written LxN: '512x2,1024'."""
    runs: list[list[int]] = []
    for n in lengths or ():
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return ",".join(f"{n}x{k}" if k > 1 else str(n) for n, k in runs)


def packed_words(lengths: Any) -> str:
    """', packed 512x2' in a heading when sequences were packed (--packed); else nothing."""
    return f", packed {packed_form(lengths)}" if lengths else ""


def family(name: str) -> str:
    """How a table names a FLOP family."""
    return FAMILY_LABELS.get(name, name)


MAX_DIGITS = 15  # a table prints a whole number exactly up to this many digits
ROUND_FROM = 10**MAX_DIGITS  # from here on (16 digits), only the rounded form
ROUNDED_NOTE = ("Figures of 16 digits or more are rounded to 4 significant digits (e.g. 3.131e23 = "
                "3.131 x 10^23); --format json or csv gives them exactly.")

_SCALES = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))
_BYTES_DECIMAL = ((10**24, "YB"), (10**21, "ZB"), (10**18, "EB"), (10**15, "PB"), (10**12, "TB"),
                  (10**9, "GB"), (10**6, "MB"), (10**3, "KB"))
_BYTES_BINARY = ((2**80, "YiB"), (2**70, "ZiB"), (2**60, "EiB"), (2**50, "PiB"), (2**40, "TiB"),
                 (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))
# SI prefixes, one per power of 1,000: the unit of a column of FLOPs (`sweep`).
_PREFIXES = ("", "k", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q")
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
    """A float for a table: 4 significant digits, but whole with separators from 1,000 up to
    15 digits, and rounded (`3.131e23`) beyond."""
    if abs(x) >= ROUND_FROM:
        return human(x)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def whole(n: int) -> str:
    """A whole number read as a figure (a length, a token count in a heading): exact with
    separators up to 15 digits, rounded beyond (`1.000e30`)."""
    return human(n) if abs(n) >= ROUND_FROM else exact(n)


def column_unit(largest: int | float) -> tuple[int, str]:
    """(10^(3k), SI prefix) for a column whose largest magnitude is `largest`: the smallest
    step of 1,000 at which it has at most 4 digits before the point (5.188e18 → (10^15, 'P'):
    5,188), so that the column's smaller values keep their digits."""
    k = 0
    while abs(largest) >= 10_000 * 1000**k and k < len(_PREFIXES) - 1:
        k += 1
    return 1000**k, _PREFIXES[k]


_UNIT_DECIMALS = 6  # at most 6 decimals of a column's unit; below 10^-6 of it, '<0.000001'


def in_unit(n: int | float, scale: int) -> str:
    """`n` in a column's unit (`column_unit`): 4 significant digits but at most 6 decimals,
    never in scientific notation, so that every row of the column reads in the same unit;
    exact when the unit is 1 and `n` whole."""
    if scale == 1 and isinstance(n, int):
        return exact(n)
    x = n / scale
    if x == 0:
        return "0"
    if abs(x) < 10**-_UNIT_DECIMALS:
        return f"<0.{'0' * (_UNIT_DECIMALS - 1)}1"
    import math

    decimals = min(_UNIT_DECIMALS, max(0, 3 - math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


class Numbers:
    """The cell formats of one table layout: full (exact and rounded) or compact (rounded
    only, for narrow terminals). In either, a figure of 16 digits or more is rounded only (see
    the module docstring); `rounded` collects those cells, so that the table holding the first
    of them can say so (`output.render`)."""

    def __init__(self, compact: bool = False):
        self.compact = compact
        self.rounded: set[str] = set()

    def _long(self, text: str) -> str:
        self.rounded.add(text)
        return text

    def count(self, n: int | float) -> str:
        if abs(n) >= ROUND_FROM:
            return self._long(human(n))
        return human(n) if self.compact and isinstance(n, int) and abs(n) >= 10**6 \
            else with_human(n)

    def bytes(self, n: int) -> str:
        """'17,179,869,184 (17.18 GB / 16 GiB)', or the rounded part alone."""
        if n < 1000:
            return exact(n)
        if n >= ROUND_FROM:
            return self._long(human_bytes(n))
        return human_bytes(n) if self.compact else f"{exact(n)} ({human_bytes(n)})"

    def plain(self, n: int | float) -> str:
        """A figure that is usually read exactly (a tensor's parameters): exact, or rounded in
        the compact layout."""
        if abs(n) >= ROUND_FROM:
            return self._long(human(n))
        return human(n) if self.compact and isinstance(n, int) and abs(n) >= 10**6 else exact(n)

    def whole(self, n: int | float) -> str:
        """A number read whole even in the compact layout (a length, a per-head count, tokens
        per second, a cost): with separators up to 15 digits, rounded beyond."""
        if abs(n) >= ROUND_FROM:
            return self._long(human(n))
        return f"{n:,.0f}" if isinstance(n, float) else exact(n)
