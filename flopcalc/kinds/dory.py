"""Dory's layers (transformers 5.24 `models/dory/modeling_dory.py`, DoryDecoderLayer): nGPT's
normalised transformer (Loshchilov et al. 2024, "nGPT: Normalized Transformer with
Representation Learning on the Hypersphere", arXiv:2410.01131) in Gemma 2's sandwich layout.

Every norm of the model is a weightless L2 norm (x / ‖x‖: the layer's four, the per-head q/k
norms, the sub-norms before o and down, the final norm), so none holds a tensor. Beyond what
`attention` and `mlp` count:

- attention gated per output element by a bias-free `gate_proj` d → h·d_h (the tensor and FLOPs
  of Muse Spark's gate, `kinds.muse_spark.MuseAttention`), the queries rescaled per channel by
  `sqk` (h·d_h) after RoPE and the gate's logits by `s_gate` (h·d_h);
- the MLP's gate and up outputs scaled per channel by `suv_gate` and `suv_up` (d_ff each);
- the residual an interpolation h + |λ|·(branch − h) at a learned per-channel rate after each
  sublayer (`lambda_1` after attention, `lambda_2` after the MLP: d each, counted with the
  sublayer they follow).

None of these is a matmul: their FLOPs are element-wise. The layer types are `dory_full` and
`dory_window` (a window of `dory.window` keys)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional

from ..declare import Min
from ..records import dataclass
from .base import ELEMENTWISE, LAYERS, REPLICATED, Part, Span
from .mlp import Mlp
from .muse_spark import MuseAttention
from .registry import Entry

TYPES = ("dory_full", "dory_window")
# per element of a d-wide residual: the L2 norm of the branch (square, add, scale: 3) and the
# interpolation h + r·(b − h) (3)
RESIDUAL_PER_ELEMENT = 3 + 3


def _vector(name: str, width: int) -> Part:
    return Part(f"{name}.weight", width, LAYERS, (width,), REPLICATED, module=name)


@dataclass(frozen=True)
class DoryAttention(MuseAttention):
    """Muse Spark's gated attention with Dory's query scale `sqk`, gate scale `s_gate`
    (h·d_h each) and the residual rate `lambda_1` (d) after it."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        return super().params(d, active) + [
            _vector("sqk", self.d_o), _vector("s_gate", self.d_o), _vector("lambda_1", d)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The gate logits' and the queries' scales (1 each per element), the sub-norm before
        o (3 per element), the residual's norm and interpolation."""
        t = x.tokens
        return super().elementwise(d, x) + [
            Part("elementwise.dory_attention", 5 * t * self.d_o + RESIDUAL_PER_ELEMENT * t * d,
                 ELEMENTWISE)]

    def describe(self) -> str:
        return super().describe() + ", nGPT-scaled (Dory)"

    def notes(self) -> list[str]:
        return super().notes() + [  # type: ignore[misc]
            "Dory's attention: weightless L2 q/k norms, a bias-free per-element output gate "
            "d → h·d_h, learned scales sqk and s_gate (h·d_h each) and a residual rate "
            "lambda_1 (d), element-wise work beyond the gate's matmul"]


@dataclass(frozen=True)
class DoryMlp(Mlp):
    """The gated MLP with Dory's scales `suv_gate`, `suv_up` (d_ff each), its weightless
    sub-norm before down and the residual rate `lambda_2` (d) after it."""

    def params(self, d: int, active: bool = False, copies: int = 1,
               expert: bool = False) -> list[Part]:
        return super().params(d, active, copies, expert) + [
            _vector("suv_gate", self.d_ff), _vector("suv_up", self.d_ff), _vector("lambda_2", d)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The two scales (1 per element each), the sub-norm before down (3 per element), the
        residual's norm and interpolation."""
        t = x.tokens
        return super().elementwise(d, x) + [
            Part("elementwise.dory_mlp", 5 * t * self.d_ff + RESIDUAL_PER_ELEMENT * t * d,
                 ELEMENTWISE)]

    def notes(self) -> list[str]:
        return super().notes() + [
            "Dory's MLP: gate and up scaled per channel (suv_gate, suv_up: d_ff each), a "
            "weightless L2 norm before down and a residual rate lambda_2 (d)"]


@dataclass(frozen=True)
class DoryConfig:
    """`dory:` in a model file (transformers DoryConfig's names in comments)."""

    window: Optional[Annotated[int, Min(1)]] = None  # sliding_window of the window layers


def build(cfg: Any, name: str) -> DoryAttention:
    """A Dory layer's attention: causal, or a window of `dory.window` keys."""
    from .attention_layers import build as attention
    from .masks import Mask

    if cfg.dory is None:
        raise ValueError(f"{name} layers are Dory's: they need a dory block")
    attn = attention(cfg, "full")
    if name.endswith("window"):
        if cfg.dory.window is None:
            raise ValueError(f"{name} layers need dory.window (the sliding window)")
        attn = dataclasses.replace(attn, mask=Mask("window", cfg.dory.window))
    return DoryAttention(**{f.name: getattr(attn, f.name) for f in dataclasses.fields(attn)})


def feedforward(cfg: Any, name: str) -> DoryMlp:
    """The gated MLP (`d_ff` wide) with Dory's scales and residual rate."""
    from . import mlp

    if cfg.d_ff is None:
        raise ValueError("Dory's layers need d_ff (their MLP's width)")
    made = mlp.from_config(cfg, cfg.d_ff)
    return DoryMlp(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)})


REGISTER = Entry(layer_types=TYPES, build=build, blocks=(("dory", DoryConfig),),
                 ffn=feedforward)
