"""`differential`: causal differential attention (Ye et al. 2024, "Differential Transformer",
arXiv:2410.05258) as transformers 5.24 builds it (`models/diffllama/modeling_diffllama.py`
DiffLlamaAttention): Llama's q, k, v and o, four learned vectors λ_q1, λ_k1, λ_q2, λ_k2 of one
head's width, and a weightless RMSNorm over each pair of heads.

transformers runs two whole attention calls over the same queries and keys, one over each half
of the value heads (each half repeated back to every KV head), so the scores QKᵀ and the value
product AV are each computed twice: 2·2·h·(d_qk + d_v) FLOPs per scored pair, twice plain
attention's. The head outputs are then joined pairwise, out₁ − λ·out₂ with
λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init, normed and scaled by (1 − λ_init) before o: all
element-wise. The cache is Llama's (one K and V per KV head and token).
"""

from __future__ import annotations

from dataclasses import fields
from fractions import Fraction
from typing import Any

from ..records import dataclass
from .attention import SOFTMAX_PER_SCORE, Attention
from .attention_layers import build as attention
from .base import ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, Keeping, Part, Span
from .norm import Norm
from .registry import Entry

PASSES = 2  # two attention calls over the same scores, one per half of the values
RMS = Norm("rmsnorm", affine=False)


@dataclass(frozen=True)
class DifferentialAttention(Attention):
    """`Attention` whose scores and value products are computed twice (see the module)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.heads % 2 or self.kv_heads % 2:
            raise ValueError(f"differential attention pairs heads: n_heads={self.heads} and "
                             f"n_kv_heads={self.kv_heads} must be even")
        if self.qk_dim != self.v_dim:
            raise ValueError("differential attention has one head width for q, k and v")

    @property
    def per_pair(self) -> int:
        return PASSES * super().per_pair

    def params(self, d: int, active: bool = False) -> list[Part]:
        # λ_q1, λ_k1, λ_q2, λ_k2: one head's width each, held by the attention module itself
        return super().params(d, active) + [
            Part("lambda", 4 * self.qk_dim, LAYERS, (4, self.qk_dim), REPLICATED, module="")]

    def pair_flops(self, pairs: int) -> list[Part]:
        # each pass: QKᵀ 2·h·pairs·d_qk, and AV 2·h·pairs·d_v over its half of the values
        # repeated to every head
        return [Part("scores", PASSES * 2 * self.heads * pairs * self.qk_dim, ATTENTION),
                Part("av", PASSES * 2 * self.heads * pairs * self.v_dim, ATTENTION)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        # the second pass's softmax; out₁ − λ·out₂ (2 per element of a pair's output), the
        # weightless RMSNorm over the pair and the (1 − λ_init) scale (1 per element); λ itself
        # (4 products, 2 sums of d_qk, 2 exps) once per layer: counted per token as 0
        pairs = self.pairs(x)
        half = x.tokens * self.d_o // 2
        return super().elementwise(d, x) + [
            Part("elementwise.softmax_second", SOFTMAX_PER_SCORE * self.heads * pairs,
                 ELEMENTWISE),
            Part("elementwise.differential",
                 2 * half + RMS.per_element * half + half, ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """As `Attention`'s, with the second softmax (or its log-sum-exp) and the two halves'
        outputs kept for the combination's backward; 16-bit, split t ways."""
        s, b, split = k.seq, k.batch, Fraction(1, k.tp)
        parts = list(super().activations(d, k))
        if k.flash:
            parts.append(("logsumexp_second", 4 * self.heads * s * b * split))
        elif k.recompute != "selective":
            parts.append(("softmax_second", 2 * self.heads * s * s * b * split))
        parts.append(("pass_outputs", 2 * s * b * 2 * self.d_o * split))
        return parts

    def describe(self) -> str:
        return super().describe() + ", differential"

    def notes(self) -> list[str]:
        return super().notes() + [
            "differential attention (DiffLlama): transformers computes the scores and the value "
            "product twice per layer (one attention call per half of the values), 4·h·(d_qk + "
            "d_v) FLOPs per scored pair; 4 λ vectors of a head's width per layer"]


def build(cfg: Any, name: str) -> DifferentialAttention:
    base = attention(cfg, "full")
    if type(base) is not Attention:
        raise ValueError("differential layers are softmax attention (no latent_attention)")
    if base.gate:
        raise ValueError("differential layers have no attention_gate")
    return DifferentialAttention(**{f.name: getattr(base, f.name) for f in fields(base)})


REGISTER = Entry(layer_types=("differential",), build=build)
