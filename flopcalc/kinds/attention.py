"""Softmax attention: multi-head, grouped-query and multi-query (`kv_heads` key/value heads
serving `heads` query heads), with any mask (full causal, sliding window, chunked,
bidirectional), attention sinks and QK-norm. The same kind fills the cross-attention slot of an
encoder-decoder's decoder (keys and values from the encoder).

A matmul (T×in)·(in×out) costs 2·T·in·out FLOPs. Per head, the scores QKᵀ cost 2·d_qk and the
value product AV 2·d_v per scored (query, key) pair, so the s² part of a layer is
2·h·(d_qk + d_v)·pairs: 4·s²·d_q for full self-attention with d_v = d_qk. GQA shares keys and
values between query heads, but every query head still scores its own pairs. QK-norms, sinks,
softmax and bias adds are element-wise: Hugging Face computes none of them as a matmul, so
FlopCounterMode counts none of them either.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterator, Optional

from ..records import dataclass
from .base import (ATTENTION, COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, Cache,
                   EngineCache, Keeping, Kind, Part, Published, Span, gemm, linear)
from .masks import Mask
from .norm import Norm

SOFTMAX_PER_SCORE = 5  # scale by 1/√d_h, subtract the row max, exp, sum, divide
SIGMOID = 4  # negate, exp, add, divide


@dataclass(frozen=True)
class Attention(Kind):
    """One attention sublayer. Per head, queries and keys are `qk_dim` wide and values `v_dim`
    wide. `qk_norm` normalises q and k per head (one norm of a head's width shared by every
    head: Qwen3, Gemma 3) or over all heads (OLMo 2), with the model's `norm`."""

    heads: int
    kv_heads: int
    qk_dim: int
    v_dim: int
    mask: Mask
    qkv_bias: bool = False
    out_bias: bool = False
    k_bias: Optional[bool] = None  # the key projection's bias when not as qkv_bias (Whisper: none)
    qk_norm: str = "none"
    sinks: bool = False
    norm: Norm = Norm("rmsnorm")  # the kind of norm QK-norm uses
    alibi: bool = False  # ALiBi (Press et al. 2022): a bias added to every score
    # An output gate (Qiu et al. 2025, "Gated Attention for Large Language Models",
    # arXiv:2505.06708; Qwen3-Next): the query projection is twice as wide, its second half a
    # gate per output element, and o reads attention·sigmoid(gate).
    gate: bool = False
    # scalar multiplies (µP: Falcon-H1, Granite; `kinds.multipliers`): the input (T·d), the keys
    # (T·h_kv·d_qk), the output (T·d); element-wise only
    multipliers: tuple[str, ...] = ()
    slot = "attn"

    def __post_init__(self) -> None:
        if self.heads % self.kv_heads:
            raise ValueError(f"n_kv_heads={self.kv_heads} must divide n_heads={self.heads} "
                             "(each KV head serves a whole group of query heads)")

    @property
    def bidirectional(self) -> bool:  # type: ignore[override]
        """Every query sees every key (encoders, cross-attention)."""
        return self.mask.pattern == "bidirectional"

    # ------------------------------------------------------------------------------- widths

    @property
    def d_q(self) -> int:
        """Width of all query heads together (h·d_qk)."""
        return self.heads * self.qk_dim

    @property
    def d_k(self) -> int:
        """Width of all key heads together (h_kv·d_qk)."""
        return self.kv_heads * self.qk_dim

    @property
    def d_v(self) -> int:
        """Width of all value heads together (h_kv·d_v)."""
        return self.kv_heads * self.v_dim

    @property
    def d_o(self) -> int:
        """Width of the attention output before its projection (h·d_v)."""
        return self.heads * self.v_dim

    @property
    def per_pair(self) -> int:
        """FLOPs of the attention matrix per scored (query, key) pair: 2·h·(d_qk + d_v)."""
        return 2 * self.heads * (self.qk_dim + self.v_dim)

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        """q, k, v (column-parallel, with their biases), o (row-parallel), QK-norms, sinks."""
        parts = self.projection_params(d)
        q_width, k_width = self._qk_norm_widths()
        if q_width:
            parts += self.norm.params(q_width, "q_norm") + self.norm.params(k_width, "k_norm")
        if self.sinks:
            parts.append(Part("sinks", self.heads, LAYERS, (self.heads,), REPLICATED,
                              module=""))  # the attention module's own
        if self.gate:  # Hugging Face's q_proj holds it, interleaved per head with the queries
            parts += linear("q_gate", d, self.d_o, self.qkv_bias)
        return parts

    def projection_params(self, d: int) -> list[Part]:
        parts = [Part("q.weight", d * self.d_q, LAYERS, (d, self.d_q), COLUMN, matmul=True,
                      module="q"),
                 Part("k.weight", d * self.d_k, LAYERS, (d, self.d_k), COLUMN, matmul=True,
                      module="k"),
                 Part("v.weight", d * self.d_v, LAYERS, (d, self.d_v), COLUMN, matmul=True,
                      module="v")]
        if self.qkv_bias:
            parts.append(Part("q.bias", self.d_q, LAYERS, (self.d_q,), COLUMN, module="q"))
        if self.has_k_bias:
            parts.append(Part("k.bias", self.d_k, LAYERS, (self.d_k,), COLUMN, module="k"))
        if self.qkv_bias:
            parts.append(Part("v.bias", self.d_v, LAYERS, (self.d_v,), COLUMN, module="v"))
        return parts + linear("o", self.d_o, d, self.out_bias, ROW)

    @property
    def has_k_bias(self) -> bool:
        return self.qkv_bias if self.k_bias is None else self.k_bias

    def _qk_norm_widths(self) -> tuple[int, int]:
        if self.qk_norm == "per_head":
            return self.qk_dim, self.qk_dim
        if self.qk_norm == "all_heads":
            return self.d_q, self.d_k
        return 0, 0

    # -------------------------------------------------------------------------------- FLOPs

    def pair_flops(self, pairs: int) -> list[Part]:
        """The attention matrix for `pairs` (query, key) pairs per head: QKᵀ is 2·d_qk per pair
        and head, AV 2·d_v."""
        return [Part("scores", 2 * self.heads * pairs * self.qk_dim, ATTENTION),
                Part("av", 2 * self.heads * pairs * self.v_dim, ATTENTION)]

    def pairs(self, x: Span) -> int:
        """Pairs scored per head over the batch."""
        return x.pairs(self.mask)

    def forward(self, d: int, x: Span) -> list[Part]:
        """Forward FLOPs over `x` (queries from its tokens, keys and values from its source
        tokens)."""
        return self.flops(d, x.tokens, x.source_tokens, self.pairs(x))

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        gate = [gemm("q_gate", t_q, d, self.d_o)] if self.gate else []
        return [
            gemm("q", t_q, d, self.d_q),  # (T_q×d)·(d×h·d_qk)
            *gate,  # (T_q×d)·(d×h·d_v): the gate half of a gated q_proj
            gemm("k", t_k, d, self.d_k),  # (T_k×d)·(d×h_kv·d_qk)
            gemm("v", t_k, d, self.d_v),  # (T_k×d)·(d×h_kv·d_v)
            *self.pair_flops(pairs),
            gemm("o", t_q, self.d_o, d, ROW),  # (T_q×h·d_v)·(h·d_v×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """Decode steps at positions first..last, one token per sequence each: the projections
        of the new tokens, then one query per head against the keys its mask lets it see."""
        t = batch * (last - first + 1)
        return self.flops(d, t, t, batch * self.mask.visible_keys(first, last))

    # ---------------------------------------------------------------------------- elementwise

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Bias adds, QK-norms and the softmax (per score, and per sink logit)."""
        parts = []
        bias = self.bias_adds(d, x.tokens, x.source_tokens)
        if bias:
            parts.append(Part("elementwise.bias", bias, ELEMENTWISE))
        norms = self.inner_norms(x.tokens, x.source_tokens)
        if norms:
            parts.append(Part("elementwise.qk_norm", norms, ELEMENTWISE))
        scores = self.heads * self.pairs(x) + (self.heads * x.tokens if self.sinks else 0)
        if self.alibi:  # one add per score
            parts.append(Part("elementwise.alibi", self.heads * self.pairs(x), ELEMENTWISE))
        parts.append(Part("elementwise.softmax", SOFTMAX_PER_SCORE * scores, ELEMENTWISE))
        if self.gate:  # sigmoid (4) and the product (1) per output element
            parts.append(Part("elementwise.gate", (SIGMOID + 1) * x.tokens * self.d_o,
                              ELEMENTWISE))
        if self.multipliers:  # one multiply per element scaled
            widths = {"input": x.tokens * d, "key": x.source_tokens * self.d_k,
                      "output": x.tokens * d}
            parts.append(Part("elementwise.multipliers",
                              sum(widths[m] for m in self.multipliers), ELEMENTWISE))
        return parts

    def bias_adds(self, d: int, t_q: int, t_k: int) -> int:
        qkv = t_q * self.d_q + t_k * self.d_v if self.qkv_bias else 0
        qkv += t_k * self.d_k if self.has_k_bias else 0
        if self.gate and self.qkv_bias:
            qkv += t_q * self.d_o
        return qkv + (t_q * d if self.out_bias else 0)

    def inner_norms(self, t_q: int, t_k: int) -> int:
        """QK-norm over every query (`t_q` tokens) and key (`t_k` tokens) element."""
        if self.qk_norm == "none":
            return 0
        return self.norm.per_element * (t_q * self.d_q + t_k * self.d_k)

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        """K and V of the KV heads per token, for the tokens its mask still needs."""
        return Cache(per_token=self.d_k + self.d_v, window=self.mask.cache_bound,
                     per_token_uncompressed=self.heads * (self.qk_dim + self.v_dim),
                     label=self.mask.label)

    def cache_reads(self, first: int, last: int) -> int:
        """Values the decode steps at positions first..last read from the cache."""
        return self.cache().per_token * self.mask.visible_keys(first, last)

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """vLLM's attention spec on one of `tp` ranks (`attention.py` get_kv_cache_spec): K and
        V of max(1, h_kv // tp) KV heads (a head is replicated when there are fewer than `tp`,
        `config/model.py` get_num_kv_heads), for every token (`full`; a top-k mask too: any key
        may be picked), or recycled outside a window or chunk. Bidirectional attention
        (encoders, cross-attention) keeps no decode cache here."""
        layout = {"causal": "full", "topk": "full", "window": "sliding",
                "chunked": "chunked"}.get(self.mask.pattern)
        if layout is None:
            return ()
        return (EngineCache(layout, heads=max(1, self.kv_heads // tp), k_dim=self.qk_dim,
                            v_dim=self.v_dim,
                            window=self.mask.size if layout == "sliding" else None,
                            chunk=self.mask.size if layout == "chunked" else None),)

    @property
    def kv_kind(self) -> str:
        if self.kv_heads == self.heads:
            return "mha"
        return "mqa" if self.kv_heads == 1 else "gqa"

    # ---------------------------------------------------------------------------- activations

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """Bytes kept for backward besides the sublayer's input, after Korthikanti et al. 2022
        §4.1: Q and K, the softmax output with its dropout mask and output (or FlashAttention's
        row log-sum-exp), V and the output projection's input; 16-bit, split t ways."""
        s, b = k.seq, k.batch
        split = Fraction(1, k.tp)
        parts = [("qk", 2 * s * b * (self.d_q + self.d_k) * split)]
        parts += self.extra_activations(s, b, split)
        if self.qk_norm != "none":
            parts.append(("qk_norm_inputs", 2 * s * b * (self.d_q + self.d_k) * split))
        if k.flash:
            parts.append(("logsumexp", 4 * self.heads * s * b * split))
        elif k.recompute != "selective":
            parts.append(("softmax", 2 * self.heads * s * s * b * split))
            if k.dropout:
                parts.append(("softmax_dropout_mask", self.heads * s * s * b * split))
                parts.append(("softmax_dropout", 2 * self.heads * s * s * b * split))
        parts.append(("v", 2 * s * b * self.d_v * split))
        if self.gate:  # the gate's sigmoid and the attention output it multiplies
            parts.append(("gate", 2 * s * b * self.d_o * split))
            parts.append(("ungated_output", 2 * s * b * self.d_o * split))
        parts.append(("o_input", 2 * s * b * self.d_o * split, 1))  # the output projection's
        return parts

    def extra_activations(self, s: int, b: int, split: Fraction) -> list[tuple[str, Fraction]]:
        return []

    # ---------------------------------------------------------------- crossover, conventions

    def pair_terms(self) -> list[tuple[int, Optional[Mask]]]:
        """FLOPs per scored pair and the mask that counts the pairs."""
        return [(self.per_pair, self.mask)]

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        return self.mask.breakpoints(lo, hi)

    def period(self) -> Optional[int]:
        return self.mask.period

    def tp_units(self) -> int:
        """Tensor parallelism must divide the heads: each device holds whole heads."""
        return self.heads

    def published(self, d: int) -> Published:
        departures = ()
        if self.kv_heads != self.heads:
            departures = (f"assumes multi-head attention; this model has "
                          f"{self.kv_kind.upper()} ({self.kv_heads} KV heads for {self.heads} "
                          "query heads), so its K/V projections are narrower",)
        if self.gate:
            departures += ("assumes ungated attention; this model multiplies the attention "
                           "output by a sigmoid gate (a query projection twice as wide)",)
        return Published(heads=self.heads, kv_heads=self.kv_heads, head_dim=self.qk_dim,
                         qk_width=self.d_q, v_width=self.d_o, kv_width=self.d_k,
                         kv_kind=self.kv_kind, departures=departures)

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under the codebases' attention terms, with one head width
        d_h (Megatron-LM's kv_channels, MaxText's head_dim: this kind's query/key width), d_q =
        h·d_h and d_kv = h_kv·d_h.

        Megatron-LM (`megatron/training/training.py` at d98e8a64,
        num_floating_point_operations): the projections 2·(d·(d_q + 2·d_kv + gate) + d_q·d),
        the gate d_q when attention_output_gate (the GPT path's only; hybrid_flops'
        attn_layer_flops has no gate term), and the core 2·s·d_q: QKᵀ and AV over s/2 keys on
        average (the causal mask), whatever the layer's window. MaxText
        (`src/maxtext/utils/maxtext_utils.py` at e591f30c,
        calculate_tflops_training_per_device): 2·d·(h + 2·h_kv)·d_h + 2·d·h·d_h, no gate; the
        core 4·s²·h·d_h/2 per sequence (causal); with `local` (its Gemma 2/3/4 and GPT-OSS
        paths) a sliding window of w keys 4·(s·w − w²/2)·h·d_h with w = min(window, s), and
        (its Llama 4 path) a chunked layer 4·(⌊s/c⌋·c² + (s mod c)²)·h·d_h/2; per token:
        divided by s. A mixture of attention heads overrides this (no codebase builds one)."""
        h, hd = self.heads, self.qk_dim
        d_q, d_kv = h * hd, self.kv_heads * hd
        if name in ("megatron_lm", "megatron_lm_hybrid"):
            gate = d_q if self.gate and name == "megatron_lm" else 0
            # (T×d)·(d×(d_q + 2·d_kv + gate)) and (T×d_q)·(d_q×d); the core 6·d_q·s² / 3 / s
            return Fraction(2 * (d * (d_q + 2 * d_kv + gate) + d_q * d) + 2 * d_q * s)
        if name != "maxtext":
            return None
        proj = 2 * d * (h + 2 * self.kv_heads) * hd + 2 * d * h * hd  # qkv_flops + projection
        mask = self.mask
        if local and mask.pattern == "window":
            assert mask.size is not None
            w = min(mask.size, s)
            core = Fraction(4 * s * w - 2 * w * w, s) * h * hd  # 4·(s·w − w²/2)·h·d_h / s
        elif local and mask.pattern == "chunked":
            assert mask.size is not None
            c = mask.size
            full, rest = divmod(s, c)
            core = Fraction(2 * (full * c * c + rest * rest) * h * hd, s)  # non-causal / 2
        else:
            core = Fraction(2 * s * h * hd)  # 4·s²·h·d_h / 2 / s
        return proj + core

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        notes: list[str] = []
        if name not in ("megatron_lm", "megatron_lm_hybrid", "maxtext"):
            return notes
        if self.v_dim != self.qk_dim:
            notes.append(f"attention: one head width for queries, keys and values; this "
                         f"model's values are {self.v_dim:,} wide, counted at "
                         f"{self.qk_dim:,}")
        if self.gate and name != "megatron_lm":
            where = "hybrid_flops" if name == "megatron_lm_hybrid" else "MaxText's formula"
            notes.append(f"attention: {where} has no term for the output gate (2·d·h·d_v per "
                         "token): left out")
        bounded = self.mask.pattern in ("window", "chunked")
        if bounded and name != "maxtext":
            notes.append(f"attention: the {self.mask.describe()} layers counted at the causal "
                         "average of s/2 keys, as every attention layer (the formula has no "
                         "window term)")
        elif bounded and not local:
            notes.append(f"attention: the {self.mask.describe()} layers counted causal over "
                         "the whole sequence, as MaxText's decoder blocks for models without "
                         "global layers count them (its Mistral block has no window)")
        elif self.mask.pattern == "window":
            notes.append(f"attention: the {self.mask.describe()} layers counted as MaxText's "
                         "Gemma 2/3/4 and GPT-OSS paths count them, 4·(s·w − w²/2)·h·d_h per "
                         "sequence (its other decoder blocks count every layer causal)")
        elif self.mask.pattern == "chunked":
            notes.append(f"attention: the {self.mask.describe()} layers counted as MaxText's "
                         "Llama 4 path counts them, 4·(⌊s/c⌋·c² + (s mod c)²)·h·d_h/2 per "
                         "sequence")
        return notes

    def describe(self) -> str:
        return self.mask.describe() + (", gated" if self.gate else "")

    def notes(self) -> list[str]:
        if not self.gate:
            return []
        return ["gated attention (Qwen3-Next): the query projection also yields a gate per "
                "output element, 2·d·h·d_v more FLOPs per token; o reads the attention output "
                "times sigmoid(gate) (5 element-wise FLOPs per element); the gate is not cached"]


