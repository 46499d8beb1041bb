"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries through a rank-`q_rank`
bottleneck (or projected directly when None), keys and values decompressed per head from a
shared latent of `kv_rank` values, plus one rotary key of `rope_dim` shared by every head.

The forward pass is Hugging Face's: keys and values decompressed per head. Decode steps run in
the weight-absorbed form serving engines use (vLLM, SGLang, DeepSeek's own): the cache holds the
latent and the rotary key (r_kv + d_rope values per token), W_UK is absorbed into the query and
W_UV applied after the value sum, so no key or value is decompressed.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Annotated, Optional

from ..records import dataclass
from ..declare import Min
from .attention import Attention
from .base import (ATTENTION, COLUMN, ROW, WEIGHTS, Cache, EngineCache, Part, Published, gemm,
                   linear)
from .norm import RMS
from .registry import Entry


@dataclass(frozen=True)
class LatentAttention(Attention):
    """Multi-head latent attention: queries through a rank-`q_rank` bottleneck (None: projected
    directly), keys and values decompressed per head from a shared latent of `kv_rank` values,
    one rotary key of `rope_dim` shared by every head."""

    q_rank: Optional[int] = None
    kv_rank: int = 0
    rope_dim: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kv_heads != self.heads:
            raise ValueError("latent attention decompresses keys and values for every head: "
                             "n_kv_heads must equal n_heads")
        if self.qk_dim <= self.rope_dim:
            raise ValueError("latent attention: qk_rope_head_dim must be smaller than the "
                             "query/key head width (qk_nope_head_dim + qk_rope_head_dim)")

    @property
    def nope(self) -> int:
        return self.qk_dim - self.rope_dim

    @property
    def up_projections(self) -> tuple[str, ...]:
        """The projections from the latents to per-head queries, keys and values (Megatron-Core's
        `qkv_up_proj_and_rope_apply`, what its `mla_up_proj` recomputation runs again): q_b and
        kv_b, or q and kv_b without a query rank (the query projection then reads the input)."""
        return ("q" if self.q_rank is None else "q_b", "kv_b")

    def projection_params(self, d: int) -> list[Part]:
        """As Hugging Face builds it: q_a (d → r_q), its RMSNorm, q_b (r_q → h·d_qk), or one q
        projection (d → h·d_qk) without a query rank; kv_a (d → r_kv + d_rope) with an RMSNorm
        over the r_kv latent, kv_b (r_kv → h·(d_nope + d_v)); o (h·d_v → d).
        `attention_bias` puts biases on q_a, kv_a and o only."""
        if self.q_rank is None:
            parts = linear("q", d, self.d_q, False)
        else:
            parts = (linear("q_a", d, self.q_rank, self.qkv_bias)
                     + RMS.params(self.q_rank, "q_a_norm")
                     + linear("q_b", self.q_rank, self.d_q, False))
        parts += linear("kv_a", d, self.kv_rank + self.rope_dim, self.qkv_bias)
        parts += RMS.params(self.kv_rank, "kv_a_norm")
        parts += linear("kv_b", self.kv_rank, self.heads * (self.nope + self.v_dim), False)
        return parts + linear("o", self.d_o, d, self.out_bias, ROW)

    def _q_path(self, d: int, t: int) -> list[Part]:
        if self.q_rank is None:
            return [gemm("q", t, d, self.d_q)]  # (T×d)·(d×h·d_qk)
        return [gemm("q_a", t, d, self.q_rank),  # (T×d)·(d×r_q)
                gemm("q_b", t, self.q_rank, self.d_q)]  # (T×r_q)·(r_q×h·d_qk)

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        """Keys and values decompressed per head from the latent (compressed from the `t_k` key
        tokens: the encoder's, for cross-attention)."""
        return self._q_path(d, t_q) + [
            gemm("kv_a", t_k, d, self.kv_rank + self.rope_dim),  # (T_k×d)·(d×(r_kv + d_rope))
            # (T_k×r_kv)·(r_kv×h·(d_nope + d_v)): the per-head keys (without rope) and values
            gemm("kv_b", t_k, self.kv_rank, self.heads * (self.nope + self.v_dim)),
            *self.pair_flops(pairs),
            gemm("o", t_q, self.d_o, d, ROW),  # (T_q×h·d_v)·(h·d_v×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The weight-absorbed form: scores 2·h·(r_kv + d_rope) and the value sum 2·h·r_kv per
        cached latent, plus the absorbed query and output up-projections once per token."""
        t = batch * (last - first + 1)
        pairs, h = batch * self.mask.visible_keys(first, last), self.heads
        return self._q_path(d, t) + [
            gemm("kv_a", t, d, self.kv_rank + self.rope_dim),
            # Per head, the no-rope query (1×d_nope) times W_UK (d_nope×r_kv).
            Part("q_absorb", 2 * t * h * self.nope * self.kv_rank, WEIGHTS),
            Part("scores", 2 * h * pairs * (self.kv_rank + self.rope_dim), ATTENTION),
            Part("av", 2 * h * pairs * self.kv_rank, ATTENTION),
            # Per head, the latent-space output (1×r_kv) times W_UV (r_kv×d_v).
            Part("v_up", 2 * t * h * self.kv_rank * self.v_dim, WEIGHTS),
            gemm("o", t, self.d_o, d, ROW),
        ]

    def bias_adds(self, d: int, t_q: int, t_k: int) -> int:
        qkv = (t_q * (self.q_rank or 0) + t_k * (self.kv_rank + self.rope_dim)
               if self.qkv_bias else 0)
        return qkv + (t_q * d if self.out_bias else 0)

    def inner_norms(self, t_q: int, t_k: int) -> int:
        """QK-norm if any, and the RMSNorms of the query and key/value latents."""
        return super().inner_norms(t_q, t_k) + RMS.per_element * (
            t_q * (self.q_rank or 0) + t_k * self.kv_rank)

    def cache(self) -> Cache:
        """The latent and the shared rotary key per token, as serving engines keep them."""
        return Cache(per_token=self.kv_rank + self.rope_dim, window=self.mask.cache_bound,
                     per_token_uncompressed=self.heads * (self.qk_dim + self.v_dim),
                     label=self.mask.label)

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """vLLM's MLAAttentionSpec (`mla_attention.py` get_kv_cache_spec): one head of
        r_kv + d_rope values per token, never split by tensor parallelism (max_tp_shards 1)."""
        return (EngineCache("mla", heads=1, k_dim=self.kv_rank + self.rope_dim,
                            rope_dim=self.rope_dim),)

    @property
    def kv_kind(self) -> str:
        return "latent"

    def extra_activations(self, s: int, b: int, split: Fraction) -> list[tuple[str, Fraction]]:
        low_rank = (self.q_rank or 0) * 2 + self.kv_rank * 2 + self.rope_dim
        return [("latents", 2 * s * b * low_rank * split)]

    def published(self, d: int) -> Published:
        return replace(super().published(d), departures=(
            "assumes multi-head attention; this model has latent attention (MLA)",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under the codebases' MLA terms (h heads, d_nope + d_rope =
        d_qk, values d_v, ranks r_q and r_kv).

        Megatron-LM (`megatron/training/training.py` at d98e8a64, transformer_flops'
        multi_latent_attention branch), as the code writes it: 2·(q_term + r_kv·(d + h·(d_nope
        + d_v) + 1) + d·d_rope + h·d_v·d), q_term = r_q·(d + h·d_qk + 1) (d·h·d_qk without a
        query rank; the + 1s are the code's, for the latent norms), and the core s·h·(d_qk +
        d_v) (QKᵀ and AV over s/2 keys). Its hybrid path builds MLA layers ('+' in a
        hybrid_layer_pattern, 'D' with the sparse indexer) but hybrid_flops counts only '*'
        attention layers, so it would count them as 0 FLOPs: None here (the row says it does
        not apply rather than print a count without the model's attention). MaxText (`src/maxtext/utils/maxtext_utils.py` at e591f30c,
        calculate_mla_tflops_per_device): q 2·(d·r_q + r_q·h·d_qk) (2·d·h·d_qk without a rank),
        kv 2·(d·(r_kv + d_rope) + r_kv·h·(d_nope + d_v)), out 2·d·h·d_v, core s·h·(d_qk +
        d_v)."""
        h, nope, rope, v = self.heads, self.nope, self.rope_dim, self.v_dim
        qk = nope + rope
        core = Fraction(s * h * (qk + v))  # 2·s·h·(d_qk + d_v) per query, over s/2 keys
        if name == "megatron_lm":
            q_term = d * h * qk if self.q_rank is None else self.q_rank * (d + h * qk + 1)
            kv_term = self.kv_rank * (d + h * (nope + v) + 1) + d * rope
            return 2 * (q_term + kv_term + h * v * d) + core
        if name == "maxtext":
            q = (2 * d * h * qk if self.q_rank is None
                 else 2 * (d * self.q_rank + self.q_rank * h * qk))
            kv = 2 * (d * (self.kv_rank + rope) + self.kv_rank * h * (nope + v))
            return q + kv + 2 * d * h * v + core
        return None

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        if name == "megatron_lm":
            return ["latent attention: the code's MLA term, its latent norms written as + 1 per "
                    "rank (2·(r_q + r_kv) FLOPs per token)"]
        return []

    def describe(self) -> str:
        return f"latent attention, {self.mask.describe()}"

    def decode_notes(self) -> list[str]:
        return ["latent attention decodes weight-absorbed (as vLLM, SGLang and DeepSeek serve "
                "it): scores 2·h·(r_kv + d_rope) and values 2·h·r_kv per cached latent, plus the "
                "absorbed query and output up-projections; the cache holds r_kv + d_rope values "
                "per token and layer"]


@dataclass(frozen=True)
class LatentAttentionConfig:
    """`latent_attention:` in a model file, in Hugging Face's names."""

    q_lora_rank: Optional[Annotated[int, Min(1)]]  # null: queries projected directly from d
    kv_lora_rank: Annotated[int, Min(1)]
    qk_nope_head_dim: Annotated[int, Min(1)]
    qk_rope_head_dim: Annotated[int, Min(1)]
    v_head_dim: Annotated[int, Min(1)]


REGISTER = Entry(blocks=(("latent_attention", LatentAttentionConfig),))
