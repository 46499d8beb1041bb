"""LFM2's gated short convolution (Liquid AI Team, "LFM2 Technical Report", 2025,
arXiv:2511.23404), the token mixer of LFM2's conv layers: one projection d → 3d gives two gates B and C and the input x, the depthwise causal conv
of K taps runs over B·x, and the output projection reads C·conv(B·x). No activation.

Tensors (Hugging Face's `Lfm2ShortConv`, transformers 5.24 `models/lfm2/modeling_lfm2.py`):
in_proj d → 3d, conv (d, 1, K), out_proj d → d, each with a bias when `conv_bias` (in_proj and
out_proj too). Under tensor parallelism (vLLM's ShortConv) in_proj is column-parallel over each
of its three d-wide outputs, the conv splits by channel with it, out_proj is row-parallel: the
unit is one channel of d.

Forward FLOPs as the Hugging Face PyTorch path computes them (what FlopCounterMode counts), all
`weights`: in_proj (T×d)·(d×3d), the conv padding K − 1 on both sides, 2·B·d·K·(L+K−1) (its
K − 1 extra output columns computed and dropped), out_proj (T×d)·(d×d). The two gate products
are element-wise (2 per token and channel). A decode step: the projections and the conv on the
new token, 2·B·d·K (K multiply-adds per channel; Hugging Face's update over a K-column state
computes 2 output columns, twice this). Per sequence it keeps the conv window, d channels by K
columns (Hugging Face holds K; engines keep K − 1), in the cache dtype.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, ROW, WEIGHTS, Cache, Keeping, Kind, Part,
                   Published, Span, State, gemm, linear)
from .registry import Entry


@dataclass(frozen=True)
class ShortConv(Kind):
    """One gated short-conv mixer over `channels` (the model's d) with a conv of `conv` taps;
    `bias` puts biases on in_proj, the conv and out_proj (LFM2's `conv_bias`)."""

    channels: int
    conv: int = 3
    bias: bool = False
    slot = "conv"
    chunked_scan = False  # a convolution over the real tokens: no scan, nothing for --scan

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        c = self.channels
        parts = linear("in_proj", d, 3 * c, self.bias)
        parts.append(Part("conv.weight", c * self.conv, LAYERS, (c, 1, self.conv), COLUMN,
                          matmul=True, module="conv"))
        if self.bias:
            parts.append(Part("conv.bias", c, LAYERS, (c,), COLUMN, module="conv"))
        return parts + linear("out_proj", c, d, self.bias, ROW)

    # -------------------------------------------------------------------------------- FLOPs

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T, c = x.batch, x.n, x.tokens, self.channels
        return [
            gemm("in_proj", T, d, 3 * c),  # (T×d)·(d×3d)
            # depthwise, padding K−1: L+K−1 output columns of K taps per channel
            Part("conv", 2 * b * c * self.conv * (n + self.conv - 1), WEIGHTS),
            gemm("out_proj", T, c, d, ROW),  # (T×d)·(d×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The same for every position: the projections and K taps per channel."""
        t, c = batch * (last - first + 1), self.channels
        return [gemm("in_proj", t, d, 3 * c),
                Part("conv", 2 * t * c * self.conv, WEIGHTS),
                gemm("out_proj", t, c, d, ROW)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The gates B·x and C·conv (1 each per token and channel) and, with `bias`, the bias
        adds: in_proj's 3d and out_proj's d per token, the conv's on all L + K − 1 columns it
        computes."""
        b, n, T, c = x.batch, x.n, x.tokens, self.channels
        parts = [Part("elementwise.gates", 2 * T * c, ELEMENTWISE)]
        if self.bias:
            bias = T * 3 * c + b * c * (n + self.conv - 1) + T * d
            parts.append(Part("elementwise.bias", bias, ELEMENTWISE))
        return parts

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="short_conv",
                     states=(State("conv_state", self.channels * self.conv, "cache"),))

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What a training step keeps besides the block's input, 16-bit, split over the
        tensor-parallel channels, with Dao-AILab/causal-conv1d's CausalConv1dFn as Hugging
        Face's layer calls it (it saves its input and weights): in_proj's output (B and x, the
        first product's operands, and C, the second's), the conv's input B·x, its output (the
        second product's other operand) and out_proj's input."""
        sb, split, c = k.seq * k.batch, Fraction(1, k.tp), self.channels
        return [("in_proj_output", 2 * sb * 3 * c * split),
                ("conv_input", 2 * sb * c * split),
                ("conv_output", 2 * sb * c * split),
                ("o_input", 2 * sb * c * split)]

    def tp_units(self) -> int:
        return self.channels

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has gated short-convolution layers",))

    def describe(self) -> str:
        return f"gated short conv, {self.conv} taps"

    def notes(self) -> list[str]:
        return ["gated short convolution (LFM2): in_proj d → 3d, the depthwise conv over "
                "L + K − 1 columns, out_proj d → d (weights family, what FlopCounterMode counts); "
                "the two gate products are element-wise"]

    def decode_notes(self) -> list[str]:
        return ["gated short convolution decodes with K taps per channel on the new token; per "
                "sequence it keeps the conv window (d channels x K columns, as Hugging Face's "
                "cache holds it; engines keep K − 1) in the KV dtype"]


@dataclass(frozen=True)
class ShortConvConfig:
    """`short_conv:` in a model file (Hugging Face's LFM2 names): the conv's taps and whether
    the block's projections and conv carry biases."""

    conv_L_cache: Annotated[int, Min(1)] = 3
    conv_bias: bool = False


def build(cfg: Any, name: str) -> ShortConv:
    m = cfg.short_conv or ShortConvConfig()
    return ShortConv(channels=cfg.d_model, conv=m.conv_L_cache, bias=m.conv_bias)


REGISTER = Entry(layer_types=("short_conv",), build=build,
                 blocks=(("short_conv", ShortConvConfig),))
