"""Zamba2's shared transformer block (Glorioso et al. 2024, "The Zamba2 Suite: Technical Report",
arXiv:2411.15242; transformers 5.24 `models/zamba2/modeling_zamba2.py`, Zamba2HybridLayer,
Zamba2AttentionDecoderLayer, Zamba2Attention, Zamba2MLP) as a token mixer beside a layer's
Mamba-2 mixer, and Zamba's (Glorioso et al. 2024, "Zamba: A Compact 7B SSM Hybrid Model",
arXiv:2405.16712; `models/zamba/modeling_zamba.py`, ZambaHybridLayer): the same block without
adapters (`adapter_rank: 0`, q, k and v without biases, gate and up as two tensors of the same
sizes as one gate_up), one block for all hybrid layers, beside a Mamba-1 mixer.

Every few layers (the "hybrid" ones) Zamba2 runs one of `num_mem_blocks` transformer blocks, the
same weights each time, on the hidden state concatenated with the token embeddings (2d wide):
an RMSNorm over 2d, attention whose q, k and v read 2d (heads of 2d / n_heads, scores scaled by
(d_h/2)^-½, optionally with per-layer LoRA adapters 2d → r → 2d on q, k and v), o back to d, an
RMSNorm over d, a gated MLP (gate_up d → 2f, act(gate)·up, down f → d, `add_bias_linear`
biases) with a per-layer LoRA adapter d → r → 2f added to gate_up, then a per-layer linear
d → d. No residual inside; the result is added to the Mamba-2 decoder's input, which then runs
as in every layer. Counted here as one mixer of the layer (`layer_types: mamba2+shared@B`, B the
block), whose FLOPs, parameters and element-wise work are those of running it and adding its
output; the layer's own norm and residual add belong to the Mamba-2 sublayer (`mamba_norm`).

Parameters. The block's tensors (norms, q, k, v, o, gate_up, down) are one tensor per block
across the layers that run it (`Part.tied`) when the model ties them; the adapters and the
linear are each layer's own. transformers ties the blocks through `_tied_weights_keys`, which it
honours only with `tie_word_embeddings: true` (`modeling_utils.py`
get_expanded_tied_weights_keys); with false every hybrid layer holds a full copy of its block,
and each copy all the adapters of its block (`i % num_mem_blocks == block_id` over the hybrid
layers, most of them unused): `tied: false` counts those copies.

FLOPs (what FlopCounterMode counts on the eager path): q, k, v (T×2d)·(2d×h·d_h),
(T×2d)·(2d×h_kv·d_h) twice; the scores and values 2·h·d_h per pair each; o (T×h·d_h)·(h·d_h×d);
each adapter (T×in)·(in×r) then (T×r)·(r×out); gate_up (T×d)·(d×2f); down (T×f)·(f×d); the
linear (T×d)·(d×d). The block re-runs at every hybrid layer and is charged every time.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Annotated, Any, Iterator, Optional

from ..records import dataclass
from ..declare import Min
from .attention import SOFTMAX_PER_SCORE, Attention
from .base import (ATTENTION, COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, WEIGHTS, Cache,
                   EngineCache, Keeping, Kind, Part, Published, Span, gemm, linear)
from .masks import Mask
from .mlp import ACTIVATION_FLOPS
from .norm import RMS, Norm
from .registry import Entry


@dataclass(frozen=True)
class SharedBlock(Kind):
    """Block `block` of a Zamba2 model's shared transformer blocks: `heads` query heads and
    `kv_heads` key/value heads of `head_dim` reading 2d, a gated MLP `d_ff` wide of
    `activation`, LoRA adapters of rank `rank` on gate_up (and on q, k, v with
    `attention_adapters`), `bias` on gate_up and down. `tied`: the block is one set of tensors
    however many layers run it; `adapter_copies`: the adapter sets this layer's copy holds (1
    when tied; untied, every hybrid layer of its block's)."""

    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    rank: int
    activation: str = "gelu"
    attention_adapters: bool = False
    bias: bool = False
    block: int = 0
    tied: bool = True
    adapter_copies: int = 1
    norm: Norm = RMS
    slot = "shared"

    def __post_init__(self) -> None:
        if self.heads % self.kv_heads:
            raise ValueError(f"shared_block.n_kv_heads={self.kv_heads} must divide "
                             f"shared_block.n_heads={self.heads}")

    @property
    def mask(self) -> Mask:
        return Mask("causal")

    @property
    def attention(self) -> Attention:
        """Its attention core (causal), for the s² terms, the cache and the saved tensors."""
        return Attention(heads=self.heads, kv_heads=self.kv_heads, qk_dim=self.head_dim,
                         v_dim=self.head_dim, mask=self.mask)

    @property
    def d_q(self) -> int:
        return self.heads * self.head_dim

    @property
    def d_kv(self) -> int:
        return self.kv_heads * self.head_dim

    # --------------------------------------------------------------------------- parameters

    def _adapter(self, name: str, n_in: int, n_out: int) -> list[Part]:
        """A LoRA adapter n_in → r → n_out, `adapter_copies` times (no biases)."""
        c, r = self.adapter_copies, self.rank
        lead = (c,) if c > 1 else ()
        return [Part(f"{name}.down.weight", c * n_in * r, LAYERS, lead + (n_in, r), REPLICATED,
                     matmul=True),
                Part(f"{name}.up.weight", c * r * n_out, LAYERS, lead + (r, n_out), COLUMN,
                     matmul=True)]

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The block's norms, attention and MLP (tied per block when `tied`), each layer's
        adapters and its linear d → d."""
        D, f = 2 * d, self.d_ff
        block = (self.norm.params(D, "input_norm")
                 + [Part("attn.q.weight", D * self.d_q, LAYERS, (D, self.d_q), COLUMN,
                         matmul=True),
                    Part("attn.k.weight", D * self.d_kv, LAYERS, (D, self.d_kv), COLUMN,
                         matmul=True),
                    Part("attn.v.weight", D * self.d_kv, LAYERS, (D, self.d_kv), COLUMN,
                         matmul=True),
                    Part("attn.o.weight", self.d_q * d, LAYERS, (self.d_q, d), ROW,
                         matmul=True)]
                 + self.norm.params(d, "mlp_norm")
                 + linear("mlp.gate_up", d, 2 * f, self.bias)
                 + linear("mlp.down", f, d, self.bias, ROW))
        if self.tied:  # one tensor per block, whichever layers run it
            block = [replace(p, tied=f"shared@{self.block}.{p.name}") for p in block]
        own = []
        if self.rank and self.attention_adapters:  # transformers' adapters all end 2d wide
            for name in ("q", "k", "v"):
                own += self._adapter(f"attn.{name}_adapter", D, D)
        if self.rank:  # Zamba's block (rank 0) has no adapters
            own += self._adapter("mlp.adapter", d, 2 * f)
        own.append(Part("linear.weight", d * d, LAYERS, (d, d), REPLICATED, matmul=True))
        return block + own

    # -------------------------------------------------------------------------------- FLOPs

    def flops(self, d: int, tokens: int, pairs: int) -> list[Part]:
        D, f, r, T = 2 * d, self.d_ff, self.rank, tokens
        parts = [
            gemm("attn.q", T, D, self.d_q),  # (T×2d)·(2d×h·d_h)
            gemm("attn.k", T, D, self.d_kv),  # (T×2d)·(2d×h_kv·d_h)
            gemm("attn.v", T, D, self.d_kv),
            Part("attn.scores", 2 * self.heads * pairs * self.head_dim, ATTENTION),
            Part("attn.av", 2 * self.heads * pairs * self.head_dim, ATTENTION),
            gemm("attn.o", T, self.d_q, d, ROW),  # (T×h·d_h)·(h·d_h×d)
        ]
        if r and self.attention_adapters:  # (T×2d)·(2d×r), (T×r)·(r×2d) for each of q, k, v
            parts.append(Part("attn.adapters", 3 * (2 * T * D * r + 2 * T * r * D), WEIGHTS))
        parts.append(gemm("mlp.gate_up", T, d, 2 * f))  # (T×d)·(d×2f)
        if r:  # d → r → 2f
            parts.append(Part("mlp.adapter", 2 * T * d * r + 2 * T * r * 2 * f, WEIGHTS))
        parts += [
            gemm("mlp.down", T, f, d, ROW),  # (T×f)·(f×d)
            gemm("linear", T, d, d, REPLICATED),  # (T×d)·(d×d)
        ]
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.flops(d, x.tokens, x.pairs(self.mask))

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """One token per sequence and step: the projections, then one query per head over
        every cached key and its own."""
        t = batch * (last - first + 1)
        return self.flops(d, t, batch * self.mask.visible_keys(first, last))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The two RMSNorms (2d and d wide), the q/k/v adapter adds, the softmax (5 per score),
        the gate_up adapter add, the activation and gate product, the biases."""
        T, f = x.tokens, self.d_ff
        pairs = x.pairs(self.mask)
        norms = self.norm.per_element * T * (2 * d + d)
        adds = 0 if not self.rank else T * 2 * f + (
            T * (self.d_q + 2 * self.d_kv) if self.attention_adapters else 0)
        act = (ACTIVATION_FLOPS[self.activation] + 1) * T * f
        parts = [Part("elementwise.norms", norms, ELEMENTWISE),
                 Part("elementwise.softmax", SOFTMAX_PER_SCORE * self.heads * pairs,
                      ELEMENTWISE),
                 Part("elementwise.adapters", adds, ELEMENTWISE),
                 Part("elementwise.activation", act, ELEMENTWISE)]
        if self.bias:
            parts.append(Part("elementwise.bias", T * (2 * f + d), ELEMENTWISE))
        return parts

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        """K and V of its KV heads for every token (a causal full-attention cache)."""
        return replace(self.attention.cache(), label="shared")

    def cache_reads(self, first: int, last: int) -> int:
        return self.attention.cache_reads(first, last)

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        return self.attention.engine_cache(tp)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """Bytes kept for backward, 16-bit, after Korthikanti et al. 2022 §4.1 as for a
        transformer layer: the 2d-wide input of its first norm and of attention, the attention's
        own tensors (Q, K, softmax or FlashAttention's log-sum-exp, V, o's input), the second
        norm's and the MLP's inputs (d), the gated MLP's three hidden tensors (its fused
        activation's 2f-wide gate-and-up input and f-wide output, as `kinds.mlp` counts them),
        the adapters' rank-r intermediates and the linear's input; split by tensor
        parallelism inside attention and the MLP."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        adapters = (3 + 1 if self.attention_adapters else 1) if self.rank else 0
        out = [("concat_input", Fraction(2 * sb * 2 * d)), ("attention_input",
                                                            Fraction(2 * sb * 2 * d))]
        out += [(f"attn.{name}", *rest) for name, *rest in self.attention.activations(d, k)]
        out += [("mlp_norm_input", Fraction(2 * sb * d)), ("mlp_input", Fraction(2 * sb * d)),
                ("mlp.hidden", 2 * sb * self.d_ff * 3 * split),
                ("adapters.hidden", Fraction(2 * sb * self.rank * adapters)),
                ("linear_input", Fraction(2 * sb * d))]
        return out

    # ---------------------------------------------------------------- crossover, conventions

    def pair_terms(self) -> list[tuple[int, Optional[Mask]]]:
        return self.attention.pair_terms()

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        return self.mask.breakpoints(lo, hi)

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        a = self.attention.published(d)
        return replace(a, departures=a.departures + (
            "assumes attention and an MLP in every layer; this model runs shared transformer "
            "blocks every few layers on the hidden state concatenated with the embeddings "
            f"(2d wide), beside Mamba-{2 if self.rank else 1} in every layer",))

    def describe(self) -> str:
        tied = "" if self.tied else ", untied copy"
        adapters = f", adapters rank {self.rank}" if self.rank else ""
        return (f"shared block {self.block} (attention {self.heads}x{self.head_dim} on 2d, "
                f"gated MLP {self.d_ff:,}{adapters}{tied})")

    def notes(self) -> list[str]:
        if not self.rank:
            return ["Zamba shared block: attention over 2d (the hidden state and the "
                    "embeddings) and a gated MLP, then a per-layer d x d linear, run at every "
                    "hybrid layer and charged every time; its weights count once when tied "
                    "(tie_word_embeddings), once per hybrid layer otherwise"]
        return ["Zamba2 shared blocks: attention over 2d (the hidden state and the embeddings), "
                "a gated MLP with a per-layer LoRA adapter and a per-layer d x d linear, run at "
                "every hybrid layer and charged every time; their weights count once per block "
                "when tied (tie_word_embeddings), once per layer otherwise"]


@dataclass(frozen=True)
class SharedBlockConfig:
    """`shared_block:` in a model file (Zamba2's keys in flopcalc's names): the blocks that
    layers of type `shared@B` run."""

    n_heads: Annotated[int, Min(1)]  # num_attention_heads
    d_ff: Annotated[int, Min(1)]  # intermediate_size
    adapter_rank: Annotated[int, Min(0)]  # 0: no adapters (Zamba's one shared block)
    n_kv_heads: Optional[Annotated[int, Min(1)]] = None  # None: n_heads
    head_dim: Optional[Annotated[int, Min(1)]] = None  # None: 2·d_model / n_heads
    attention_adapters: bool = False  # use_shared_attention_adapter
    bias: bool = False  # add_bias_linear: gate_up and down
    tied: bool = True  # one set of tensors per block (transformers: tie_word_embeddings)


def _block_of(name: str) -> int:
    return int(name.split("@", 1)[1]) if "@" in name else 0


def layers_of_block(cfg: Any, block: int) -> int:
    """How many layers run block `block` (`shared@B` entries of the expanded layer_types)."""
    types, n = cfg.layer_types or [], cfg.n_layers
    if not types or n % len(types):
        return 1  # the spec refuses such layer_types itself
    return sum(1 for entry in list(types) * (n // len(types)) for part in entry.split("+")
               if part.split("@", 1)[0] == "shared" and _block_of(part) == block)


def build(cfg: Any, name: str) -> SharedBlock:
    from .attention_layers import model_norm

    s = getattr(cfg, "shared_block", None)
    if s is None:
        raise ValueError("shared layers need a shared_block block (n_heads, d_ff, adapter_rank, "
                         "...)")
    d = cfg.d_model
    if s.head_dim is None and (2 * d) % s.n_heads:
        raise ValueError(f"2·d_model={2 * d} is not divisible by shared_block.n_heads="
                         f"{s.n_heads}; set shared_block.head_dim")
    block = _block_of(name)
    return SharedBlock(heads=s.n_heads, kv_heads=s.n_kv_heads or s.n_heads,
                       head_dim=s.head_dim or 2 * d // s.n_heads, d_ff=s.d_ff,
                       rank=s.adapter_rank, activation=cfg.activation,
                       attention_adapters=s.attention_adapters, bias=s.bias, block=block,
                       tied=s.tied, adapter_copies=1 if s.tied else layers_of_block(cfg, block),
                       norm=model_norm(cfg))


REGISTER = Entry(layer_types=("shared",), build=build,
                 blocks=(("shared_block", SharedBlockConfig),), tagged=("shared",))
