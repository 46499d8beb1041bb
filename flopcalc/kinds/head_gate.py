"""Softmax attention with one output gate per head (LFM3's and Laguna's `g_proj`): a bias-free
projection d → h from the layer's input, whose sigmoid scales each head's whole output before
o. It is the per-head form of Qwen3-Next's gate (`Attention.gate`, one gate per output
element from a doubled q_proj): d·h parameters, 2·T·d·h FLOPs per forward, not cached. The
same gate on latent attention (Bailing-hybrid's MLA layers, transformers 5.24
`models/bailing_hybrid/modular_bailing_hybrid.py` BailingHybridAttention) is
`HeadGatedLatentAttention`."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from ..records import dataclass
from .attention import SIGMOID, Attention
from .base import COLUMN, ELEMENTWISE, Keeping, Part, Published, gemm, linear
from .latent import LatentAttention


class HeadGate:
    """The per-head output gate, on top of an attention kind's own answers (a mixin before
    `Attention` or `LatentAttention`): sigmoid(x·W_g), W_g d × h."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        return super().params(d, active) + linear("g", d, self.heads, False, COLUMN)

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        # (T_q×d)·(d×h): one gate logit per head and token
        return super().flops(d, t_q, t_k, pairs) + [gemm("g", t_q, d, self.heads)]

    def elementwise(self, d: int, x) -> list[Part]:
        # the sigmoid of each gate (4) and the product over the head's output (1 per element)
        return super().elementwise(d, x) + [
            Part("elementwise.gate", SIGMOID * x.tokens * self.heads + x.tokens * self.d_o,
                 ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """As `Attention`'s, with the gate (h per token) and the ungated output (h·d_v per
        token) kept for the product's backward; 16-bit, split t ways."""
        split = Fraction(1, k.tp)
        s, b = k.seq, k.batch
        return super().activations(d, k) + [("gate", 2 * s * b * self.heads * split),
                                             ("ungated_output", 2 * s * b * self.d_o * split)]

    def published(self, d: int) -> Published:
        base = super().published(d)
        return replace(base, departures=base.departures + (
            "assumes ungated attention; this model scales each head's output by a sigmoid gate "
            "(a d × h projection)",))

    def describe(self) -> str:
        return super().describe() + ", gated per head"

    def notes(self) -> list[str]:
        return super().notes() + [  # type: ignore[misc]
            "attention gated per head (LFM3, Laguna): a d × h projection of the layer's "
            "input, 2·d·h FLOPs per token; sigmoid(gate) scales each head's output "
            "(5 element-wise FLOPs per gate and 1 per output element); not cached"]


@dataclass(frozen=True)
class HeadGatedAttention(HeadGate, Attention):
    """`Attention` whose output is scaled per head by sigmoid(x·W_g), W_g d × h."""


@dataclass(frozen=True)
class HeadGatedLatentAttention(HeadGate, LatentAttention):
    """`LatentAttention` whose output is scaled per head by sigmoid(x·W_g), W_g d × h."""
