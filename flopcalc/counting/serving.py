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

from fractions import Fraction

from ..kinds.base import Convention, Part
from ..models.spec import ModelSpec
from .model import decode_flops, model_flops, workload
from .traffic import (kv_bytes_per_token, kv_read_bytes, state_bytes_per_sequence, storage_bytes,
                      weight_reads)


def prefill_parts(spec: ModelSpec, prompt: int, batch: int, convention: Convention
                  ) -> list[Part]:
    """Forward FLOPs over `batch` prompts of `prompt` tokens: exactly `model_flops`."""
    return model_flops(spec, workload(spec, prompt, None, batch, convention))


def decode_parts(spec: ModelSpec, first: int, last: int, batch: int) -> list[Part]:
    """FLOPs of the decode steps at positions first..last (one step each), `batch` sequences."""
    return decode_flops(spec, first, last, batch)


def affine_segments(spec: ModelSpec, first: int, last: int) -> list[tuple[int, int]]:
    """[first, last] cut where any layer's decode cost changes its affine form (a window
    filling up, a new chunk): on each piece every decode cost is affine in the position."""
    cuts = sorted({p for g in spec.groups("decoder") for _, kind in g.layer.slots()
                   for p in kind.breakpoints(first, last)})
    pieces, start = [], first
    for cut in cuts:
        pieces.append((start, cut))
        start = cut + 1
    pieces.append((start, last))
    return [(a, b) for a, b in pieces if a <= b]


class DecodeSteps:
    """FLOPs and bytes of decode steps at positions first..last, exact (bytes as Fractions)."""

    def __init__(self, spec: ModelSpec, batch: int, kv_b: int, weights_dtype: str,
                 state_b: int = 4):
        self.spec, self.batch, self.kv_b = spec, batch, kv_b
        reads = weight_reads(spec, batch)
        self.reads = reads
        self.step_weight_bytes = storage_bytes(reads.expected, weights_dtype)
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
