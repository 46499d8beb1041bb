"""Muse Spark's layers (transformers 5.24 `models/muse_spark/modeling_muse_spark.py`,
MuseSparkTextModel).

Each layer is a pre-norm block whose two norms (`input_layernorm`, `pre_feedforward_layernorm`)
are "centred" RMSNorms, x̂·(1 + w), one d-wide gain each as any RMSNorm holds. Beyond what
`attention`, `mlp` and `moe` count:

- attention gated per output element by a bias-free `gate_proj` d → h·d_h (the same tensor and
  FLOPs as a query projection twice as wide, `Attention.gate`, without a bias on the gate
  half when `attention_bias` puts one on q), its per-head q/k norms and output norm weightless;
- a weightless RMSNorm after attention and an input-scaled RMSNorm (d) after the feed-forward
  block, and a learned residual gate after each sublayer (`post_attention_residual_gate`,
  `post_feedforward_residual_gate`: d each, mixing residual and branch);
- the mixture (on the `mlp_layer_types` "sparse" layers) routes from d and runs its experts in
  a latent of `moe_hidden_size` between `pre_expert_proj` d → m and `post_expert_proj` m → d
  (`Moe.latent`), with a centred RMSNorm over the latent before the experts and one input-scaled
  RMSNorm (m, shared by the experts) after each expert.

None of the norms and gates is a matmul: their FLOPs are element-wise. The layer types are
`muse_full`, `muse_window` (a mixture) and `muse_dense_full`, `muse_dense_window` (the dense
MLP, `d_ff` wide); the window is the `muse_spark` block's."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import Attention
from .base import ELEMENTWISE, LAYERS, REPLICATED, Part, Span
from .mlp import Mlp
from .moe import Moe
from .registry import Entry

TYPES = ("muse_full", "muse_window", "muse_dense_full", "muse_dense_window")
# per element: the post-attention norm (3, weightless), the post-feed-forward norm (4), the
# two residual gates α·r + β·h (3 each)
EXTRA_PER_ELEMENT = 3 + 4 + 2 * 3


def _extras(d: int) -> list[Part]:
    """The layer's post-feed-forward norm gain and its two residual gates, d each."""
    return [Part(f"{name}.weight", d, LAYERS, (d,), REPLICATED, module=name)
            for name in ("post_feedforward_norm", "attention_residual_gate",
                         "feedforward_residual_gate")]


@dataclass(frozen=True)
class MuseAttention(Attention):
    """Attention with Muse Spark's output gate: a bias-free gate_proj beside q, k, v and o
    with `attention_bias`."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        return [p for p in super().params(d, active) if p.name != "q_gate.bias"]

    def bias_adds(self, d: int, t_q: int, t_k: int) -> int:
        gate = t_q * self.d_o if self.gate and self.qkv_bias else 0
        return super().bias_adds(d, t_q, t_k) - gate


@dataclass(frozen=True)
class MuseMlp(Mlp):
    """The dense layers' gated MLP with the layer's post-feed-forward norm and residual
    gates."""

    def params(self, d: int, active: bool = False, copies: int = 1,
               expert: bool = False) -> list[Part]:
        return super().params(d, active, copies, expert) + _extras(d)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return super().elementwise(d, x) + [
            Part("elementwise.muse_norms_and_gates", EXTRA_PER_ELEMENT * x.tokens * d,
                 ELEMENTWISE)]

    def notes(self) -> list[str]:
        return super().notes() + [_NOTE]


@dataclass(frozen=True)
class MuseMoe(Moe):
    """The latent mixture with its two latent norms (m each) and the layer's post-feed-forward
    norm and residual gates."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        m = self.latent or d
        return super().params(d, active) + [
            Part(f"{name}.weight", m, LAYERS, (m,), REPLICATED, module=name)
            for name in ("pre_expert_norm", "experts.post_expert_norm")] + _extras(d)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The mixture's; the latent norm before the experts (4·m) and after each of a token's
        k experts (4·m each); the layer's norms and gates."""
        t, m = x.tokens, self.latent or d
        return super().elementwise(d, x) + [
            Part("elementwise.latent_norms", 4 * t * m * (1 + self.top_k), ELEMENTWISE),
            Part("elementwise.muse_norms_and_gates", EXTRA_PER_ELEMENT * t * d, ELEMENTWISE)]

    def notes(self) -> list[str]:
        return super().notes() + [
            "Muse Spark's mixture: a centred RMSNorm over the latent before the experts and "
            "one input-scaled RMSNorm (shared) after each expert, element-wise work only", _NOTE]


_NOTE = ("Muse Spark's layers: a weightless norm after attention, an input-scaled RMSNorm (d) "
         "after the feed-forward block and a d-wide learned residual gate after each sublayer, "
         "element-wise work only")


@dataclass(frozen=True)
class MuseSparkConfig:
    """`muse_spark:` in a model file (transformers MuseSparkTextConfig's names in comments)."""

    window: Optional[Annotated[int, Min(1)]] = None  # sliding_window of the window layers


def build(cfg: Any, name: str) -> MuseAttention:
    """A Muse Spark layer's attention: causal, or a window of `muse_spark.window` keys."""
    from .attention_layers import build as attention
    from .masks import Mask

    if cfg.muse_spark is None:
        raise ValueError(f"{name} layers are Muse Spark's: they need a muse_spark block")
    attn = attention(cfg, "full")
    if name.endswith("window"):
        if cfg.muse_spark.window is None:
            raise ValueError(f"{name} layers need muse_spark.window (the sliding window)")
        attn = dataclasses.replace(attn, mask=Mask("window", cfg.muse_spark.window))
    return MuseAttention(**{f.name: getattr(attn, f.name) for f in dataclasses.fields(attn)})


def feedforward(cfg: Any, name: str) -> Any:
    """The dense MLP (`d_ff` wide) on `muse_dense_*` layers, the latent mixture (`moe` block)
    on the others, each with Muse Spark's norms and gates."""
    from . import mlp, moe

    if name.startswith("muse_dense"):
        if cfg.d_ff is None:
            raise ValueError("Muse Spark's dense layers need d_ff (their MLP's width)")
        made = mlp.from_config(cfg, cfg.d_ff)
        return MuseMlp(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)})
    if cfg.moe is None:
        raise ValueError(f"{name} layers hold Muse Spark's mixture: they need a moe block")
    made = moe.from_config(cfg)
    return MuseMoe(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)})


REGISTER = Entry(layer_types=TYPES, build=build, blocks=(("muse_spark", MuseSparkConfig),),
                 ffn=feedforward)
