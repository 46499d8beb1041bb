"""ConvBERT's layer (Jiang et al. 2020, "ConvBERT: Improving BERT with Span-based Dynamic
Convolution", NeurIPS; transformers 5.24 `models/convbert/modeling_convbert.py`:
ConvBertSelfAttention, SeparableConv1D, GroupedLinearLayer) as an encoder's token mixer,
`layer_types: [convbert]`, holding the layer's MLP too (no `d_ff`: the kind's `intermediate`),
as SqueezeBERT's kind does.

With h' = heads // `head_ratio` (1 when that is 0) heads of d_h = (d / h') // 2, A = h'·d_h
(d/2): the mixed attention is

- self-attention over h' heads: q, k, v, d → A each with a bias; the scores and the weighted
  sum, 2·B·h'·L²·d_h each;
- span-based dynamic convolution: `key_conv_attn_layer`, a separable convolution (depthwise
  Conv1d over d channels of k = `conv_kernel_size` taps, no bias: 2·T·d·k; pointwise d → A,
  no bias: 2·T·d·A; then a bias of A), times the queries (element-wise), through
  `conv_kernel_layer` A → h'·k (with a bias), a softmax over the k taps; `conv_out_layer`
  d → A (with a bias) unfolded into k shifted copies and multiplied by those kernels,
  (d_h×k)·(k×1) per head and token: 2·T·A·k (attention family: activations times
  activations, linear in L);
- the two A-wide halves concatenated (2A = d) into the output dense d → d with a bias and the
  LayerNorm after the residual add (the kind holds it; the layer's norm is the MLP's).

The MLP: d → f, activation, f → d, each with a bias, in `groups` groups when `groups` > 1
(GroupedLinearLayer: g matmuls of (in/g) → (out/g), in·out/g parameters and 2·T·in·out/g FLOPs).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import SOFTMAX_PER_SCORE
from .base import (ATTENTION, COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, WEIGHTS, Keeping,
                   Kind, Part, Span, gemm, linear)
from .masks import Mask
from .mlp import ACTIVATION_FLOPS
from .registry import Entry


@dataclass(frozen=True)
class ConvBertLayer(Kind):
    """A ConvBERT layer over d = `d_model`: `heads` (h') attention heads of `head_dim` (d_h),
    dynamic convolutions of `kernel` taps, an MLP `intermediate` wide in `groups` groups with
    `activation`."""

    d_model: int
    heads: int
    head_dim: int
    kernel: int
    intermediate: int
    groups: int = 1
    activation: str = "gelu"
    slot = "convbert"
    bidirectional = True
    holds_mlp = True  # the layer's MLP is the kind's own (no d_ff)

    @property
    def width(self) -> int:
        """A = h'·d_h, the width of each half (attention, convolution)."""
        return self.heads * self.head_dim

    def params(self, d: int, active: bool = False) -> list[Part]:
        a, k, f, g = self.width, self.kernel, self.intermediate, self.groups
        parts = linear("q", d, a, True) + linear("k", d, a, True) + linear("v", d, a, True)
        parts += [Part("key_conv.depthwise.weight", d * k, LAYERS, (d, 1, k), REPLICATED,
                       matmul=True, module="key_conv.depthwise"),
                  Part("key_conv.pointwise.weight", a * d, LAYERS, (a, d, 1), COLUMN,
                       matmul=True, module="key_conv.pointwise"),
                  Part("key_conv.bias", a, LAYERS, (a, 1), COLUMN, module="key_conv")]
        parts += linear("conv_kernel", a, self.heads * k, True)
        parts += linear("conv_out", d, a, True)
        parts += linear("o", 2 * a, d, True, ROW)
        parts += [Part(f"attn_norm.{w}", d, LAYERS, (d,), REPLICATED, module="attn_norm")
                  for w in ("weight", "bias")]
        for name, n_in, n_out in (("up", d, f), ("down", f, d)):
            shape = (g, n_in // g, n_out // g) if g > 1 else (n_in, n_out)
            parts += [Part(f"{name}.weight", n_in * n_out // g, LAYERS, shape,
                           COLUMN if name == "up" else ROW, matmul=True, module=name),
                      Part(f"{name}.bias", n_out, LAYERS, (n_out,),
                           COLUMN if name == "up" else REPLICATED, module=name)]
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        a, k, f, g, t = self.width, self.kernel, self.intermediate, self.groups, x.tokens
        pairs = x.batch * x.n * x.source  # every (query, key) pair, per head
        return [
            gemm("q", t, d, a), gemm("k", t, d, a), gemm("v", t, d, a),  # (T×d)·(d×A)
            Part("key_conv.depthwise", 2 * t * d * k, WEIGHTS),  # k taps per channel
            gemm("key_conv.pointwise", t, d, a),  # (T×d)·(d×A)
            gemm("conv_kernel", t, a, self.heads * k),  # (T×A)·(A×h'k)
            gemm("conv_out", t, d, a),  # (T×d)·(d×A)
            Part("dynamic_conv", 2 * t * a * k, ATTENTION),  # per head and token (d_h×k)·(k×1)
            Part("scores", 2 * self.heads * pairs * self.head_dim, ATTENTION),
            Part("av", 2 * self.heads * pairs * self.head_dim, ATTENTION),
            gemm("o", t, 2 * a, d, ROW),  # (T×2A)·(2A×d)
            Part("up", 2 * t * d * f // g, WEIGHTS, weight_shape=(d, f) if g == 1 else ()),
            Part("down", 2 * t * f * d // g, WEIGHTS, role=ROW,
                 weight_shape=(f, d) if g == 1 else ()),
        ]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Bias adds (q, k, v, the convolution's, conv_kernel, conv_out, o, up, down), the
        query-key product (A), the kernels' softmax (h'·k), the scores' softmax, the
        attention LayerNorm (7·d) and the MLP's activation (f)."""
        a, k, f, t = self.width, self.kernel, self.intermediate, x.tokens
        biases = 5 * a + self.heads * k + d + f + d
        scores = self.heads * x.batch * x.n * x.source
        return [Part("elementwise.bias", t * biases, ELEMENTWISE),
                Part("elementwise.conv", t * (a + SOFTMAX_PER_SCORE * self.heads * k),
                     ELEMENTWISE),
                Part("elementwise.softmax", SOFTMAX_PER_SCORE * scores, ELEMENTWISE),
                Part("elementwise.attn_norm", 7 * t * d, ELEMENTWISE),
                Part("elementwise.activation", ACTIVATION_FLOPS[self.activation] * t * f,
                     ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """16-bit per token, as eager PyTorch keeps them for backward: the layer input (read
        by q, k, v, the convolutions and conv_out), q, k, v, the convolution's output, its
        product with q, the kernels, the unfolded values (A·k), the concatenated output (d),
        the attention output and its norm's input (d each), then the MLP's input (d) and its
        two f-wide hidden tensors; the scores and probabilities, 2·h'·L² per sequence each."""
        tokens, split = k.seq * k.batch, Fraction(1, k.tp)
        a, kk = self.width, self.kernel
        per_token = d + 3 * a + 2 * a + self.heads * kk + a * kk + 3 * d + d + 2 * \
            self.intermediate
        scores = 2 * self.heads * k.batch * k.seq * k.seq
        return [("convbert", 2 * (tokens * per_token + scores) * split)]

    def pair_terms(self) -> list[tuple[int, Optional[Mask]]]:
        """QKᵀ and AV over every pair: 4·h'·d_h per pair."""
        return [(4 * self.heads * self.head_dim, Mask("bidirectional"))]

    def tp_units(self) -> int:
        return self.heads

    def describe(self) -> str:
        return (f"ConvBERT layer, {self.heads} heads of {self.head_dim} and span-based dynamic "
                f"convolutions of {self.kernel} taps" + (f", MLP in {self.groups} groups"
                                                         if self.groups > 1 else ""))

    def notes(self) -> list[str]:
        return [f"ConvBERT: {self.heads} self-attention heads of {self.head_dim} beside "
                f"span-based dynamic convolutions of {self.kernel} taps (a separable "
                "convolution, kernels from the query·key-convolution product, applied to the "
                "unfolded conv_out values), as transformers computes them"
                + (f"; a grouped MLP ({self.groups} groups)" if self.groups > 1 else "")]


@dataclass(frozen=True)
class ConvBertConfig:
    """`convbert:` in a model file: ConvBERT's `head_ratio`, `conv_kernel_size`, `num_groups`
    and `intermediate_size`, for `layer_types: [convbert]` layers."""

    head_ratio: Annotated[int, Min(1)] = 2
    conv_kernel_size: Annotated[int, Min(1)] = 9
    num_groups: Annotated[int, Min(1)] = 1
    intermediate_size: Annotated[int, Min(1)] = 3072


def build(cfg: Any, name: str) -> ConvBertLayer:
    block = cfg.convbert or ConvBertConfig()
    d, f, g = cfg.d_model, block.intermediate_size, block.num_groups
    if cfg.n_heads is None:
        raise ValueError("ConvBERT needs n_heads")
    heads = max(cfg.n_heads // block.head_ratio, 1)
    if d % heads:
        raise ValueError(f"ConvBERT's {heads} heads (n_heads // head_ratio) must divide "
                         f"d_model={d}")
    head_dim = (d // heads) // 2
    if 2 * heads * head_dim != d:
        raise ValueError(f"ConvBERT's two halves of {heads}·{head_dim} do not make d_model={d}: "
                         "d_model / (n_heads // head_ratio) must be even")
    if block.conv_kernel_size % 2 == 0:
        raise ValueError(f"convbert.conv_kernel_size={block.conv_kernel_size} must be odd: an "
                         "even kernel's padding lengthens the sequence and transformers fails")
    if d % g or f % g:
        raise ValueError(f"convbert.num_groups={g} must divide d_model={d} and "
                         f"intermediate_size={f}")
    return ConvBertLayer(d_model=d, heads=heads, head_dim=head_dim,
                         kernel=block.conv_kernel_size, intermediate=f, groups=g,
                         activation=cfg.activation)


REGISTER = Entry(layer_types=("convbert",), build=build, blocks=(("convbert", ConvBertConfig),))
