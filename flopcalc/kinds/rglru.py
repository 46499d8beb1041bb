"""Griffin's recurrent block (De et al. 2024, "Griffin: Mixing Gated Linear Recurrences with Local
Attention for Efficient Language Models", arXiv:2402.19427; RecurrentGemma as transformers 5.24
builds it, `models/recurrent_gemma/modeling_recurrent_gemma.py`): the temporal mixer of
RecurrentGemma's recurrent layers.

Two branches read the normed input: y = GELU(linear_y(x)) and x' = linear_x(x), both d → w
(the LRU width); x' runs through a depthwise causal conv of K taps (with a bias) and the
Real-Gated Linear Recurrent Unit (RG-LRU): an input gate and a recurrence gate, each a
block-diagonal matmul over H blocks of w/H (`torch.baddbmm`, with a bias), a = σ(·)^(8·softplus
(Λ)), h_t = a_t·h_{t−1} + √(1 − a_t²)·(i_t·x_t); the output linear_out(h·y), w → d. Every
linear holds a bias (nn.Linear's default), the conv too.

Forward FLOPs as the Hugging Face PyTorch path computes them (what FlopCounterMode counts), all
`weights`: linear_y and linear_x 2·T·d·w each, the conv 2·B·w·K·(L+K−1) (padding K − 1 on both
sides, the extra columns dropped), the two gates 2·T·w·(w/H) each, linear_out 2·T·w·d. The
recurrence, gates' sigmoids and products are element-wise (a loop of element-wise ops in Hugging
Face). A decode step: the same projections and gates for the new token and K taps per channel.
Per sequence it keeps the conv window (w × (K − 1), the model's dtype) and the recurrent state
(w, fp32).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, ROW, WEIGHTS, Cache, EngineCache, EngineState,
                   Keeping, Kind, Part, Published, Span, State, gemm, linear)
from .registry import Entry

SIGMOID = 4  # negate, exp, add, divide
GELU = 8  # tanh approximation: cube, 2 multiplies, add, tanh, add, 2 multiplies
# One RG-LRU step per channel beyond its gates' sigmoids: the exponent −8·r·softplus(Λ) 2
# (softplus per channel is hoisted), a = exp 1, a² = exp(2·) 2, √(1 − a²) 2, i·x 1, the
# normalising multiply 1, h = a·h + x 2 → 11
LRU_STEP = 11


@dataclass(frozen=True)
class Rglru(Kind):
    """Griffin's recurrent block over `width` channels (w) in `heads` gate blocks, with a
    conv of `conv` taps."""

    width: int
    heads: int
    conv: int = 4
    slot = "recurrent"

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ValueError(f"rglru.lru_width={self.width} must be a multiple of "
                             f"rglru.n_heads={self.heads} (the gates' blocks)")

    @property
    def block(self) -> int:
        return self.width // self.heads

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        """linear_y and linear_x (d → w, column-parallel), the conv (w, 1, K) and its bias, the
        RG-LRU's Λ (w), its two block-diagonal gates (H blocks of w/H × w/H, split by block)
        and their biases, linear_out (w → d, row-parallel), each with a bias."""
        w, h, b = self.width, self.heads, self.block
        parts = [*linear("linear_y", d, w, True), *linear("linear_x", d, w, True),
                 Part("conv.weight", w * self.conv, LAYERS, (w, 1, self.conv), COLUMN,
                      matmul=True, module="conv"),
                 Part("conv.bias", w, LAYERS, (w,), COLUMN, module="conv"),
                 Part("rg_lru.recurrent_param", w, LAYERS, (w,), COLUMN, module="rg_lru")]
        for gate in ("input_gate", "recurrent_gate"):
            parts += [Part(f"rg_lru.{gate}_weight", h * b * b, LAYERS, (h, b, b), COLUMN,
                           matmul=True, module="rg_lru"),
                      Part(f"rg_lru.{gate}_bias", h * b, LAYERS, (h, b), COLUMN,
                           module="rg_lru")]
        return parts + linear("linear_out", w, d, True, ROW)

    # -------------------------------------------------------------------------------- FLOPs

    def _projections(self, d: int, t: int) -> list[Part]:
        w, h, b = self.width, self.heads, self.block
        return [
            gemm("linear_y", t, d, w),  # (T×d)·(d×w)
            gemm("linear_x", t, d, w),
            # per block, (T×w/H)·(w/H×w/H): H blocks → 2·T·w·(w/H) each gate
            gemm("rg_lru.input_gate", t * h, b, b, lead=(h,)),
            gemm("rg_lru.recurrent_gate", t * h, b, b, lead=(h,)),
            gemm("linear_out", t, w, d, ROW),  # (T×w)·(w×d)
        ]

    def forward(self, d: int, x: Span) -> list[Part]:
        parts = self._projections(d, x.tokens)
        # depthwise, padding K−1: L+K−1 output columns of K taps per channel
        conv = Part("conv", 2 * x.batch * self.width * self.conv * (x.n + self.conv - 1),
                    WEIGHTS)
        return parts[:2] + [conv] + parts[2:]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The same for every position: the projections, the gates and K taps per channel."""
        t = batch * (last - first + 1)
        parts = self._projections(d, t)
        return parts[:2] + [Part("conv", 2 * t * self.width * self.conv, WEIGHTS)] + parts[2:]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Per token: the five bias adds (4·w + d), the GELU on y (8 per channel), the gates'
        sigmoids (4 each), the RG-LRU step (11 per channel), h·y (1); the conv's bias on all
        L + K − 1 columns it computes."""
        T, w = x.tokens, self.width
        work = (T * (4 * w + d) + T * w * (GELU + 2 * SIGMOID + LRU_STEP + 1)
                + x.batch * w * (x.n + self.conv - 1))
        return [Part("elementwise.rglru", work, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="rglru",
                     states=(State("conv_state", self.width * (self.conv - 1), "cache"),
                             State("recurrent_state", self.width, "state")))

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """One state page per sequence: the conv window (K − 1 rows of w channels) and the
        recurrent state (w), both split with the channels."""
        w = self.width // tp
        return (EngineCache("state", states=(
            EngineState("conv", (self.conv - 1) * w, "conv", w),
            EngineState("recurrent", w, "state"))),)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What a training step keeps besides the block's input, 16-bit, split over the
        tensor-parallel channels: linear_y's output and its GELU, linear_x's output (the conv's
        input), the conv's output (the gates' input), the two gates, the recurrence's output
        and linear_out's input."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        return [("y_branch", 2 * sb * 2 * self.width * split),
                ("x_branch", 2 * sb * 2 * self.width * split),
                ("gates", 2 * sb * 2 * self.width * split),
                ("lru_output", 2 * sb * 2 * self.width * split)]

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has Griffin recurrent blocks",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        return None  # neither codebase builds Griffin

    def describe(self) -> str:
        return f"Griffin RG-LRU, {self.width:,} wide, {self.conv} taps"

    def notes(self) -> list[str]:
        return ["Griffin recurrent block (RecurrentGemma): linear_y and linear_x d → w, the "
                "depthwise conv over L + K − 1 columns, the RG-LRU's two block-diagonal gates "
                "2·T·w·(w/H) each, linear_out w → d (weights family, what FlopCounterMode "
                "counts); the recurrence and gates' sigmoids are element-wise"]

    def decode_notes(self) -> list[str]:
        return ["Griffin's recurrent block decodes with K taps per channel and its gates on the "
                "new token; per sequence it keeps the conv window (w x (K − 1), in the KV "
                "dtype) and the recurrent state (w, in the state dtype)"]


@dataclass(frozen=True)
class RglruConfig:
    """`rglru:` in a model file (Hugging Face's RecurrentGemma names): the LRU width, its gate
    blocks (`num_attention_heads` there) and the conv's taps."""

    lru_width: Annotated[int, Min(1)]
    n_heads: Annotated[int, Min(1)]
    conv1d_width: Annotated[int, Min(1)] = 4


def build(cfg: Any, name: str) -> Rglru:
    m = cfg.rglru
    if m is None:
        raise ValueError("rglru layers need an rglru block (lru_width, n_heads, conv1d_width)")
    return Rglru(width=m.lru_width, heads=m.n_heads, conv=m.conv1d_width)


REGISTER = Entry(layer_types=("rglru",), build=build, blocks=(("rglru", RglruConfig),))
