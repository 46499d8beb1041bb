"""`global_local`: a Pegasus-X encoder layer (Phang et al. 2022, "Investigating Efficiently
Extending Transformers for Long Input Summarization", §3; transformers 5.24
`models/pegasus_x/modeling_pegasus_x.py` PegasusXEncoderLayer, PegasusXGlobalLocalAttention):
a pre-norm layer over the s tokens and G = `num_global_tokens` global tokens (a learned G × d
table, read once per sequence), the two streams sharing one set of q, k, v and o (no biases)
and one MLP (fc1, fc2 with biases), each with its own norm before attention.

The encoder pads the sequence with zeros to P, the next multiple of b = `block_size`, before
the first layer (and drops the padding after the last). Per layer and sequence:

- q, k, v, o on the P' tokens and the G globals, (P' + G) rows of (d×d) each; P' = P, or on
  staggered layers (every odd layer with `stagger_local_blocks`) P + 2·⌊b/2⌋: the layer pads
  half a block on either side so its blocks straddle the previous layer's;
- the globals' scores against every global and token, and their weighted sum:
  2·h·G·(G + P')·d_h each; the tokens' scores against the G globals and their own block of b,
  and the weighted sum: 2·h·P'·(G + b)·d_h each (blocked einsums, what FlopCounterMode counts;
  no mask changes a shape);
  where a weighted sum runs over one key (G = 1: the tokens' sum over the globals; b = 1: over
  their block) torch.einsum computes it element-wise, no matmul, and flopcalc counts it with
  the element-wise work, as FlopCounterMode counts no matmul there;
- the MLP (d → f → d) on the P tokens (a staggered layer drops its extra half blocks before
  it) and the G globals.

`--attention causal` counts the same pairs: which keys each query scores is fixed by the
blocks, with nothing masked but the padding. The layer's own norm is the tokens' norm before
attention; the kind holds the globals' and the one before the MLP (`final_layer_norm`, which
both streams share).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, ROW, WEIGHTS, Kind, Part,
                   Published, Span, linear)
from .mlp import ACTIVATION_FLOPS
from .registry import Entry


@dataclass(frozen=True)
class GlobalLocalLayer(Kind):
    """A Pegasus-X encoder layer: `heads` heads over d, blocks of `block` (b) tokens, `globals`
    (G) global tokens, `staggered` blocks shifted by half a block, an MLP `d_ff` wide of
    `activation`; `first`: layer 0, which holds the G × d global-token table."""

    heads: int
    block: int
    globals: int
    d_ff: int
    activation: str = "gelu"
    staggered: bool = False
    first: bool = False
    slot = "global_local"
    bidirectional = True
    holds_mlp = True  # the layer's MLP is the kind's own

    def padded(self, n: int) -> int:
        """P: n rounded up to a multiple of the block (PegasusXEncoder's padding)."""
        return -(-n // self.block) * self.block

    def attended(self, n: int) -> int:
        """P': the tokens this layer's attention runs on (P, or P plus half a block on either
        side when staggered)."""
        return self.padded(n) + (2 * (self.block // 2) if self.staggered else 0)

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts: list[Part] = []
        if self.first:  # embed_global: one lookup per global token and sequence, no matmul
            parts.append(Part("global_embedding", self.globals * d, LAYERS,
                              (self.globals, d), REPLICATED, module="global_embedding"))
        for name in ("q", "k", "v"):
            parts += linear(name, d, d, False)
        parts += linear("o", d, d, False, ROW)
        for norm in ("global_norm", "mlp_norm"):
            parts += [Part(f"{norm}.{w}", d, LAYERS, (d,), REPLICATED, module=norm)
                      for w in ("weight", "bias")]
        return parts + linear("up", d, self.d_ff, True) + linear("down", self.d_ff, d, True, ROW)

    def forward(self, d: int, x: Span) -> list[Part]:
        g, b, f = self.globals, self.block, self.d_ff
        p, att = self.padded(x.n), self.attended(x.n)
        t_att = x.batch * (att + g)  # rows through q, k, v, o
        t_mlp = x.batch * (p + g)  # rows through the MLP
        d_h = d // self.heads
        # (T×d)·(d×d) → 2·T·d² each; the MLP (T×d)·(d×f), (T×f)·(f×d) → 2·T·d·f each
        parts = [Part(name, 2 * t_att * d * d, WEIGHTS) for name in ("q", "k", "v", "o")]
        parts += [Part("up", 2 * t_mlp * d * f, WEIGHTS), Part("down", 2 * t_mlp * f * d, WEIGHTS)]
        # per head: globals (G×d_h)·(d_h×(G+P')), tokens in blocks (b×d_h)·(d_h×(G+b)) · P'/b
        pairs = x.batch * self.heads * (g * (g + att) + att * (g + b))
        return parts + [Part("scores", 2 * pairs * d_h, ATTENTION),
                        Part("values", 2 * self.value_pairs(x)[0] * d_h, ATTENTION)]

    def value_pairs(self, x: Span) -> tuple[int, int]:
        """(pairs whose weighted sum is a matmul, pairs torch.einsum sums element-wise): the
        tokens' sum over the globals is a contraction over one key when G = 1, over their
        block when b = 1, which einsum runs as an element-wise product (no matmul:
        FlopCounterMode counts none)."""
        g, b, att = self.globals, self.block, self.attended(x.n)
        heads = x.batch * self.heads
        spans = [(g * (g + att), g + att), (att * g, g), (att * b, b)]
        matmul = sum(n for n, keys in spans if keys > 1)
        return heads * matmul, heads * sum(n for n, keys in spans if keys == 1)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        g = self.globals
        t_mlp = x.batch * (self.padded(x.n) + g)
        return [Part("elementwise.bias", t_mlp * (self.d_ff + d), ELEMENTWISE),
                Part("elementwise.activation",
                     t_mlp * self.d_ff * ACTIVATION_FLOPS.get(self.activation, 0), ELEMENTWISE),
                # the globals' norm and residual, both streams' MLP norm and residual
                Part("elementwise.norms", 7 * d * (x.batch * g + t_mlp), ELEMENTWISE),
                Part("elementwise.residual", d * (x.batch * g + t_mlp), ELEMENTWISE),
                Part("elementwise.values", 2 * self.value_pairs(x)[1] * (d // self.heads),
                     ELEMENTWISE)]

    def count_period(self) -> Optional[int]:
        return self.block

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(heads=self.heads, kv_heads=self.heads, head_dim=d // self.heads,
                         qk_width=d, v_width=d, kv_width=d, kv_kind="mha", ffn="plain",
                         ffn_widths=(self.d_ff,),
                         departures=("Pegasus-X's block-local attention with global tokens",))

    def describe(self) -> str:
        stagger = ", staggered" if self.staggered else ""
        return (f"Pegasus-X layer, blocks of {self.block:,}, {self.globals:,} global "
                f"tokens{stagger}")

    def notes(self) -> list[str]:
        return [f"Pegasus-X encoder layers: the source padded to a multiple of {self.block:,}, "
                f"{self.globals:,} global tokens through every projection and the MLP; each "
                "token scores its block and the globals, each global every token "
                "(2·h·d_h·(G·(G+P') + P'·(G+b)) per matmul; P' adds half a block either side on "
                "staggered layers)"]


@dataclass(frozen=True)
class GlobalLocalConfig:
    """`global_local:` in a model file: Pegasus-X's `block_size`, `num_global_tokens`,
    `stagger_local_blocks` (every odd layer) and the MLP's width."""

    block_size: Annotated[int, Min(1)]
    num_global_tokens: Annotated[int, Min(0)]
    intermediate_size: Annotated[int, Min(1)]
    stagger_local_blocks: bool = True


def build(cfg: Any, name: str) -> GlobalLocalLayer:
    block = cfg.global_local
    if block is None:
        raise ValueError("global_local layers need a global_local block (block_size, "
                         "num_global_tokens, intermediate_size)")
    if cfg.n_heads is None or cfg.d_model % cfg.n_heads:
        raise ValueError("global_local layers need n_heads dividing d_model")
    staggered = name == "global_local_staggered"  # layer 0 (first) never is
    if staggered and block.block_size % 2:
        raise ValueError(f"global_local: block_size={block.block_size} is odd; staggered "
                         "layers pad half a block either side and need an even block")
    return GlobalLocalLayer(heads=cfg.n_heads, block=block.block_size,
                            globals=block.num_global_tokens, d_ff=block.intermediate_size,
                            activation=cfg.activation or "gelu", staggered=staggered,
                            first=name == "global_local_first")


REGISTER = Entry(layer_types=("global_local", "global_local_staggered", "global_local_first"),
                 build=build,
                 blocks=(("global_local", GlobalLocalConfig),))
