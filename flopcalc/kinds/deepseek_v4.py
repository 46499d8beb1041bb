"""DeepSeek-V4's layers (DeepSeek-AI 2026, "DeepSeek-V4"; transformers 5.24
`models/deepseek_v4/modeling_deepseek_v4.py`, DeepseekV4Model), as transformers builds and runs
them:

- attention (`DeepseekV4Attention`): queries through a rank-r_q bottleneck (q_a, its RMSNorm,
  q_b to h heads of d_h), one key that is also the value (kv: d → d_h, shared by every head:
  multi-query with K = V), a learned sink per head, a sliding window of w keys, and the grouped
  low-rank output projection: the h·d_h output split into g groups, each projected to r_o
  (o_a, one block-diagonal matrix: h·d_h·r_o), then g·r_o → d (o_b);
- compressed sparse attention (CSA, layer type `compressed_sparse_attention`): a compressor
  whose kv and gate projections d → 2·d_h pool every m tokens (overlapping windows) into one
  entry appended to the keys, and a lightning indexer (its own compressor at the indexer width
  c, a query projection r_q → n_I·c and a weight projection d → n_I) that scores each query
  against every compressed entry and keeps the top k;
- heavily compressed attention (HCA, `heavily_compressed_attention`): a compressor d → d_h
  pooling every m' tokens, every compressed entry visible (no indexer);
- manifold-constrained hyper-connections (mHC; `DeepseekV4HyperConnection`): the residual is
  N = hc_mult streams of d; before each sublayer a linear map of the N·d normed streams gives
  (2 + N)·N mixing weights (fn, base, 3 scales), the streams collapse into the sublayer's input
  and its output expands back, the old streams mixed by an N×N matrix (a matmul per token);
  after the last layer the hyper-head (`DeepseekV4HyperHead`: N·d → N) collapses the streams
  before the final norm;
- the feed-forward block: a mixture of experts whose first layers route by a frozen token-id
  table (`hash_moe`: `tid2eid`, a buffer, not a parameter; the router's weights still score the
  picked experts, so its tensors and FLOPs are those of a learned router) and one shared expert
  of the experts' width (transformers builds one whatever n_shared_experts says).

FLOPs are the matmuls of transformers' eager forward (what FlopCounterMode counts): the
attention scores every query against every window key and every compressed entry (the window
and the causality of the entries are masks, not smaller matmuls), the indexer every query
against every compressed entry. Under `--attention causal`: min(i, w) window keys for query i
(1-based), ⌊i/m⌋ visible compressed entries (HCA), min(k, ⌊i/m⌋) (CSA), and the indexer over
the ⌊i/m⌋ visible entries. Pooling, the softmax gates, RoPE, the Sinkhorn iterations and the
indexer's weighted sum are element-wise.

Serving and training memory are not modelled: the compressed cache (d_h per m tokens, with
the window's keys, the compressors' buffers and overlap states) has no form in flopcalc's
cache records, so `infer`, `serve`, `step`, `plan` and `memory` refuse these layers.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from ..errors import FlopcalcError
from .base import (ATTENTION, ELEMENTWISE, LAYERS, LAST, REPLICATED, ROW, SCAN, WEIGHTS, Cache,
                   Keeping, Kind, Part, Published, Span, gemm, linear)
from .masks import Mask
from .norm import RMS
from .registry import Entry

KINDS = ("window", "csa", "hca")  # sliding only, compressed sparse, heavily compressed
PREFIX = "dsv4_"
HASH = "_hash"  # the layer's experts are picked by the token-id table (hash_moe)
LAYER_TYPES = tuple(f"{PREFIX}{k}{h}" for k in KINDS for h in ("", HASH))
SIGMOID = 4  # negate, exp, add, divide
SOFTMAX = 5

# what `infer`, `serve`, `step`, `plan` and `memory` would need and flopcalc does not have for
# these layers: one line, the same whichever of them asks first
NOT_MODELLED = ("DeepSeek-V4's compressed attention and hyper-connections: flopcalc counts their "
                "parameters and FLOPs (model, sweep, compare, train), not their cache (a window "
                "of keys plus pooled entries and the compressors' partial windows) nor the "
                "tensors training keeps for backward, which infer, serve, step, plan and "
                "memory need")


def floor_sum(n: int, m: int) -> int:
    """Σ_{i=1..n} ⌊i/m⌋: the compressed entries visible to queries 1..n together (query i,
    1-based, sees entry j when j < ⌊i/m⌋, transformers' `(position_ids + 1) // m`). With
    n + 1 = q·m + r: whole blocks of m values contribute m·(0 + 1 + … + (q − 1)), the r
    values after them q each."""
    if n <= 0:
        return 0
    q, r = divmod(n + 1, m)
    return m * q * (q - 1) // 2 + q * r


def capped_floor_sum(n: int, m: int, k: int) -> int:
    """Σ_{i=1..n} min(k, ⌊i/m⌋): ⌊i/m⌋ < k while i < m·k, k from i = m·k on."""
    if n < m * k:
        return floor_sum(n, m)
    return floor_sum(m * k - 1, m) + k * (n - m * k + 1)


@dataclass(frozen=True)
class HyperConnection:
    """One mHC module over `streams` (N) streams of d: `fn` ((2 + N)·N × N·d), `base`
    ((2 + N)·N), `scale` (3); without `mix` (Hy4's independent hyper-connections, iHC: no
    N×N mixing matrix, the old streams added as they are) 2·N × N·d, 2·N and 2; the
    hyper-head's (`head`) is N × N·d, N and 1."""

    streams: int
    head: bool = False
    mix: bool = True

    @property
    def outputs(self) -> int:
        n = self.streams
        return n if self.head else (2 + n) * n if self.mix else 2 * n

    @property
    def scales(self) -> int:
        return 1 if self.head else 3 if self.mix else 2

    def params(self, d: int, name: str, family: str = LAYERS, stage: str = "layers"
               ) -> list[Part]:
        n, out = self.streams, self.outputs
        words = ("hc_fn", "hc_base", "hc_scale") if self.head else ("fn", "base", "scale")
        at = f"{name}." if name else ""
        scales = self.scales
        return [Part(f"{at}{words[0]}", out * n * d, family, (out, n * d), REPLICATED, stage,
                     matmul=True, module=name),
                Part(f"{at}{words[1]}", out, family, (out,), REPLICATED, stage, module=name),
                Part(f"{at}{words[2]}", scales, family, (scales,), REPLICATED, stage,
                     module=name)]

    def flops(self, d: int, tokens: int, name: str) -> list[Part]:
        """The weights from the streams, (T×N·d)·(N·d×(2 + N)·N) (N·d×N for the head), and,
        but for the head, the streams mixed, (N×N)ᵀ·(N×d) per token → 2·T·N²·d (transformers'
        `torch.matmul(comb.T, hidden_states)`: a matmul of activations, linear in the sequence,
        which is the `scan` family's kind of work, not a weight's)."""
        n = self.streams
        parts = [gemm(f"{name}.fn", tokens, n * d, self.outputs, REPLICATED)]
        if self.mix and not self.head:
            parts.append(Part(f"{name}.mix", 2 * tokens * n * n * d, SCAN))
        return parts

    def elementwise(self, d: int, tokens: int, name: str, iterations: int) -> list[Part]:
        """The weightless RMSNorm over N·d (3 per element), the scales, biases and activations
        of the (2 + N)·N weights, the Sinkhorn iterations (each row and column sum and divide,
        2·N² twice), the collapse (2·N·d) and, but for the head, the expansion and the add
        (3·N·d)."""
        n = self.streams
        if self.head:
            per = 3 * n * d + n * (2 + SIGMOID + 1) + 2 * n * d
        elif not self.mix:  # the norm's factor times the weights, the gates, collapse, add
            per = 3 * n * d + 2 * n * (3 + SIGMOID + 1) + 2 * n * d + 2 * n * d
        else:
            weights = (2 + n) * n * 2 + 2 * n * (SIGMOID + 1) + n * n * SOFTMAX
            sinkhorn = 2 * n * n * (2 * iterations - 1)
            per = 3 * n * d + weights + sinkhorn + 2 * n * d + 3 * n * d
        return [Part(f"{name}.elementwise", tokens * per, ELEMENTWISE)]


@dataclass(frozen=True)
class HyperHead(Kind):
    """The hyper-head after the last layer: N streams → one (a model-level kind, counted
    before the final norm and the head on every output token)."""

    streams: int
    slot = "hc_head"
    before_head = True  # counting.model runs it on the stack's output, before the head

    @property
    def hc(self) -> HyperConnection:
        return HyperConnection(self.streams, head=True)

    def params(self, d: int, active: bool = False) -> list[Part]:
        return self.hc.params(d, "", LAYERS, LAST)

    def forward(self, d: int, x: Span) -> list[Part]:
        return [Part("hc_fn", 2 * x.tokens * self.streams * d * self.streams, WEIGHTS,
                     role=REPLICATED, weight_shape=(self.streams * d, self.streams))]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return self.hc.elementwise(d, x.tokens, "hc", 0)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.forward(d, Span(batch, last - first + 1, last - first + 1))

    def describe(self) -> str:
        return f"hyper-head over {self.streams} streams"

    def notes(self) -> list[str]:
        n = self.streams
        return [f"hyper-head: (T×{n}·d)·({n}·d×{n}) collapses the {n} residual streams before "
                "the final norm (the gates' sigmoid and the weighted sum are element-wise)"]


@dataclass(frozen=True)
class CompressedAttention(Kind):
    """One DeepSeek-V4 attention sublayer (see the module's docstring): `compress` is "window"
    (no compressor), "csa" (every `rate` tokens pooled over overlapping windows, with the
    lightning indexer keeping `topk`) or "hca" (every `rate` tokens, all visible); `streams`
    the hyper-connection's N (its tensors and FLOPs counted with this sublayer, `hc.*`)."""

    heads: int
    head_dim: int
    q_rank: int
    window: int
    groups: int
    o_rank: int
    streams: int
    compress: str = "window"
    rate: int = 0
    index_heads: int = 0
    index_dim: int = 0
    topk: int = 0
    sinkhorn: int = 20
    slot = "attn"

    def __post_init__(self) -> None:
        if self.compress not in KINDS:
            raise ValueError(f"DeepSeek-V4 attention is one of {', '.join(KINDS)}")
        if (self.heads * self.head_dim) % self.groups:
            raise ValueError(f"deepseek_v4.o_groups={self.groups} must divide n_heads·head_dim"
                             f"={self.heads * self.head_dim} (the grouped output projection "
                             "splits the heads' output evenly)")
        if self.compress != "window" and self.rate < 1:
            raise ValueError("compressed attention needs a compression rate >= 1")
        if self.compress == "csa" and min(self.index_heads, self.index_dim, self.topk) < 1:
            raise ValueError("compressed sparse attention needs index_n_heads, index_head_dim "
                             "and index_topk >= 1")

    @property
    def hc(self) -> HyperConnection:
        return HyperConnection(self.streams)

    @property
    def d_q(self) -> int:
        return self.heads * self.head_dim

    @property
    def compressor_width(self) -> int:
        """The compressor's kv and gate widths: two series of d_h (CSA's overlapping
        windows), or one."""
        return (2 if self.compress == "csa" else 1) * self.head_dim

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The hyper-connection; q_a, q_a_norm, q_b, kv, kv_norm, o_a (g blocks of h·d_h/g ×
        r_o), o_b, the sinks; the compressor's kv, gate, position bias (m × width) and norm
        (d_h); the indexer's kv, gate (d → 2·c), position bias (m × 2·c), norm (c), q_b
        (r_q → n_I·c) and weights_proj (d → n_I). None biased. The attention is replicated
        under tensor parallelism, as transformers' plan for DeepSeek-V4 keeps it (one KV head
        shared by every query head)."""
        h, dh, g, r = self.heads, self.head_dim, self.groups, self.o_rank
        parts = self.hc.params(d, "hc")
        parts += (linear("q_a", d, self.q_rank, False, REPLICATED)
                  + RMS.params(self.q_rank, "q_a_norm")
                  + linear("q_b", self.q_rank, self.d_q, False, REPLICATED)
                  + linear("kv", d, dh, False, REPLICATED) + RMS.params(dh, "kv_norm")
                  + [Part("o_a.weight", self.d_q * r, LAYERS, (g, self.d_q // g, r), REPLICATED,
                          matmul=True, module="o_a")]
                  + linear("o_b", g * r, d, False, REPLICATED)
                  + [Part("sinks", h, LAYERS, (h,), REPLICATED, module="")])
        if self.compress == "window":
            return parts
        parts += self._compressor_params(d, "compressor", self.compressor_width, dh)
        if self.compress == "csa":
            c = self.index_dim
            parts += self._compressor_params(d, "compressor.indexer", 2 * c, c)
            parts += linear("compressor.indexer.q_b", self.q_rank, self.index_heads * c, False,
                            REPLICATED)
            parts += linear("compressor.indexer.weights_proj", d, self.index_heads, False,
                            REPLICATED)
        return parts

    def _compressor_params(self, d: int, name: str, width: int, normed: int) -> list[Part]:
        return (linear(f"{name}.kv", d, width, False, REPLICATED)
                + linear(f"{name}.gate", d, width, False, REPLICATED)
                + [Part(f"{name}.position_bias", self.rate * width, LAYERS, (self.rate, width),
                        REPLICATED, module=name)]
                + RMS.params(normed, f"{name}.kv_norm"))

    # -------------------------------------------------------------------------------- FLOPs

    def entries(self, n: int) -> int:
        """Compressed entries of a sequence of n tokens: one per whole window of m."""
        return n // self.rate if self.compress != "window" else 0

    def _visible(self, n: int) -> tuple[int, int]:
        """(keys the attention scores, entries the indexer scores) per head, summed over the
        n queries of one sequence under the causal convention."""
        window = Mask("window", self.window).prefix_pairs(n)
        if self.compress == "window":
            return window, 0
        seen = floor_sum(n, self.rate)
        if self.compress == "hca":
            return window + seen, 0
        return window + capped_floor_sum(n, self.rate, self.topk), seen

    def _pairs(self, x: Span) -> tuple[int, int]:
        """(attention pairs, indexer pairs) per head over the batch: under `full` every query
        against every key and compressed entry (n·(n + ⌊n/m⌋)) and, in CSA, the indexer
        against every entry (n·⌊n/m⌋), as the eager matmuls compute them; under `causal` the
        visible ones (`_visible`). Packed samples count sample by sample."""
        lengths = x.packed or (x.n,)
        attn = index = 0
        for n in lengths:
            if x.convention == "full":
                attn += n * (n + self.entries(n))
                index += n * self.entries(n) if self.compress == "csa" else 0
            else:
                a, i = self._visible(n)
                attn, index = attn + a, index + i
        return x.batch * attn, x.batch * index

    def projections(self, d: int, t: int) -> list[Part]:
        """Per token: the hyper-connection, q_a, q_b, kv, o_a, o_b, the compressor's kv and
        gate, the indexer's kv, gate, q_b and weights_proj."""
        dh, r, g = self.head_dim, self.o_rank, self.groups
        parts = self.hc.flops(d, t, "hc") + [
            gemm("q_a", t, d, self.q_rank, REPLICATED),  # (T×d)·(d×r_q)
            gemm("q_b", t, self.q_rank, self.d_q, REPLICATED),  # (T×r_q)·(r_q×h·d_h)
            gemm("kv", t, d, dh, REPLICATED),  # (T×d)·(d×d_h)
            # g groups of (T×h·d_h/g)·(h·d_h/g×r_o), one bmm → 2·T·h·d_h·r_o
            # (no weight_shape: g blocks each read by every token, not stacked experts)
            Part("o_a", 2 * t * self.d_q * r, WEIGHTS, role=REPLICATED),
            gemm("o_b", t, g * r, d, REPLICATED),  # (T×g·r_o)·(g·r_o×d)
        ]
        if self.compress == "window":
            return parts
        w = self.compressor_width
        parts += [gemm("compressor.kv", t, d, w, REPLICATED),  # (T×d)·(d×w)
                  gemm("compressor.gate", t, d, w, REPLICATED)]
        if self.compress == "csa":
            c, hi = self.index_dim, self.index_heads
            parts += [gemm("compressor.indexer.kv", t, d, 2 * c, REPLICATED),
                      gemm("compressor.indexer.gate", t, d, 2 * c, REPLICATED),
                      gemm("compressor.indexer.q_b", t, self.q_rank, hi * c, REPLICATED),
                      gemm("compressor.indexer.weights_proj", t, d, hi, REPLICATED)]
        return parts

    def pair_flops(self, attn: int, index: int) -> list[Part]:
        """Scores and AV over `attn` pairs per head (2·d_h each: K = V is still one matmul
        each), the indexer's q·k over `index` (2·n_I·c per pair)."""
        h, dh = self.heads, self.head_dim
        parts = [Part("scores", 2 * h * attn * dh, ATTENTION),
                 Part("av", 2 * h * attn * dh, ATTENTION)]
        if self.compress == "csa":
            parts.append(Part("compressor.indexer.scores",
                              2 * self.index_heads * self.index_dim * index, ATTENTION))
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.projections(d, x.tokens) + self.pair_flops(*self._pairs(x))

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """Steps at positions first..last: each new token's projections, its window keys and
        visible compressed entries (causal: `_visible`)."""
        a1, i1 = self._visible(last)
        a0, i0 = self._visible(first - 1)
        t = batch * (last - first + 1)
        return self.projections(d, t) + self.pair_flops(batch * (a1 - a0), batch * (i1 - i0))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The hyper-connection's; the query's weightless RMSNorm (3 per element), the RMSNorms
        of the query latent and kv (4 each), the softmax over every score and sink; the
        compressor's gate softmax and pooling (5 + 2 per projected value), the indexer's ReLU
        and weighted sum (3 per head and pair). RoPE (on d_rope of each head) is left out, as
        for every rotary model."""
        t = x.tokens
        attn, index = self._pairs(x)
        parts = self.hc.elementwise(d, t, "hc", self.sinkhorn)
        norms = t * (3 * self.d_q + 4 * self.q_rank + 4 * self.head_dim)
        parts.append(Part("elementwise.norms", norms, ELEMENTWISE))
        parts.append(Part("elementwise.softmax", SOFTMAX * self.heads * (attn + t),
                          ELEMENTWISE))
        if self.compress != "window":
            w = self.compressor_width + (4 * self.index_dim if self.compress == "csa" else 0)
            parts.append(Part("elementwise.compressor", t * w * (SOFTMAX + 2), ELEMENTWISE))
        if self.compress == "csa":
            parts.append(Part("elementwise.indexer", 3 * self.index_heads * index,
                              ELEMENTWISE))
        return parts

    # ------------------------------------------------------------ what is not modelled here

    def cache(self) -> Cache:
        raise FlopcalcError(NOT_MODELLED)

    def cache_reads(self, first: int, last: int) -> int:
        raise FlopcalcError(NOT_MODELLED)

    def engine_cache(self, tp: int = 1) -> tuple:
        raise FlopcalcError(NOT_MODELLED)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        raise FlopcalcError(NOT_MODELLED)

    def pair_terms(self) -> list[tuple[int, object]]:
        """The window's s² term only (the compressed entries add s²/m, which the crossover's
        masks do not express)."""
        return [(4 * self.heads * self.head_dim, Mask("window", self.window))]

    def published(self, d: int) -> Published:
        return Published(heads=self.heads, kv_heads=1, head_dim=self.head_dim,
                         qk_width=self.d_q, v_width=self.d_q, kv_width=self.head_dim,
                         kv_kind="mqa", departures=(
                             "assumes multi-head attention; this model has DeepSeek-V4's "
                             "compressed attention (one K = V head, a query bottleneck, a "
                             "grouped low-rank output and hyper-connections)",))

    def describe(self) -> str:
        what = {"window": f"sliding window {self.window:,}",
                "csa": f"compressed sparse (1/{self.rate}, top-{self.topk:,}) + window "
                       f"{self.window:,}",
                "hca": f"heavily compressed (1/{self.rate}) + window {self.window:,}"}
        return f"DeepSeek-V4 attention, {what[self.compress]}"

    def notes(self) -> list[str]:
        n = self.streams
        out = [f"hyper-connections (DeepSeek-V4's mHC, {n} residual streams): before each "
               f"sublayer (T×{n}·d)·({n}·d×{(2 + n) * n}) for its mixing weights and the "
               f"streams mixed by a {n}×{n} matrix (2·{n}²·d per token); the Sinkhorn "
               "iterations, the collapse and the expansion are element-wise",
               "DeepSeek-V4 attention: q_a d → r_q, q_b r_q → h·d_h, one K = V head d → d_h, "
               "scores and AV 2·h·d_h per pair each over every window key and compressed entry "
               "(eager: masks do not shrink the matmuls), the grouped output 2·h·d_h·r_o + "
               "2·g·r_o·d per token"]
        if self.compress != "window":
            out.append("DeepSeek-V4 compressors: kv and gate d → d_h (HCA) or d → 2·d_h (CSA) "
                       "on every token, one entry per whole window of m tokens (⌊s/m⌋); CSA's "
                       "lightning indexer adds kv and gate d → 2·c, q_b r_q → n_I·c, "
                       "weights_proj d → n_I and 2·n_I·c per (query, entry) pair")
        return out


@dataclass(frozen=True)
class HashMoe(Kind):
    """DeepSeek-V4's feed-forward block: the mixture `moe` (kinds.moe) with the
    hyper-connection before it (`hc.*`); `hashed`: its experts are picked by the token-id table
    (hash_moe), whose scores still come from the router's weights."""

    moe: Any  # kinds.moe.Moe
    streams: int
    hashed: bool = False
    sinkhorn: int = 20
    slot = "mlp"
    routed = True

    @property
    def hc(self) -> HyperConnection:
        return HyperConnection(self.streams)

    def params(self, d: int, active: bool = False) -> list[Part]:
        return self.hc.params(d, "hc") + self.moe.params(d, active)

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.hc.flops(d, x.tokens, "hc") + self.moe.forward(d, x)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        t = batch * (last - first + 1)
        return self.hc.flops(d, t, "hc") + self.moe.decode(d, batch, first, last)

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return self.hc.elementwise(d, x.tokens, "hc", self.sinkhorn) + self.moe.elementwise(d, x)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        raise FlopcalcError(NOT_MODELLED)

    def reads(self, d: int, tokens: int) -> Optional[object]:
        return self.moe.reads(d, tokens)

    def ep_units(self) -> int:
        return self.moe.ep_units()

    def published(self, d: int) -> Published:
        return self.moe.published(d)

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        return self.moe.formula(name, d, s, local)

    def describe(self) -> str:
        return self.moe.describe() + (", hash-routed" if self.hashed else "")

    def notes(self) -> list[str]:
        out = list(self.moe.notes())
        if self.hashed:
            out.append("hash-routed experts (DeepSeek-V4's hash_moe): a frozen token-id → "
                       "expert table (a buffer, no parameter) picks the k experts; the router's "
                       "weights still score them (2·d·E per token), so the counts equal a "
                       "learned router's")
        return out

    def decode_notes(self) -> list[str]:
        return self.moe.decode_notes()


@dataclass(frozen=True)
class DeepseekV4Block:
    """`deepseek_v4:` in a model file (transformers DeepseekV4Config's names in comments).
    The layers are `layer_types` entries dsv4_window, dsv4_csa, dsv4_hca (sliding_attention,
    compressed_sparse_attention, heavily_compressed_attention), each with `_hash` when its
    experts are hash-routed (mlp_layer_types hash_moe); the experts are the `moe` block."""

    q_lora_rank: Annotated[int, Min(1)]
    o_groups: Annotated[int, Min(1)]
    o_lora_rank: Annotated[int, Min(1)]
    hc_mult: Annotated[int, Min(1)]
    sliding_window: Annotated[int, Min(1)]
    csa_rate: Annotated[int, Min(1)] = 4  # compress_rates.compressed_sparse_attention
    hca_rate: Annotated[int, Min(1)] = 128  # compress_rates.heavily_compressed_attention
    index_n_heads: Annotated[int, Min(1)] = 64
    index_head_dim: Annotated[int, Min(1)] = 128
    index_topk: Annotated[int, Min(1)] = 512
    hc_sinkhorn_iters: Annotated[int, Min(1)] = 20  # element-wise only


def _block(cfg: Any) -> DeepseekV4Block:
    if cfg.deepseek_v4 is None:
        raise ValueError("dsv4_* layers are DeepSeek-V4's: they need a deepseek_v4 block")
    return cfg.deepseek_v4


def build(cfg: Any, name: str) -> CompressedAttention:
    """A dsv4_* layer's attention."""
    b = _block(cfg)
    kind = name.removeprefix(PREFIX).removesuffix(HASH)
    if cfg.n_heads is None or cfg.head_dim is None:
        raise ValueError("DeepSeek-V4 layers need n_heads and head_dim")
    rate = {"window": 0, "csa": b.csa_rate, "hca": b.hca_rate}[kind]
    return CompressedAttention(
        heads=cfg.n_heads, head_dim=cfg.head_dim, q_rank=b.q_lora_rank, window=b.sliding_window,
        groups=b.o_groups, o_rank=b.o_lora_rank, streams=b.hc_mult, compress=kind, rate=rate,
        index_heads=b.index_n_heads if kind == "csa" else 0,
        index_dim=b.index_head_dim if kind == "csa" else 0,
        topk=b.index_topk if kind == "csa" else 0, sinkhorn=b.hc_sinkhorn_iters)


def feedforward(cfg: Any, name: str) -> HashMoe:
    """Every layer's mixture of experts, with its hyper-connection."""
    from . import moe

    b = _block(cfg)
    if cfg.moe is None:
        raise ValueError("DeepSeek-V4 layers are mixtures of experts: a moe block is required")
    return HashMoe(moe.from_config(cfg), b.hc_mult, name.endswith(HASH), b.hc_sinkhorn_iters)


def hyper_head(cfg: Any) -> Optional[HyperHead]:
    return HyperHead(cfg.deepseek_v4.hc_mult) if cfg.deepseek_v4 is not None else None


REGISTER = Entry(layer_types=LAYER_TYPES, build=build,
                 blocks=(("deepseek_v4", DeepseekV4Block),), ffn=feedforward,
                 frontend=hyper_head)
