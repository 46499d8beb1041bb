"""DeepSeek Sparse Attention (DSA: DeepSeek-AI 2025, "DeepSeek-V3.2-Exp: Boosting Long-Context
Efficiency with DeepSeek Sparse Attention"; DeepSeek-V3.2): multi-head latent attention whose
every query attends over at most `index_topk` keys, picked by a lightning indexer.

The indexer (transformers 5.24 `models/deepseek_v32/modeling_deepseek_v32.py`,
`DeepseekV32Indexer`; DeepSeek's `inference/model.py`, `Indexer`) reads the attention's query
latent (the q_a_layernorm output, r_q wide: it has no projection of its own from d) and the
layer input: `wq_b` r_q → HI·DI (HI heads of DI), `wk` d → DI (one key shared by its heads), a
LayerNorm over DI with a bias (`k_norm`), and `weights_proj` d → HI (a weight per head and
query). The first qk_rope_head_dim dimensions of its q and k are rotated (half-split RoPE). Per
(query, key) pair it costs 2·HI·DI (every head's q·k) and 2·HI (the ReLU'd scores summed over
heads with the weights): I(t, s) = Σ_h w(t, h)·ReLU(q(t, h)·k(s)). It scores every causal key;
the main attention then runs over the top-k.

Forward FLOPs as transformers' eager path computes them (what FlopCounterMode counts, and what
`--attention full` counts): the latent attention of `latent.LatentAttention` over every key,
the top-k only becoming a mask, plus the indexer over every key. `--attention causal` counts
the pairs the model computes: min(i, k) keys for query i in the main attention, i in the
indexer. Decode steps: the weight-absorbed latent attention over the min(i, k) selected keys
(FlashMLA's sparse decode), plus the indexer over all i cached keys. The cache holds the latent
and rotary key (r_kv + d_rope) and the indexer's key (DI) per token, every token (any may be
picked), in the cache dtype as transformers keeps them (`DynamicIndexedLayer`).

The indexer runs under `torch.no_grad()` in transformers (it has no training loss there), so
FlopCounterMode's forward + backward is 3·forward − 2·indexer; DeepSeek trains it (a KL loss to
the main attention's distribution, on its detached input), and flopcalc counts 3·forward.

GLM-5's cross-layer sharing (transformers 5.24 `models/glm_moe_dsa/`, GlmMoeDsaAttention; Zhipu
AI 2026, arXiv:2603.12201): a `dsa_shared` layer has no indexer and attends over the top-k that
the last `dsa` layer before it picked: its tensors, FLOPs and cache are the latent attention's
alone, under the same top-k mask.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (ATTENTION, ELEMENTWISE, REPLICATED, Cache, EngineCache, Part, Published, Span,
                   gemm, linear)
from .latent import LatentAttention
from .masks import Mask
from .norm import Norm
from .registry import Entry

CAUSAL = Mask("causal")  # the indexer scores every causal key
LAYERNORM = Norm("layernorm")  # k_norm: a gain and a bias


@dataclass(frozen=True)
class SparseLatentAttention(LatentAttention):
    """Latent attention over the `mask.size` keys a lightning indexer of `index_heads` heads of
    `index_dim` picks per query (`mask` is a top-k mask)."""

    index_heads: int = 0
    index_dim: int = 0
    # False: a `dsa_shared` layer, which reuses an earlier layer's selection (no indexer)
    indexer: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mask.pattern != "topk":
            raise ValueError("sparse latent attention needs a top-k mask (index_topk)")
        if self.q_rank is None:
            raise ValueError("dsa layers: the lightning indexer reads the query latent, so "
                             "latent_attention.q_lora_rank must be set (not null)")
        if self.index_heads < 1 or self.index_dim < 1:
            raise ValueError("dsa layers need sparse_attention.index_n_heads and index_head_dim "
                             ">= 1")
        if self.index_dim < self.rope_dim:
            raise ValueError(f"sparse_attention.index_head_dim={self.index_dim} must be at least "
                             f"qk_rope_head_dim={self.rope_dim} (the indexer rotates its first "
                             "qk_rope_head_dim dimensions)")

    @property
    def topk(self) -> int:
        assert self.mask.size is not None
        return self.mask.size

    @property
    def index_per_pair(self) -> int:
        """Indexer FLOPs per scored (query, key) pair: 2·HI·DI for q·k, 2·HI for the weighted
        sum over heads."""
        return 2 * self.index_heads * (self.index_dim + 1)

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The latent attention's tensors, then the indexer's: wq_b (r_q → HI·DI), wk (d → DI),
        k_norm (a LayerNorm of DI: gain and bias), weights_proj (d → HI), none biased. They are
        replicated under tensor parallelism (DeepSeek's reference and vLLM keep one indexer per
        device)."""
        assert self.q_rank is not None
        hi, di = self.index_heads, self.index_dim
        if not self.indexer:
            return super().params(d, active)
        return super().params(d, active) + [
            *linear("indexer.wq_b", self.q_rank, hi * di, False, REPLICATED),
            *linear("indexer.wk", d, di, False, REPLICATED),
            *LAYERNORM.params(di, "indexer.k_norm"),
            *linear("indexer.weights_proj", d, hi, False, REPLICATED),
        ]

    # -------------------------------------------------------------------------------- FLOPs

    def index_pairs(self, x: Span) -> int:
        """(query, key) pairs the indexer scores over the batch: every pair under `full` (as the
        eager matmul does), the causal ones under `causal`."""
        return x.pairs(CAUSAL)

    def indexer_flops(self, d: int, tokens: int, pairs: int) -> list[Part]:
        """The indexer over `tokens` queries and `pairs` scored pairs (none in a layer that
        reuses an earlier layer's selection)."""
        assert self.q_rank is not None
        if not self.indexer:
            return []
        hi, di = self.index_heads, self.index_dim
        return [
            # (T×r_q)·(r_q×HI·DI): the indexer's queries from the query latent
            gemm("indexer.wq_b", tokens, self.q_rank, hi * di, REPLICATED),
            gemm("indexer.wk", tokens, d, di, REPLICATED),  # (T×d)·(d×DI)
            gemm("indexer.weights_proj", tokens, d, hi, REPLICATED),  # (T×d)·(d×HI)
            # per query, (HI×DI)·(DI×T): every head's score against every key it sees
            Part("indexer.scores", 2 * hi * di * pairs, ATTENTION),
            # per query, (1×HI)·(HI×T): the ReLU'd scores weighted and summed over heads
            Part("indexer.head_sum", 2 * hi * pairs, ATTENTION),
        ]

    def forward(self, d: int, x: Span) -> list[Part]:
        """The latent attention over the pairs of the convention (`full`: every key, as the
        eager path runs it; `causal`: the top-k of each query), and the indexer."""
        return super().forward(d, x) + self.indexer_flops(d, x.tokens, self.index_pairs(x))

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """Weight-absorbed latent attention over the min(i, k) selected keys of each step, and
        the indexer over all i cached keys."""
        t = batch * (last - first + 1)
        return super().decode(d, batch, first, last) + self.indexer_flops(
            d, t, batch * CAUSAL.visible_keys(first, last))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The latent attention's (its latent norms, bias adds, softmax over its pairs), then the
        indexer's, op by op: k_norm (LayerNorm, 7 per element), per head and scored pair the
        softmax scale and the ReLU (2), per query and head the weight's HI^-0.5 (1), per scored
        pair the causal mask add and the top-k compare (2). Rotary embeddings are not counted,
        as for every attention."""
        if not self.indexer:
            return super().elementwise(d, x)
        hi, di, pairs = self.index_heads, self.index_dim, self.index_pairs(x)
        work = (LAYERNORM.per_element * x.tokens * di + x.tokens * hi
                + (2 * hi + 2) * pairs)
        return super().elementwise(d, x) + [Part("elementwise.indexer", work, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        """Per token: the latent and the rotary key (r_kv + d_rope), and the indexer's key (DI),
        for every token (the indexer may pick any); a layer without an indexer keeps no
        indexer key."""
        if not self.indexer:
            return replace(super().cache(), label="dsa")
        return Cache(per_token=self.kv_rank + self.rope_dim + self.index_dim, window=None,
                     per_token_uncompressed=self.heads * (self.qk_dim + self.v_dim)
                     + self.index_dim, label="dsa")

    def cache_reads(self, first: int, last: int) -> int:
        """The selected latents (min(i, k) per step) and every cached indexer key (i)."""
        if not self.indexer:
            return (self.kv_rank + self.rope_dim) * self.mask.visible_keys(first, last)
        return ((self.kv_rank + self.rope_dim) * self.mask.visible_keys(first, last)
                + self.index_dim * CAUSAL.visible_keys(first, last))

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """vLLM's two specs for the layer: the latent (`MLAAttentionSpec`) and the indexer's keys
        (`DeepseekV32IndexerCache`: DI fp8 values and their fp32 scales per token), neither
        split by tensor parallelism."""
        if not self.indexer:
            return super().engine_cache(tp)
        return super().engine_cache(tp) + (EngineCache("indexer", heads=1, k_dim=self.index_dim),)

    def extra_activations(self, s: int, b: int, split: Fraction) -> list[tuple[str, Fraction]]:
        """The latents, and the indexer's q, k and head weights (16-bit, replicated), which its
        training loss backpropagates through."""
        hi, di = self.index_heads, self.index_dim
        if not self.indexer:
            return super().extra_activations(s, b, split)
        return super().extra_activations(s, b, split) + [
            ("indexer_qk", Fraction(2 * s * b * (hi * di + di + hi)))]

    # ---------------------------------------------------------------- crossover, conventions

    def pair_terms(self) -> list[tuple[int, Optional[Mask]]]:
        """The main attention's pairs under its top-k mask, the indexer's under a causal one."""
        if not self.indexer:
            return [(self.per_pair, self.mask)]
        return [(self.per_pair, self.mask), (self.index_per_pair, CAUSAL)]

    def published(self, d: int) -> Published:
        return replace(super().published(d), departures=(
            "assumes multi-head attention; this model has latent attention (MLA) with DeepSeek "
            "sparse attention: a lightning indexer scores every causal key and the attention "
            f"runs over the top {self.topk:,}",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under the codebases' terms. Megatron-LM counts a DSA layer
        as its MLA (the `dsa` variant takes the multi_latent_attention branch): every causal
        key, no indexer term (hybrid_flops: none, as for MLA). MaxText
        (`calculate_mla_tflops_per_device` with use_indexer), when s > K = index_topk: the MLA
        projections plus the indexer's, 2·(r_q·HI·DI + d·DI + d·HI)
        (`calculate_indexer_tflops_per_device`), the attention 2·s·h·(d_qk + d_v)·ρ with ρ =
        K/s − (K/s)²/2 (`calculate_indexer_mask_ratio`), and the indexer's scores (2·s·HI·DI +
        2·s·HI)/2; when s ≤ K, the MLA alone (the indexer bypassed, its projections too)."""
        base = super().formula(name, d, s, local)
        if name != "maxtext" or base is None or s <= self.topk:
            return base
        assert self.q_rank is not None
        h, hi, di, k = self.heads, self.index_heads, self.index_dim, self.topk
        width = self.qk_dim + self.v_dim
        # a layer that reuses an earlier selection has no indexer projections or scores
        own = 1 if self.indexer else 0
        index_proj = 2 * (self.q_rank * hi * di + d * di + d * hi) * own
        ratio = Fraction(k, s) - Fraction(k * k, 2 * s * s)
        attention = 2 * s * h * width * ratio
        scoring = Fraction(2 * s * hi * di + 2 * s * hi, 2) * own
        return base - s * h * width + index_proj + attention + scoring

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        notes = super().formula_notes(name, d, s, local)
        if name == "megatron_lm":
            return notes + ["DeepSeek sparse attention: counted as dense MLA over every causal "
                            "key; no term for the lightning indexer"]
        if name == "maxtext" and s > self.topk:
            return notes + [f"DeepSeek sparse attention: the indexer's projections and scores, "
                            f"and the attention over the K = {self.topk:,} keys it keeps as "
                            "the share K/s − (K/s)²/2 of s² (calculate_indexer_mask_ratio)"]
        if name == "maxtext":
            return notes + [f"DeepSeek sparse attention: s ≤ index_topk = {self.topk:,}, so "
                            "MaxText counts dense causal MLA and no indexer (its projections "
                            "included)"]
        return notes

    def describe(self) -> str:
        if not self.indexer:
            return f"latent attention, top-{self.topk:,} sparse (an earlier layer's selection)"
        return (f"latent attention, top-{self.topk:,} sparse (indexer {self.index_heads}x"
                f"{self.index_dim})")

    def notes(self) -> list[str]:
        return ["DeepSeek sparse attention: the lightning indexer (wq_b on the query latent, wk, "
                "weights_proj; 2·HI·(DI + 1) FLOPs per scored pair) scores every causal key; "
                "under --attention full both it and the latent attention run over every key, "
                "as transformers' eager path does (the top-k becomes a mask); under causal the "
                "attention counts the min(i, index_topk) keys each query keeps",
                "DeepSeek sparse attention, training: 3 x forward, the indexer's backward "
                "included (DeepSeek trains it with a KL loss on its detached input; "
                "transformers runs it under no_grad, so FlopCounterMode's forward + backward "
                "there is 3 x forward − 2 x the indexer's forward)"]

    def decode_notes(self) -> list[str]:
        return ["DeepSeek sparse attention decodes over the min(c, index_topk) keys the indexer "
                "picks (weight-absorbed, as FlashMLA's sparse kernel), and the indexer scores "
                "all c cached keys; the cache holds r_kv + d_rope + index_head_dim values per "
                "token and layer, every token"]


@dataclass(frozen=True)
class SparseAttentionConfig:
    """`sparse_attention:` in a model file (DeepSeek-V3.2's lightning indexer), in Hugging
    Face's names; the layers are `dsa` in layer_types and read `latent_attention` too."""

    index_n_heads: Annotated[int, Min(1)]
    index_head_dim: Annotated[int, Min(1)]
    index_topk: Annotated[int, Min(1)]


def build(cfg: Any, name: str) -> SparseLatentAttention:
    s, mla = cfg.sparse_attention, cfg.latent_attention
    if s is None or mla is None:
        raise ValueError("dsa layers need a sparse_attention block (index_n_heads, "
                         "index_head_dim, index_topk) and a latent_attention block")
    if cfg.n_heads is None:
        raise ValueError("n_heads is required: this model has attention layers")
    from .attention_layers import model_norm

    return SparseLatentAttention(
        heads=cfg.n_heads, kv_heads=cfg.n_heads,
        qk_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim, v_dim=mla.v_head_dim,
        mask=Mask("topk", s.index_topk), qkv_bias=cfg.bias.qkv, out_bias=cfg.bias.attn_out,
        qk_norm=cfg.qk_norm, sinks=cfg.attention_sinks, norm=model_norm(cfg),
        q_rank=mla.q_lora_rank, kv_rank=mla.kv_lora_rank, rope_dim=mla.qk_rope_head_dim,
        index_heads=s.index_n_heads, index_dim=s.index_head_dim, indexer=name == "dsa")


# `dsa_shared`: GLM-5's layers that attend over the previous `dsa` layer's top-k (no indexer)
REGISTER = Entry(layer_types=("dsa", "dsa_shared"), build=build,
                 blocks=(("sparse_attention", SparseAttentionConfig),))
