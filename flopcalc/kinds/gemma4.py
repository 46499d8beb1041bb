"""Gemma 4's layers (transformers `models/gemma4/modeling_gemma4.py`, Gemma4TextModel): softmax
attention whose full layers have their own head width and key/value heads and may use the
keys as values, layers at the end of the stack that read the keys and values of an earlier
layer (KV sharing), and a feed-forward block that holds, beside the gated MLP, a mixture of
experts reading the MLP's input and the per-layer inputs (PLE).

The `gemma4:` block turns these on; `kv_shared_full` and `kv_shared_window` name the layers
that reuse another layer's keys and values (`num_kv_shared_layers`: the last ones). The model's
`full` and `window` layers are softmax attention as everywhere, widened on the full layers.

Per-layer inputs: transformers packs one table of `per_layer_vocab` rows × L·p values
(`embed_tokens_per_layer`) and one projection d → L·p (`per_layer_model_projection`), read once
per token before the layers; flopcalc counts each layer's p-wide slice of both with that layer
(their sum is the packed tensors, parameter for parameter and FLOP for FLOP), and their one
p-wide norm (`per_layer_projection_norm`) once, as a tensor the layers share."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import Attention
from .base import (COLUMN, ELEMENTWISE, EMBEDDING, EngineCache, LAYERS, REPLICATED, ROW, VOCAB,
                   Cache, Keeping, Kind, Part, Published, Span, gemm, linear, prefixed)
from .mlp import ACTIVATION_FLOPS, Mlp
from .norm import Norm, model_norm
from .registry import Entry

SHARED = "kv_shared_"  # the prefix of the layer types that reuse an earlier layer's K and V


@dataclass(frozen=True)
class Gemma4Attention(Attention):
    """Softmax attention as Gemma 4 builds it: `k_eq_v`, the key projection's output also
    serves as the values (no v projection; transformers' attention_k_eq_v, on full layers);
    `kv_shared`, no k and v projections nor their norms, the keys and values being those an
    earlier layer of the same type computed and stored (num_kv_shared_layers). Values pass a
    weightless RMSNorm (no parameter, no matmul)."""

    k_eq_v: bool = False
    kv_shared: bool = False

    def params(self, d: int, active: bool = False) -> list[Part]:
        drop = self._dropped()
        return [p for p in super().params(d, active) if p.name.split(".")[0] not in drop]

    def _dropped(self) -> set[str]:
        if self.kv_shared:
            return {"k", "v", "k_norm"}
        return {"v"} if self.k_eq_v else set()

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        """Attention's, less the projections it does not run: with keys as values no
        (T×d)·(d×h_kv·d_v); a KV-shared layer neither k nor v (its scores and AV as any)."""
        drop = self._dropped()
        return [p for p in super().flops(d, t_q, t_k, pairs) if p.name not in drop]

    def bias_adds(self, d: int, t_q: int, t_k: int) -> int:
        if not self.qkv_bias:
            return super().bias_adds(d, t_q, t_k)
        t_v = 0 if self.kv_shared or self.k_eq_v else t_k
        t_k = 0 if self.kv_shared else t_k
        return t_q * self.d_q + t_k * self.d_k + t_v * self.d_v + (
            t_q * d if self.out_bias else 0)

    def inner_norms(self, t_q: int, t_k: int) -> int:
        return super().inner_norms(t_q, 0 if self.kv_shared else t_k)

    def cache(self) -> Cache:
        """A KV-shared layer keeps nothing of its own: it reads the cache of the layer whose
        keys and values it reuses (`cache_reads`, as any attention layer's)."""
        if self.kv_shared:
            return Cache(label=f"{self.mask.label}_kv_shared")
        return super().cache()

    def cache_reads(self, first: int, last: int) -> int:
        return (self.d_k + self.d_v) * self.mask.visible_keys(first, last)

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        return () if self.kv_shared else super().engine_cache(tp)

    def describe(self) -> str:
        words = [super().describe(), f"{self.heads}×{self.qk_dim} heads, {self.kv_heads} KV"]
        if self.k_eq_v:
            words.append("keys as values")
        if self.kv_shared:
            words.append("KV shared")
        return ", ".join(words)

    def notes(self) -> list[str]:
        out = super().notes()
        if self.kv_shared:
            out.append("KV-shared layers (Gemma 4): no k and v projections; their scores and "
                       "AV read the keys and values of the last earlier layer of their type, "
                       "and they keep no cache of their own")
        if self.k_eq_v:
            out.append("keys as values (Gemma 4's attention_k_eq_v): the full layers have no v "
                       "projection; the key projection's output is normed as the values")
        return out


@dataclass(frozen=True)
class Gemma4Feedforward(Kind):
    """Gemma 4's feed-forward block: the gated `mlp`; with `moe`, a mixture of experts reading
    the block's input (the residual, through a norm of its own) whose output is added to the
    MLP's, each normed (`post_feedforward_layernorm_1`/`_2`), its router holding a d-wide scale
    and a scale per expert; with `per_layer` = p > 0, the per-layer input after the block:
    gate d → p, its activation times this layer's p-wide input, projection p → d and a norm,
    added to the residual, and the layer's slices of the packed per-layer table
    (`per_layer_vocab` × p) and projection (d → p) with the p-wide norm they share."""

    mlp: Mlp
    moe: Optional[Any] = None  # kinds.moe.Moe
    per_layer: int = 0
    per_layer_vocab: int = 0
    norm: Norm = Norm("rmsnorm")
    slot = "mlp"

    @property
    def routed(self) -> bool:  # type: ignore[override]
        return self.moe is not None

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = self.mlp.params(d)
        if self.moe is not None:
            e = self.moe.experts
            parts += prefixed("moe", self.moe.params(d, active))
            parts += [Part("moe.router.scale", d, LAYERS, (d,), REPLICATED, module="moe.router"),
                      Part("moe.router.per_expert_scale", e, LAYERS, (e,), REPLICATED,
                           module="moe.router")]
            for name in ("moe_pre_norm", "mlp_out_norm", "moe_out_norm"):
                parts += self.norm.params(d, name)
        p = self.per_layer
        if p:
            parts += linear("per_layer_gate", d, p, False) + \
                linear("per_layer_projection", p, d, False, ROW) + \
                self.norm.params(d, "per_layer_norm")
            parts += [Part("per_layer_inputs.table", self.per_layer_vocab * p, EMBEDDING,
                           (self.per_layer_vocab, p), VOCAB, lookup=True),
                      Part("per_layer_inputs.projection.weight", d * p, LAYERS, (d, p), COLUMN,
                           matmul=True, module="per_layer_inputs.projection")]
            parts += [dataclasses.replace(q, tied="gemma4.per_layer_projection_norm")
                      for q in self.norm.params(p, "per_layer_inputs.norm")]
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.flops(d, x.tokens)

    def flops(self, d: int, tokens: int) -> list[Part]:
        """The MLP's; the mixture's router and its tokens' k experts; per-layer inputs: the
        layer's slice of the model's projection (T×d)·(d×p), the gate (T×d)·(d×p) and the
        projection back (T×p)·(p×d)."""
        parts = self.mlp.flops(d, tokens)
        if self.moe is not None:
            parts += prefixed("moe", self.moe.flops(d, tokens))
        p = self.per_layer
        if p:
            parts += [gemm("per_layer_inputs.projection", tokens, d, p),
                      gemm("per_layer_gate", tokens, d, p),
                      gemm("per_layer_projection", tokens, p, d, ROW)]
        return parts

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.flops(d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The MLP's and the mixture's; the mixture's input norm and its two output norms (d
        each), the sum of the two outputs (d), the router's weightless norm (3 per element)
        and its two scales (2·d); per-layer inputs: the gate's activation and the product
        with the layer's input (p each), the norm over d, the residual add and the layer's
        scalar (d each)."""
        t = x.tokens
        parts = list(self.mlp.elementwise(d, x))
        if self.moe is not None:
            parts += prefixed("moe", self.moe.elementwise(d, x))
            per_token = 3 * self.norm.per_element * d + d + 3 * d + 2 * d
            parts.append(Part("elementwise.moe_norms", t * per_token, ELEMENTWISE))
        if self.per_layer:
            act = ACTIVATION_FLOPS[self.mlp.activation]
            parts.append(Part("elementwise.per_layer", t * ((act + 1) * self.per_layer + (
                self.norm.per_element + 2) * d), ELEMENTWISE))
        return parts

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        out = list(self.mlp.activations(d, k))
        if self.moe is not None:
            out += [(f"moe.{name}", *rest) for name, *rest in self.moe.activations(d, k)]
        if self.per_layer:  # the gate's input and output, and the projection's input
            sb, split = k.seq * k.batch, Fraction(1, k.tp)
            out.append(("per_layer", 2 * sb * (d + 2 * self.per_layer) * split))
        return out

    def reads(self, d: int, tokens: int) -> Optional[object]:
        return None if self.moe is None else self.moe.reads(d, tokens)

    def ep_units(self) -> int:
        return 0 if self.moe is None else self.moe.ep_units()

    def published(self, d: int) -> Published:
        base = self.mlp.published(d)
        extra = ()
        if self.moe is not None:
            extra += ("this model's feed-forward block adds a mixture of experts beside the "
                      "dense MLP",)
        if self.per_layer:
            extra += ("this model adds per-layer inputs (a p-wide table and gate per layer)",)
        return dataclasses.replace(base, departures=base.departures + extra)

    def describe(self) -> str:
        words = [self.mlp.describe()]
        if self.moe is not None:
            words.append(self.moe.describe())
        if self.per_layer:
            words.append(f"per-layer inputs {self.per_layer}")
        return " + ".join(words)

    def notes(self) -> list[str]:
        out = list(self.moe.notes()) if self.moe is not None else []
        if self.per_layer:
            out.append("per-layer inputs (Gemma 4's PLE): each layer counts its p-wide slice of "
                       "the packed per_layer_vocab × L·p table (looked up) and of the d → L·p "
                       "projection (2·d·p per token), beside its gate d → p and projection "
                       "p → d")
        return out

    def decode_notes(self) -> list[str]:
        return self.moe.decode_notes() if self.moe is not None else []


@dataclass(frozen=True)
class Gemma4Config:
    """`gemma4:` in a model file (transformers Gemma4TextConfig's names in comments)."""

    global_head_dim: Optional[Annotated[int, Min(1)]] = None  # full layers' head width
    global_kv_heads: Optional[Annotated[int, Min(1)]] = None  # full layers' KV heads
    k_eq_v: bool = False  # attention_k_eq_v: full layers use the keys as values
    double_wide_mlp: bool = False  # use_double_wide_mlp: the KV-shared layers' MLP is 2·d_ff
    per_layer_width: Annotated[int, Min(0)] = 0  # hidden_size_per_layer_input (p)
    per_layer_vocab: Optional[Annotated[int, Min(1)]] = None  # vocab_size_per_layer_input


def adapt(cfg: Any, name: str, attn: Attention) -> Gemma4Attention:
    """The attention of a Gemma 4 model's `full` or `window` layer: `attn` (built from the
    model's keys), widened on the full layers by the `gemma4` block."""
    g = cfg.gemma4
    fields = {f.name: getattr(attn, f.name) for f in dataclasses.fields(attn)}
    if name == "full":
        width = g.global_head_dim or attn.qk_dim
        fields.update(qk_dim=width, v_dim=width, kv_heads=g.global_kv_heads or attn.kv_heads,
                      k_eq_v=g.k_eq_v)
    return Gemma4Attention(**fields)


def build(cfg: Any, name: str) -> Gemma4Attention:
    """A `kv_shared_full` or `kv_shared_window` layer's attention."""
    from .registry import builder

    if cfg.gemma4 is None:
        raise ValueError(f"{name} layers are Gemma 4's: they need a gemma4 block")
    base = name.removeprefix(SHARED)
    make = builder(base)  # the model's full or window attention (kinds.attention_layers)
    assert make is not None
    return dataclasses.replace(make(cfg, base), kv_shared=True)


def feedforward(cfg: Any, name: str) -> Gemma4Feedforward:
    """Every layer's feed-forward block in a model with a `gemma4` block."""
    from . import mlp

    g = cfg.gemma4
    if cfg.d_ff is None:
        raise ValueError("a Gemma 4 layer has a dense MLP: d_ff is required")
    wide = g.double_wide_mlp and name.startswith(SHARED)
    moe = None
    if cfg.moe is not None:
        from . import moe as moe_kind

        moe = moe_kind.from_config(cfg)
    return Gemma4Feedforward(mlp.from_config(cfg, cfg.d_ff * (2 if wide else 1)), moe,
                             g.per_layer_width, g.per_layer_vocab or cfg.vocab_size,
                             model_norm(cfg))


REGISTER = Entry(layer_types=(SHARED + "full", SHARED + "window"), build=build,
                 blocks=(("gemma4", Gemma4Config),), ffn=feedforward)
