"""Ergo's layers (transformers 5.25 `models/ergo/modeling_ergo.py`, ErgoModel).

Each layer is sandwich-normed softmax attention (per-head q/k norms, a fused q/k/v projection:
the same tensors and FLOPs as three), its sliding layers rotary, its full layers without
positions, then a plain ReLU² MLP (the first `num_dense_blocks` layers) or a mixture of plain
ReLU² experts with one shared expert. Beyond what `attention`, `mlp` and `moe` count:

- a learned residual gate after each sublayer (`attention_residual_gate`,
  `feedforward_residual_gate`: a d-wide fp32 vector each mixing branch and residual);
- an RMSNorm after every routed expert, one d-wide gain per expert (`post_expert_norm`,
  num_experts × d), and one after the shared expert (d).

None of these is a matmul: their FLOPs are element-wise. The layer types are `ergo_full`,
`ergo_window` (a mixture of experts) and `ergo_dense_full`, `ergo_dense_window` (the dense
MLP, `d_ff` wide); the window is the `ergo` block's."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import ELEMENTWISE, EXPERT, LAYERS, REPLICATED, Part, Span
from .mlp import Mlp
from .moe import Moe
from .norm import Norm, model_norm
from .registry import Entry

TYPES = ("ergo_full", "ergo_window", "ergo_dense_full", "ergo_dense_window")
# per token and gate: branch_gate·h + residual_gate·r, an add → 3 per element
GATE_FLOPS = 3


def _gates(d: int) -> list[Part]:
    return [Part(f"{name}.weight", d, LAYERS, (d,), REPLICATED, module=name)
            for name in ("attention_residual_gate", "feedforward_residual_gate")]


@dataclass(frozen=True)
class ErgoMlp(Mlp):
    """The dense layers' plain MLP with the layer's two residual gates (d each)."""

    def params(self, d: int, active: bool = False, copies: int = 1,
               expert: bool = False) -> list[Part]:
        return super().params(d, active, copies, expert) + _gates(d)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return super().elementwise(d, x) + [
            Part("elementwise.residual_gates", 2 * GATE_FLOPS * x.tokens * d, ELEMENTWISE)]

    def notes(self) -> list[str]:
        return super().notes() + [_GATES_NOTE]


@dataclass(frozen=True)
class ErgoMoe(Moe):
    """The mixture with a d-wide RMSNorm gain per routed expert (each expert's output normed
    before the weighted sum) and after the shared expert, and the layer's residual gates."""

    norm: Norm = Norm("rmsnorm")

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The mixture's tensors; the experts' norms (E × d, or the k a token uses when
        `active`), split with the experts; the shared expert's norm (d); two residual gates."""
        e = self.top_k if active else self.experts
        return super().params(d, active) + [
            Part("experts.post_expert_norm.weight", e * d, LAYERS, (e, d), EXPERT,
                 module="experts.post_expert_norm")] + self.norm.params(d, "shared.norm") + \
            _gates(d)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The mixture's; each of a token's k expert outputs and the shared output normed
        (norm·d each); the two residual gates (3·d each)."""
        t = x.tokens
        norms = self.norm.per_element * t * d * (self.top_k + 1)
        return super().elementwise(d, x) + [
            Part("elementwise.expert_norms", norms, ELEMENTWISE),
            Part("elementwise.residual_gates", 2 * GATE_FLOPS * t * d, ELEMENTWISE)]

    def notes(self) -> list[str]:
        return super().notes() + [
            "Ergo's experts: an RMSNorm after every routed expert (num_experts × d gains) and "
            "after the shared expert (d), element-wise work only", _GATES_NOTE]


_GATES_NOTE = ("Ergo's residual gates: a d-wide learned vector after each sublayer mixing "
               "branch and residual (2·d per layer), element-wise work only")


@dataclass(frozen=True)
class ErgoConfig:
    """`ergo:` in a model file (transformers ErgoConfig's names in comments)."""

    window: Optional[Annotated[int, Min(1)]] = None  # sliding_window of the window layers


def build(cfg: Any, name: str) -> Any:
    """An Ergo layer's attention: causal, or a window of `ergo.window` keys."""
    from .attention_layers import build as attention
    from .masks import Mask

    if cfg.ergo is None:
        raise ValueError(f"{name} layers are Ergo's: they need an ergo block")
    attn = attention(cfg, "full")
    if name.endswith("window"):
        if cfg.ergo.window is None:
            raise ValueError(f"{name} layers need ergo.window (the sliding window)")
        attn = dataclasses.replace(attn, mask=Mask("window", cfg.ergo.window))
    return attn


def feedforward(cfg: Any, name: str) -> Any:
    """The dense MLP (`d_ff` wide) on `ergo_dense_*` layers, the mixture (`moe` block) on the
    others, each with Ergo's norms and gates."""
    from . import mlp, moe

    if name.startswith("ergo_dense"):
        if cfg.d_ff is None:
            raise ValueError("Ergo's dense layers need d_ff (their MLP's width)")
        return ErgoMlp(**{f.name: getattr(m, f.name) for m in [mlp.from_config(cfg, cfg.d_ff)]
                          for f in dataclasses.fields(m)})
    if cfg.moe is None:
        raise ValueError(f"{name} layers hold Ergo's mixture of experts: they need a moe block")
    made = moe.from_config(cfg)
    return ErgoMoe(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)},
                   norm=model_norm(cfg))


REGISTER = Entry(layer_types=TYPES, build=build, blocks=(("ergo", ErgoConfig),),
                 ffn=feedforward)
