"""DeBERTa-v2/v3's disentangled attention (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with
Disentangled Attention", ICLR, §3.1; He et al. 2023, "DeBERTaV3", ICLR; transformers 5.24
`models/deberta_v2/modeling_deberta_v2.py`: DisentangledSelfAttention, DebertaV2Encoder,
ConvLayer) as an encoder's token mixer, `layer_types: [deberta]` (`deberta_first` for layer 0).

Each layer is BERT's attention (q, k, v and o with biases, every query against every key) plus
relative-position terms read from one table of 2S relative-position embeddings that every layer
shares (`rel_embeddings`, 2S × d, S = `position_buckets` when > 0, else `max_relative_positions`,
else `max_position_embeddings`), optionally LayerNorm-ed (`norm_rel_ebd: layer_norm`):

- the position keys and queries: the table projected by `pos_key_proj` (for c2p) and
  `pos_query_proj` (for p2c), d → h·d_h with biases, each layer its own; with `share_att_key`
  the layer's own `key_proj` and `query_proj` instead (no new tensors), and then both run
  whatever `pos_att_type` says. Each is (2S×d)·(d×h·d_h) → 2·2S·d·h·d_h FLOPs, once per layer
  and forward, whatever the batch (transformers projects the table once and repeats it over the
  sequences);
- content→position (c2p): the queries against the position keys, (L×d_h)·(d_h×2S) per head
  and sequence → 2·B·h·L·d_h·2S; position→content (p2c): the keys against the position queries,
  the same; each then gathered (no FLOPs) and added to the scores. These grow linearly in L
  (against a fixed 2S), in the attention family.

Layer 0 (`deberta_first`) also holds what the encoder runs once per forward: the LayerNorm of
the table (element-wise) and, when `conv_kernel_size` > 0, the ConvLayer applied to layer 0's
input and added to its output: a Conv1d d → d of k taps in `conv_groups` groups with its bias,
then its activation, a residual add and a LayerNorm; 2·B·L·d·(d/g)·k FLOPs (odd k: transformers'
padding (k − 1)/2 keeps the length). The table and its norm are one tensor each whichever layer
reads them (`Part.tied`); the table is a position embedding (outside N of 6ND).
"""

from __future__ import annotations

from dataclasses import fields
from fractions import Fraction
from typing import Annotated, Any, Literal, Optional

from ..records import dataclass
from ..declare import Min
from . import attention_layers
from .attention import Attention
from .base import (ATTENTION, ELEMENTWISE, EMBEDDING, FIRST, LAYERS, REPLICATED, WEIGHTS,
                   Convention, Keeping, Part, Published, Span, linear)
from .mlp import ACTIVATION_FLOPS
from .norm import Norm
from .registry import Entry

TABLE = "deberta.rel_embeddings"  # the shared tensors' `tied` names
TABLE_NORM = "deberta.rel_embeddings_norm"
CONV_ACTIVATION_FLOPS = {**ACTIVATION_FLOPS, "tanh": 1}


@dataclass(frozen=True)
class AffineTerm:
    """A term of the crossover polynomial that is not a count of pairs: `b·x + c` per unit of
    its coefficient (DeBERTa's c2p/p2c grow as s; its table projections are a constant that the
    weights, measured at s = 1, would otherwise take as linear; Nyströmformer's landmark
    products grow as L against a fixed m)."""

    b: int
    c: int
    keys_bounded = False
    size = None
    period = None  # no recurring blocks

    def pair_polynomial(self, convention: Convention, s: int
                        ) -> tuple[Fraction, Fraction, Fraction]:
        return Fraction(0), Fraction(self.b), Fraction(self.c)

    def segment_end(self, s: int) -> Optional[int]:
        return None


@dataclass(frozen=True)
class DisentangledAttention(Attention):
    """Softmax attention with DeBERTa's relative terms (`relative`): c2p and/or p2c against a
    2·`span`-row table, position projections of their own or shared with k and q
    (`share_keys`); `rel_norm`: the table's LayerNorm; `first`: layer 0, which also runs the
    table's norm and the ConvLayer (`conv_kernel` taps in `conv_groups` groups, then
    `conv_activation`)."""

    relative: bool = True
    span: int = 0
    c2p: bool = False
    p2c: bool = False
    share_keys: bool = False
    rel_norm: bool = False
    first: bool = False
    conv_kernel: int = 0
    conv_groups: int = 1
    conv_activation: str = "tanh"
    conv_norm: Norm = Norm("layernorm")
    model_width: int = 0  # d, for the table projections' constant in the crossover

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.relative and self.span < 1:
            raise ValueError("deberta.span (the relative table has 2·span rows) must be >= 1")
        if self.conv_kernel and (self.conv_kernel % 2 == 0 or self.conv_kernel < 0):
            raise ValueError(f"deberta.conv_kernel={self.conv_kernel} must be odd: transformers' "
                             "ConvLayer pads (k − 1)/2 and adds its output to the layer's, which "
                             "an even kernel would shorten")

    @property
    def rows(self) -> int:
        """Rows of the relative-position table: 2S."""
        return 2 * self.span

    @property
    def terms(self) -> int:
        """The relative terms: c2p and p2c, each a (L×d_h)·(d_h×2S) product per head."""
        return (self.c2p + self.p2c) if self.relative else 0

    @property
    def projections(self) -> int:
        """Projections of the table per layer: both q and k when shared, else one per term."""
        if not self.relative:
            return 0
        return 2 if self.share_keys else self.terms

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = super().params(d, active)
        if self.relative and not self.share_keys:
            if self.c2p:
                parts += linear("pos_key", d, self.d_k, True)
            if self.p2c:
                parts += linear("pos_query", d, self.d_q, True)
        if self.relative:
            parts.append(Part("rel_embeddings", self.rows * d, EMBEDDING, (self.rows, d),
                              REPLICATED, FIRST, lookup=True, tied=TABLE))
        if self.rel_norm:  # transformers builds it whenever norm_rel_ebd says layer_norm
            parts += [Part(f"rel_embeddings_norm.{name}", d, LAYERS, (d,), REPLICATED,
                           tied=f"{TABLE_NORM}.{name}", module="rel_embeddings_norm")
                      for name in ("weight", "bias")]
        if self.first and self.conv_kernel:
            k, g = self.conv_kernel, self.conv_groups
            parts += [Part("conv.weight", d * (d // g) * k, LAYERS, (d, d // g, k), REPLICATED,
                           matmul=True, module="conv"),
                      Part("conv.bias", d, LAYERS, (d,), REPLICATED, module="conv")]
            parts += self.conv_norm.params(d, "conv.norm")
        return parts

    # -------------------------------------------------------------------------------- FLOPs

    def forward(self, d: int, x: Span) -> list[Part]:
        parts = super().forward(d, x)
        if self.projections:  # (2S×d)·(d×h·d_h), once per layer whatever the batch
            parts.append(Part("pos_proj", self.projections * 2 * self.rows * d * self.d_q,
                              WEIGHTS))
        if self.c2p and self.relative:  # (B·h: L×d_h)·(d_h×2S)
            parts.append(Part("c2p", 2 * x.batch * self.heads * x.n * self.qk_dim * self.rows,
                              ATTENTION))
        if self.p2c and self.relative:  # (B·h: L×d_h)·(d_h×2S), the keys against positions
            parts.append(Part("p2c", 2 * x.batch * self.heads * x.source * self.qk_dim
                              * self.rows, ATTENTION))
        if self.first and self.conv_kernel:  # (B·L×(d/g)·k)·((d/g)·k×d)
            k, g = self.conv_kernel, self.conv_groups
            parts.append(Part("conv", 2 * x.tokens * d * (d // g) * k, WEIGHTS))
        return parts

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """BERT's attention (bias adds, softmax), and: the table projections' bias adds; per
        relative term and score a divide by its scale and an add (2), then the relative scores
        added to the content scores (1 per score); in layer 0 the table's LayerNorm (7 per
        element of 2S×d) and the ConvLayer per element of its output: bias add 1, activation,
        residual add 1, LayerNorm 7, input-mask multiply 1."""
        parts = super().elementwise(d, x)
        scores = self.heads * self.pairs(x)
        if self.projections:
            parts.append(Part("elementwise.pos_proj_bias", self.projections * self.rows
                              * self.d_q, ELEMENTWISE))
        if self.terms:
            parts.append(Part("elementwise.relative", (2 * self.terms + 1) * scores,
                              ELEMENTWISE))
        if self.first and self.rel_norm and self.relative:
            parts.append(Part("elementwise.rel_norm", 7 * self.rows * d, ELEMENTWISE))
        if self.first and self.conv_kernel:
            act = CONV_ACTIVATION_FLOPS[self.conv_activation]
            parts.append(Part("elementwise.conv", (1 + act + 1 + self.conv_norm.per_element + 1)
                              * x.tokens * d, ELEMENTWISE))
        return parts

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """BERT's, plus the position keys/queries each relative product reads (repeated over
        the b sequences, 16-bit) and, in layer 0, the ConvLayer's input, activation output and
        norm input (transformers' eager path; no fused kernel exists)."""
        parts = super().activations(d, k)
        split = Fraction(1, k.tp)
        if self.terms:
            parts.append(("relative_positions",
                          2 * self.terms * k.batch * self.rows * self.d_q * split))
        if self.first and self.conv_kernel:
            parts.append(("conv", 3 * 2 * k.seq * k.batch * d * split))
        return parts

    def pair_terms(self) -> list[tuple[int, Any]]:
        """The s² terms, and, for the crossover, the relative products (linear in s) and the
        table projections (a constant, taken out of the weights measured at s = 1)."""
        terms = super().pair_terms()
        if self.terms:
            terms.append((2 * self.heads * self.qk_dim * self.rows * self.terms, AffineTerm(1, 0)))
        if self.projections:  # 2·2S·d·h·d_h per projection
            terms.append((self.projections * 2 * self.rows * self.model_width * self.d_q,
                          AffineTerm(1, -1)))
        return terms

    def published(self, d: int) -> Published:
        base = super().published(d)
        if not self.terms:
            return base
        return Published(**{f.name: getattr(base, f.name) for f in fields(base)
                            if f.name != "departures"},
                         departures=base.departures + (
                             "assumes absolute positions; DeBERTa adds disentangled relative "
                             f"terms ({'c2p' if self.c2p else ''}"
                             f"{'+' if self.c2p and self.p2c else ''}{'p2c' if self.p2c else ''}"
                             f") against a {self.rows:,}-row position table",))

    def describe(self) -> str:
        if not self.relative:
            return "bidirectional (DeBERTa)"
        which = "+".join(t for t, on in (("c2p", self.c2p), ("p2c", self.p2c)) if on)
        return f"bidirectional, disentangled {which or 'no terms'} over {self.rows:,} positions" \
            + (", shared keys" if self.share_keys else "")

    def notes(self) -> list[str]:
        if not self.relative:
            return []
        return ["DeBERTa disentangled attention: per layer the 2S-row position table projected "
                "once per forward (2·2S·d·h·d_h per projection, whatever the batch), c2p and "
                "p2c as (L×d_h)·(d_h×2S) per head and sequence (attention family, linear in L), "
                "as transformers computes them; the table is shared by every layer"]


@dataclass(frozen=True)
class DebertaConfig:
    """`deberta:` in a model file (DeBERTa-v2's keys: `relative_attention`, S from
    `position_buckets`/`max_relative_positions`, `pos_att_type`, `share_att_key`,
    `norm_rel_ebd`, `conv_kernel_size`, `conv_groups`, `conv_act`)."""

    relative: bool = True
    span: Optional[Annotated[int, Min(1)]] = None
    c2p: bool = True
    p2c: bool = True
    share_keys: bool = False
    rel_norm: bool = False
    conv_kernel: Annotated[int, Min(0)] = 0
    conv_groups: Annotated[int, Min(1)] = 1
    conv_activation: Literal["tanh", "gelu", "relu", "silu"] = "tanh"


def build(cfg: Any, name: str) -> DisentangledAttention:
    block = cfg.deberta
    if block is None:
        raise ValueError("deberta layers need a deberta block (span, c2p, p2c, share_keys, ...)")
    if block.relative and block.span is None:
        raise ValueError("deberta.span is required with relative: true (the relative table has "
                         "2·span rows)")
    if block.conv_kernel and cfg.d_model % block.conv_groups:
        raise ValueError(f"deberta.conv_groups={block.conv_groups} must divide "
                         f"d_model={cfg.d_model}")
    base = attention_layers.build(cfg, "bidirectional")
    if type(base) is not Attention:
        raise ValueError("deberta layers are softmax attention, not latent_attention")
    return DisentangledAttention(
        **{f.name: getattr(base, f.name) for f in fields(base)},
        relative=block.relative, span=block.span or 0, c2p=block.c2p, p2c=block.p2c,
        share_keys=block.share_keys, rel_norm=block.rel_norm, first=name == "deberta_first",
        conv_kernel=block.conv_kernel, conv_groups=block.conv_groups,
        conv_activation=block.conv_activation, conv_norm=attention_layers.model_norm(cfg),
        model_width=cfg.d_model)


REGISTER = Entry(layer_types=("deberta", "deberta_first"), build=build,
                 blocks=(("deberta", DebertaConfig),))
