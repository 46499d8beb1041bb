"""RWKV's block (Peng et al. 2023, "RWKV: Reinventing RNNs for the Transformer Era",
arXiv:2305.13048; RWKV-4 as transformers 5.24 builds it, `models/rwkv/modeling_rwkv.py`): after
the layer's first LayerNorm, time mixing, the residual add, a second LayerNorm and channel
mixing. The kind fills the layer's mixer slot whole (the model has no separate MLP), as the
block is one recurrent unit whose two halves each keep a token-shift state.

- Time mixing (`RwkvSelfAttention`): each of key, value and receptance reads its own mix of
  the token and the one before (token shift: x·μ + x₋₁·(1 − μ), μ a d-wide parameter each),
  key, value, receptance d → a and output a → d without biases, `time_decay` w and
  `time_first` u (a each). The WKV recurrence per channel, wkv_t = (Σ_{i<t}
  e^{−(t−1−i)w + k_i}·v_i + e^{u + k_t}·v_t) / (the same without v), runs element-wise
  (Hugging Face's CPU path is a loop of element-wise ops; its CUDA kernel the same
  arithmetic); the output reads σ(r)·wkv.
- Channel mixing (`RwkvFeedForward`): two token-shift mixes (d each), key d → f, a squared ReLU,
  value f → d, receptance d → d; the output is σ(r)·value.

Forward FLOPs are the seven matmuls (what FlopCounterMode counts); the token shifts, sigmoids,
the squared ReLU, the WKV recurrence, the inner LayerNorm and residual add are element-wise. A
decode step runs the same matmuls on the new token. Per sequence and layer it keeps the two
token-shift vectors (d each, in the model's dtype) and the WKV numerator, denominator and
running maximum (3·a, fp32), whatever the length: Hugging Face's `state` list.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, Cache, EngineCache,
                   EngineState, Keeping, Kind, Part, Published, Span, State, gemm, linear)
from .norm import Norm
from .registry import Entry

LAYERNORM = Norm("layernorm")  # ln2: a gain and a bias
SIGMOID = 4  # negate, exp, add, divide
TOKEN_SHIFT = 3  # x·μ + x₋₁·(1 − μ): two multiplies and an add ((1 − μ) is per channel)
# One WKV step per channel (`rwkv_linear_attention_cpu`): the output's max(m, k + u) 2 (the
# add, the max), two exps of a difference 4, numerator e1·num + e2·v 3, denominator e1·den + e2 2,
# the divide 1; the state's max(m + w, k) 2, two exps of a difference 4, numerator 3,
# denominator 2 → 23
WKV_STEP = 23


@dataclass(frozen=True)
class Rwkv(Kind):
    """One RWKV block after its first norm: time mixing at width `attention` (a), then a
    LayerNorm and channel mixing at width `ffn` (f)."""

    attention: int
    ffn: int
    width: int  # the model's d: the token-shift states are d wide
    slot = "rwkv"

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        """Time mixing's key, value, receptance (d → a, column-parallel), output (a → d,
        row-parallel), time_decay and time_first (a each, split with the channels) and its three
        token-shift mixes (d each); the LayerNorm; channel mixing's key (d → f) and value
        (f → d), receptance d → d (replicated: its gate multiplies the reduced output) and two
        token-shift mixes."""
        a, f = self.attention, self.ffn
        return [
            *linear("time.key", d, a, False), *linear("time.value", d, a, False),
            *linear("time.receptance", d, a, False), *linear("time.output", a, d, False, ROW),
            Part("time.decay", a, LAYERS, (a,), COLUMN, module="time"),
            Part("time.first", a, LAYERS, (a,), COLUMN, module="time"),
            Part("time.mix", 3 * d, LAYERS, (3, d), REPLICATED, module="time"),
            *LAYERNORM.params(d, "ln2"),
            *linear("channel.key", d, f, False), *linear("channel.value", f, d, False, ROW),
            *linear("channel.receptance", d, d, False, REPLICATED),
            Part("channel.mix", 2 * d, LAYERS, (2, d), REPLICATED, module="channel"),
        ]

    # -------------------------------------------------------------------------------- FLOPs

    def _matmuls(self, d: int, t: int) -> list[Part]:
        a, f = self.attention, self.ffn
        return [
            gemm("time.key", t, d, a), gemm("time.value", t, d, a),  # (T×d)·(d×a) each
            gemm("time.receptance", t, d, a),
            gemm("time.output", t, a, d, ROW),  # (T×a)·(a×d)
            gemm("channel.key", t, d, f),  # (T×d)·(d×f)
            gemm("channel.value", t, f, d, ROW),  # (T×f)·(f×d)
            gemm("channel.receptance", t, d, d, REPLICATED),  # (T×d)·(d×d)
        ]

    def forward(self, d: int, x: Span) -> list[Part]:
        return self._matmuls(d, x.tokens)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The same matmuls for the new token at every position."""
        return self._matmuls(d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Per token: five token-shift mixes (3 per channel each), the WKV step (23 per
        channel), σ(r)·wkv (5 per channel of a), the residual add and LayerNorm (1 + 7 per
        channel of d), the squared ReLU (2 per channel of f), σ(r)·value (5 per channel)."""
        T, a, f = x.tokens, self.attention, self.ffn
        work = T * (5 * TOKEN_SHIFT * d + WKV_STEP * a + (SIGMOID + 1) * a
                    + (1 + LAYERNORM.per_element) * d + 2 * f + (SIGMOID + 1) * d)
        return [Part("elementwise.rwkv", work, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="rwkv", states=(State("token_shift", 2 * self.width, "cache"),
                                           State("wkv", 3 * self.attention, "state")))

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """One state page per sequence, as a paged engine keeps a recurrent layer's: the
        token-shift vectors (2·d, the model's dtype, whole on every rank) and the WKV states
        (3·a, split with time mixing's channels)."""
        return (EngineCache("state", states=(
            EngineState("token_shift", 2 * self.width, "conv"),
            EngineState("wkv", 3 * self.attention // tp, "state"))),)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What a training step keeps besides the block's input, 16-bit: the five mixed inputs
        (d each), k, v, σ(r) and wkv (a each, split over tensor-parallel channels), the
        LayerNorm's input (d), channel key's output and its squared ReLU (f each, split) and
        σ(r) and value's output (d each)."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        a, f = self.attention, self.ffn
        return [("token_shift_mixes", Fraction(2 * sb * 5 * d)),
                ("time_kvr_wkv", 2 * sb * 4 * a * split),
                ("ln2_input", Fraction(2 * sb * d)),
                ("channel_key", 2 * sb * 2 * f * split),
                ("channel_gate_value", Fraction(2 * sb * 2 * d))]

    def tp_units(self) -> int:
        return gcd(self.attention, self.ffn)

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention and an MLP in every layer; this model has RWKV time-mixing and "
            "channel-mixing blocks",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        return None  # neither codebase builds RWKV

    def describe(self) -> str:
        return f"RWKV time and channel mixing, {self.attention:,} / {self.ffn:,} wide"

    def notes(self) -> list[str]:
        return ["RWKV (Peng et al. 2023): time mixing's key, value, receptance d → a and "
                "output a → d, channel mixing's key d → f, value f → d and receptance d → d "
                "(weights family, what FlopCounterMode counts); token shifts, the WKV "
                "recurrence, sigmoids and the squared ReLU are element-wise"]

    def decode_notes(self) -> list[str]:
        return ["RWKV decodes with the same matmuls per token; per sequence and layer it keeps "
                "two token-shift vectors (d each, in the KV dtype) and the WKV numerator, "
                "denominator and maximum (3 x a, in the state dtype), whatever the length"]


@dataclass(frozen=True)
class RwkvConfig:
    """`rwkv:` in a model file (Hugging Face's RWKV names): time mixing's width
    (`attention_hidden_size`) and channel mixing's (`intermediate_size`)."""

    attention_hidden_size: Annotated[int, Min(1)]
    intermediate_size: Annotated[int, Min(1)]


def build(cfg: Any, name: str) -> Rwkv:
    m = cfg.rwkv
    if m is None:
        raise ValueError("rwkv layers need an rwkv block (attention_hidden_size, "
                         "intermediate_size)")
    if cfg.d_ff is not None or cfg.moe is not None:
        raise ValueError("rwkv layers hold their own channel mixing: give no d_ff or moe")
    return Rwkv(attention=m.attention_hidden_size, ffn=m.intermediate_size, width=cfg.d_model)


REGISTER = Entry(layer_types=("rwkv",), build=build, blocks=(("rwkv", RwkvConfig),))
