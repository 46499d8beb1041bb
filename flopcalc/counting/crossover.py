"""The crossover: the sequence length s* at which the layers' attention-matrix FLOPs equal their
weight-GEMM FLOPs (LM head and embeddings excluded), layer kind by layer kind.

In s (target length = source length for an encoder-decoder model), the layers' weight FLOPs
are W·s and each layer's attention FLOPs are c·pairs(s), with c = 2·h·(d_qk + d_v) and pairs(s)
the pairs its mask lets through under the convention: s² under `full`; s(s+1)/2 for a causal
layer, Σ min(i, w) for a window, block by block for chunked attention under `causal`. pairs(s)
is a quadratic polynomial between breakpoints (a window's w, each multiple of a chunk), so the
difference attention − weights is solved exactly segment by segment. Dense multi-head attention
with d_ff = 4d under `full`: W = 24·d²·L, c = 4·d, so s* = 6d; under `causal`, 12d − 1.

A model whose every layer is local (all windowed or chunked) can have no crossover under
`causal`: past the window its attention grows linearly, like the weights; then `seq` is None.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil, isqrt
from typing import Optional

from ..records import dataclass
from ..kinds.base import ATTENTION, WEIGHTS, Convention, total
from ..kinds.masks import Mask
from ..models.spec import ModelSpec
from .layers import layer_flops
from .model import workload
from .workload import Workload

MAX_SEGMENTS = 100_000  # chunked layers: give up after this many blocks of lengths


@dataclass(frozen=True)
class Crossover:
    seq: Optional[int]  # the smallest whole length at which attention >= weights
    exact: Optional[Fraction]  # the real s*, when it is rational
    value: Optional[float]  # the real s*, as a float (also when irrational)
    reason: str  # why there is none, or ""


def layers_weights_attention(spec: ModelSpec, w: Workload) -> tuple[int, int]:
    """(weight-GEMM, attention-matrix) FLOPs of all layers for workload `w`: no head, no
    element-wise operations."""
    weights = attention = 0
    for g in spec.groups():
        parts = layer_flops(g.layer, spec.d_model, w)
        weights += g.count * total(parts, WEIGHTS)
        attention += g.count * total(parts, ATTENTION)
    return weights, attention


def _terms(spec: ModelSpec) -> tuple[int, list[tuple[int, Mask]]]:
    """W (weight FLOPs per token of all layers) and, for every s² term of every group, (count·c,
    the mask that counts its pairs): c = 2·h·(d_qk + d_v) for attention."""
    # Linear in s: W·1 at s = 1 (target length = source length; no mask changes weights).
    weights, _ = layers_weights_attention(spec, workload(spec, 1))
    terms = [(g.count * per_pair, mask) for g in spec.groups() for _, kind in g.layer.slots()
             for per_pair, mask in kind.pair_terms()]
    return weights, terms


def _polynomial(weights: int, terms: list, convention: Convention, s: int
                ) -> tuple[Fraction, Fraction, Fraction]:
    """attention(x) − weights(x) = a·x² + b·x + c on the segment of lengths holding s."""
    a, b, c = Fraction(0), Fraction(-weights), Fraction(0)
    for coefficient, mask in terms:
        pa, pb, pc = mask.pair_polynomial(convention, s)
        a, b, c = a + coefficient * pa, b + coefficient * pb, c + coefficient * pc
    return a, b, c


def _segment_end(terms: list, convention: Convention, s: int) -> Optional[int]:
    """The last length of the segment holding s: the next window or chunk breakpoint."""
    # under `full` a mask's pairs are s² at every length; only a term that says its pieces
    # end there too (DeBERTa v1's table slice, `splits_full`) cuts the segments
    ends = [end for _, mask in terms
            if (convention != "full" or getattr(mask, "splits_full", False))
            and (end := mask.segment_end(s)) is not None]
    return min(ends) if ends else None


def _first_root(a: Fraction, b: Fraction, c: Fraction, lo: int, hi: Optional[int]
                ) -> Optional[tuple[int, Optional[Fraction], float]]:
    """The smallest integer n in [lo, hi] with a·n² + b·n + c >= 0 (a >= 0: convex), and the
    real root there (exact when rational; None when the count jumps across at lo)."""
    def f(x: int) -> Fraction:
        return (a * x + b) * x + c

    if f(lo) >= 0:
        return lo, None, float(lo)
    if a == 0:
        if b <= 0:
            return None
        root: Optional[Fraction] = -c / b
        approx = float(root)
    else:
        disc = b * b - 4 * a * c  # > 0: f(lo) < 0 and a > 0, so f has two real roots
        num, den = disc.numerator, disc.denominator
        r = isqrt(num * den)  # √(num/den) = √(num·den)/den: rational iff num·den is a square
        root = (-b + Fraction(r, den)) / (2 * a) if r * r == num * den else None
        approx = float(root) if root is not None else (
            (-float(b) + (num / den) ** 0.5) / (2 * float(a)))
    if root is not None:
        n = ceil(root)
    else:
        n = max(lo, int(approx) - 2)
        while f(n) < 0:
            n += 1
    n = max(lo, n)
    if hi is not None and n > hi:
        return None
    return n, root, approx


def crossover(spec: ModelSpec, convention: Convention = "full") -> Crossover:
    """The crossover of `spec` under `convention` (see the module docstring)."""
    weights, terms = _terms(spec)
    if not terms:
        return Crossover(None, None, None, "no layer has attention: no FLOPs grow with the "
                         "square of the sequence")
    if convention == "causal" and all(m.keys_bounded for _, m in terms):
        # Past every window, attention per token is at most Σ c·size: below W it never catches up.
        bound = sum(coef * m.size for coef, m in terms)
        if bound < weights:
            return Crossover(None, None, None, "every layer's attention is local (windowed or "
                             "chunked): it grows linearly in the sequence and stays below the "
                             "weight GEMMs")
    lo = 1
    for _ in range(MAX_SEGMENTS):
        hi = _segment_end(terms, convention, lo)
        a, b, c = _polynomial(weights, terms, convention, lo)
        found = _first_root(a, b, c, lo, hi)
        if found is not None:
            n, exact, value = found
            return Crossover(n, exact, value, "")
        if hi is None:
            return Crossover(None, None, None,
                             "attention stays below the weight GEMMs at every length")
        lo = hi + 1
    return Crossover(None, None, None, f"no crossover in the first {MAX_SEGMENTS:,} window or "
                     f"chunk segments (lengths up to {lo - 1:,})")
