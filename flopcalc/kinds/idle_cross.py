"""`full_idle_cross`: causal softmax attention in a layer that also holds a cross-attention
sublayer it never runs in a text-only forward (TrOCR: transformers 5.24
`models/trocr/modeling_trocr.py`, TrOCRForCausalLM sets `is_decoder`, so every
TrOCRDecoderLayer builds `encoder_attn` and `encoder_attn_layer_norm`, and runs them only when a
VisionEncoderDecoderModel passes `encoder_hidden_states`).

The held sublayer is counted as tensors only: q and o (d × d), k and v (`kv_width` × d, the
config's `cross_attention_hidden_size`, else d), each with its bias, and the LayerNorm's gain and
bias (2·d: the model's norm). They are parameters (memory, checkpoints, optimizer state) but
cost no FLOPs, no activations and no cache: the forward flopcalc counts is the text-only one,
the same kind as `full` (`kinds.attention.Attention`) in everything else.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from . import attention_layers
from .attention import Attention
from .base import ROW, Part, linear
from .norm import Norm, model_norm
from .registry import Entry


@dataclass(frozen=True)
class IdleCrossAttention(Attention):
    """`Attention` whose layer also holds an unrun cross-attention (`kv_width`-wide keys and
    values in, d out) and its `cross_norm`."""

    kv_width: int = 0
    cross_norm: Norm = Norm("layernorm")

    def params(self, d: int, active: bool = False) -> list[Part]:
        kv = self.kv_width or d
        held = (linear("idle_cross.q", d, d, True) + linear("idle_cross.k", kv, d, True)
                + linear("idle_cross.v", kv, d, True) + linear("idle_cross.o", d, d, True, ROW))
        return super().params(d, active) + held + self.cross_norm.params(d, "idle_cross_norm")

    def describe(self) -> str:
        return super().describe() + ", an idle cross-attention held"

    def notes(self) -> list[str]:
        return ["the layers hold a cross-attention (q, k, v, o with biases, and its LayerNorm) "
                "that runs only on an image encoder's states: counted as parameters, no FLOPs"]


@dataclass(frozen=True)
class IdleCrossConfig:
    """`idle_cross:` in a model file: the width of the encoder states the held cross-attention's
    keys and values would read (TrOCR's `cross_attention_hidden_size`; absent: d_model)."""

    kv_width: Optional[Annotated[int, Min(1)]] = None


def build(cfg: Any, name: str) -> IdleCrossAttention:
    base = attention_layers.build(cfg, "full")
    if type(base) is not Attention:
        raise ValueError("full_idle_cross is softmax attention: remove latent_attention")
    if base.heads * base.qk_dim != cfg.d_model:
        raise ValueError("full_idle_cross needs the heads to span d_model (head_dim = "
                         "d_model / n_heads), as the cross-attention it holds")
    block = cfg.idle_cross or IdleCrossConfig()
    return IdleCrossAttention(**{f.name: getattr(base, f.name) for f in fields(base)},
                              kv_width=block.kv_width or cfg.d_model, cross_norm=model_norm(cfg))


REGISTER = Entry(layer_types=("full_idle_cross",), build=build,
                 blocks=(("idle_cross", IdleCrossConfig),))
