"""Llama 4's attention layers (Meta, "The Llama 4 herd", 2025; transformers 5.24
`models/llama4/modeling_llama4.py`, `Llama4TextAttention`): "iRoPE", RoPE layers interleaved
with NoPE layers.

- `llama4_rope` layers rotate q and k, attend within chunks of `attention_chunk` tokens (chunked
  attention: key j is visible from query i when both are in the same block and j <= i; with no
  chunk, every causal key), and, with `l2_qk_norm`, normalise each head of q and k to unit RMS
  by a weightless L2 norm (`Llama4TextL2Norm`: x·rsqrt(mean(x²) + eps), no parameters; 3
  element-wise FLOPs per element: the square, the mean's sum, the multiply).
- `llama4_nope` layers (every 4th in Scout and Maverick: `no_rope_layers`) have no rotary
  embedding, attend over every causal key, and, with `temperature_tuning`, scale the queries by
  log1p(floor((pos + 1)/floor_scale))·attn_scale + 1 (Nakanishi 2025, "Scalable-Softmax Is
  Superior for Attention", arXiv:2501.19399): 6 element-wise FLOPs per position (add, divide,
  floor, log1p, multiply, add) and 1 per query element.

Neither changes a parameter or a matmul: both are element-wise (counted with --elementwise).
Everything else is `attention.Attention` (GQA, biases when attention_bias).

transformers takes RoPE from `no_rope_layers` and the mask from `layer_types` apart, so a config
may pair them otherwise: `llama4_rope_full` (RoPE over every causal key) and
`llama4_nope_chunked` (NoPE within chunks of `attention_chunk`).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import Attention
from .base import ELEMENTWISE, Part, Span
from .masks import Mask
from .registry import Entry

L2_NORM = 3  # square, the mean's sum, multiply by the reciprocal root (per element)
TEMPERATURE = 6  # per position: +1, /floor_scale, floor, log1p, ×attn_scale, +1


@dataclass(frozen=True)
class Llama4Attention(Attention):
    """Attention with Llama 4's weightless L2 QK-norm (`l2_qk_norm`, RoPE layers) or its query
    temperature (`temperature`, NoPE layers)."""

    rope: bool = True
    l2_qk_norm: bool = False
    temperature: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.qk_norm != "none":
            raise ValueError("llama4 layers take their QK-norm from llama4_attention.l2_qk_norm "
                             "(a weightless L2 norm); remove qk_norm")
        if self.l2_qk_norm and not self.rope:
            raise ValueError("llama4: the L2 QK-norm is on RoPE layers only")
        if self.temperature and self.rope:
            raise ValueError("llama4: temperature tuning is on NoPE layers only")

    def inner_norms(self, t_q: int, t_k: int) -> int:
        """The L2 norm of every query and key element (3 each)."""
        return L2_NORM * (t_q * self.d_q + t_k * self.d_k) if self.l2_qk_norm else 0

    def elementwise(self, d: int, x: Span) -> list[Part]:
        parts = super().elementwise(d, x)
        if self.temperature:
            # The scale per position of each sequence (computed once for the batch), then every
            # query element multiplied by it.
            parts.append(Part("elementwise.temperature", TEMPERATURE * x.n + x.tokens * self.d_q,
                              ELEMENTWISE))
        return parts

    def describe(self) -> str:
        extra = ("RoPE" + (", L2 QK-norm" if self.l2_qk_norm else "")) if self.rope else \
            ("NoPE" + (", temperature tuning" if self.temperature else ""))
        return f"{self.mask.describe()}, {extra}"

    def notes(self) -> list[str]:
        return ["Llama 4 attention: RoPE layers (chunked) with a weightless L2 QK-norm, NoPE "
                "layers (global) with query temperature tuning; neither has parameters or "
                "matmuls (element-wise: the L2 norm 3 per q/k element; the temperature 6 per "
                "position and 1 per query element)"]


@dataclass(frozen=True)
class Llama4AttentionConfig:
    """`llama4_attention:` in a model file: the chunk of the `llama4_rope` layers (null: every
    causal key), their L2 QK-norm and the `llama4_nope` layers' temperature tuning."""

    attention_chunk: Optional[Annotated[int, Min(1)]] = None
    l2_qk_norm: bool = True
    temperature_tuning: bool = True


def build(cfg: Any, name: str) -> Llama4Attention:
    block = cfg.llama4_attention or Llama4AttentionConfig()
    if cfg.n_heads is None:
        raise ValueError("n_heads is required: this model has attention layers")
    d, heads = cfg.d_model, cfg.n_heads
    if cfg.head_dim is None and d % heads:
        raise ValueError(f"d_model={d} is not divisible by n_heads={heads}; set head_dim "
                         "explicitly")
    head_dim = cfg.head_dim or d // heads
    rope = name.startswith("llama4_rope")
    chunk = block.attention_chunk
    if name == "llama4_nope_chunked" and chunk is None:
        raise ValueError("llama4_nope_chunked layers attend in chunks: set "
                         "llama4_attention.attention_chunk")
    chunked = name in ("llama4_rope", "llama4_nope_chunked") and chunk is not None
    mask = Mask("chunked", chunk) if chunked else Mask("causal")
    from .attention_layers import model_norm

    return Llama4Attention(
        heads=heads, kv_heads=cfg.n_kv_heads or heads, qk_dim=head_dim,
        v_dim=cfg.v_head_dim or head_dim, mask=mask, qkv_bias=cfg.bias.qkv,
        out_bias=cfg.bias.attn_out, qk_norm=cfg.qk_norm, sinks=cfg.attention_sinks,
        norm=model_norm(cfg), rope=rope, l2_qk_norm=rope and block.l2_qk_norm,
        temperature=not rope and block.temperature_tuning)


REGISTER = Entry(layer_types=("llama4_rope", "llama4_nope", "llama4_rope_full",
                              "llama4_nope_chunked"), build=build,
                 blocks=(("llama4_attention", Llama4AttentionConfig),))
