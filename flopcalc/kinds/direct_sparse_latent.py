"""Mistral Large 4's attention (transformers 5.24
`models/mistral_large4/modeling_mistral_large4.py`, MistralLarge4TextAttention and
MistralLarge4TextIndexer): DeepSeek sparse attention
(`sparse_latent.SparseLatentAttention`) over latent keys and values, with four departures.

- No query latent: `q_proj` d → h·(d_nope + d_rope) directly, and the lightning indexer, which has
  no query latent to read, projects the layer input itself: a LayerNorm over d with a bias
  (`q_input_norm`), then `wq_b` d → HI·DI.
- Learned softmax scaling (`MistralLarge4TextSoftmaxScaling`): every query head is multiplied
  by scale·log(position + 1) + bias, one scale and one bias per head, in the attention (h) and in
  the indexer (HI): 2·h and 2·HI parameters, element-wise work only.
- NoPE layers (`no_rope_layers[i]` = 0): no rotary key; `kv_a_proj_with_mqa` is d → r_kv and the
  decompressed keys are d_nope + d_rope wide without rotation (`kv_b_proj` r_kv →
  h·(d_nope + d_rope + d_v)). That is `LatentAttention` with a rotary width of 0.
- Shared latents (`kv_source_layers[i]` < i): the layer has no `kv_a_proj_with_mqa` and no
  `kv_a_layernorm`; it decompresses (kv_b) the latent an earlier layer of the same kind (RoPE or
  NoPE) computed and cached. It keeps no latent of its own, only its indexer's keys when it runs
  an indexer (transformers' "reuse_but_indexer").

The model's rotary embedding holds a learned tensor too (`MistralLarge4TextRotaryEmbedding.alpha`,
one per inverse frequency: ⌈d_rope/2⌉ values scaling them by exp(alpha), "LeRoPE"): the layer
named with the `_lerope` suffix (the first) carries it, so that the model's total holds it once.

FLOPs (what FlopCounterMode counts on the eager path, and `--attention full`): q (T×d)·(d×h·d_qk);
kv_a (T×d)·(d×(r_kv + d_rope)) on a layer with its own latent; kv_b (T×r_kv)·(r_kv×h·(d_nope + d_v))
on every layer; the attention over every key (the top-k only masks); o; and the indexer where the
layer runs one: wq_b (T×d)·(d×HI·DI), wk (T×d)·(d×DI), weights_proj (T×d)·(d×HI), 2·HI·DI and
2·HI per scored pair.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, Cache, EngineCache, Part, Published,
                   Span, gemm, linear)
from .latent import LatentAttention
from .masks import Mask
from .norm import RMS
from .registry import Entry
from .sparse_latent import LAYERNORM, SparseLatentAttention

BASE = "dsa_direct"
# layer_types names: BASE, then `_nope` (no RoPE), `_reuse` (an earlier layer's latent),
# `_noindexer` (the previous indexer's selection), `_lerope` (holds the rotary scaling)
SUFFIXES = ("_nope", "_reuse", "_noindexer", "_lerope")


def layer_name(rope: bool, own_kv: bool, indexer: bool, lerope: bool = False) -> str:
    return (BASE + ("" if rope else "_nope") + ("" if own_kv else "_reuse")
            + ("" if indexer else "_noindexer") + ("_lerope" if lerope else ""))


NAMES = tuple(layer_name(r, k, i, a) for r in (True, False) for k in (True, False)
              for i in (True, False) for a in (False, True))


@dataclass(frozen=True)
class DirectSparseLatentAttention(SparseLatentAttention):
    """Sparse latent attention without a query latent (`q_rank` None), the indexer projecting
    the layer input, learned per-head softmax scaling; `own_kv` False: the latent is an earlier
    layer's; `rope_scale`: learned rotary scaling values this layer holds for the model."""

    own_kv: bool = True
    rope_scale: int = 0

    def __post_init__(self) -> None:
        LatentAttention.__post_init__(self)
        if self.mask.pattern != "topk":
            raise ValueError("sparse latent attention needs a top-k mask (index_topk)")
        if self.index_heads < 1 or self.index_dim < 1:
            raise ValueError("dsa_direct layers need sparse_attention.index_n_heads and "
                             "index_head_dim >= 1")

    # --------------------------------------------------------------------------- parameters

    def projection_params(self, d: int) -> list[Part]:
        """LatentAttention's (q directly from d), less kv_a and its norm where the latent is an
        earlier layer's."""
        parts = super().projection_params(d)
        if not self.own_kv:
            parts = [p for p in parts if p.module not in ("kv_a", "kv_a_norm")]
        return parts

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The attention's tensors and its softmax scaling (a scale and a bias per head); the
        indexer's where the layer runs one: q_input_norm (LayerNorm over d, with a bias), wq_b
        (d → HI·DI), wk (d → DI), k_norm (LayerNorm over DI), weights_proj (d → HI), its
        softmax scaling (2·HI); the model's rotary scaling on the layer that holds it."""
        h, hi, di = self.heads, self.index_heads, self.index_dim
        parts = LatentAttention.params(self, d, active) + [
            Part("softmax_scaling", 2 * h, LAYERS, (2, h), REPLICATED, module="softmax_scaling")]
        if self.indexer:
            parts += [*LAYERNORM.params(d, "indexer.q_input_norm"),
                      *linear("indexer.wq_b", d, hi * di, False, REPLICATED),
                      *linear("indexer.wk", d, di, False, REPLICATED),
                      *LAYERNORM.params(di, "indexer.k_norm"),
                      *linear("indexer.weights_proj", d, hi, False, REPLICATED),
                      Part("indexer.softmax_scaling", 2 * hi, LAYERS, (2, hi), REPLICATED,
                           module="indexer.softmax_scaling")]
        if self.rope_scale:
            parts.append(Part("rotary.alpha", self.rope_scale, LAYERS, (self.rope_scale,),
                              REPLICATED, module="rotary"))
        return parts

    # -------------------------------------------------------------------------------- FLOPs

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        parts = super().flops(d, t_q, t_k, pairs)
        return parts if self.own_kv else [p for p in parts if p.name != "kv_a"]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        parts = super().decode(d, batch, first, last)
        return parts if self.own_kv else [p for p in parts if p.name != "kv_a"]

    def indexer_flops(self, d: int, tokens: int, pairs: int) -> list[Part]:
        """The indexer's queries from the layer input (d wide), not from a query latent."""
        if not self.indexer:
            return []
        hi, di = self.index_heads, self.index_dim
        return [
            gemm("indexer.wq_b", tokens, d, hi * di, REPLICATED),  # (T×d)·(d×HI·DI)
            gemm("indexer.wk", tokens, d, di, REPLICATED),  # (T×d)·(d×DI)
            gemm("indexer.weights_proj", tokens, d, hi, REPLICATED),  # (T×d)·(d×HI)
            # per query, (HI×DI)·(DI×T) and (1×HI)·(HI×T), as DSA's indexer
            Part("indexer.scores", 2 * hi * di * pairs, ATTENTION),
            Part("indexer.head_sum", 2 * hi * pairs, ATTENTION),
        ]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Sparse latent attention's, less the latent norm of a layer without its own latent,
        plus the indexer's input LayerNorm (7 per element) and the softmax scalings (a
        multiply-add per position and head, then a multiply per query element)."""
        parts = super().elementwise(d, x)
        extra = 2 * x.tokens * self.heads + x.tokens * self.d_q
        if self.indexer:
            extra += (LAYERNORM.per_element * x.tokens * d + 2 * x.tokens * self.index_heads
                      + x.tokens * self.index_heads * self.index_dim)
        return parts + [Part("elementwise.softmax_scaling", extra, ELEMENTWISE)]

    def inner_norms(self, t_q: int, t_k: int) -> int:
        """As latent attention's, less the latent's RMSNorm where the latent is an earlier
        layer's (normed there)."""
        own = super().inner_norms(t_q, t_k)
        return own if self.own_kv else own - RMS.per_element * t_k * self.kv_rank

    def bias_adds(self, d: int, t_q: int, t_k: int) -> int:
        """No kv_a (nor its bias) where the latent is an earlier layer's."""
        adds = super().bias_adds(d, t_q, t_k)
        if not self.own_kv and self.qkv_bias:
            adds -= t_k * (self.kv_rank + self.rope_dim)
        return adds

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        """A layer with its own latent: as DSA's; one that reads an earlier layer's: its
        indexer's keys alone (or nothing without an indexer)."""
        if self.own_kv:
            return super().cache()
        keys = self.index_dim if self.indexer else 0
        return Cache(per_token=keys, window=None, per_token_uncompressed=keys, label="dsa")

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        if self.own_kv:
            return super().engine_cache(tp)
        if not self.indexer:
            return ()
        return (EngineCache("indexer", heads=1, k_dim=self.index_dim),)

    # ---------------------------------------------------------------- crossover, conventions

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Megatron-LM's MLA term (no query rank); MaxText's indexer term assumes a query
        latent, so it does not apply."""
        if name == "maxtext":
            return None
        return LatentAttention.formula(self, name, d, s, local)

    def published(self, d: int) -> Published:
        return replace(super().published(d), departures=(
            "assumes multi-head attention; this model has latent attention (MLA) without a "
            "query latent, with DeepSeek sparse attention and learned softmax scaling",))

    def describe(self) -> str:
        what = "latent attention" + ("" if self.rope_dim else " (NoPE)") + (
            "" if self.own_kv else " on an earlier layer's latent")
        if not self.indexer:
            return f"{what}, top-{self.topk:,} sparse (an earlier layer's selection)"
        return f"{what}, top-{self.topk:,} sparse (indexer {self.index_heads}x{self.index_dim})"

    def notes(self) -> list[str]:
        return super().notes() + [
            "Mistral Large 4 attention: queries projected from d (no query latent), the indexer "
            "projects the layer input too (a LayerNorm, then d → HI·DI); learned per-head "
            "softmax scalings (2 values per head, attention and indexer); NoPE layers widen "
            "the unrotated keys by d_rope; layers reading an earlier layer's latent have no "
            "kv_a projection"]


@dataclass(frozen=True)
class LearnedRopeConfig:
    """`learned_rope:` in a model file: the rotary embedding's learned scaling values (one per
    inverse frequency: Mistral Large 4's `alpha`), held by the layer named `..._lerope`."""

    frequencies: Annotated[int, Min(1)]


def build(cfg: Any, name: str) -> DirectSparseLatentAttention:
    s, mla = cfg.sparse_attention, cfg.latent_attention
    if s is None or mla is None:
        raise ValueError(f"{BASE} layers need a sparse_attention block (index_n_heads, "
                         "index_head_dim, index_topk) and a latent_attention block")
    if cfg.n_heads is None:
        raise ValueError("n_heads is required: this model has attention layers")
    if mla.q_lora_rank is not None:
        raise ValueError(f"{BASE} layers project queries directly: latent_attention."
                         "q_lora_rank must be null")
    from .attention_layers import model_norm

    rest = name[len(BASE):]
    flags = {suffix: suffix in rest for suffix in SUFFIXES}
    lerope = flags["_lerope"]
    if lerope and cfg.learned_rope is None:
        raise ValueError(f"a {BASE}..._lerope layer holds the learned rotary scaling: give "
                         "learned_rope.frequencies")
    rope = 0 if flags["_nope"] else mla.qk_rope_head_dim
    return DirectSparseLatentAttention(
        heads=cfg.n_heads, kv_heads=cfg.n_heads,
        qk_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim, v_dim=mla.v_head_dim,
        mask=Mask("topk", s.index_topk), qkv_bias=cfg.bias.qkv, out_bias=cfg.bias.attn_out,
        qk_norm=cfg.qk_norm, sinks=cfg.attention_sinks, norm=model_norm(cfg),
        q_rank=None, kv_rank=mla.kv_lora_rank, rope_dim=rope,
        index_heads=s.index_n_heads, index_dim=s.index_head_dim,
        indexer=not flags["_noindexer"], own_kv=not flags["_reuse"],
        rope_scale=cfg.learned_rope.frequencies if lerope else 0)


REGISTER = Entry(layer_types=NAMES, build=build, blocks=(("learned_rope", LearnedRopeConfig),))
