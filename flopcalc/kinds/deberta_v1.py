"""DeBERTa (v1)'s disentangled attention (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with
Disentangled Attention", ICLR, §3.1; transformers 5.24 `models/deberta/modeling_deberta.py`:
DisentangledSelfAttention, DebertaEncoder) as an encoder's token mixer, `layer_types:
[deberta_v1]`, configured by the same `deberta:` block as v2's kind (`kinds.deberta`).

What differs from v2's:

- the projections: one fused `in_proj` d → 3·h·d_h without a bias, then a `q_bias` and a
  `v_bias` (the keys have none): q, k, v with biases on q and v only; the position keys'
  `pos_proj` has no bias, the position queries' `pos_q_proj` has one; no shared keys, no table
  norm, no ConvLayer;
- the table read per forward: the rows S − a .. S + a of the 2S-row table (`rel_embeddings`,
  shared by every layer), a = min(max(L_q, L_k), S) (`compute_attention_span`): so the
  position projections cost 2·2a·d·h·d_h each (once per layer and forward, whatever the batch)
  and c2p and p2c 2·B·h·L·d_h·2a each. Up to S tokens, a = L and the relative terms grow as L²
  (4·h·d_h per pair and term, as much as QKᵀ); beyond S, linearly.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from .attention import Attention
from .base import (ATTENTION, ELEMENTWISE, EMBEDDING, FIRST, REPLICATED, WEIGHTS, Convention,
                   Keeping, Part, Span, linear)
from .deberta import TABLE, DisentangledAttention
from .registry import Entry


@dataclass(frozen=True)
class _Sliced:
    """A crossover term that follows the slice's rows: per unit of its coefficient, x² up to
    `span` and span·x beyond (`quadratic`: the relative products), or 0 up to `span` and
    x − span beyond (the table projections: the weights measured at s = 1 take them as linear
    in x, but they stop growing at 2S rows; the crossover adds back what it over-counts)."""

    span: int
    quadratic: bool
    keys_bounded = False
    size = None
    period = None
    splits_full = True  # its pieces end at `span` under the `full` convention too

    def pair_polynomial(self, convention: Convention, s: int
                        ) -> tuple[Fraction, Fraction, Fraction]:
        if s <= self.span:
            return (Fraction(1) if self.quadratic else Fraction(0)), Fraction(0), Fraction(0)
        if self.quadratic:
            return Fraction(0), Fraction(self.span), Fraction(0)
        return Fraction(0), Fraction(1), Fraction(-self.span)

    def segment_end(self, s: int) -> Optional[int]:
        return self.span if s <= self.span else None


@dataclass(frozen=True)
class DisentangledAttentionV1(DisentangledAttention):
    """DeBERTa v1's disentangled attention: `DisentangledAttention` reading 2·min(L, `span`)
    rows of its table, with v1's biases (none on k or on the position keys)."""

    def read_rows(self, n: int, source: int) -> int:
        """Rows of the table a forward reads: 2·min(max(L_q, L_k), S)."""
        return 2 * min(max(n, source), self.span)

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = Attention.params(self, d, active)
        if self.relative:
            if self.c2p:
                parts += linear("pos_key", d, self.d_k, False)
            if self.p2c:
                parts += linear("pos_query", d, self.d_q, True)
            parts.append(Part("rel_embeddings", self.rows * d, EMBEDDING, (self.rows, d),
                              REPLICATED, FIRST, lookup=True, tied=TABLE))
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        parts = Attention.forward(self, d, x)
        if not self.terms:
            return parts
        rows = self.read_rows(x.n, x.source)
        # (2a×d)·(d×h·d_h) per projection, once per layer whatever the batch
        parts.append(Part("pos_proj", self.terms * 2 * rows * d * self.d_q, WEIGHTS))
        if self.c2p:  # (B·h: L×d_h)·(d_h×2a)
            parts.append(Part("c2p", 2 * x.batch * self.heads * x.n * self.qk_dim * rows,
                              ATTENTION))
        if self.p2c:  # (B·h: L_k×d_h)·(d_h×2a), the keys against the position queries
            parts.append(Part("p2c", 2 * x.batch * self.heads * x.source * self.qk_dim * rows,
                              ATTENTION))
        return parts

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """BERT's attention, the position queries' bias adds (2a·h·d_h), and per relative term
        and score a scale and an add (2), then the sum added to the content scores (1)."""
        parts = Attention.elementwise(self, d, x)
        if not self.terms:
            return parts
        if self.p2c:
            parts.append(Part("elementwise.pos_proj_bias",
                              self.read_rows(x.n, x.source) * self.d_q, ELEMENTWISE))
        parts.append(Part("elementwise.relative", (2 * self.terms + 1) * self.heads
                          * self.pairs(x), ELEMENTWISE))
        return parts

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        parts = Attention.activations(self, d, k)
        if self.terms:
            parts.append(("relative_positions", 2 * self.terms * k.batch
                          * self.read_rows(k.seq, k.seq) * self.d_q * Fraction(1, k.tp)))
        return parts

    def pair_terms(self) -> list[tuple[int, Any]]:
        """QKᵀ and AV, and, for the crossover, the relative products (4·h·d_h per pair and
        term up to S, then linear) and the table projections (linear up to S, as measured at
        s = 1, then constant)."""
        terms = Attention.pair_terms(self)
        if self.terms:
            terms.append((4 * self.heads * self.qk_dim * self.terms, _Sliced(self.span, True)))
            terms.append((self.terms * 4 * self.model_width * self.d_q,
                          _Sliced(self.span, False)))
        return terms

    def describe(self) -> str:
        return super().describe().replace("over", "(v1: sliced to the length) over")

    def notes(self) -> list[str]:
        if not self.terms:
            return []
        return ["DeBERTa (v1) disentangled attention: per layer 2·min(L, S) rows of the 2S-row "
                "position table projected once per forward, c2p and p2c as (L×d_h)·(d_h×2a) per "
                "head and sequence, a = min(L, S): quadratic in L up to S, linear beyond, as "
                "transformers computes them"]


def build(cfg: Any, name: str) -> DisentangledAttentionV1:
    block = cfg.deberta
    if block is None:
        raise ValueError("deberta_v1 layers need a deberta block (span, c2p, p2c)")
    if block.share_keys or block.rel_norm or block.conv_kernel:
        raise ValueError("deberta_v1 layers have no shared keys, table norm or ConvLayer "
                         "(DeBERTa-v2's: use layer_types deberta)")
    if block.relative and block.span is None:
        raise ValueError("deberta.span is required with relative: true (the relative table has "
                         "2·span rows)")
    from dataclasses import fields

    from . import attention_layers

    base = attention_layers.build(cfg, "bidirectional")
    if type(base) is not Attention:
        raise ValueError("deberta_v1 layers are softmax attention, not latent_attention")
    return DisentangledAttentionV1(
        **{f.name: getattr(base, f.name) for f in fields(base)},
        relative=block.relative, span=block.span or 0, c2p=block.c2p, p2c=block.p2c,
        model_width=cfg.d_model)


REGISTER = Entry(layer_types=("deberta_v1",), build=build)
