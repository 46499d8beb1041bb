"""Mamba-2 (the state-space dual, SSD: Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060)
as a token mixer: Mamba-2 itself and the hybrids built from it (Bamba, Nemotron-H, Granite 4.0-H,
Falcon-H1, Zamba2).

Tensors (Hugging Face's `Mamba2Mixer`, transformers 5.24 `models/mamba2/modeling_mamba2.py`), with
E = H·P inner channels in H heads of P, a state of N per head in G groups, a conv of K taps:
in_proj d → [z: E | x, B, C: E + 2GN | dt: H] (width 2E + 2GN + H), a depthwise conv1d over the
E + 2GN channels of x, B and C, `dt_bias`, `A_log` and `D` (H each), a gated RMSNorm over E, and
out_proj E → d. Under tensor parallelism every tensor but out_proj splits by heads (Megatron-LM's
MambaMixer); out_proj is row-parallel.

Forward FLOPs as the Hugging Face PyTorch path (`mamba2_chunk_scan`, run without the mamba_ssm
kernels) computes them, which is what FlopCounterMode counts:
- in_proj (T×d)·(d×(2E+2GN+H)) and out_proj (T×E)·(E×d): `weights`;
- the conv, padding K − 1 on both sides: 2·B·(E+2GN)·K·(L+K−1) (its K − 1 extra output
  columns are computed and dropped): `weights`;
- the SSD, with L zero-padded to Lp = nc·Q (nc = ⌈L/Q⌉ chunks of Q) and B, C repeated from G
  groups to H heads, as five batched matmuls (`scan`): C·Bᵀ within chunks 2·B·nc·Q²·H·N, the
  masked product with X 2·B·nc·Q²·H·P, the chunk states 2·B·nc·Q·H·N·P, the states passed
  between chunks over nc + 1 of them (a zero initial state first) 2·B·(nc+1)²·H·P·N, and the
  states read out 2·B·nc·Q·H·N·P.
A decode step runs the recurrence instead: the projections and the conv on the new token
(2·B·(E+2GN)·K: K multiply-adds per channel), the state update h ← h·exp(dt·A) + (dt·x)⊗B (3
FLOPs per state value: two multiplies and an add) and the read-out y = C·h (2 per state value),
both `scan`. The state kept per sequence: the conv window, E + 2GN channels by K columns in the
cache dtype (Hugging Face's cache holds K columns; engines such as vLLM keep K − 1), and the SSM
state, H·P·N values, which Hugging Face keeps in fp32.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, ROW, SCAN, WEIGHTS, Cache, EngineCache,
                   EngineState, Keeping, Kind, Part, Published, Span, State, gemm, linear)
from .multipliers import scales
from .registry import Entry

SOFTPLUS = 3  # exp, log1p and the threshold compare
SILU = 4  # x / (1 + exp(−x)): negate, exp, add, divide


@dataclass(frozen=True)
class Mamba2(Kind):
    """One Mamba-2 mixer: `heads` of `head_dim` channels (E = heads·head_dim), a state of
    `state` per head shared in `groups` groups, a conv of `conv` taps, chunks of `chunk`."""

    heads: int
    head_dim: int
    state: int
    groups: int
    conv: int
    chunk: int
    in_bias: bool = False
    out_bias: bool = False
    conv_bias: bool = True
    gated_norm: bool = True
    # scalar multiplies (Falcon-H1's µP, `kinds.multipliers`): the input (T·d), the in_proj
    # output by its mup_vector (T·(2E+2GN+H)), the output (T·d); element-wise only
    multipliers: tuple[str, ...] = ()
    slot = "mamba"
    chunked_scan = True

    def __post_init__(self) -> None:
        if self.heads % self.groups:
            raise ValueError(f"mamba2.n_groups={self.groups} must divide mamba2.n_heads="
                             f"{self.heads} (each group's B and C serve whole heads)")

    @property
    def inner(self) -> int:
        """E: the inner channels, heads·head_dim."""
        return self.heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """E + 2GN: x, B and C go through the conv."""
        return self.inner + 2 * self.groups * self.state

    @property
    def in_width(self) -> int:
        """2E + 2GN + H: z, x, B, C and dt."""
        return self.inner + self.conv_channels + self.heads

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        E, H, C = self.inner, self.heads, self.conv_channels
        parts = linear("in_proj", d, self.in_width, self.in_bias)
        parts.append(Part("conv.weight", C * self.conv, LAYERS, (C, 1, self.conv), COLUMN,
                          matmul=True, module="conv"))
        if self.conv_bias:
            parts.append(Part("conv.bias", C, LAYERS, (C,), COLUMN, module="conv"))
        parts += [Part(name, H, LAYERS, (H,), COLUMN, module="")  # the mixer's own
                  for name in ("dt_bias", "A_log", "D")]
        if self.gated_norm:
            parts.append(Part("norm.weight", E, LAYERS, (E,), COLUMN))
        return parts + linear("out_proj", E, d, self.out_bias, ROW)

    def count_period(self) -> int:
        """Its chunked core pads the length to a whole number of chunks: one polynomial in the
        length on each block of `chunk` lengths."""
        return self.chunk

    # -------------------------------------------------------------------------------- FLOPs

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T = x.batch, x.n, x.tokens
        E, H, P, N, Q = self.inner, self.heads, self.head_dim, self.state, self.chunk
        nc = ceil(Fraction(n, Q))
        head = [
            gemm("in_proj", T, d, self.in_width),  # (T×d)·(d×(2E+2GN+H))
            # depthwise, padding K−1: L+K−1 output columns of K taps per channel
            Part("conv", 2 * b * self.conv_channels * self.conv * (n + self.conv - 1), WEIGHTS),
        ]
        if x.scan == "recurrent":  # the decode step's core on every token, no padding
            return head + self._recurrence(T) + [gemm("out_proj", T, E, d, ROW)]
        return head + [
            Part("ssd.cb", 2 * b * nc * Q * Q * H * N, SCAN),  # (Q×N)·(N×Q) per chunk and head
            Part("ssd.diag", 2 * b * nc * Q * Q * H * P, SCAN),  # (Q×Q)·(Q×P)
            Part("ssd.states", 2 * b * nc * Q * H * N * P, SCAN),  # (N×Q)·(Q×P) per chunk
            # (nc+1 × nc+1)·(nc+1 × P·N) per head: states carried from chunk to chunk
            Part("ssd.passing", 2 * b * (nc + 1) ** 2 * H * P * N, SCAN),
            Part("ssd.readout", 2 * b * nc * Q * H * N * P, SCAN),  # (Q×N)·(N×P) per chunk
            gemm("out_proj", T, E, d, ROW),  # (T×E)·(E×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The recurrence, one token per sequence and step: the same for every position."""
        t = batch * (last - first + 1)
        return [
            gemm("in_proj", t, d, self.in_width),
            Part("conv", 2 * t * self.conv_channels * self.conv, WEIGHTS),  # K taps per channel
            *self._recurrence(t),
            gemm("out_proj", t, self.inner, d, ROW),
        ]

    def _recurrence(self, t: int) -> list[Part]:
        """The recurrence's core on `t` tokens (a decode step's, or the whole forward's under
        --scan recurrent)."""
        values = self.heads * self.head_dim * self.state  # the state, H·P·N
        return [Part("scan.update", 3 * t * values, SCAN),  # h·exp(dt·A) + (dt·x)·B
                Part("scan.readout", 2 * t * values, SCAN)]  # y = C·h: N multiply-adds/channel

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The Hugging Face path's element-wise work, op by op (1 per add, multiply, exp,
        compare, masked select; SiLU 4; softplus 3; the clamp of dt 2), on the padded length
        where it runs there."""
        b, n, T = x.batch, x.n, x.tokens
        E, H, P, N, G, Q = (self.inner, self.heads, self.head_dim, self.state, self.groups,
                            self.chunk)
        C = self.conv_channels
        nc = ceil(Fraction(n, Q))
        padded = b * nc * Q  # B·Lp
        conv = SILU * b * C * n + (b * C * (n + self.conv - 1) if self.conv_bias else 0)
        # A = −exp(A_log) (2 per head); dt + dt_bias, softplus, clamp, A·dt (7 per token and
        # head); x·dt (per channel).
        discretize = 2 * H + 7 * T * H + T * H * P
        # cumsum of A·dt, the decays exp(A_end − A), exp(A); B·decay; the within-chunk
        # segment sums (two masked selects, a cumsum, an exp) and M = G·L; between chunks the
        # same on (nc+1)² entries.
        decay = (4 * b * H * nc * Q + padded * H * N + 5 * b * H * nc * Q * Q
                 + 4 * b * H * (nc + 1) ** 2)
        output = 4 * padded * H * P  # D·x, the off-diagonal scaling, two adds
        if x.scan == "recurrent":
            # token by token: exp(dt·A) per token and head (the update's products and add are
            # the core's); the output D·x + y per channel, on the real tokens.
            decay, output = T * H, 2 * T * E
        # y·SiLU(z), then RMSNorm per group: square, mean, scale and gain per element, eps and
        # rsqrt per group.
        norm = 9 * T * E + 2 * T * G if self.gated_norm else (SILU + 1) * T * E
        bias = (T * self.in_width if self.in_bias else 0) + (T * d if self.out_bias else 0)
        parts = [Part("elementwise.conv", conv, ELEMENTWISE),
                 Part("elementwise.discretize", discretize, ELEMENTWISE),
                 Part("elementwise.decay", decay, ELEMENTWISE),
                 Part("elementwise.output", output, ELEMENTWISE),
                 Part("elementwise.gated_norm", norm, ELEMENTWISE)]
        widths = {"input": d, "projection": self.in_width, "output": d}
        scale = T * sum(widths[m] for m in self.multipliers)
        parts += [Part("elementwise.multipliers", scale, ELEMENTWISE)] if scale else []
        return parts + ([Part("elementwise.bias", bias, ELEMENTWISE)] if bias else [])

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="mamba2", states=(
            State("conv_state", self.conv_channels * self.conv, "cache"),
            State("ssm_state", self.heads * self.head_dim * self.state, "state")))

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """vLLM's MambaSpec on one of `tp` ranks (`mamba_utils.py` mamba2_state_shape): the conv
        window, K − 1 rows (+1 per speculative token) of (E + 2·G'·N)/tp channels, where G'
        replicates the groups up to `tp` when tp does not divide them (extra_groups_for_head
        shards), in the conv dtype; the SSM state (H/tp, P, N) in the state dtype. In prefix
        caching's align mode it keeps one prefill checkpoint block more (mamba_mixer2.py)."""
        if self.heads % tp:
            raise ValueError(f"tensor parallelism {tp} must divide the {self.heads} Mamba-2 "
                             "heads")
        groups = self.groups if self.groups % tp == 0 else self.groups + tp - self.groups
        channels = (self.inner + 2 * groups * self.state) // tp
        return (EngineCache("state", states=(
            EngineState("conv", (self.conv - 1) * channels, "conv", channels),
            EngineState("ssm", self.heads // tp * self.head_dim * self.state, "state")),
            checkpoint_blocks=1),)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What the fused Mamba-2 kernel keeps for backward besides the block's input
        (mamba_ssm's `MambaSplitConv1dScanCombinedFn`: the in_proj output, the scan output
        before its gate, and the norm's fp32 reciprocal per group; the conv and the scan are
        recomputed in backward), 16-bit, split over the tensor-parallel heads."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        return [("in_proj_output", 2 * sb * self.in_width * split),
                ("scan_output", 2 * sb * self.inner * split),
                ("norm_rstd", 4 * sb * self.groups * split)]

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has Mamba-2 (state-space) layers",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under Megatron-LM's `mamba_layer_flops` (megatron/training/
        training.py at d98e8a64, called by hybrid_flops, the path of models with Mamba layers;
        the GPT path has no Mamba term): 2·d·(2·d_in + 2·G·N + H) for in_proj, 7·d_in·N for the
        scan and 2·d_in·d for out_proj, with d_in = 2·d as the code writes it (whatever H·P
        is) and H this model's heads (mamba_num_heads). MaxText has no Mamba."""
        if name != "megatron_lm_hybrid":
            return None
        d_in = 2 * d  # the code's d_in = 2 * hidden_size
        return Fraction(2 * d * (2 * d_in + 2 * self.groups * self.state + self.heads)
                        + 7 * d_in * self.state + 2 * d_in * d)

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        if name != "megatron_lm_hybrid":
            return []
        notes = ["Mamba-2 (mamba_layer_flops): in_proj, a 7·d_in·N scan and out_proj; no term "
                 "for the conv or the SSD's chunked matmuls (the code marks its scan estimate "
                 "as not yet updated for the SSD kernels)"]
        if self.inner != 2 * d:
            notes.append(f"Mamba-2: mamba_layer_flops takes d_in = 2·d = {2 * d:,} whatever the "
                         f"heads; this model's inner width H·P is {self.inner:,}")
        return notes

    def describe(self) -> str:
        return (f"Mamba-2 {self.heads}x{self.head_dim}, state {self.state}, "
                f"{self.groups} group{'s' if self.groups > 1 else ''}")

    def notes(self) -> list[str]:
        return ["Mamba-2: as the Hugging Face PyTorch path computes it (what FlopCounterMode "
                "counts): in_proj, the depthwise conv over L + K − 1 columns, the SSD as five "
                "batched matmuls on the sequence padded to a multiple of the chunk size (state/"
                "scan family; a sequence of one token costs a whole chunk), out_proj"]

    def decode_notes(self) -> list[str]:
        return ["Mamba-2 decodes by the recurrence: the projections and the conv on the new "
                "token, the state update h·exp(dt·A) + (dt·x)·B (3 FLOPs per state value) and "
                "the read-out C·h (2 per state value); per sequence it keeps the conv window "
                "(E + 2GN channels x K columns, as Hugging Face's cache holds it; engines keep "
                "K − 1) in the KV dtype and the H·P·N state in the state dtype"]


@dataclass(frozen=True)
class Mamba2Config:
    """`mamba2:` in a model file, Hugging Face's names where they have them."""

    n_heads: Annotated[int, Min(1)]
    head_dim: Annotated[int, Min(1)]
    d_state: Annotated[int, Min(1)]
    n_groups: Annotated[int, Min(1)] = 1
    d_conv: Annotated[int, Min(1)] = 4
    chunk_size: Annotated[int, Min(1)] = 256
    bias: bool = False  # in_proj (and out_proj unless out_bias says otherwise)
    out_bias: Optional[bool] = None
    conv_bias: bool = True
    gated_norm: bool = True  # the RMSNorm weight over E (Falcon-H1 may go without)


def build(cfg: Any, name: str) -> Mamba2:
    m = cfg.mamba2
    if m is None:
        raise ValueError("mamba2 layers need a mamba2 block (n_heads, head_dim, d_state, ...)")
    return Mamba2(heads=m.n_heads, head_dim=m.head_dim, state=m.d_state, groups=m.n_groups,
                  conv=m.d_conv, chunk=m.chunk_size, in_bias=m.bias,
                  out_bias=m.bias if m.out_bias is None else m.out_bias, conv_bias=m.conv_bias,
                  gated_norm=m.gated_norm, multipliers=scales(cfg, "mamba2"))


REGISTER = Entry(layer_types=("mamba2",), build=build, blocks=(("mamba2", Mamba2Config),))
