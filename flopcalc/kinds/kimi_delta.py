"""Kimi delta attention (KDA: Kimi Team, "Kimi Linear: An Expressive, Efficient Attention
Architecture", 2025, arXiv:2510.26692), the linear-attention mixer of Kimi Linear: a gated delta
rule whose decay is per channel (one forget rate for each of a head's D key channels, from a
low-rank gate) instead of one per head.

Tensors (Hugging Face's `KimiLinearDeltaAttention`, transformers 5.24
`models/kimi_linear/modeling_kimi_linear.py`), with H heads of D channels (HD = H·D; one D for
queries, keys and values) and a short conv of K taps: q, k and v projections d → HD each; one
depthwise conv1d over their 3HD channels (no bias; Kimi's checkpoint stores it as q_conv1d,
k_conv1d and v_conv1d, the same numbers); the forget gate `f_a` d → D, `f_b` D → HD, its
`dt_bias` (HD) and `A_log` (H); `b_proj` d → H (β, the delta rule's learning rate); the output
gate `g_a` d → D, `g_b` D → HD (no bias in Hugging Face's module; fla's layer gives g_b one);
a gated RMSNorm over D shared by the heads (sigmoid gate); o_proj HD → d. Under tensor
parallelism (vLLM's KimiDeltaAttention) everything splits by heads except the two low-rank down
projections f_a and g_a and the norm, which are replicated; o_proj is row-parallel.

Forward FLOPs as the Hugging Face PyTorch path computes them (`chunk_kimi_delta_attention`, run
without fla's kernels), which is what FlopCounterMode counts:
- the projections (T×d)·(d×HD) ×3, f_a/g_a (T×d)·(d×D), f_b/g_b (T×D)·(D×HD), b (T×d)·(d×H),
  o (T×HD)·(HD×d): `weights`;
- the conv, padding K − 1 on both sides: 2·B·3HD·K·(L+K−1): `weights`;
- the chunked delta rule on L zero-padded to Lp = C·⌈L/C⌉ (C = 64), per chunk and head (`scan`):
  the UT transform applied to v·β and to k·β·e^g, two (C×C)·(C×D); then, chunk by chunk, the
  inter-chunk read (q·e^g)·S and k_cumdecay·S, two (C×D)·(D×D), the intra-chunk product
  A_qk·v_new (C×C)·(C×D), and the state update (k·decay)ᵀ·v_new (D×C)·(C×D):
  2·B·H·Lp·(3·C·D + 3·D²) in all. The within-chunk scores k_β·kᵀ and q·kᵀ are written as
  broadcast multiplies summed over a (C, C, D) decay tensor, and the forward substitution that
  inverts the UT system as a row loop: element-wise work, zero to FlopCounterMode, counted under
  --elementwise (where, at D = 128, they are most of the layer's element-wise work).
A decode step runs the recurrence instead (`recurrent_kimi_delta_attention`): the projections
and the conv on the new token (2·B·3HD·K: K multiply-adds per channel), the per-channel decay of
the state S ← S·e^g (1 FLOP per state value), the delta rule S ← S + k⊗((v − kᵀS)·β) (4 per state
value and 2 per channel of v) and the read-out o = Sᵀq (2 per state value), `scan`. Per sequence
it keeps the conv window, 3HD channels by K columns (Hugging Face's cache holds K; engines keep
K − 1), in the cache dtype, and the H·D·D state, which Hugging Face keeps in fp32 whatever the
model's dtype.

Bailing-hybrid (transformers 5.24 `models/bailing_hybrid/modular_bailing_hybrid.py`,
BailingHybridDeltaAttention) runs the same core with full-rank gates (`full_rank_gates`): the
forget gate `f` d → HD and the output gate `g` d → HD in place of f_a/f_b and g_a/g_b, each
(T×d)·(d×HD); its bounded ("safe") forget gate, lower_bound·sigmoid(e^A·(f + dt_bias)), is
counted with the element-wise work of Kimi's softplus gate (7 against 6 per channel: the
difference is not counted).
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Annotated, Any

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, SCAN, WEIGHTS, Cache, Keeping,
                   Kind, Part, Published, Span, State, gemm, linear)
from .mlp import ACTIVATION_FLOPS
from .registry import Entry

SIGMOID = 4  # negate, exp, add, divide
# Hugging Face writes KDA's softplus out as where(g > 20, g, log(1 + exp(g))): compare, exp,
# add, log.
SOFTPLUS_WRITTEN_OUT = 4


def substitution(c: int) -> int:
    """Element-wise FLOPs of the forward substitution over one C×C chunk (Hugging Face's
    `for i in range(1, C)` loop): row i multiplies its i entries into the i×i block above it
    (i² multiplies), sums them down (i² inputs) and adds the row (i): Σ_{i<C} (2i² + i)."""
    squares = (c - 1) * c * (2 * c - 1) // 6
    return 2 * squares + (c - 1) * c // 2


@dataclass(frozen=True)
class KimiDelta(Kind):
    """One KDA mixer: `heads` heads of `head_dim` channels, a conv of `conv` taps over q, k and v,
    chunks of `chunk` tokens; `activation` is the conv's (Kimi: SiLU)."""

    heads: int
    head_dim: int
    conv: int = 4
    chunk: int = 64
    activation: str = "silu"
    full_rank_gates: bool = False  # Bailing-hybrid: f and g d → HD, no low-rank pairs
    slot = "kda"
    chunked_scan = True

    @property
    def inner(self) -> int:
        """HD: the width of q, k, v and the output, heads·head_dim."""
        return self.heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """3HD: q, k and v go through the conv."""
        return 3 * self.inner

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        H, D, HD, C = self.heads, self.head_dim, self.inner, self.conv_channels
        parts = linear("q", d, HD, False) + linear("k", d, HD, False) + linear("v", d, HD, False)
        parts.append(Part("conv.weight", C * self.conv, LAYERS, (C, 1, self.conv), COLUMN,
                          matmul=True))
        if self.full_rank_gates:
            parts += linear("f", d, HD, False)
        else:
            parts += linear("f_a", d, D, False, REPLICATED) + linear("f_b", D, HD, False)
        parts += [Part("dt_bias", HD, LAYERS, (HD,), COLUMN, module=""),  # the mixer's own
                  Part("A_log", H, LAYERS, (1, 1, H, 1), COLUMN, module="")]
        parts += linear("b", d, H, False)
        if self.full_rank_gates:
            parts += linear("g", d, HD, False)
        else:
            parts += linear("g_a", d, D, False, REPLICATED) + linear("g_b", D, HD, False)
        parts.append(Part("o_norm.weight", D, LAYERS, (D,), REPLICATED))
        return parts + linear("o", HD, d, False, ROW)

    def count_period(self) -> int:
        """Its chunked core pads the length to a whole number of chunks: one polynomial in the
        length on each block of `chunk` lengths."""
        return self.chunk

    # -------------------------------------------------------------------------------- FLOPs

    def _weights(self, d: int, t: int) -> list[Part]:
        H, D, HD = self.heads, self.head_dim, self.inner
        if self.full_rank_gates:  # (T×d)·(d×HD) each
            f, g = [gemm("f", t, d, HD)], [gemm("g", t, d, HD)]
        else:  # (T×d)·(d×D), then (T×D)·(D×HD)
            f = [gemm("f_a", t, d, D, REPLICATED), gemm("f_b", t, D, HD)]
            g = [gemm("g_a", t, d, D, REPLICATED), gemm("g_b", t, D, HD)]
        return [
            gemm("q", t, d, HD),  # (T×d)·(d×HD)
            gemm("k", t, d, HD),
            gemm("v", t, d, HD),
            *f,
            gemm("b", t, d, H),  # (T×d)·(d×H)
            *g,
            gemm("o", t, HD, d, ROW),  # (T×HD)·(HD×d)
        ]

    def padded(self, n: int) -> int:
        """Lp: the length the chunked path runs on, n zero-padded to a multiple of the chunk."""
        return ceil(Fraction(n, self.chunk)) * self.chunk

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T = x.batch, x.n, x.tokens
        H, D, C = self.heads, self.head_dim, self.chunk
        rows = b * H * self.padded(n)  # (b, h, position) rows over the padded length
        parts = self._weights(d, T)
        # depthwise, padding K−1: L+K−1 output columns of K taps per channel
        parts.insert(3, Part("conv", 2 * b * self.conv_channels * self.conv *
                             (n + self.conv - 1), WEIGHTS))
        if x.scan == "recurrent":  # the decode step's core on every token, no padding
            return parts[:-1] + self._recurrence(T) + [parts[-1]]
        return parts[:-1] + [
            # per chunk: A·(v·β) and A·(k·β·e^g), (C×C)·(C×D) each
            Part("chunk.ut_transform", 2 * rows * 2 * C * D, SCAN),
            # per chunk: (q·e^g)·S and k_cumdecay·S, (C×D)·(D×D) each
            Part("chunk.state_reads", 2 * rows * 2 * D * D, SCAN),
            Part("chunk.intra", 2 * rows * C * D, SCAN),  # A_qk·v_new, (C×C)·(C×D)
            Part("chunk.state_update", 2 * rows * D * D, SCAN),  # (D×C)·(C×D) per chunk
            parts[-1],
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The recurrence, one token per sequence and step: the same for every position."""
        t = batch * (last - first + 1)
        parts = self._weights(d, t)
        parts.insert(3, Part("conv", 2 * t * self.conv_channels * self.conv, WEIGHTS))
        return parts[:-1] + self._recurrence(t) + [parts[-1]]

    def _recurrence(self, t: int) -> list[Part]:
        """The delta rule's recurrence on `t` tokens (a decode step's, or the whole forward's
        under --scan recurrent)."""
        H, D = self.heads, self.head_dim
        state = H * D * D
        return [
            Part("scan.decay", t * state, SCAN),  # S·e^g, per channel
            # kᵀS (2 per state value), (v − kᵀS)·β (2 per value channel), S + k⊗δ (2)
            Part("scan.delta", t * (4 * state + 2 * H * D), SCAN),
            Part("scan.readout", 2 * t * state, SCAN),  # Sᵀq
        ]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The Hugging Face path's element-wise work, op by op (1 per add, multiply, divide, exp,
        log, compare, square root, cumsum element; a sum 1 per input; SiLU and sigmoid 4;
        masked fills and casts 0), on the padded length where it runs there."""
        b, n, T = x.batch, x.n, x.tokens
        H, D, HD, C = self.heads, self.head_dim, self.inner, self.chunk
        Lp = self.padded(n)
        chunks = b * H * (Lp // C)  # (b, h, chunk) blocks
        rows = b * H * Lp
        conv = ACTIVATION_FLOPS[self.activation] * b * self.conv_channels * n
        # forget gate: f + dt_bias, the softplus written out, −exp(A_log) (2 per head) and the
        # product; β = sigmoid(b)
        gates = (1 + SOFTPLUS_WRITTEN_OUT + 1) * T * HD + 2 * H + SIGMOID * T * H
        # q and k: x·x, sum, + eps and sqrt per row, x / norm
        l2norm = 2 * (3 * T * HD + 2 * T * H)
        # q·scale on the padded length, v·β, k·β, the cumsum of g, k·β·exp(g)
        prepare = 6 * rows * D
        # per chunk: the (C, C, D) decay exp(g_i − g_j) (2 per entry), A = −(k_β·k·decay).sum
        # (3 per entry, the negation per score), the forward substitution, + I
        intra = chunks * (5 * C * C * D + C * C + substitution(C) + C * C)
        # per chunk, in the scan: q·exp(g) (2CD), the intra scores (q·k·decay).sum (3C²D),
        # v − v' and inter + intra (2CD), exp of the last g (D), S·that (D²), exp(g_last − g)
        # and k· (3CD), S + (D²)
        scan = chunks * (7 * C * D + 3 * C * C * D + 2 * D * D + D)
        # RMSNorm over D per head (square, mean, scale, gain; eps and rsqrt per row), the
        # sigmoid of the gate and the product
        norm = 9 * T * HD + 2 * T * H
        if x.scan == "recurrent":
            # token by token (recurrent_kimi_delta_attention): q·scale and exp(g) per token and
            # channel; the decay, the delta rule and the read-out are the core's.
            return [Part("elementwise.conv", conv, ELEMENTWISE),
                    Part("elementwise.gates", gates, ELEMENTWISE),
                    Part("elementwise.l2norm", l2norm, ELEMENTWISE),
                    Part("elementwise.prepare", 2 * T * HD, ELEMENTWISE),
                    Part("elementwise.gated_norm", norm, ELEMENTWISE)]
        return [Part("elementwise.conv", conv, ELEMENTWISE),
                Part("elementwise.gates", gates, ELEMENTWISE),
                Part("elementwise.l2norm", l2norm, ELEMENTWISE),
                Part("elementwise.prepare", prepare, ELEMENTWISE),
                Part("elementwise.intra_chunk", intra, ELEMENTWISE),
                Part("elementwise.scan", scan, ELEMENTWISE),
                Part("elementwise.gated_norm", norm, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="kda", states=(
            State("conv_state", self.conv_channels * self.conv, "cache"),
            State("recurrent_state", self.heads * self.head_dim * self.head_dim, "state")))

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What fla's training path keeps for backward besides the block's input (16-bit unless
        said): fla-org/flash-linear-attention `fla/layers/kda.py` (KimiDeltaAttention) and
        `fla/ops/kda/chunk.py` (ChunkKDAFunction.forward's save_for_backward, with
        use_qk_l2norm_in_kernel and use_gate_in_kernel as the layer calls it). The three short
        convolutions keep their inputs, the q/k/v projections' outputs; f_b and g_b keep the
        low-rank D-wide inputs (replicated, not split); the kernel keeps the normalised q and k,
        v, the raw gate, β, its two C-wide intra-chunk matrices A_qk and A_kk per head and token,
        and the fp32 reciprocal norms of q and k; the gated norm keeps its input and gate and
        an fp32 reciprocal per head; o_proj its input. Split over the tensor-parallel heads."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        H, D, HD, C = self.heads, self.head_dim, self.inner, self.chunk
        return [("conv_inputs", 2 * sb * 3 * HD * split),
                ("gate_low_rank", Fraction(0 if self.full_rank_gates else 2 * sb * 2 * D)),
                ("qkv", 2 * sb * 3 * HD * split),
                ("gate", 2 * sb * HD * split),
                ("beta", 2 * sb * H * split),
                ("intra_chunk", 2 * sb * 2 * H * C * split),
                ("l2norm_rstd", 4 * sb * 2 * H * split),
                ("gated_norm_inputs", 2 * sb * 2 * HD * split),
                ("gated_norm_rstd", 4 * sb * H * split),
                ("o_input", 2 * sb * HD * split)]

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has Kimi delta attention (linear "
            "attention) layers",))

    def describe(self) -> str:
        full = ", full-rank gates" if self.full_rank_gates else ""
        return f"Kimi delta attention {self.heads}x{self.head_dim}{full}"

    def notes(self) -> list[str]:
        return ["Kimi delta attention: as the Hugging Face PyTorch path computes it (what "
                "FlopCounterMode counts): the q/k/v, low-rank gate, β and output projections, "
                "the depthwise conv over L + K − 1 columns, the chunked delta rule as six "
                f"matmuls per chunk of {self.chunk} on the sequence padded to a multiple of "
                f"{self.chunk} (state/scan family; one token costs a whole chunk); its "
                "within-chunk scores and triangular solve are element-wise there (--elementwise "
                "counts them)"]

    def decode_notes(self) -> list[str]:
        return ["Kimi delta attention decodes by the recurrence: the projections and the conv "
                "on the new token, the per-channel decay of the state (1 FLOP per state value), "
                "the delta rule (4 per state value, 2 per value channel) and the read-out (2 per "
                "state value); per sequence it keeps the conv window (3HD channels x K columns, "
                "as Hugging Face's cache holds it; engines keep K − 1) in the KV dtype and the "
                "H·D·D state in the state dtype (Hugging Face: fp32). Hugging Face's decode conv "
                "computes 2 output columns per step (its state holds K), twice this"]


@dataclass(frozen=True)
class KimiDeltaConfig:
    """`kimi_delta:` in a model file (Hugging Face's `linear_attn_config` names)."""

    num_heads: Annotated[int, Min(1)]
    head_dim: Annotated[int, Min(1)]
    short_conv_kernel_size: Annotated[int, Min(1)] = 4
    chunk_size: Annotated[int, Min(1)] = 64
    full_rank_gates: bool = False  # Bailing-hybrid's f_proj and g_proj, d → HD each


def build(cfg: Any, name: str) -> KimiDelta:
    m = cfg.kimi_delta
    if m is None:
        raise ValueError("kda layers need a kimi_delta block (num_heads, head_dim, "
                         "short_conv_kernel_size)")
    return KimiDelta(heads=m.num_heads, head_dim=m.head_dim, conv=m.short_conv_kernel_size,
                     chunk=m.chunk_size, activation=cfg.activation,
                     full_rank_gates=m.full_rank_gates)


REGISTER = Entry(layer_types=("kda",), build=build, blocks=(("kimi_delta", KimiDeltaConfig),))
