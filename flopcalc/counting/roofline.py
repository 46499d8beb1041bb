"""Roofline lower bounds on time: a step takes at least max(FLOPs / peak, bytes / bandwidth).

Decode costs change with the position c of the step; between breakpoints (a window filling up,
a chunk boundary: `serving.affine_segments`) compute and memory time are both affine in c. The
sum of max(compute, memory) over every step is then exact: on each piece the compute-bound
steps form one run at one end, found where the two lines cross, and each side sums as an
arithmetic series.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil
from typing import Callable


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


def decode_time(compute_s: Callable[[int], Fraction], memory_s: Callable[[int], Fraction],
                pieces: list[tuple[int, int]]) -> DecodeTime:
    """Σ over every position c of every piece of max(compute_s(c), memory_s(c)), where both
    are affine on each piece."""
    result = DecodeTime(Fraction(0), 0, 0)
    for lo, hi in pieces:
        result = result + _affine_time(compute_s, memory_s, lo, hi)
    return result


def training_seconds(flops: int, total_peak_flops: int, mfu: Fraction) -> Fraction:
    """Wall-clock seconds at a sustained `mfu` share of the (perfectly scaled) peak."""
    return Fraction(flops) / (total_peak_flops * mfu)
