"""LiLT's layout stream (Wang et al. 2022, "LiLT: A Simple yet Effective Language-Independent
Layout Transformer for Structured Document Understanding", ACL; transformers 5.24
`models/lilt/modeling_lilt.py`: LiltSelfAttention, LiltAttention, LiltLayer) as an encoder's
token mixer, `layer_types: [lilt]` (`lilt_first` for layer 0), configured by a `lilt:` block.

The text stream is BERT's layer (this kind's attention, the layer's MLP and norms). Beside it
each layer runs a second, layout stream r = `shrink` times narrower (d' = d/r, f' = f/r), which
this kind holds whole:

- layout q, k and v, d' → d' with biases, over the text's h heads of d_h/r; its scores
  (2·B·h·L²·d_h/r), added to the text scores (and the text's to its own: the coupling is
  element-wise), and its weighted sum (2·B·h·L²·d_h/r);
- its output dense d' → d' with a bias and LayerNorm (d') after the residual add;
- its MLP d' → f' → d' with biases and a LayerNorm (d') after the residual add.

Layer 0 (`lilt_first`) also holds the layout embedding's LayerNorm (d'), which normalises the
layout stream's input once per forward (the box tables and `box_linear_embeddings` are the
model's `input_extras`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import SOFTMAX_PER_SCORE, Attention
from .base import ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, ROW, Keeping, Part, Span, gemm, \
    linear
from .mlp import ACTIVATION_FLOPS
from .registry import Entry


@dataclass(frozen=True)
class LiltAttention(Attention):
    """BERT's attention beside LiLT's layout stream `shrink` times narrower (its attention,
    output and MLP `layout_ff` wide with `layout_activation`); `first`: layer 0, which also
    holds the layout embedding's LayerNorm."""

    shrink: int = 4
    layout_ff: int = 0
    layout_activation: str = "gelu"
    first: bool = False
    model_width: int = 0

    @property
    def layout_width(self) -> int:
        """d' = d / r: the layout stream's width."""
        return self.model_width // self.shrink

    def _norm(self, name: str, width: int) -> list[Part]:
        return [Part(f"{name}.{w}", width, LAYERS, (width,), REPLICATED, module=name)
                for w in ("weight", "bias")]

    def params(self, d: int, active: bool = False) -> list[Part]:
        w, f = self.layout_width, self.layout_ff
        parts = super().params(d, active)
        parts += (linear("layout.q", w, w, True) + linear("layout.k", w, w, True)
                  + linear("layout.v", w, w, True) + linear("layout.o", w, w, True, ROW)
                  + self._norm("layout.attn_norm", w) + linear("layout.up", w, f, True)
                  + linear("layout.down", f, w, True, ROW) + self._norm("layout.mlp_norm", w))
        if self.first:
            parts += self._norm("layout.embed_norm", w)
        return parts

    def layout_flops(self, x: Span) -> list[Part]:
        w, f, t = self.layout_width, self.layout_ff, x.tokens
        pairs = self.heads * self.pairs(x)
        per_head = self.qk_dim // self.shrink
        return [gemm("layout.q", t, w, w), gemm("layout.k", t, w, w), gemm("layout.v", t, w, w),
                Part("layout.scores", 2 * pairs * per_head, ATTENTION),  # (L×d_h/r)·(d_h/r×L)
                Part("layout.av", 2 * pairs * per_head, ATTENTION),
                gemm("layout.o", t, w, w, ROW),
                gemm("layout.up", t, w, f), gemm("layout.down", t, f, w, ROW)]

    def forward(self, d: int, x: Span) -> list[Part]:
        return super().forward(d, x) + self.layout_flops(x)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Per token: the layout stream's bias adds (4·d' + f' + d'), its two LayerNorms and
        residual adds, its activation (f'); per score the coupling (2 divides, 2 adds) and the
        layout softmax; in layer 0 the layout embedding's LayerNorm."""
        w, f, t = self.layout_width, self.layout_ff, x.tokens
        scores = self.heads * self.pairs(x)
        per_token = 5 * w + f + 2 * (7 * w + w) + ACTIVATION_FLOPS[self.layout_activation] * f \
            + (7 * w if self.first else 0)
        return super().elementwise(d, x) + [
            Part("elementwise.layout", t * per_token, ELEMENTWISE),
            Part("elementwise.layout_scores", (4 + SOFTMAX_PER_SCORE) * scores, ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """As BERT's attention's, plus the layout stream's, 16-bit: its input, q, k, v, output
        and two norm inputs (d' each), its MLP's two f'-wide tensors, and its scores and
        probabilities (2·h·L² per sequence)."""
        tokens, w, f = k.seq * k.batch, self.layout_width, self.layout_ff
        scores = 2 * self.heads * k.batch * k.seq * k.seq
        return super().activations(d, k) + [
            ("layout", 2 * (tokens * (7 * w + 2 * f) + scores) * Fraction(1, k.tp))]

    def pair_terms(self) -> list[tuple[int, Any]]:
        """QKᵀ and AV of both streams over every pair: 4·h·d_h + 4·h·d_h/r per pair."""
        return [(self.per_pair + 4 * self.heads * (self.qk_dim // self.shrink), self.mask)]

    def describe(self) -> str:
        return super().describe() + f", LiLT layout stream of {self.layout_width}"

    def notes(self) -> list[str]:
        return [f"LiLT: every layer also runs a layout stream {self.shrink} times narrower "
                f"({self.layout_width} wide: its attention over the same heads, output, MLP of "
                f"{self.layout_ff} and two LayerNorms), its scores added to the text's"]


@dataclass(frozen=True)
class LiltConfig:
    """`lilt:` in a model file: the layout stream's `channel_shrink_ratio` and its MLP width
    (intermediate_size // channel_shrink_ratio: `layout_ff`)."""

    channel_shrink_ratio: Annotated[int, Min(1)] = 4
    layout_ff: Annotated[int, Min(1)] = 768


def build(cfg: Any, name: str) -> LiltAttention:
    from dataclasses import fields

    from . import attention_layers

    block = cfg.lilt or LiltConfig()
    r, d = block.channel_shrink_ratio, cfg.d_model
    base = attention_layers.build(cfg, "bidirectional")
    if type(base) is not Attention:
        raise ValueError("lilt layers are softmax attention, not latent_attention")
    if d % r or base.qk_dim % r:
        raise ValueError(f"lilt.channel_shrink_ratio={r} must divide d_model={d} and the head "
                         f"width {base.qk_dim}")
    return LiltAttention(**{f.name: getattr(base, f.name) for f in fields(base)}, shrink=r,
                         layout_ff=block.layout_ff, layout_activation=cfg.activation,
                         first=name == "lilt_first", model_width=d)


REGISTER = Entry(layer_types=("lilt", "lilt_first"), build=build,
                 blocks=(("lilt", LiltConfig),))
