"""`dynamic_mask`: Doge's dynamic-mask attention (transformers 5.24
`models/doge/modeling_doge.py` DogeAttention and DogeDecoderLayer): causal attention with a
per-head QK-norm whose mask is shifted per KV head and key by exp(A·softplus(dt_proj(v))), with
dt_proj h_kv·d_v → h_kv (a bias with `attention_bias`) over the value states and A one scalar
per KV head; the layer's two learned residual scales (`input_residual` and
`post_attention_residual`, d each, multiplying the residual stream before each add) are held
here too, as the layer's only other tensors.

Beyond `keep_window_size` keys transformers keeps the top keys per query in the mask, but its
attention still computes every score: the count is causal attention's over all keys, plus
dt_proj (T×h_kv·d_v)·(h_kv·d_v×h_kv) on every key token. The mask, the exp and softplus and the
residual scales are element-wise.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..records import dataclass
from . import attention_layers
from .attention import Attention
from .base import ELEMENTWISE, LAYERS, REPLICATED, Part, Span, gemm, linear
from .registry import Entry

SOFTPLUS_EXP = 5  # softplus (exp, add, log), times A, exp


@dataclass(frozen=True)
class DynamicMaskAttention(Attention):
    """`Attention` with Doge's dt_proj, A and the layer's residual scales (see the module)."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        return (super().params(d, active) + linear("dt", self.d_v, self.kv_heads, self.qkv_bias)
                + [Part("A", self.kv_heads, LAYERS, (self.kv_heads,), REPLICATED, module=""),
                   Part("residual_scales", 2 * d, LAYERS, (2, d), REPLICATED, module="")])

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        # (T_k×h_kv·d_v)·(h_kv·d_v×h_kv): one mask logit per KV head and key
        return super().flops(d, t_q, t_k, pairs) + [gemm("dt", t_k, self.d_v, self.kv_heads)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        # softplus, ×A and exp per mask logit; the mask added to every score (one add per
        # scored pair and head); the two residual scales (one multiply per element each)
        dt = x.source_tokens * self.kv_heads
        bias = x.source_tokens * self.kv_heads if self.qkv_bias else 0
        return super().elementwise(d, x) + [
            Part("elementwise.dynamic_mask",
                 SOFTPLUS_EXP * dt + bias + self.heads * self.pairs(x), ELEMENTWISE),
            Part("elementwise.residual_scales", 2 * x.tokens * d, ELEMENTWISE)]

    def describe(self) -> str:
        return super().describe() + ", dynamic mask"

    def notes(self) -> list[str]:
        return super().notes() + [
            "dynamic-mask attention (Doge): dt_proj over the values (2·h_kv·d_v·h_kv FLOPs per "
            "token) shifts the mask; every score is computed (counted as causal attention over "
            "all keys, keep_window_size or not); the layer's two d-wide residual scales are "
            "counted with the attention"]


def build(cfg: Any, name: str) -> DynamicMaskAttention:
    base = attention_layers.build(cfg, "full")
    if type(base) is not Attention or base.gate:
        raise ValueError("dynamic_mask layers are plain softmax attention (no latent_attention, "
                         "attention_gate or sub_norms)")
    return DynamicMaskAttention(**{f.name: getattr(base, f.name) for f in fields(base)})


REGISTER = Entry(layer_types=("dynamic_mask",), build=build)
