"""Qwen4-Exp's layers (transformers 5.24 `models/qwen4_exp/modeling_qwen4_exp.py`,
Qwen4ExpTextModel), as transformers builds and runs them:

- gated hyper-connections (`Qwen4ExpTextGatedResidual`): the residual is N = hc_count streams
  of d; before each sublayer the N·d concatenation is RMS-normed per stream (one N·d gain:
  this norm replaces the layer's input norms), a low-rank map N·d → r → N·d gives a sigmoid
  gate per element, the gated streams are averaged into the sublayer's input, and a map
  N·d → N gives the weights with which its output is added back to each stream; after the last
  layer the same module without that map (the mixer) collapses the streams in place of the
  final norm;
- QSA attention (`indexed_attention` layers, `Qwen4ExpTextAttention`): Qwen3.5's gated
  attention (q_proj twice as wide, per-head QK RMSNorms) with an indexer: one projection
  d → (n_I + 1)·c gives n_I query heads and one key head of c, each RMS-normed (c wide); every
  query scores the mean-pooled whole blocks of m = indexer_compress_ratio keys it can see
  (⌊i/m⌋ blocks for a query seeing i keys: 2·n_I·c FLOPs per block, the ReLU'd scores summed
  over heads), keeps the top k = indexer_budget / m blocks and the partial block's tail, and
  the attention runs under that mask;
- hashed n-gram per-layer embeddings (PLE, `Qwen4ExpTextPLELayer`, on the linear-attention
  layers `ple_layer_ids` names): per layer, (ngram_size − 1)·heads_per_ngram hashed tables,
  each a distinct prime number of rows (the g-th prime from ngram_vocab_size_base, g counted
  over every PLE layer's heads), concatenated and padded to a multiple of
  make_ngram_vocab_size_divisible_by rows of E/heads (E = ple_embed_dim); a key projection
  E → N·d, a value projection E → d, three N·d RMSNorms and a depthwise convolution over the
  N·d channels (kernel K, dilation ngram_size, no bias), the result added to the streams
  before the layer's attention hyper-connection.

FLOPs are the matmuls of the eager forward (FlopCounterMode's): the attention scores every
key under `--attention full` (the indexer's selection is a mask); `--attention causal` and
decode count the keys a query keeps, min(⌊i/m⌋, k)·m + (i mod m when more than k blocks are
visible, else i − ⌊i/m⌋·m), that is i while i < (k + 1)·m. The indexer scores only the
blocks a query can see (the reference loops over the visible keys), so its count is the same
under both conventions: 2·n_I·c·Σᵢ⌊i/m⌋. The n-gram tables are lookups (no FLOPs), the
gates, pooling and norms element-wise.

The activations the streams keep are not modelled (`serve`, `memory`, `step`, `plan` refuse);
nor is a PLE layer's cache (its convolution window and n-gram token context), so `infer`
refuses models with PLE layers.
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction
from typing import Annotated, Any, Iterator, Optional

from ..records import dataclass
from ..declare import Min
from ..errors import FlopcalcError
from .attention import Attention
from .base import (ATTENTION, COLUMN, ELEMENTWISE, EMBEDDING, LAST, LAYERS, REPLICATED,
                   WEIGHTS, Cache, Keeping, Kind, Part, Span, gemm, linear)
from .hy_v4 import Connected
from .norm import RMS
from .registry import Entry

PREFIX = "q4x_"
GDN, QSA, PLE = f"{PREFIX}gdn", f"{PREFIX}qsa", f"{PREFIX}gdn_ple"  # PLE layers: q4x_gdn_ple@k
LAYER_TYPES = (GDN, QSA, PLE)
SIGMOID = 4  # negate, exp, add, divide
NOT_MODELLED = ("Qwen4-Exp's hyper-connections: flopcalc counts their parameters and FLOPs "
                "(model, sweep, compare, train), not the tensors the streams keep for backward "
                "or at serving's peak, which serve, step, plan and memory need")
NO_PLE_CACHE = ("Qwen4-Exp's n-gram per-layer embeddings: flopcalc counts their parameters "
                "and FLOPs, not their cache (the dilated convolution's window and the n-gram "
                "token context), which infer and serve need")


# -------------------------------------------------------------------------------- primes

def _is_prime(n: int) -> bool:
    """Miller–Rabin with the first 12 primes as bases: exact below 3.3·10²⁴."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@functools.lru_cache(maxsize=64)
def primes_from(base: int, count: int) -> tuple[int, ...]:
    """The first `count` primes ≥ `base` (transformers' `_find_nth_prime_after(base − 1, g)`
    for g = 1..count)."""
    out: list[int] = []
    p = base - 1
    while len(out) < count:
        p += 1
        if _is_prime(p):
            out.append(p)
    return tuple(out)


# ------------------------------------------------------------------ the gated residual

@dataclass(frozen=True)
class GatedResidual:
    """One `Qwen4ExpTextGatedResidual` over N = `streams` streams of d: the N·d RMSNorm gain
    (`hc_norm`), `input_mix_weight_down` N·d → r and `input_mix_weight_up` r → N·d, and
    (`combine`) `block_inject_weight` N·d → N; all bias-free. Its interface is
    kinds.deepseek_v4.HyperConnection's, so kinds.hy_v4.Connected wraps a slot with it."""

    streams: int
    rank: int
    combine: bool = True

    def params(self, d: int, name: str, family: str = LAYERS, stage: str = "layers"
               ) -> list[Part]:
        n, r, at = self.streams, self.rank, f"{name}." if name else ""
        parts = [Part(f"{at}hc_norm.weight", n * d, family, (n * d,), REPLICATED, stage,
                      module=f"{at}hc_norm")]
        for part in (linear(f"{at}input_mix_weight_down", n * d, r, False, REPLICATED)
                     + linear(f"{at}input_mix_weight_up", r, n * d, False, REPLICATED)
                     + (linear(f"{at}block_inject_weight", n * d, n, False, REPLICATED)
                        if self.combine else [])):
            parts.append(dataclasses.replace(part, family=family, stage=stage))
        return parts

    def flops(self, d: int, tokens: int, name: str) -> list[Part]:
        """(T×N·d)·(N·d×r) + (T×r)·(r×N·d), and (T×N·d)·(N·d×N) for the injection weights."""
        n, r = self.streams, self.rank
        parts = [gemm(f"{name}.input_mix_weight_down", tokens, n * d, r, REPLICATED),
                 gemm(f"{name}.input_mix_weight_up", tokens, r, n * d, REPLICATED)]
        if self.combine:
            parts.append(gemm(f"{name}.block_inject_weight", tokens, n * d, n, REPLICATED))
        return parts

    def elementwise(self, d: int, tokens: int, name: str, iterations: int = 0) -> list[Part]:
        """Per token: the RMSNorm over N·d (4 per element), the divide and SiLU on r (1 + 5),
        the sigmoid gate and its product (5 per element of N·d), the mean over streams (N·d);
        with `combine`, the injection's divide, sigmoid and doubling on N (6 each) and its
        product and add to the streams (2·N·d)."""
        n, r = self.streams, self.rank
        per = 4 * n * d + r * (2 + SIGMOID) + n * d * (SIGMOID + 1) + n * d
        if self.combine:
            per += n * (2 + SIGMOID) + 2 * n * d
        return [Part(f"{name}.elementwise", tokens * per, ELEMENTWISE)]


@dataclass(frozen=True)
class HyperMixer(Kind):
    """The mixer after the last layer (`hyper_connection_mixer`): a gated residual without the
    injection map, collapsing the N streams into the head's input in place of the final norm
    (a model-level kind counted before the head on every output token)."""

    streams: int
    rank: int
    slot = "hyper_connection_mixer"
    before_head = True

    @property
    def hc(self) -> GatedResidual:
        return GatedResidual(self.streams, self.rank, combine=False)

    def params(self, d: int, active: bool = False) -> list[Part]:
        return self.hc.params(d, "", LAYERS, LAST)

    def forward(self, d: int, x: Span) -> list[Part]:
        return [dataclasses.replace(p, name=p.name.lstrip("."))
                for p in self.hc.flops(d, x.tokens, "")]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return self.hc.elementwise(d, x.tokens, "mixer")

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.forward(d, Span(batch, last - first + 1, last - first + 1))

    def describe(self) -> str:
        return f"hyper-connection mixer over {self.streams} streams"

    def notes(self) -> list[str]:
        n, r = self.streams, self.rank
        return [f"hyper-connection mixer (Qwen4-Exp): in place of the final norm, the {n} "
                f"streams RMS-normed, gated through (T×{n}·d)·({n}·d×{r}) and "
                f"(T×{r})·({r}×{n}·d), and averaged into the head's input"]


# ------------------------------------------------------------------------- n-gram PLE

@dataclass(frozen=True)
class NgramEmbedding:
    """A PLE layer's parts (see the module docstring): `index` is its place among the PLE
    layers (which primes its tables take)."""

    streams: int
    width: int  # E, ple_embed_dim
    kernel: int
    ngram: int
    heads_per_ngram: int
    vocab_base: int
    multiple: int
    index: int

    @property
    def heads(self) -> int:
        return (self.ngram - 1) * self.heads_per_ngram

    @property
    def rows(self) -> int:
        """The padded table: the primes #(k·H + 1) .. #(k·H + H) from the base (k = `index`,
        H = heads) summed, rounded up to a whole `multiple`."""
        h = self.heads
        total = sum(primes_from(self.vocab_base, (self.index + 1) * h)[self.index * h:])
        return -(-total // self.multiple) * self.multiple

    def params(self, d: int) -> list[Part]:
        n, e, rows, col = self.streams, self.width, self.rows, self.width // self.heads
        nd = n * d
        parts = [Part("ple.ngram_embedding.weight", rows * col, EMBEDDING, (rows, col), COLUMN,
                      lookup=True, module="ple.ngram_embedding")]
        parts += linear("ple.key_proj", e, nd, False) + linear("ple.value_proj", e, d, False)
        for norm in ("norm_key", "norm_query", "norm_conv"):
            parts += RMS.params(nd, f"ple.{norm}")
        parts.append(Part("ple.conv1d.weight", nd * self.kernel, LAYERS, (nd, 1, self.kernel),
                          COLUMN, matmul=True, module="ple.conv1d"))
        return parts

    def flops(self, d: int, tokens: int) -> list[Part]:
        """(T×E)·(E×N·d) and (T×E)·(E×d); the depthwise conv, K taps on each of the N·d
        channels per token (its left padding, (K − 1)·ngram_size, leaves T outputs): 2·T·N·d·K."""
        nd = self.streams * d
        return [gemm("ple.key_proj", tokens, self.width, nd),
                gemm("ple.value_proj", tokens, self.width, d),
                Part("ple.conv1d", 2 * tokens * nd * self.kernel, WEIGHTS)]

    def elementwise(self, d: int, tokens: int) -> list[Part]:
        """Per token: three RMSNorms over N·d (4 each), the gate's product and sum over d per
        stream (2·N·d), its signed square root and sigmoid (8 per stream), the gated value
        (N·d), SiLU after the conv (4·N·d) and the two adds (2·N·d)."""
        nd = self.streams * d
        per = 12 * nd + 2 * nd + 8 * self.streams + nd + 4 * nd + 2 * nd
        return [Part("ple.elementwise", tokens * per, ELEMENTWISE)]


@dataclass(frozen=True)
class GatedConnected(Connected):
    """`inner` (any slot's kind) inside a gated hyper-connection `hc` (GatedResidual), with the
    layer's n-gram embedding `ple` before it (linear-attention layers only)."""

    ple: Optional[NgramEmbedding] = None

    def params(self, d: int, active: bool = False) -> list[Part]:
        own = self.ple.params(d) if self.ple is not None else []
        return own + super().params(d, active)

    def forward(self, d: int, x: Span) -> list[Part]:
        own = self.ple.flops(d, x.tokens) if self.ple is not None else []
        return own + super().forward(d, x)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        own = self.ple.elementwise(d, x.tokens) if self.ple is not None else []
        return own + super().elementwise(d, x)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        t = batch * (last - first + 1)
        own = self.ple.flops(d, t) if self.ple is not None else []
        return own + super().decode(d, batch, first, last)

    def cache(self) -> Cache:
        if self.ple is not None:
            raise FlopcalcError(NO_PLE_CACHE)
        return super().cache()

    def cache_reads(self, first: int, last: int) -> int:
        if self.ple is not None:
            raise FlopcalcError(NO_PLE_CACHE)
        return super().cache_reads(first, last)

    def engine_cache(self, tp: int = 1) -> tuple:
        if self.ple is not None:
            raise FlopcalcError(NO_PLE_CACHE)
        return super().engine_cache(tp)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        raise FlopcalcError(NOT_MODELLED)

    def notes(self) -> list[str]:
        n, r = self.hc.streams, self.hc.rank
        out = self.inner.notes() + [
            f"gated hyper-connections (Qwen4-Exp, {n} residual streams): before each sublayer "
            f"the {n}·d streams RMS-normed (in place of the layer norms), "
            f"(T×{n}·d)·({n}·d×{r}) and (T×{r})·({r}×{n}·d) for the input gates, "
            f"(T×{n}·d)·({n}·d×{n}) for the injection weights"]
        if self.ple is not None:
            p = self.ple
            out.append(f"n-gram per-layer embeddings (Qwen4-Exp's PLE): {p.heads} hashed tables "
                       f"of prime sizes ({p.rows:,} rows of {p.width // p.heads} in this "
                       f"layer, lookups), key E → {n}·d and value E → d projections, three "
                       f"RMSNorms and a depthwise conv of {p.kernel} taps (dilation "
                       f"{p.ngram}): 2·T·{n}·d·{p.kernel}")
        return out


# ------------------------------------------------------------------------ QSA attention

def _mod_sum(x: int, m: int) -> int:
    """Σ_{j=0..x} (j mod m): ⌊(x + 1)/m⌋ whole cycles of m(m − 1)/2, then 0..r − 1."""
    if x < 0:
        return 0
    q, r = divmod(x + 1, m)
    return q * m * (m - 1) // 2 + r * (r - 1) // 2


def block_sum(n: int, m: int) -> int:
    """Σ_{i=1..n} ⌊i/m⌋, the whole blocks queries 1..n see: with n + 1 = q·m + r, the blocks
    of m values 0..q − 1 contribute m·q(q − 1)/2, the r after them q each."""
    if n <= 0:
        return 0
    q, r = divmod(n + 1, m)
    return m * q * (q - 1) // 2 + q * r


def kept_sum(n: int, m: int, k: int) -> int:
    """Σ_{i=1..n} of the keys a query seeing i keys keeps: i while it sees at most k whole
    blocks (i < (k + 1)·m), else k·m + (i mod m)."""
    if n <= 0:
        return 0
    edge = (k + 1) * m - 1
    if n <= edge:
        return n * (n + 1) // 2
    return edge * (edge + 1) // 2 + k * m * (n - edge) + _mod_sum(n, m) - _mod_sum(edge, m)


@dataclass(frozen=True)
class QsaAttention(Attention):
    """Qwen3.5's gated attention with the QSA indexer (see the module docstring):
    `index_heads` query heads and one key head of `index_dim`, blocks of `ratio` keys, the top
    `blocks` of them kept."""

    index_heads: int = 1
    index_dim: int = 1
    ratio: int = 1
    blocks: int = 1

    def params(self, d: int, active: bool = False) -> list[Part]:
        c = self.index_dim
        return super().params(d, active) + linear(
            "indexer.index_qk_proj", d, (self.index_heads + 1) * c, False) + \
            RMS.params(c, "indexer.q_layernorm") + RMS.params(c, "indexer.k_layernorm")

    def pairs(self, x: Span) -> int:
        if x.convention == "full":
            return super().pairs(x)
        return x.batch * sum(kept_sum(n, self.ratio, self.blocks) for n in x.packed or (x.n,))

    def _indexer(self, d: int, tokens: int, scored: int) -> list[Part]:
        # (T×d)·(d×(n_I + 1)·c), then 2·n_I·c per (query, visible whole block)
        return [gemm("indexer.index_qk_proj", tokens, d, (self.index_heads + 1) * self.index_dim),
                Part("indexer.scores", 2 * self.index_heads * self.index_dim * scored,
                     ATTENTION)]

    def forward(self, d: int, x: Span) -> list[Part]:
        scored = x.batch * sum(block_sum(n, self.ratio) for n in x.packed or (x.n,))
        return self.flops(d, x.tokens, x.source_tokens, self.pairs(x)) + \
            self._indexer(d, x.tokens, scored)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """Steps at positions first..last: the kept keys and the visible whole blocks of each
        new query."""
        m, k = self.ratio, self.blocks
        t = batch * (last - first + 1)
        kept = kept_sum(last, m, k) - kept_sum(first - 1, m, k)
        scored = block_sum(last, m) - block_sum(first - 1, m)
        return self.flops(d, t, t, batch * kept) + self._indexer(d, t, batch * scored)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The attention's, and per query: the indexer's norms (4 per element of its q heads,
        and of every pooled block key it normalises again), the ReLU, sum and scale of its
        scores (3 per head and block); the pooling (c per key a block pools)."""
        scored = x.batch * sum(block_sum(n, self.ratio) for n in x.packed or (x.n,))
        c = self.index_dim
        work = 4 * x.tokens * self.index_heads * c + scored * (4 * c + c * self.ratio) \
            + 3 * self.index_heads * scored
        return super().elementwise(d, x) + [Part("elementwise.indexer", work, ELEMENTWISE)]

    def cache(self) -> Cache:
        """K and V of every token (any may be kept), and the indexer's c-wide raw key."""
        base = super().cache()
        return dataclasses.replace(base, per_token=base.per_token + self.index_dim)

    def pair_terms(self) -> list[tuple[int, object]]:
        """The attention's causal s² term only: the crossover's masks express neither the
        indexer's block scores (n_I·c·s²/m) nor the kept keys' cap past (k + 1)·m, so under
        `--attention causal` its s* is that of every causal pair (`sweep` counts directly
        and checks its pieces, so its figures stay exact)."""
        return super().pair_terms()

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        edge = (self.blocks + 1) * self.ratio
        points = set(super().breakpoints(lo, hi)) | ({edge} if lo <= edge <= hi else set())
        return iter(sorted(points))

    def period(self) -> Optional[int]:
        return self.ratio

    def describe(self) -> str:
        return (f"{super().describe()}, QSA (blocks of {self.ratio}, "
                f"{self.blocks * self.ratio:,} keys)")

    def notes(self) -> list[str]:
        return super().notes() + [
            f"QSA indexer (Qwen4-Exp): d → ({self.index_heads} + 1)·{self.index_dim}, each query "
            f"scores the mean-pooled whole blocks of {self.ratio} keys it sees "
            f"(2·{self.index_heads}·{self.index_dim} per block, under either --attention), keeps "
            f"the top {self.blocks} and the partial block; the eager attention scores every key, "
            "the kept ones count under --attention causal and in decode"]


# ------------------------------------------------------------------------------ config

@dataclass(frozen=True)
class Qwen4ExpBlock:
    """`qwen4_exp:` in a model file (transformers Qwen4ExpTextConfig's names in comments). The
    layers are q4x_gdn (linear_attention), q4x_qsa (indexed_attention) and q4x_gdn_ple@k (a
    linear-attention layer with the k-th n-gram embedding, k from 0 in layer order); the
    model's `norm` is none (the streams' norms replace it) and it has no final norm."""

    hc_count: Annotated[int, Min(2)]
    hc_lowrank: Annotated[int, Min(1)]
    indexer_n_heads: Optional[Annotated[int, Min(1)]] = None
    indexer_head_dim: Optional[Annotated[int, Min(1)]] = None
    indexer_budget: Optional[Annotated[int, Min(1)]] = None
    indexer_compress_ratio: Optional[Annotated[int, Min(1)]] = None
    ple_embed_dim: Optional[Annotated[int, Min(1)]] = None  # None: d_model
    ple_conv_kernel_size: Annotated[int, Min(1)] = 4
    ngram_size: Annotated[int, Min(2)] = 3
    heads_per_ngram: Annotated[int, Min(1)] = 8
    ngram_vocab_size_base: Annotated[int, Min(2)] = 20_000_000
    make_ngram_vocab_size_divisible_by: Annotated[int, Min(1)] = 128


def _block(cfg: Any) -> Qwen4ExpBlock:
    if cfg.qwen4_exp is None:
        raise ValueError("q4x_* layers are Qwen4-Exp's: they need a qwen4_exp block")
    return cfg.qwen4_exp


def _ple(cfg: Any, b: Qwen4ExpBlock, name: str) -> NgramEmbedding:
    base, _, tag = name.partition("@")
    if not tag.isdigit():
        raise ValueError(f"{name}: Qwen4-Exp's n-gram layers are named {base}@k, k the layer's "
                         "place among them (0, 1, ...)")
    width = b.ple_embed_dim or cfg.d_model
    heads = (b.ngram_size - 1) * b.heads_per_ngram
    if width % heads:
        raise ValueError(f"qwen4_exp.ple_embed_dim={width} must be divisible by the "
                         f"{heads} n-gram heads ((ngram_size - 1)·heads_per_ngram)")
    return NgramEmbedding(b.hc_count, width, b.ple_conv_kernel_size, b.ngram_size,
                          b.heads_per_ngram, b.ngram_vocab_size_base,
                          b.make_ngram_vocab_size_divisible_by, int(tag))


def build(cfg: Any, name: str) -> GatedConnected:
    """A q4x_* layer's token mixer inside its hyper-connection."""
    b = _block(cfg)
    hc = GatedResidual(b.hc_count, b.hc_lowrank)
    kind = name.partition("@")[0]
    if kind == QSA:
        from .attention_layers import build as attention

        keys = (b.indexer_n_heads, b.indexer_head_dim, b.indexer_budget,
                b.indexer_compress_ratio)
        if any(v is None for v in keys):
            raise ValueError("q4x_qsa layers need qwen4_exp.indexer_n_heads, indexer_head_dim, "
                             "indexer_budget and indexer_compress_ratio")
        if b.indexer_budget % b.indexer_compress_ratio:
            raise ValueError("qwen4_exp.indexer_budget must be a multiple of "
                             "indexer_compress_ratio")
        attn = attention(cfg, "full")
        fields = {f.name: getattr(attn, f.name) for f in dataclasses.fields(attn)}
        fields["norm"] = RMS  # the QK-norms are RMSNorms whatever the model's (none) says
        return GatedConnected(QsaAttention(
            **fields, index_heads=b.indexer_n_heads, index_dim=b.indexer_head_dim,
            ratio=b.indexer_compress_ratio,
            blocks=b.indexer_budget // b.indexer_compress_ratio), hc)
    from .gated_deltanet import build as gdn

    ple = _ple(cfg, b, name) if kind == PLE else None
    return GatedConnected(gdn(cfg, "gdn"), hc, ple)


def feedforward(cfg: Any, name: str) -> GatedConnected:
    """Every layer's mixture of experts, inside its hyper-connection."""
    from . import moe

    b = _block(cfg)
    if cfg.moe is None:
        raise ValueError("Qwen4-Exp's layers are mixtures of experts: a moe block is required")
    return GatedConnected(moe.from_config(cfg), GatedResidual(b.hc_count, b.hc_lowrank))


def mixer(cfg: Any) -> Optional[HyperMixer]:
    b = cfg.qwen4_exp
    return HyperMixer(b.hc_count, b.hc_lowrank) if b is not None else None


REGISTER = Entry(layer_types=LAYER_TYPES, tagged=(PLE,), build=build,
                 blocks=(("qwen4_exp", Qwen4ExpBlock),), ffn=feedforward, frontend=mixer)
