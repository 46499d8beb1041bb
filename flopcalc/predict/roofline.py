"""Roofline lower bounds on time: a step takes at least max(FLOPs / peak, bytes / bandwidth).

Decode costs change with the position c of the step; between breakpoints (a window filling up,
a chunk boundary: `serving.affine_segments`) compute and memory time are both affine in c. The
sum of max(compute, memory) over every step is then exact: on each piece the compute-bound
steps form one run at one end, found where the two lines cross, and each side sums as an
arithmetic series.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Any, Callable

from ..records import dataclass
from ..errors import FlopcalcError


@dataclass(frozen=True)
class Bound:
    """Lower bounds on a step's time from compute and from memory traffic."""

    compute_s: Fraction
    memory_s: Fraction

    @property
    def seconds(self) -> Fraction:
        return max(self.compute_s, self.memory_s)

    @property
    def binds(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def bound(flops: int | Fraction, nbytes: int | Fraction, peak: int, bandwidth: int) -> Bound:
    """time ≥ max(FLOPs / peak FLOP/s, bytes / bandwidth bytes/s)."""
    return Bound(Fraction(flops) / peak, Fraction(nbytes) / bandwidth)


def sum_affine(f: Callable[[int], Fraction], lo: int, hi: int) -> Fraction:
    """Σ_{c=lo..hi} f(c) for f affine in c: (number of terms) × (f(lo) + f(hi)) / 2."""
    if hi < lo:
        return Fraction(0)
    return (hi - lo + 1) * (f(lo) + f(hi)) / 2


@dataclass(frozen=True)
class DecodeTime:
    seconds: Fraction  # Σ over steps of max(compute, memory)
    compute_bound_steps: int
    memory_bound_steps: int

    def __add__(self, other: DecodeTime) -> DecodeTime:
        return DecodeTime(self.seconds + other.seconds,
                          self.compute_bound_steps + other.compute_bound_steps,
                          self.memory_bound_steps + other.memory_bound_steps)


def _affine_time(compute_s: Callable[[int], Fraction], memory_s: Callable[[int], Fraction],
                 lo: int, hi: int) -> DecodeTime:
    """Σ_{c=lo..hi} max(compute_s(c), memory_s(c)) for two functions affine on [lo, hi]."""
    def gap(x: int) -> Fraction:
        return compute_s(x) - memory_s(x)

    g_lo, g_hi = gap(lo), gap(hi)
    if g_lo >= 0 and g_hi >= 0:
        compute, memory = (lo, hi), (hi + 1, hi)
    elif g_lo < 0 and g_hi < 0:
        compute, memory = (lo, lo - 1), (lo, hi)  # no compute-bound step
    else:
        root = lo - g_lo * (hi - lo) / (g_hi - g_lo)  # gap(root) = 0, lo <= root <= hi
        if g_lo >= 0:  # gap falling: compute-bound up to floor(root)
            split = root.numerator // root.denominator
            compute, memory = (lo, split), (split + 1, hi)
        else:  # gap rising: compute-bound from ceil(root)
            split = ceil(root)
            compute, memory = (split, hi), (lo, split - 1)
    seconds = sum_affine(compute_s, *compute) + sum_affine(memory_s, *memory)
    return DecodeTime(seconds, max(0, compute[1] - compute[0] + 1),
                      max(0, memory[1] - memory[0] + 1))


MAX_MIXED = 1_000_000  # repeats of a piece that flip between bounds, summed one by one


def _repeated(compute_s: Callable[[int], Fraction], memory_s: Callable[[int], Fraction],
              lo: int, hi: int, period: int, repeats: int) -> DecodeTime:
    """Σ_{j<repeats} Σ_{c=lo..hi} max(compute_s(c + jP), memory_s(c + jP)), P = period, where
    shifting c by P adds the same amount to each function at every c of the piece (full layers
    grow by P keys; chunked ones repeat): whole runs of repeats that are compute-bound or
    memory-bound throughout sum as arithmetic series, the few that flip are summed one by one."""
    n = hi - lo + 1
    dc, dm = compute_s(lo + period) - compute_s(lo), memory_s(lo + period) - memory_s(lo)
    gap_lo, gap_hi = compute_s(lo) - memory_s(lo), compute_s(hi) - memory_s(hi)
    dg = dc - dm

    def run(f: Callable[[int], Fraction], d: Fraction, j0: int, j1: int) -> Fraction:
        """Σ_{j=j0..j1} Σ_c (f(c) + j·d)."""
        if j1 < j0:
            return Fraction(0)
        count = j1 - j0 + 1
        return count * sum_affine(f, lo, hi) + n * d * Fraction((j0 + j1) * count, 2)

    def first_j(predicate: Callable[[int], bool]) -> int:
        """The smallest j in [0, repeats] with predicate(j) (monotone in j), by bisection."""
        a, b = 0, repeats
        while a < b:
            mid = (a + b) // 2
            if predicate(mid):
                b = mid
            else:
                a = mid + 1
        return a

    def all_compute(j: int) -> bool:
        return min(gap_lo, gap_hi) + j * dg >= 0

    def all_memory(j: int) -> bool:
        return max(gap_lo, gap_hi) + j * dg < 0

    if dg >= 0:  # memory-bound repeats first, then mixed, then compute-bound
        m_end = first_j(lambda j: not all_memory(j))
        c_start = first_j(all_compute)
        memory, compute, mixed = (0, m_end - 1), (c_start, repeats - 1), (m_end, c_start - 1)
    else:
        c_end = first_j(lambda j: not all_compute(j))
        m_start = first_j(all_memory)
        compute, memory, mixed = (0, c_end - 1), (m_start, repeats - 1), (c_end, m_start - 1)
    if mixed[1] - mixed[0] + 1 > MAX_MIXED:
        raise FlopcalcError("too many decode steps flip between compute- and memory-bound to "
                            "sum exactly; give fewer generated tokens")
    seconds = run(compute_s, dc, *compute) + run(memory_s, dm, *memory)
    steps_c = max(0, compute[1] - compute[0] + 1) * n
    steps_m = max(0, memory[1] - memory[0] + 1) * n
    result = DecodeTime(seconds, steps_c, steps_m)
    for j in range(mixed[0], mixed[1] + 1):
        shift = j * period
        result = result + _affine_time(lambda c: compute_s(c + shift),
                                       lambda c: memory_s(c + shift), lo, hi)
    return result


def decode_time(compute_s: Callable[[int], Fraction], memory_s: Callable[[int], Fraction],
                pieces: Any) -> DecodeTime:
    """Σ over every decode position of max(compute_s(c), memory_s(c)), where both are affine
    on each piece: `pieces` a list of (lo, hi), or a `serving.Segments` whose cycle of pieces
    repeats (summed in closed form, see `_repeated`)."""
    if isinstance(pieces, list):
        pieces = _Explicit(tuple(pieces))
    result = DecodeTime(Fraction(0), 0, 0)
    for lo, hi in (*pieces.pieces, *pieces.tail):
        result = result + _affine_time(compute_s, memory_s, lo, hi)
    for lo, hi in pieces.cycle:
        result = result + _repeated(compute_s, memory_s, lo, hi, pieces.period, pieces.repeats)
    return result


@dataclass(frozen=True)
class _Explicit:
    pieces: tuple[tuple[int, int], ...]
    cycle: tuple[tuple[int, int], ...] = ()
    period: int = 0
    repeats: int = 0
    tail: tuple[tuple[int, int], ...] = ()


def training_seconds(flops: int, total_peak_flops: int, mfu: Fraction) -> Fraction:
    """Wall-clock seconds at a sustained `mfu` share of the (perfectly scaled) peak."""
    return Fraction(flops) / (total_peak_flops * mfu)
