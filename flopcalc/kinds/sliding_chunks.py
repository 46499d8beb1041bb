"""`sliding_chunks`: a Longformer layer (Beltagy et al. 2020, "Longformer: The Long-Document
Transformer", §3; transformers 5.24 `models/longformer/modeling_longformer.py`
LongformerSelfAttention, LongformerLayer; LED's encoder layer, `models/led/modeling_led.py`):
BERT's post-norm layer whose self-attention lets each token see w = `attention_window // 2`
tokens on either side, computed as dense matmuls over overlapping chunks.

The model pads the sequence with pad tokens to P, the next multiple of the largest
`attention_window` (2w_max; LongformerModel._pad_to_window_size, LEDEncoder), before the first
layer, and drops the padding after the last: every matmul of every layer runs on P tokens
(q, k, v, o, the MLP), the embedding and the head on the s real ones. Per head and sequence
(`_sliding_chunks_query_key_matmul`, `_sliding_chunks_matmul_attn_probs_value`):

- scores: P/w − 1 chunks of 2w queries × 2w keys (half-overlapping), (2w×d_h)·(d_h×2w) each
  → 2·(P/w − 1)·(2w)²·d_h;
- values: P/w chunks of w queries × 3w values, → 2·(P/w)·w·3w·d_h = 6·P·w·d_h.

Under `--attention full` those are the FLOPs (what FlopCounterMode counts; they depend on the
shapes only, not on the data). Under `--attention causal` the band's pairs at s tokens, each
query with itself and w keys either side: (2w + 1)·s − w(w + 1) (s² while s ≤ w + 1). The
diagonal mask is also built by the chunked product, with a head width of 1: FlopCounterMode
counts no matmul there (an element-wise product), nor does flopcalc.

Global attention (tokens the input's `global_attention_mask` picks, data-dependent) is not
counted: flopcalc counts a forward with no global token, the call without
`global_attention_mask` (then query_global, key_global and value_global are held and not run).
The layer holds its MLP (`holds_mlp`): the layer's own norm is the output LayerNorm, the kind
holds the one after attention.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, ROW, WEIGHTS, Kind, Part,
                   Published, Span, linear)
from .mlp import ACTIVATION_FLOPS
from .registry import Entry

# LayerNorm per element: mean, variance (subtract, square, sum), normalise, scale and shift
_LAYERNORM = 7


@dataclass(frozen=True)
class SlidingChunkLayer(Kind):
    """A Longformer layer: `heads` heads over d, one-sided window `window` (w), the sequence
    padded to a multiple of `pad` (the model's largest attention_window), an MLP `d_ff` wide
    of `activation`, q/k/v and their unrun global copies, o, up and down with biases."""

    heads: int
    window: int
    pad: int
    d_ff: int
    activation: str = "gelu"
    slot = "longformer"
    bidirectional = True
    holds_mlp = True  # the layer's MLP is the kind's own

    def padded(self, n: int) -> int:
        """P: n rounded up to a multiple of `pad` (LongformerModel._pad_to_window_size)."""
        return -(-n // self.pad) * self.pad

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts: list[Part] = []
        for name in ("q", "k", "v", "q_global", "k_global", "v_global"):
            parts += linear(name, d, d, True)
        parts += linear("o", d, d, True, ROW)
        parts += [Part(f"attn_norm.{w}", d, LAYERS, (d,), REPLICATED, module="attn_norm")
                  for w in ("weight", "bias")]
        return parts + linear("up", d, self.d_ff, True) + linear("down", self.d_ff, d, True, ROW)

    def forward(self, d: int, x: Span) -> list[Part]:
        p, w, f = self.padded(x.n), self.window, self.d_ff
        t = x.batch * p  # every matmul of the layer runs on the padded tokens
        d_h = d // self.heads
        # (T×d)·(d×d) → 2·T·d² each; the MLP (T×d)·(d×f) and (T×f)·(f×d) → 2·T·d·f each
        parts = [Part(name, 2 * t * d * d, WEIGHTS) for name in ("q", "k", "v", "o")]
        parts += [Part("up", 2 * t * d * f, WEIGHTS), Part("down", 2 * t * f * d, WEIGHTS)]
        if x.convention == "full":
            # P/w − 1 chunks of (2w×d_h)·(d_h×2w), P/w chunks of (w×3w)·(3w×d_h), per head
            scores = 2 * (p // w - 1) * (2 * w) ** 2 * d_h
            values = 2 * (p // w) * w * 3 * w * d_h
        else:  # the band at the real tokens: (2w + 1)·s − w(w + 1) pairs
            n = x.n
            pairs = n * n if n <= w + 1 else (2 * w + 1) * n - w * (w + 1)
            scores = values = 2 * pairs * d_h
        h = x.batch * self.heads
        return parts + [Part("scores", h * scores, ATTENTION), Part("values", h * values,
                                                                     ATTENTION)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        t = x.batch * self.padded(x.n)
        f = self.d_ff
        return [Part("elementwise.bias", t * (4 * d + f + d), ELEMENTWISE),
                Part("elementwise.activation", t * f * ACTIVATION_FLOPS.get(self.activation, 0),
                     ELEMENTWISE),
                Part("elementwise.attn_norm", t * d * _LAYERNORM, ELEMENTWISE),
                Part("elementwise.residual", t * d, ELEMENTWISE)]

    def count_period(self) -> Optional[int]:
        return self.pad  # the padding: one polynomial on each block of `pad` lengths

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(heads=self.heads, kv_heads=self.heads, head_dim=d // self.heads,
                         qk_width=d, v_width=d, kv_width=d, kv_kind="mha", ffn="plain",
                         ffn_widths=(self.d_ff,),
                         departures=("Longformer's sliding-chunk attention (the sequence "
                                     "padded to the window, chunks of 2w keys)",))

    def describe(self) -> str:
        return f"Longformer layer, window ±{self.window:,}, padded to {self.pad:,}"

    def notes(self) -> list[str]:
        w = self.window
        return [f"Longformer layers: each token sees ±{w:,} tokens, computed over chunks "
                f"(the sequence padded to a multiple of {self.pad:,}, every matmul of the "
                f"layer on the padded tokens); --attention full counts the chunks, "
                f"2·(P/w − 1)·(2w)²·d_h + 6·P·w·d_h per head, as FlopCounterMode; --attention "
                "causal the band's (2w+1)·s − w(w+1) pairs; no global tokens (the input's "
                "global_attention_mask): query_global, key_global, value_global held, not run"]


@dataclass(frozen=True)
class SlidingChunksConfig:
    """`sliding_chunks:` in a model file: `pad_to`, the multiple the model pads the sequence
    to (its largest attention_window), and the MLP's width. Each layer names its own window
    in `layer_types` as `sliding_chunks@W` (W = attention_window = 2w, even)."""

    pad_to: Annotated[int, Min(2)]
    intermediate_size: Annotated[int, Min(1)]


def build(cfg: Any, name: str) -> SlidingChunkLayer:
    block = cfg.sliding_chunks
    if block is None:
        raise ValueError("sliding_chunks layers need a sliding_chunks block (pad_to: the "
                         "largest attention_window, intermediate_size)")
    if "@" not in name:
        raise ValueError("a sliding_chunks layer names its attention window: sliding_chunks@W "
                         "(W = attention_window, 2w)")
    window = int(name.split("@", 1)[1])
    if window < 2 or window % 2:
        raise ValueError(f"{name}: the attention window must be even and at least 2 (w on "
                         "either side of the token)")
    if block.pad_to % window:
        raise ValueError(f"{name}: sliding_chunks.pad_to={block.pad_to} is not a multiple of "
                         f"{window} (each layer's chunks of 2w must tile the padded sequence)")
    if cfg.n_heads is None or cfg.d_model % cfg.n_heads:
        raise ValueError("sliding_chunks layers need n_heads dividing d_model")
    return SlidingChunkLayer(heads=cfg.n_heads, window=window // 2, pad=block.pad_to,
                             d_ff=block.intermediate_size, activation=cfg.activation or "gelu")


REGISTER = Entry(layer_types=("sliding_chunks",), build=build, tagged=("sliding_chunks",),
                 blocks=(("sliding_chunks", SlidingChunksConfig),))
