"""Human number syntax for options and budget files, always resolved to an exact int.

Counts, tokens, params and FLOP limits: `1_000`, `1,000`, `3.14e23`, and the suffixes K, M, B (or
G), T = 10^3, 10^6, 10^9, 10^12, case-insensitive (`300B`, `2.5t`). Sequence lengths: `k` = 1024
and `M` = 1024², as context lengths are quoted (`32k` = 32,768; `128k` = 131,072).
A value must come out as a positive whole number: `1.5` tokens, `0`, `-3`, `nan` and `inf` are
errors (exit 2), never truncated.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction

from .errors import FlopcalcError

DECIMAL_SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
LENGTH_SUFFIXES = {"k": 2**10, "m": 2**20}
MAX_VALUE = 10**30  # far beyond any real model or budget; larger is a typo, not a plan


def _to_int(text: str, option: str, suffixes: dict[str, int], example: str) -> int:
    raw = str(text).strip()
    body = raw.replace("_", "").replace(",", "")
    scale = 1
    if body and body[-1].lower() in suffixes:
        scale = suffixes[body[-1].lower()]
        body = body[:-1]
    try:
        value = Decimal(body) * scale
        if value.is_finite() and value.adjusted() > 40:  # keep to_integral cheap and exact
            raise FlopcalcError(f"{option}: '{raw}' is larger than 1e30; check the number")
    except InvalidOperation:
        raise FlopcalcError(f"{option}: '{raw}' is not a number; write e.g. {example}") from None
    if not value.is_finite():
        raise FlopcalcError(f"{option}: '{raw}' is not a finite number; write e.g. {example}")
    if value != value.to_integral_value():
        raise FlopcalcError(f"{option}: '{raw}' is not a whole number; "
                            "give an integer")
    if value <= 0:
        raise FlopcalcError(f"{option}: '{raw}' must be a positive whole number")
    if value > MAX_VALUE:
        raise FlopcalcError(f"{option}: '{raw}' is larger than 1e30; check the number")
    return int(value)


def parse_count(text: str | int, option: str = "value") -> int:
    """Counts, tokens, params, FLOPs: '300B' → 300_000_000_000; '3.14e23' → 314·10^21."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise FlopcalcError(f"{option}: {text!r} is not a number; write e.g. 300B or 3.14e23")
    return _to_int(text, option, DECIMAL_SUFFIXES, "300B, 1.5T, 3.14e23 or 2_000_000")


def parse_length(text: str | int, option: str = "--seq") -> int:
    """Sequence lengths: '32k' → 32_768; '2048' → 2048; '1M' → 1_048_576."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise FlopcalcError(f"{option}: {text!r} is not a length; write e.g. 2048 or 32k")
    return _to_int(text, option, LENGTH_SUFFIXES, "2048, 8k or 128k (k = 1024)")


def parse_fraction(text: str, option: str) -> Fraction:
    """`0.4` or `40%` as an exact fraction in (0, 1] (model FLOPs utilisation)."""
    raw = str(text).strip()
    body, scale = (raw[:-1], 100) if raw.endswith("%") else (raw, 1)
    try:
        value = Decimal(body.strip())
    except InvalidOperation:
        raise FlopcalcError(f"{option}: '{raw}' is not a number; write e.g. 0.4 or 40%") from None
    if not value.is_finite():
        raise FlopcalcError(f"{option}: '{raw}' is not a finite number; write e.g. 0.4 or 40%")
    # Range first, on the Decimal: Fraction(Decimal('1e999999999')) would build a huge int.
    if not 0 < value <= scale:
        raise FlopcalcError(f"{option}: '{raw}' must be in (0, 1], e.g. 0.4 or 40% "
                            "(a share of the peak)")
    if value.adjusted() < -12:
        raise FlopcalcError(f"{option}: '{raw}' is below 1e-12 of the peak; check the number")
    return Fraction(value) / scale
