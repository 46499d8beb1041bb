"""Serving FLOPs of a decoder-only model: the prefill over the prompt, then decode steps that
each feed one token per sequence and attend over the KV cache.

- Prefill is the forward pass over the prompt (`model.model_flops`), so it equals
  `flopcalc model M --seq P` under the same convention (LM head on every prompt token).
- Decode step at position c (c = P + i for the i-th generated token) runs each layer's kinds on
  one new token per sequence (`model.decode_flops`): attention over the keys its mask lets the
  query see (c for a full layer, min(c, w) for a window of w, (c − 1) mod b + 1 in blocks of
  b; latent attention weight-absorbed), the feed-forward block, and the LM head.
- Sums over many steps are exact: weight parts are the same every step and attention parts sum
  the visible keys in closed form (`Mask.visible_keys`).
"""

from __future__ import annotations

from typing import Any
from fractions import Fraction
from math import ceil, lcm

from ..records import dataclass
from ..kinds.base import Part
from ..models.spec import ModelSpec
from ..tables import SCALED_FORMATS
from .model import decode_flops
from .quant import read_bytes
from .traffic import (kv_bytes_per_token, kv_read_bytes, state_bytes_per_sequence, storage_bytes,
                      weight_reads)


def decode_parts(spec: ModelSpec, first: int, last: int, batch: int) -> list[Part]:
    """FLOPs of the decode steps at positions first..last (one step each), `batch` sequences."""
    return decode_flops(spec, first, last, batch)


@dataclass(frozen=True)
class Segments:
    """Decode positions first..last cut where any layer's decode cost changes its affine form
    (a window filling up, a new chunk), so that on each piece every cost is affine in the
    position: explicit `pieces`, and `cycle` (pieces of one period of `period` positions,
    repeated `repeats` times after them) when chunked layers make the cuts recur, so that a
    decode of 10¹² steps is not 10⁸ pieces; `tail` after the repeats."""

    pieces: tuple[tuple[int, int], ...]
    cycle: tuple[tuple[int, int], ...] = ()
    period: int = 0
    repeats: int = 0
    tail: tuple[tuple[int, int], ...] = ()

    def expanded(self) -> list[tuple[int, int]]:
        """Every piece, the repeats written out (for checks on small ranges)."""
        repeated = [(a + j * self.period, b + j * self.period) for j in range(self.repeats)
                    for a, b in self.cycle]
        return [*self.pieces, *repeated, *self.tail]

    def ends(self) -> list[int]:
        """Both ends of every explicit piece and of the cycle's first and last repeat."""
        last = [(a + (self.repeats - 1) * self.period, b + (self.repeats - 1) * self.period)
                for a, b in self.cycle] if self.repeats else []
        return [c for piece in (*self.pieces, *self.cycle, *last, *self.tail) for c in piece]


def _cut(first: int, last: int, cuts: list[int]) -> tuple[tuple[int, int], ...]:
    pieces, start = [], first
    for cut in sorted(set(cuts)):
        if first <= cut < last:
            pieces.append((start, cut))
            start = cut + 1
    pieces.append((start, last))
    return tuple((a, b) for a, b in pieces if a <= b)


def affine_segments(spec: ModelSpec, first: int, last: int) -> Segments:
    """[first, last] cut where any layer's decode cost changes its affine form (see
    `Segments`)."""
    kinds = [kind for g in spec.groups("decoder") for _, kind in g.layer.slots()]
    periods = {p for k in kinds if (p := k.period())}
    finite = [p for k in kinds if not k.period() for p in k.breakpoints(first, last)]
    if not periods:
        return Segments(_cut(first, last, finite))
    period = lcm(*periods)

    def cuts(lo: int, hi: int) -> list[int]:
        """Every breakpoint in [lo, hi)."""
        return [p for k in kinds for p in k.breakpoints(lo, hi)]

    # After the last finite breakpoint the cuts recur every `period` positions: whole periods
    # (c0 + 1 .. c0 + period, c0 a multiple of it) then repeat.
    start = max([first - 1, *finite]) + 1
    c0 = ceil(Fraction(start - 1, period)) * period
    repeats = max(0, (last - c0) // period)
    if repeats < 2:
        return Segments(_cut(first, last, cuts(first, last)))
    head = _cut(first, c0, cuts(first, c0)) if c0 >= first else ()
    cycle = _cut(c0 + 1, c0 + period, cuts(c0 + 1, c0 + period))
    end = c0 + repeats * period
    tail = _cut(end + 1, last, cuts(end + 1, last)) if end < last else ()
    return Segments(head, cycle, period, repeats, tail)


class DecodeSteps:
    """FLOPs and bytes of decode steps at positions first..last, exact (bytes as Fractions)."""

    def __init__(self, spec: ModelSpec, batch: int, kv_b: int, weights_dtype: Any,
                 state_b: int = 4):
        """`weights_dtype`: a dtype or scaled format's name, or a storage plan
        (`models.quantization.Plan`)."""
        from ..models.quantization import Plan

        self.spec, self.batch, self.kv_b = spec, batch, kv_b
        reads = weight_reads(spec, batch)
        self.reads = reads
        if isinstance(weights_dtype, Plan):
            from .storage import read_bytes as plan_reads

            self.step_weight_bytes = plan_reads(spec, batch, weights_dtype).expected
        else:
            self.step_weight_bytes = (storage_bytes(reads.expected, weights_dtype)
                                      if weights_dtype not in SCALED_FORMATS else
                                      read_bytes(spec, batch, weights_dtype).expected)
        self.kv_per_token = kv_bytes_per_token(spec, kv_b)
        self.state_per_sequence = state_bytes_per_sequence(spec, kv_b, state_b)

    def flops(self, first: int, last: int) -> list[Part]:
        return decode_parts(self.spec, first, last, self.batch)

    def byte_parts(self, first: int, last: int) -> dict[str, Fraction]:
        steps = last - first + 1
        parts = {"weights.read": steps * self.step_weight_bytes,
                 "kv_cache.read": Fraction(kv_read_bytes(self.spec, first, last, self.batch,
                                                         self.kv_b)),
                 "kv_cache.write": Fraction(steps * self.batch * self.kv_per_token)}
        if self.state_per_sequence:  # every step reads each state and writes it back
            state = Fraction(steps * self.batch * self.state_per_sequence)
            parts |= {"state.read": state, "state.write": state}
        return parts

    def bytes(self, first: int, last: int) -> Fraction:
        return sum(self.byte_parts(first, last).values(), Fraction(0))
