"""`full_gate_bias` and `window_gate_bias`: gated softmax attention (`attention_gate: true`, one
sigmoid gate per output element from a bias-free d → h·d_v projection of the layer's input)
whose gate logits also get one learned bias per head, broadcast over the head's width (Beam:
transformers 5.24 `models/beam/modeling_beam.py` BeamAttention's `gate_bias`). The same kind
as `full` / `window` (`kinds.attention.Attention` with `gate`) but for h parameters and one
add per gate logit; the gate projection has no bias even where q, k, v and o have one.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..records import dataclass
from . import attention_layers
from .attention import Attention
from .base import LAYERS, REPLICATED, Part
from .registry import Entry


@dataclass(frozen=True)
class GateBiasAttention(Attention):
    """`Attention` with `gate`, a bias-free gate projection and a gate bias per head."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = [p for p in super().params(d, active) if p.name != "q_gate.bias"]
        return parts + [Part("gate_bias", self.heads, LAYERS, (self.heads,), REPLICATED,
                             module="")]

    def bias_adds(self, d: int, t_q: int, t_k: int) -> int:
        # the per-head gate bias is added to every gate logit, h·d_v per query token, in place
        # of the gate projection's bias the plain gated kind adds with qkv_bias
        own = t_q * self.d_o if self.qkv_bias else 0
        return super().bias_adds(d, t_q, t_k) - own + t_q * self.d_o

    def describe(self) -> str:
        return super().describe() + " (gate bias per head)"

    def notes(self) -> list[str]:
        return super().notes() + ["the gate logits get one learned bias per head (Beam): h "
                                  "parameters per layer, one add per gate logit"]


def build(cfg: Any, name: str) -> GateBiasAttention:
    if cfg.attention_gate is not True:
        raise ValueError(f"{name} layers need attention_gate: true (a gate per output element)")
    base = attention_layers.build(cfg, name.removesuffix("_gate_bias"))
    if type(base) is not Attention:
        raise ValueError(f"{name} layers are softmax attention (no latent_attention, sub_norms "
                         "or gemma4 block)")
    return GateBiasAttention(**{f.name: getattr(base, f.name) for f in fields(base)})


REGISTER = Entry(layer_types=("full_gate_bias", "window_gate_bias"), build=build)
