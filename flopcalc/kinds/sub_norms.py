"""Sub-norms inside a block (BitNet b1.58, Ma et al. 2024, "The Era of 1-bit LLMs"; transformers
`models/bitnet/modular_bitnet.py`): the model's norm over the attention output before o
(h·d_v wide: BitNet's attn_sub_norm) and over the MLP's hidden product before down (d_ff wide:
ffn_sub_norm). Each holds its norm's gain (and bias), costs the norm's element-wise work, and
keeps its input for backward; no matmul changes."""

from __future__ import annotations

from fractions import Fraction

from ..records import dataclass
from .attention import Attention
from .base import ELEMENTWISE, Keeping, Part
from .mlp import Mlp
from .norm import Norm


@dataclass(frozen=True)
class SubNormAttention(Attention):
    """`Attention` with `sub_norm` over its output (h·d_v) before o."""

    sub_norm: Norm = Norm("rmsnorm")

    def params(self, d: int, active: bool = False) -> list[Part]:
        return super().params(d, active) + self.sub_norm.params(self.d_o, "sub_norm")

    def elementwise(self, d: int, x) -> list[Part]:
        return super().elementwise(d, x) + [
            Part("elementwise.sub_norm", self.sub_norm.per_element * x.tokens * self.d_o,
                 ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """As `Attention`'s, with the sub-norm's input (h·d_v per token, 16-bit)."""
        return super().activations(d, k) + [
            ("sub_norm_input", 2 * k.seq * k.batch * self.d_o * Fraction(1, k.tp))]

    def describe(self) -> str:
        return super().describe() + ", sub-norm"


@dataclass(frozen=True)
class SubNormMlp(Mlp):
    """`Mlp` with `sub_norm` over its hidden product (d_ff) before down."""

    sub_norm: Norm = Norm("rmsnorm")

    def params(self, d: int, active: bool = False, copies: int = 1,
               expert: bool = False) -> list[Part]:
        return super().params(d, active, copies, expert) + self.sub_norm.params(self.d_ff,
                                                                               "sub_norm")

    def elementwise(self, d: int, x) -> list[Part]:
        return super().elementwise(d, x) + [
            Part("elementwise.sub_norm", self.sub_norm.per_element * x.tokens * self.d_ff,
                 ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """As `Mlp`'s, with the sub-norm's input (d_ff per token, 16-bit)."""
        return super().activations(d, k) + [
            ("sub_norm_input", 2 * k.seq * k.batch * self.d_ff * Fraction(1, k.tp))]

    def describe(self) -> str:
        return super().describe() + ", sub-norm"


def with_sub_norm(dense: Mlp, norm: Norm) -> SubNormMlp:
    """`dense` with `norm` over its hidden product (the dense MLPs only: a mixture's experts
    keep theirs without)."""
    return SubNormMlp(gated=dense.gated, d_ff=dense.d_ff, activation=dense.activation,
                      bias=dense.bias, multipliers=dense.multipliers, sub_norm=norm)
