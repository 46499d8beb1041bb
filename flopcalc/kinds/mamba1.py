"""Mamba-1, the selective state-space layer (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling
with Selective State Spaces", arXiv:2312.00752), as a token mixer: Mamba itself, Falcon-Mamba and
the Mamba layers of Jamba.

Tensors (Hugging Face's `MambaMixer`, transformers 5.24 `models/mamba/modeling_mamba.py`; the
same in `FalconMambaMixer` and `JambaMambaMixer`), with E inner channels, a state of N per
channel, a conv of K taps and a dt rank R:
in_proj d → 2E (x and the gate z), a depthwise conv1d over the E channels of x, x_proj E → R + 2N
(dt, B, C; no bias), dt_proj R → E (always with its bias), `A_log` (E·N) and `D` (E), and
out_proj E → d; in_proj and out_proj carry biases only with `use_bias`. Jamba normalises dt, B and
C with three weighted RMSNorms (R + 2N parameters); Falcon-Mamba with weightless ones (buffers,
no parameters). Under tensor parallelism the channels split (vLLM's and Megatron-based
MambaMixers): in_proj, the conv, dt_proj, A_log and D by column, x_proj and out_proj by row
(x_proj's small output, R + 2N, is all-reduced and replicated).

Forward FLOPs as the Hugging Face PyTorch path (`mamba_selective_scan`, run without the mamba_ssm
kernels) computes them, which is what FlopCounterMode counts:
- in_proj (T×d)·(d×2E), x_proj (T×E)·(E×(R+2N)), dt_proj (run as weight @ dt, (E×R)·(R×T))
  and out_proj (T×E)·(E×d): `weights`;
- the conv, padding K − 1 on both sides: 2·B·E·K·(L+K−1) (its K − 1 extra output columns are
  computed and dropped): `weights`;
- the scan's read-out y = C·h, one batched (B, E, N)·(B, N, 1) matmul per step: 2·T·E·N
  (`scan`). The discretisation exp(dt·A), dt·B·x and the recurrence h ← dA·h + dBx are
  element-wise (6·T·E·N, counted with --elementwise).
A decode step runs the recurrence on the new token (mamba_ssm's `selective_state_update`): the
projections, the conv (2·B·E·K: K multiply-adds per channel), the decay exp(dt·A) (2 per state
value: A is per channel and state), the update h·dA + (dt·x)·B (3 per state value) and the
read-out C·h (2 per state value), all three `scan`. The state kept per sequence: the conv window,
E channels by K columns in the cache dtype (Hugging Face's cache holds K columns; engines keep
K − 1), and the SSM state, E·N values, which Hugging Face keeps in fp32.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Annotated, Any, Literal, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, SCAN, WEIGHTS, Cache,
                   EngineCache, EngineState, Keeping, Kind, Part, Published, Span, State, gemm,
                   cdiv, linear)
from .registry import Entry

SOFTPLUS = 3  # exp, log1p and the threshold compare
SILU = 4  # x / (1 + exp(−x)): negate, exp, add, divide
SCAN_CHUNK = 2048  # mamba_ssm's selective-scan forward keeps one state per 2,048 tokens
DT_NORMS = ("none", "weighted", "weightless")


@dataclass(frozen=True)
class Mamba1(Kind):
    """One Mamba-1 mixer: `inner` channels (E), a state of `state` per channel (N), a conv of
    `conv` taps (K), dt of rank `dt_rank` (R). `bias`: in_proj and out_proj biases; `dt_norms`:
    the RMSNorms of dt, B and C (`weighted`: Jamba, `weightless`: Falcon-Mamba)."""

    inner: int
    state: int
    conv: int
    dt_rank: int
    bias: bool = False
    conv_bias: bool = True
    dt_norms: str = "none"
    slot = "mamba"
    # Not a chunked scan: Hugging Face's selective scan already steps token by token over the
    # real tokens (no chunks, no padding), so --scan recurrent leaves its forward as it is (its
    # read-out matmul `scan`, the discretisation and update element-wise, as FlopCounterMode
    # sees them).
    chunked_scan = False

    def __post_init__(self) -> None:
        if self.dt_norms not in DT_NORMS:
            raise ValueError(f"mamba1.dt_norms is one of {', '.join(DT_NORMS)}, got "
                             f"{self.dt_norms!r}")

    @property
    def x_width(self) -> int:
        """R + 2N: x_proj's outputs dt, B and C."""
        return self.dt_rank + 2 * self.state

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        E, N, K, R = self.inner, self.state, self.conv, self.dt_rank
        parts = linear("in_proj", d, 2 * E, self.bias)  # (d, 2E): x and z
        parts.append(Part("conv.weight", E * K, LAYERS, (E, 1, K), COLUMN, matmul=True,
                          module="conv"))
        if self.conv_bias:
            parts.append(Part("conv.bias", E, LAYERS, (E,), COLUMN, module="conv"))
        parts += linear("x_proj", E, self.x_width, False, ROW)  # (E, R+2N): dt, B, C
        parts += linear("dt_proj", R, E, True)  # (R, E), its bias always
        parts += [Part("A_log", E * N, LAYERS, (E, N), COLUMN, module=""),  # the mixer's own
                  Part("D", E, LAYERS, (E,), COLUMN, module="")]
        if self.dt_norms == "weighted":  # Jamba: RMSNorm gains over dt (R), B (N) and C (N)
            parts += [Part("dt_norm.weight", R, LAYERS, (R,), REPLICATED),
                      Part("b_norm.weight", N, LAYERS, (N,), REPLICATED),
                      Part("c_norm.weight", N, LAYERS, (N,), REPLICATED)]
        return parts + linear("out_proj", E, d, self.bias, ROW)

    # -------------------------------------------------------------------------------- FLOPs

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T = x.batch, x.n, x.tokens
        E, N, K, R = self.inner, self.state, self.conv, self.dt_rank
        return [
            gemm("in_proj", T, d, 2 * E),  # (T×d)·(d×2E)
            # depthwise, padding K−1: L+K−1 output columns of K taps per channel
            Part("conv", 2 * b * E * K * (n + K - 1), WEIGHTS),
            gemm("x_proj", T, E, self.x_width, ROW),  # (T×E)·(E×(R+2N))
            gemm("dt_proj", T, R, E),  # (E×R)·(R×T): weight @ dt
            Part("scan.readout", 2 * T * E * N, SCAN),  # per step (B,E,N)·(B,N,1)
            gemm("out_proj", T, E, d, ROW),  # (T×E)·(E×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The recurrence, one token per sequence and step: the same for every position."""
        t = batch * (last - first + 1)
        E, R = self.inner, self.dt_rank
        values = E * self.state  # the state, E·N
        return [
            gemm("in_proj", t, d, 2 * E),
            Part("conv", 2 * t * E * self.conv, WEIGHTS),  # K taps per channel
            gemm("x_proj", t, E, self.x_width, ROW),
            gemm("dt_proj", t, R, E),
            Part("scan.decay", 2 * t * values, SCAN),  # exp(dt·A): A is (E, N)
            Part("scan.update", 3 * t * values, SCAN),  # h·dA + (dt·x)·B
            Part("scan.readout", 2 * t * values, SCAN),  # y = C·h: N multiply-adds a channel
            gemm("out_proj", t, E, d, ROW),
        ]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The Hugging Face path's element-wise work, op by op (1 per add, multiply, exp; SiLU 4;
        softplus 3; each RMSNorm of dt, B and C: square, mean, scale (and gain) per element, eps
        and rsqrt per row)."""
        b, n, T = x.batch, x.n, x.tokens
        E, N, K = self.inner, self.state, self.conv
        # SiLU on the L kept conv columns; the conv bias on all L + K − 1 it computes.
        conv = SILU * b * E * n + (b * E * (n + K - 1) if self.conv_bias else 0)
        # A = −exp(A_log) (2 per state value, once a forward); dt + dt_proj.bias and softplus
        # (4 per channel and token); dt·A and its exp, dt·B and its product with x (4 per state
        # value and token).
        discretize = 2 * E * N + 4 * T * E + 4 * T * E * N
        recurrence = 2 * T * E * N  # h = dA·h + dBx
        output = 7 * T * E  # y + D·x (2), y·SiLU(z) (5)
        parts = [Part("elementwise.conv", conv, ELEMENTWISE)]
        if self.dt_norms != "none":
            per = 4 if self.dt_norms == "weighted" else 3
            parts.append(Part("elementwise.dt_norms", T * (per * self.x_width + 3 * 2),
                              ELEMENTWISE))
        parts += [Part("elementwise.discretize", discretize, ELEMENTWISE),
                  Part("elementwise.recurrence", recurrence, ELEMENTWISE),
                  Part("elementwise.output", output, ELEMENTWISE)]
        if self.bias:  # in_proj (2E) and out_proj (d) biases
            parts.append(Part("elementwise.bias", T * (2 * E + d), ELEMENTWISE))
        return parts

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="mamba1", states=(
            State("conv_state", self.inner * self.conv, "cache"),
            State("ssm_state", self.inner * self.state, "state")))

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """vLLM's MambaSpec on one of `tp` ranks (`model_executor/layers/mamba/mamba_utils.py`
        mamba1_state_shape): the conv window, K − 1 rows of E/tp channels, in the conv dtype,
        and the SSM state (E/tp, N) in the state dtype. Unlike Mamba-2's, the conv window does
        not grow with speculative tokens, and vLLM's Mamba-1 mixer declares no prefill
        checkpoint (`get_prefill_checkpoint_alignment` is None), so prefix caching's align mode
        keeps no extra block for it."""
        if self.inner % tp:
            raise ValueError(f"tensor parallelism {tp} must divide the {self.inner} Mamba-1 "
                             "channels")
        channels = self.inner // tp
        return (EngineCache("state", states=(
            EngineState("conv", (self.conv - 1) * channels, "conv"),
            EngineState("ssm", channels * self.state, "state"))),)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What the fused Mamba-1 kernel keeps for backward besides the block's input
        (state-spaces/mamba, mamba_ssm/ops/selective_scan_interface.py, `MambaInnerFn` at its
        default checkpoint_lvl=1, which recomputes the conv output and dt in backward): the
        in_proj output xz (2E), x_proj's output x_dbl (R + 2N), contiguous copies of B and C
        (2N), the scan output before its gate (E), all 16-bit, and the scan's fp32 states at the
        end of each 2,048-token chunk, 2N values per channel (selective_scan.cpp:
        (batch, E, ⌈L/2048⌉, 2N)). The channel tensors split over tensor parallelism; x_dbl, B
        and C are all-reduced and replicated. Versions with Falcon-Mamba's dt/B/C norms save the
        same tensors (B and C normalised)."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        E, N = self.inner, self.state
        chunks = ceil(Fraction(k.seq, SCAN_CHUNK))
        return [("in_proj_output", 2 * sb * 2 * E * split),
                ("x_proj_output", Fraction(2 * sb * self.x_width)),
                ("scan_b_c", Fraction(2 * sb * 2 * N)),
                ("scan_output", 2 * sb * E * split),
                ("scan_states", 4 * k.batch * E * chunks * 2 * N * split)]

    def tp_units(self) -> int:
        return self.inner

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has Mamba-1 (selective state-space) "
            "layers",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """None for every published formula. Megatron-LM's `mamba_layer_flops`
        (megatron/training/training.py, `num_floating_point_operations`) counts the Mamba-2
        layer its hybrid models build (megatron/core/ssm/mamba_mixer.py): an in_proj of width
        2·d_in + 2·G·N + H (z, x, B, C and dt per head) and a 7·d_in·N scan. A Mamba-1 layer has
        no such in_proj (its dt, B and C come from x_proj E → R + 2N and dt_proj R → E), and
        Megatron-LM cannot build one, so its formula has no term for it; MaxText has no Mamba
        at all."""
        return None

    def describe(self) -> str:
        norms = {"none": "", "weighted": ", dt/B/C norms",
                 "weightless": ", weightless dt/B/C norms"}[self.dt_norms]
        return f"Mamba-1 {self.inner} channels, state {self.state}, dt rank {self.dt_rank}{norms}"

    def notes(self) -> list[str]:
        return ["Mamba-1: as the Hugging Face PyTorch path computes it (what FlopCounterMode "
                "counts): in_proj, the depthwise conv over L + K − 1 columns, x_proj, dt_proj, "
                "the scan's read-out C·h as one batched matmul per step (2·E·N per token, state/"
                "scan family), out_proj; the discretisation and the recurrence h = exp(dt·A)·h "
                "+ dt·B·x are element-wise (6·E·N per token, with --elementwise)"]

    def decode_notes(self) -> list[str]:
        return ["Mamba-1 decodes by the recurrence: the projections and the conv on the new "
                "token, the decay exp(dt·A) (2 FLOPs per state value), the update h·dA + "
                "(dt·x)·B (3) and the read-out C·h (2); per sequence it keeps the conv window "
                "(E channels x K columns, as Hugging Face's cache holds it; engines keep K − 1) "
                "in the KV dtype and the E·N state in the state dtype"]


@dataclass(frozen=True)
class Mamba1Config:
    """`mamba1:` in a model file (Hugging Face's MambaConfig, with Jamba's names in comments)."""

    d_inner: Optional[Annotated[int, Min(1)]] = None  # intermediate_size; default expand·d_model
    expand: Annotated[int, Min(1)] = 2  # expand / mamba_expand
    d_state: Annotated[int, Min(1)] = 16  # state_size / mamba_d_state
    d_conv: Annotated[int, Min(1)] = 4  # conv_kernel / mamba_d_conv
    dt_rank: Optional[Annotated[int, Min(1)]] = None  # time_step_rank; default ⌈d_model/16⌉
    bias: bool = False  # in_proj and out_proj (use_bias / mamba_proj_bias)
    conv_bias: bool = True  # use_conv_bias / mamba_conv_bias
    dt_norms: Literal["none", "weighted", "weightless"] = "none"  # Jamba / Falcon-Mamba


def build(cfg: Any, name: str) -> Mamba1:
    m = cfg.mamba1 or Mamba1Config()
    d = cfg.d_model
    return Mamba1(inner=m.d_inner or m.expand * d, state=m.d_state, conv=m.d_conv,
                  dt_rank=m.dt_rank or cdiv(d, 16), bias=m.bias, conv_bias=m.conv_bias,
                  dt_norms=m.dt_norms)


REGISTER = Entry(layer_types=("mamba1",), build=build, blocks=(("mamba1", Mamba1Config),))
