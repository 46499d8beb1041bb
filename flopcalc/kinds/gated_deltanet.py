"""Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with
Delta Rule", arXiv:2412.06464) as the token mixer of Qwen3-Next and Qwen3.5's linear-attention
layers.

Tensors (Hugging Face's `Qwen3NextGatedDeltaNet`, transformers 5.24
`models/qwen3_next/modeling_qwen3_next.py`; Qwen3.5's `Qwen3_5GatedDeltaNet` splits the same
rows over four projections), with H_k key heads of d_k and H_v value heads of d_v (H_k divides
H_v) and a conv of K taps: in_proj_qkvz d → [q, k: H_k·d_k each | v, z: H_v·d_v each],
in_proj_ba d → [b, a: H_v each], a depthwise conv1d without bias over the C = 2·H_k·d_k + H_v·d_v
channels of q, k and v, `dt_bias` and `A_log` (H_v each), a gated RMSNorm whose d_v gain every
head shares, and out_proj H_v·d_v → d. Under tensor parallelism everything but out_proj and the
shared norm gain splits by heads (Megatron-LM's GatedDeltaNet); out_proj is row-parallel.

Forward FLOPs as the Hugging Face PyTorch path (`torch_chunk_gated_delta_rule`, run without the
fla kernels) computes them, which is what FlopCounterMode counts:
- in_proj_qkvz (T×d)·(d×(2H_k·d_k + 2H_v·d_v)), in_proj_ba (T×d)·(d×2H_v) and out_proj
  (T×H_v·d_v)·(H_v·d_v×d): `weights`;
- the conv, padding K − 1 on both sides: 2·B·C·K·(L+K−1) (its K − 1 extra output columns are
  computed and dropped): `weights`;
- the chunked delta rule (`scan`), with L zero-padded to Lp = nc·Q (nc = ⌈L/Q⌉ chunks of Q = 64)
  and q, k repeated from the H_k key heads to the H_v value heads first, per value head: within
  each chunk k_β·kᵀ and q·kᵀ, (Q×d_k)·(d_k×Q) each; then chunk by chunk k_cumdecay·S and q·S,
  (Q×d_k)·(d_k×d_v) each, the intra-chunk attn·v_new (Q×Q)·(Q×d_v) and the state update
  kᵀ·v_new (d_k×Q)·(Q×d_v). Together 2·B·H_v·Lp·(2·Q·d_k + 3·d_k·d_v + Q·d_v).
- the UT transform's two unit-lower-triangular solves (`torch.linalg.solve_triangular`, right-hand
  sides of d_v and d_k columns) are no FLOPs to FlopCounterMode, so by default (`solve:
  uncounted`) they count 0; their forward substitution really costs Q·(Q−1)/2 multiply-adds
  per column and chunk, B·H_v·nc·Q·(Q−1)·(d_k + d_v) FLOPs (`solve: substitution`), and the
  inverse applied as two dense (Q×Q)·(Q×d) products, as the `torch.export` path of the same
  function (and fla's `recompute_w_u`) runs them, 2·B·H_v·Lp·Q·(d_k + d_v) (`solve: matmul`).
A decode step runs the recurrence (`torch_recurrent_gated_delta_rule`) instead: the projections
and the conv on the new token (2·B·C·K: K multiply-adds per channel), and per state value the
decay S·exp(g) (1), the read-out Sᵀk (2), the update S + k⊗δ (2) and the output Sᵀq (2), with
δ = β·(v − Sᵀk) (2 per value channel), all `scan` (Hugging Face computes them element-wise, so
FlopCounterMode counts none of them). The state kept per sequence: the conv window, C channels
by K columns in the cache dtype (Hugging Face's cache holds K columns; engines keep K − 1), and
the recurrent state, H_v·d_k·d_v values, which Hugging Face keeps in fp32 whatever the model's
dtype.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Annotated, Any, Literal, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, SCAN, WEIGHTS, Cache, Keeping,
                   Kind, Part, Published, Span, State, gemm, linear)
from .registry import Entry

SIGMOID = 4  # negate, exp, add, divide
SILU = 4  # x / (1 + exp(−x))
SOFTPLUS = 3  # exp, log1p and the threshold compare
SOLVES = ("uncounted", "substitution", "matmul")


@dataclass(frozen=True)
class GatedDeltaNet(Kind):
    """One gated DeltaNet mixer: `key_heads` query/key heads of `key_dim`, `value_heads` value
    heads of `value_dim`, a conv of `conv` taps, chunks of `chunk`; `solve` says how the UT
    transform's triangular solves count (see the module's docstring)."""

    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int
    conv: int = 4
    chunk: int = 64
    solve: str = "uncounted"
    slot = "gdn"
    chunked_scan = True

    def __post_init__(self) -> None:
        if self.value_heads % self.key_heads:
            raise ValueError(f"gated_deltanet.n_key_heads={self.key_heads} must divide "
                             f"gated_deltanet.n_value_heads={self.value_heads} (queries and keys "
                             "are repeated to the value heads)")
        if self.solve not in SOLVES:
            raise ValueError(f"gated_deltanet.solve is one of {', '.join(SOLVES)}, got "
                             f"{self.solve!r}")

    # ------------------------------------------------------------------------------- widths

    @property
    def qk_width(self) -> int:
        """H_k·d_k: the width of q, and of k."""
        return self.key_heads * self.key_dim

    @property
    def v_width(self) -> int:
        """H_v·d_v: the width of v, of the output gate z and of the core's output."""
        return self.value_heads * self.value_dim

    @property
    def conv_channels(self) -> int:
        """2·H_k·d_k + H_v·d_v: q, k and v go through the conv."""
        return 2 * self.qk_width + self.v_width

    @property
    def qkvz_width(self) -> int:
        return 2 * self.qk_width + 2 * self.v_width

    @property
    def state_values(self) -> int:
        """H_v·d_k·d_v: the recurrent state of one sequence."""
        return self.value_heads * self.key_dim * self.value_dim

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        H, C, K = self.value_heads, self.conv_channels, self.conv
        parts = linear("in_proj_qkvz", d, self.qkvz_width, False)
        parts += linear("in_proj_ba", d, 2 * H, False)
        parts.append(Part("conv.weight", C * K, LAYERS, (C, 1, K), COLUMN, matmul=True))
        parts += [Part(name, H, LAYERS, (H,), COLUMN, module="")  # the mixer's own
                  for name in ("dt_bias", "A_log")]
        parts.append(Part("norm.weight", self.value_dim, LAYERS, (self.value_dim,), REPLICATED))
        return parts + linear("out_proj", self.v_width, d, False, ROW)

    def count_period(self) -> int:
        """Its chunked core pads the length to a whole number of chunks: one polynomial in the
        length on each block of `chunk` lengths."""
        return self.chunk

    # -------------------------------------------------------------------------------- FLOPs

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T = x.batch, x.n, x.tokens
        H, dk, dv, Q, K = self.value_heads, self.key_dim, self.value_dim, self.chunk, self.conv
        nc = ceil(Fraction(n, Q))
        rows = b * H * nc * Q  # B·H_v·Lp: every (sequence, value head, padded position)
        parts = [
            gemm("in_proj_qkvz", T, d, self.qkvz_width),  # (T×d)·(d×(2Hk·dk+2Hv·dv))
            gemm("in_proj_ba", T, d, 2 * H),  # (T×d)·(d×2Hv)
            # depthwise, padding K−1: L+K−1 output columns of K taps per channel
            Part("conv", 2 * b * self.conv_channels * K * (n + K - 1), WEIGHTS),
        ]
        if x.scan == "recurrent":  # the decode step's core on every token, no padding
            return parts + self._recurrence(T) + [gemm("out_proj", T, self.v_width, d, ROW)]
        parts += [
            Part("scan.kkt", 2 * rows * Q * dk, SCAN),  # k_β·kᵀ: (Q×dk)·(dk×Q) per chunk
            Part("scan.qkt", 2 * rows * Q * dk, SCAN),  # q·kᵀ: (Q×dk)·(dk×Q) per chunk
        ]
        if self.solve == "substitution":
            # forward substitution with a unit diagonal: Q(Q−1)/2 multiply-adds per column
            parts.append(Part("scan.solve", b * H * nc * Q * (Q - 1) * (dk + dv), SCAN))
        elif self.solve == "matmul":
            # the inverse times v_β and k_β·e^g: (Q×Q)·(Q×dv) and (Q×Q)·(Q×dk) per chunk
            parts.append(Part("scan.solve", 2 * rows * Q * (dk + dv), SCAN))
        return parts + [
            Part("scan.state_k", 2 * rows * dk * dv, SCAN),  # k_cumdecay·S: (Q×dk)·(dk×dv)
            Part("scan.state_q", 2 * rows * dk * dv, SCAN),  # q·S: (Q×dk)·(dk×dv)
            Part("scan.intra_v", 2 * rows * Q * dv, SCAN),  # attn·v_new: (Q×Q)·(Q×dv)
            Part("scan.state_update", 2 * rows * dk * dv, SCAN),  # kᵀ·v_new: (dk×Q)·(Q×dv)
            gemm("out_proj", T, self.v_width, d, ROW),  # (T×Hv·dv)·(Hv·dv×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The recurrence, one token per sequence and step: the same for every position."""
        t = batch * (last - first + 1)
        return [
            gemm("in_proj_qkvz", t, d, self.qkvz_width),
            gemm("in_proj_ba", t, d, 2 * self.value_heads),
            Part("conv", 2 * t * self.conv_channels * self.conv, WEIGHTS),  # K taps per channel
            *self._recurrence(t),
            gemm("out_proj", t, self.v_width, d, ROW),
        ]

    def _recurrence(self, t: int) -> list[Part]:
        """The delta rule's recurrence on `t` tokens (a decode step's, or the whole forward's
        under --scan recurrent)."""
        S = self.state_values
        return [
            Part("scan.decay", t * S, SCAN),  # S·exp(g)
            Part("scan.retrieve", 2 * t * S, SCAN),  # Sᵀk: dk multiply-adds per value channel
            Part("scan.delta", 2 * t * self.v_width, SCAN),  # δ = β·(v − Sᵀk)
            Part("scan.update", 2 * t * S, SCAN),  # S + k⊗δ
            Part("scan.readout", 2 * t * S, SCAN),  # Sᵀq
        ]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The Hugging Face path's element-wise work, op by op (1 per add, multiply, divide,
        exp, compare, cumsum element and summed element; sigmoid 4, SiLU 4, softplus 3), on the
        padded length and the value heads where it runs there."""
        b, n, T = x.batch, x.n, x.tokens
        H, dk, dv, Q = self.value_heads, self.key_dim, self.value_dim, self.chunk
        nc = ceil(Fraction(n, Q))
        rows = b * H * nc * Q  # padded (sequence, value head, position) rows
        chunks = b * H * nc
        conv = SILU * b * self.conv_channels * n  # SiLU on the kept conv outputs
        # β = sigmoid(b); A = −exp(A_log) (2 per head); a + dt_bias, softplus, ·A per token and
        # head.
        gates = SIGMOID * T * H + 2 * H + (1 + SOFTPLUS + 1) * T * H
        # l2-norms of q and k on the value heads (square, sum, scale per element; eps and rsqrt
        # per row), q·dk^−½.
        qk_norm = 2 * (3 * T * H * dk + 2 * T * H) + T * H * dk
        # v·β and k·β; the cumsum of g; per chunk the pairwise decays exp(g_i − g_j) and their
        # products with k_β·kᵀ and q·kᵀ (4 per Q² entry); k_β·e^g, q·e^g (an exp and a
        # multiply), k·e^(g_last − g) (a subtract, an exp and a multiply); e^(g_last) per chunk.
        decay = (rows * (dv + dk) + rows + 4 * chunks * Q * Q + 2 * rows * (1 + dk)
                 + rows * (2 + dk) + chunks)
        # chunk by chunk: v − k_cumdecay·S and inter + intra (per value element), S·e^(g_last)
        # and S + kᵀ·v_new (per state value).
        scan = 2 * rows * dv + 2 * chunks * dk * dv
        # RMSNorm over d_v per head (square, mean, scale, gain; eps and rsqrt per row), SiLU(z),
        # the product.
        norm = 9 * T * self.v_width + 2 * T * H
        if x.scan == "recurrent":
            # token by token (torch_recurrent_gated_delta_rule): exp(g) per token and head; the
            # decay, the β-scaled delta and the state's products and adds are the core's.
            return [Part("elementwise.conv", conv, ELEMENTWISE),
                    Part("elementwise.gates", gates, ELEMENTWISE),
                    Part("elementwise.qk_norm", qk_norm, ELEMENTWISE),
                    Part("elementwise.decay", T * H, ELEMENTWISE),
                    Part("elementwise.gated_norm", norm, ELEMENTWISE)]
        return [Part("elementwise.conv", conv, ELEMENTWISE),
                Part("elementwise.gates", gates, ELEMENTWISE),
                Part("elementwise.qk_norm", qk_norm, ELEMENTWISE),
                Part("elementwise.decay", decay, ELEMENTWISE),
                Part("elementwise.scan", scan, ELEMENTWISE),
                Part("elementwise.gated_norm", norm, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="gated_deltanet", states=(
            State("conv_state", self.conv_channels * self.conv, "cache"),
            State("recurrent_state", self.state_values, "state")))

    def engine_cache(self, tp: int = 1) -> tuple[Any, ...]:
        """vLLM's MambaSpec for the layer on one of `tp` ranks (`mamba_utils.py`
        gated_delta_net_state_shape): the conv window, K − 1 rows (+1 per speculative token) of
        (2H_k·d_k + H_v·d_v)/tp channels, in the conv dtype; the recurrent state (H_v/tp, d_v,
        d_k) in the state dtype. FlashInfer's GDN prefill (vLLM's choice on SM90) keeps one
        prefill checkpoint block more in prefix caching's align mode, on blocks a multiple of
        64 (`qwen_gdn_linear_attn.py:689-760`); the Triton prefill keeps none."""
        from .base import EngineCache, EngineState  # the serving-engine seam

        if self.key_heads % tp:
            raise ValueError(f"tensor parallelism {tp} must divide the {self.key_heads} gated "
                             "DeltaNet key heads")
        channels = self.conv_channels // tp
        return (EngineCache("state", states=(
            EngineState("conv", (self.conv - 1) * channels, "conv", channels),
            EngineState("ssm", self.state_values // tp, "state")),
            checkpoint_blocks=1, checkpoint_alignment=64, checkpoint_kernel="flashinfer"),)

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What training keeps for backward besides the block's input: fla's chunked kernel
        (`ChunkGatedDeltaRuleFunction`, fla-org/flash-linear-attention
        `fla/ops/gated_delta_rule/chunk.py`, with the l2-norms in the kernel as Qwen3-Next
        calls it) saves q and k normalised on the value heads, their fp32 1/‖·‖ per row, v, the
        fp32 cumulative gate g, β and the per-chunk inverse A (Q values per row); around it the
        layer keeps its projections' output (the conv's input, the gate z, b and a; the conv
        recomputes its SiLU), the core's output (the gated norm's input), the norm's fp32 1/rms
        per head and out_proj's input. 16-bit unless said, split over the tensor-parallel
        heads."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        H = self.value_heads
        return [("in_proj_output", 2 * sb * (self.qkvz_width + 2 * H) * split),
                ("qk", 2 * sb * 2 * H * self.key_dim * split),
                ("qk_rstd", 4 * sb * 2 * H * split),
                ("v", 2 * sb * self.v_width * split),
                ("g", 4 * sb * H * split),
                ("beta", 2 * sb * H * split),
                ("ut_inverse", 2 * sb * H * self.chunk * split),
                ("core_output", 2 * sb * self.v_width * split),
                ("norm_rstd", 4 * sb * H * split),
                ("out_proj_input", 2 * sb * self.v_width * split)]

    def tp_units(self) -> int:
        """Tensor parallelism splits whole heads: it must divide the key heads (which divide
        the value heads)."""
        return self.key_heads

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has gated DeltaNet (linear-attention) "
            "layers",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under Megatron-LM's and MaxText's gated DeltaNet terms
        (their training totals divided by 3). Megatron-LM (`megatron/training/training.py` at
        d98e8a64, transformer_flops' linear-attention branch and hybrid_flops'
        gdn_layer_flops): 2·[d·(2H_k·d_k + 2H_v·d_v + 2H_v) + K·(2H_k·d_k + H_v·d_v) +
        4·H_v·d_v² + d·H_v·d_v], its core 8·H_v·d_v² as the code writes it (v_head_dim ** 2).
        MaxText (`src/maxtext/utils/maxtext_utils.py` at e591f30c,
        `calculate_gated_delta_net_flops_per_device`): the same projections and conv, core
        8·H_v·d_k·d_v. Neither depends on s."""
        proj = 2 * d * (self.qkvz_width + 2 * self.value_heads) + 2 * self.v_width * d
        conv = 2 * self.conv * self.conv_channels
        if name in ("megatron_lm", "megatron_lm_hybrid"):  # gdn_layer_flops: the same terms
            return Fraction(proj + conv + 8 * self.value_heads * self.value_dim ** 2)
        if name == "maxtext":
            return Fraction(proj + conv + 8 * self.state_values)
        return None

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        if name not in ("megatron_lm", "megatron_lm_hybrid", "maxtext"):
            return []
        notes = ["gated DeltaNet: the core counted as four state-sized products per token "
                 "(KKᵀ, VKᵀ, S(a(I − bKKᵀ)), SQ): no chunk-size term"]
        if name != "maxtext" and self.key_dim != self.value_dim:
            notes.append(f"gated DeltaNet: Megatron-LM writes the core 8·H_v·d_v² (v_head_dim "
                         f"** 2); this model's d_k = {self.key_dim:,}, d_v = {self.value_dim:,}")
        return notes

    def describe(self) -> str:
        return (f"gated DeltaNet {self.key_heads}x{self.key_dim} q/k, "
                f"{self.value_heads}x{self.value_dim} v")

    def notes(self) -> list[str]:
        H, dk, dv, Q = self.value_heads, self.key_dim, self.value_dim, self.chunk
        solve = {"uncounted": "not counted (FlopCounterMode has no formula for "
                              "torch.linalg.solve_triangular); counted by forward substitution "
                              f"they would add B·H_v·⌈L/{Q}⌉·{Q}·{Q - 1}·(d_k + d_v) = "
                              f"{H * Q * (Q - 1) * (dk + dv):,} FLOPs per layer, chunk and "
                              "sequence (gated_deltanet.solve: substitution; matmul for the "
                              "inverse applied as two dense products)",
                 "substitution": "counted as forward substitution, Q(Q−1)/2 multiply-adds per "
                                 "column and chunk (FlopCounterMode counts 0 for them)",
                 "matmul": "counted as the inverse applied by two dense (Q×Q)·(Q×d) products, "
                           "as the torch.export path and fla run them (FlopCounterMode counts 0 "
                           "for HF's solve_triangular)"}[self.solve]
        return ["gated DeltaNet: as the Hugging Face PyTorch path computes it (what "
                "FlopCounterMode counts): in_proj_qkvz, in_proj_ba, the depthwise conv over "
                "L + K − 1 columns, the chunked delta rule with q and k repeated to the "
                f"{H} value heads on the sequence padded to a multiple of {Q} (state/scan "
                "family; a sequence of one token costs a whole chunk), out_proj; the UT "
                "transform's two triangular solves " + solve]

    def decode_notes(self) -> list[str]:
        return ["gated DeltaNet decodes by the recurrence: the projections and the conv on the "
                "new token, the decay, read-out, delta update and output of the state (7 FLOPs "
                "per state value, 2 per value channel for δ = β·(v − Sᵀk)); per sequence it "
                "keeps the conv window (2H_k·d_k + H_v·d_v channels x K columns, as Hugging "
                "Face's cache holds it) in the KV dtype and the H_v·d_k·d_v state in the state "
                "dtype"]


@dataclass(frozen=True)
class GatedDeltaNetConfig:
    """`gated_deltanet:` in a model file (Hugging Face's linear_num_key_heads,
    linear_num_value_heads, linear_key_head_dim, linear_value_head_dim,
    linear_conv_kernel_dim; the chunk size is fixed at 64 there)."""

    n_key_heads: Annotated[int, Min(1)]
    n_value_heads: Annotated[int, Min(1)]
    key_head_dim: Annotated[int, Min(1)]
    value_head_dim: Annotated[int, Min(1)]
    d_conv: Annotated[int, Min(1)] = 4
    chunk_size: Annotated[int, Min(1)] = 64
    solve: Literal["uncounted", "substitution", "matmul"] = "uncounted"


def build(cfg: Any, name: str) -> GatedDeltaNet:
    g = cfg.gated_deltanet
    if g is None:
        raise ValueError("gdn layers need a gated_deltanet block (n_key_heads, n_value_heads, "
                         "key_head_dim, value_head_dim, ...)")
    return GatedDeltaNet(key_heads=g.n_key_heads, value_heads=g.n_value_heads,
                         key_dim=g.key_head_dim, value_dim=g.value_head_dim, conv=g.d_conv,
                         chunk=g.chunk_size, solve=g.solve)


REGISTER = Entry(layer_types=("gdn",), build=build,
                 blocks=(("gated_deltanet", GatedDeltaNetConfig),))
