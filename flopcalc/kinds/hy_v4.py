"""Hy4's layers (Tencent; transformers 5.24 `models/hy_v4/modeling_hy_v4.py`, HYV4Model): every
sublayer inside independent hyper-connections (iHC, `HYV4HyperConnection`: N = hc_mult residual
streams; a linear map of the N·d streams gives N collapse and N expansion gates, 2·N × N·d,
without DeepSeek-V4's N×N mixing matrix), the hyper-head before the final norm, and DeepSeek
sparse attention (latent attention with the lightning indexer, GLM-5's layers that reuse an
earlier layer's selection: `kinds/sparse_latent.py`) with an output gate (`gate_proj`: d → h·d_v,
the attention output times its sigmoid) and a learned sink per head.

`Connected` puts any slot's kind inside a hyper-connection: its tensors and FLOPs are the
kind's plus the connection's (`hc.*`); its cache is the kind's (the streams add none). The
activations it keeps are not modelled (`serve`, `memory`, `step`, `plan` refuse)."""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Iterator, Optional

from ..records import dataclass
from ..declare import Min
from ..errors import FlopcalcError
from .base import Cache, EngineCache, Keeping, Kind, Part, Published, Span, gemm
from .deepseek_v4 import HyperConnection, HyperHead
from .registry import Entry
from .sparse_latent import SparseLatentAttention

PREFIX = "hy_dsa"
DENSE = "_dense"  # the layer's feed-forward block is the dense MLP (mlp_layer_types "dense")
LAYER_TYPES = tuple(f"{PREFIX}{shared}{dense}" for shared in ("", "_shared")
                    for dense in ("", DENSE))
TRAINING = ("Hy4's hyper-connections: flopcalc counts their parameters, FLOPs and cache (model, "
            "infer), not the activations they keep (for backward, or at serving's peak), "
            "which serve, step, plan and memory need")


@dataclass(frozen=True)
class GatedSparseLatent(SparseLatentAttention):
    """DeepSeek sparse attention whose output is gated per element by sigmoid(x·W_g), W_g
    d × h·d_v (`gate`), with sinks: the gate's matmul (T×d)·(d×h·d_v) is added to the latent
    attention's FLOPs, in the forward and in every decode step."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The sparse latent attention's; the gate has no bias whatever attention_bias says
        (transformers' gate_proj is built with bias=False)."""
        return [p for p in super().params(d, active) if p.name != "q_gate.bias"]

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        return super().flops(d, t_q, t_k, pairs) + [gemm("q_gate", t_q, d, self.d_o)]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        t = batch * (last - first + 1)
        return super().decode(d, batch, first, last) + [gemm("q_gate", t, d, self.d_o)]


@dataclass(frozen=True)
class Connected(Kind):
    """`inner` (any slot's kind) with the hyper-connection `hc` before it."""

    inner: Any
    hc: HyperConnection

    @property
    def slot(self) -> str:  # type: ignore[override]
        return self.inner.slot

    @property
    def routed(self) -> bool:  # type: ignore[override]
        return self.inner.routed

    def params(self, d: int, active: bool = False) -> list[Part]:
        return self.hc.params(d, "hc") + self.inner.params(d, active)

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.hc.flops(d, x.tokens, "hc") + self.inner.forward(d, x)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return self.hc.elementwise(d, x.tokens, "hc", 0) + self.inner.elementwise(d, x)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        t = batch * (last - first + 1)
        return self.hc.flops(d, t, "hc") + self.inner.decode(d, batch, first, last)

    def cache(self) -> Cache:
        return self.inner.cache()

    def cache_reads(self, first: int, last: int) -> int:
        return self.inner.cache_reads(first, last)

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        return self.inner.engine_cache(tp)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        raise FlopcalcError(TRAINING)

    def pair_terms(self) -> list[tuple[int, object]]:
        return self.inner.pair_terms()

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        return self.inner.breakpoints(lo, hi)

    def period(self) -> Optional[int]:
        return self.inner.period()

    def count_period(self) -> Optional[int]:
        return self.inner.count_period()

    def tp_units(self) -> int:
        return self.inner.tp_units()

    def ep_units(self) -> int:
        return self.inner.ep_units()

    def reads(self, d: int, tokens: int) -> Optional[object]:
        return self.inner.reads(d, tokens)

    def published(self, d: int) -> Published:
        return self.inner.published(d)

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        return self.inner.formula(name, d, s, local)

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        return self.inner.formula_notes(name, d, s, local)

    def describe(self) -> str:
        return self.inner.describe()

    def notes(self) -> list[str]:
        n = self.hc.streams
        return self.inner.notes() + [
            f"independent hyper-connections (Hy4's iHC, {n} residual streams): before each "
            f"sublayer (T×{n}·d)·({n}·d×{2 * n}) for its collapse and expansion gates, no "
            "mixing matrix"]

    def decode_notes(self) -> list[str]:
        return self.inner.decode_notes()


@dataclass(frozen=True)
class HyperConnectionsBlock:
    """`hyper_connections:` in a model file (Hy4's iHC): `hc_mult` streams; `attention_gate`
    gates the sparse latent attention's output (gate_proj). The layers are hy_dsa (own
    indexer) and hy_dsa_shared (an earlier layer's selection), with `_dense` when their
    feed-forward block is the dense MLP rather than the `moe` block's mixture."""

    hc_mult: Annotated[int, Min(1)]
    attention_gate: bool = True


def _block(cfg: Any) -> HyperConnectionsBlock:
    if cfg.hyper_connections is None:
        raise ValueError("hy_dsa layers are Hy4's: they need a hyper_connections block")
    return cfg.hyper_connections


def build(cfg: Any, name: str) -> Connected:
    from .sparse_latent import build as dsa

    b = _block(cfg)
    base = "dsa_shared" if "_shared" in name else "dsa"
    attn = dsa(cfg, base)
    fields = {f: getattr(attn, f) for f in attn.__dataclass_fields__}
    fields.update(gate=b.attention_gate, sinks=True)
    return Connected(GatedSparseLatent(**fields), HyperConnection(b.hc_mult, mix=False))


def feedforward(cfg: Any, name: str) -> Connected:
    from . import mlp, moe

    b = _block(cfg)
    if name.endswith(DENSE):
        if cfg.d_ff is None:
            raise ValueError("hy_dsa_dense layers have a dense MLP: d_ff is required")
        inner: Any = mlp.from_config(cfg, cfg.d_ff)
    else:
        if cfg.moe is None:
            raise ValueError("hy_dsa layers are mixtures of experts: a moe block is required")
        inner = moe.from_config(cfg)
    return Connected(inner, HyperConnection(b.hc_mult, mix=False))


def hyper_head(cfg: Any) -> Optional[HyperHead]:
    return HyperHead(cfg.hyper_connections.hc_mult) if cfg.hyper_connections else None


REGISTER = Entry(layer_types=LAYER_TYPES, build=build,
                 blocks=(("hyper_connections", HyperConnectionsBlock),), ffn=feedforward,
                 frontend=hyper_head)
