"""Human number syntax, read in one place and always resolved to an exact int or Fraction.

Four kinds of figure, each with its own suffixes (case-insensitive; `_` and `,` separate digits;
scientific notation works everywhere, `3.14e23`):

- counts (tokens, params, FLOPs, devices, FLOP/s): K M B/G T P E = 10^3 ... 10^18;
- lengths (sequence, prompt, generated tokens): k = 1,024 and M = 1,024², as context windows are
  quoted (`32k` = 32,768);
- bytes (memory, KV cache, bandwidth in bytes/s): KB MB GB TB PB = 10^3 ... 10^15 and
  KiB MiB GiB TiB PiB = 2^10 ... 2^50; K M G T P alone are decimal too. A lone `B` is refused:
  in the count syntax it means billion, which is not what `80B` of memory means;
- shares (MFU): `0.4` or `40%`, in (0, 1].

A count, length or byte figure must come out as a whole number (`1.5` tokens is an error, never
truncated); a limit (`check --max`) may be any non-negative number. Values above 10^30 are
refused as typos, and so is anything that would take long to expand (`1e999999`).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Literal, Optional, Union

from .errors import FlopcalcError

Kind = Literal["count", "length", "bytes"]

_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}
SUFFIXES: dict[Kind, dict[str, int]] = {
    "count": {**_DECIMAL, "b": 10**9, "e": 10**18},
    "length": {"k": 2**10, "m": 2**20},
    "bytes": {**_DECIMAL,
              **{f"{s}b": v for s, v in _DECIMAL.items()},
              **{f"{s}ib": 2 ** (10 * i) for i, s in enumerate("kmgtp", start=1)}},
}
EXAMPLES: dict[Kind, str] = {
    "count": "300B, 1.5T, 3.14e23 or 2_000_000",
    "length": "2048, 8k or 128k (k = 1024)",
    "bytes": "80GB, 16GiB or 8e10",
}
MAX_VALUE = 10**30  # far beyond any real model, budget or machine; larger is a typo, not a plan

Number = Union[int, Fraction]


def shown(text: object, limit: int = 40) -> str:
    """User input quoted in an error: control characters escaped (a newline would split the
    one-line message) and a long text cut to its first `limit` characters and its length."""
    raw = str(text).strip()
    cut = raw if len(raw) <= limit else f"{raw[:limit]}... ({len(raw):,} characters)"
    return "'" + "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                         for c in cut) + "'"


def _split_suffix(body: str, kind: Kind) -> tuple[str, int]:
    """('1.5', 10**12) for '1.5T': the longest suffix of `kind` that ends the text."""
    lowered = body.lower()
    for suffix in sorted(SUFFIXES[kind], key=len, reverse=True):
        if lowered.endswith(suffix) and len(body) > len(suffix):
            return body[: -len(suffix)], SUFFIXES[kind][suffix]
    return body, 1


def parse_decimal(text: object, kind: Kind, what: str) -> Fraction:
    """Any finite number in the syntax of `kind`, exactly; `what` names it in errors."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise FlopcalcError(f"{what}: {shown(repr(text))} is not a number; write e.g. "
                            f"{EXAMPLES[kind]}")
    raw = str(text).strip()
    quoted = shown(raw)
    body, scale = _split_suffix(raw.replace("_", "").replace(",", ""), kind)
    if kind == "bytes" and scale == 1 and body[-1:].lower() == "b":
        raise FlopcalcError(f"{what}: {quoted} is ambiguous (B means billion in counts); "
                            f"write bytes as {EXAMPLES['bytes']}")
    try:
        value = Decimal(body)
    except InvalidOperation:
        raise FlopcalcError(f"{what}: {quoted} is not a number; write e.g. "
                            f"{EXAMPLES[kind]}") from None
    if not value.is_finite():
        raise FlopcalcError(f"{what}: {quoted} is not a finite number; write e.g. "
                            f"{EXAMPLES[kind]}")
    # Before any exact arithmetic: Fraction(Decimal('1e999999')) would build a huge integer.
    if value and value.adjusted() > 40 or abs(Fraction(value) * scale) > MAX_VALUE:
        raise FlopcalcError(f"{what}: {quoted} is beyond 1e30 in size; check the number")
    if value and value.adjusted() < -40:
        raise FlopcalcError(f"{what}: {quoted} is too small to be meant; check the number")
    return Fraction(value) * scale


def parse_int(text: object, kind: Kind = "count", what: str = "value") -> int:
    """A positive whole number: '300B' → 300_000_000_000, '32k' (length) → 32_768."""
    value = parse_decimal(text, kind, what)
    if value.denominator != 1:
        raise FlopcalcError(f"{what}: {shown(text)} is not a whole number; give an integer")
    if value <= 0:
        raise FlopcalcError(f"{what}: {shown(text)} must be a positive whole number")
    return value.numerator


def parse_count(text: object, what: str = "value") -> int:
    return parse_int(text, "count", what)


def parse_length(text: object, what: str = "--seq") -> int:
    return parse_int(text, "length", what)


def parse_bytes(text: object, what: str = "value") -> int:
    return parse_int(text, "bytes", what)


def parse_limit(text: object, kind: Kind, what: str) -> Number:
    """A budget limit: any number >= 0 in the syntax of `kind` (an int when whole)."""
    value = parse_decimal(text, kind, what)
    if value < 0:
        raise FlopcalcError(f"{what}: {shown(text)} must be >= 0")
    return value.numerator if value.denominator == 1 else value


def parse_share(text: object, what: str) -> Fraction:
    """`0.4` or `40%` as an exact fraction in (0, 1] (model FLOPs utilisation); at least
    1e-12, as a smaller share of a peak is a typo."""
    raw = str(text).strip()
    body, percent = (raw[:-1], True) if raw.endswith("%") else (raw, False)
    hint = "e.g. 0.4 or 40% (a share of the peak)"
    try:  # the plain decimal first: its size is checked before any exact arithmetic
        plain: Optional[Decimal] = Decimal(body.replace("_", "").replace(",", "").strip())
    except InvalidOperation:
        plain = None
    if plain is not None and plain.is_nan():
        raise FlopcalcError(f"{what}: {shown(raw)} is not a number; write {hint}")
    if plain is not None and (plain.is_infinite() or plain <= 0
                              or plain > (100 if percent else 1)):
        raise FlopcalcError(f"{what}: {shown(raw)} must be above 0 and at most "
                            f"{'100%' if percent else '1'}; write {hint}")
    if plain is not None and plain.adjusted() < -40:  # Fraction() of it would be slow
        value: Optional[Fraction] = Fraction(0)
    elif plain is not None:
        value = Fraction(plain)
    else:  # a suffix (`0.5k`) or not a number
        try:
            value = parse_decimal(body, "count", what) if body.strip() else None
        except FlopcalcError:
            value = None
    if value is None:
        raise FlopcalcError(f"{what}: {shown(raw)} is not a number; write {hint}")
    value = value / 100 if percent else value
    if value > 1 or value < 0:
        raise FlopcalcError(f"{what}: {shown(raw)} must be above 0 and at most 1; write {hint}")
    if value < Fraction(1, 10**12):
        raise FlopcalcError(f"{what}: {shown(raw)} is below 1e-12 of the peak, the least "
                            "share taken; check the number")
    return value


def parse_amount(text: object, what: str) -> Fraction:
    """A positive amount that need not be whole (a price per hour, a number of days)."""
    value = parse_decimal(text, "count", what)
    if value <= 0:
        raise FlopcalcError(f"{what}: {shown(text)} must be a positive number")
    return value


def counted(n: int, noun: str, plural: str = "") -> str:
    """'1 device', '8 devices', '1 micro-batch', '2 multi-token-prediction modules': a count
    and its noun in the right number (`plural` where adding an s is wrong)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
