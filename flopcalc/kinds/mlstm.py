"""The mLSTM, xLSTM's matrix-memory recurrence (Beck et al. 2024, "xLSTM: Extended Long
Short-Term Memory", arXiv:2405.04517; Beck et al. 2025, "xLSTM 7B: A Recurrent LLM for Fast and
Efficient Inference", arXiv:2503.13427), as a token mixer: the mLSTM layer of an xLSTM block.

Tensors (Hugging Face's `xLSTMLayer`, transformers 5.24 `models/xlstm/modeling_xlstm.py`), with
H heads, queries and keys Q = int(qk_dim_factor·d) wide (H heads of d_k = Q/H) and values
V = int(v_dim_factor·d) wide (d_v = V/H): q, k d → Q, v d → V and the output gate d → V
(`use_bias` biases on each), the input and forget gates d → H each (always with biases), a
per-head LayerNorm over the values (a gain of V, and a bias with `use_bias`), out_proj V → d
(`use_bias`). The fused weight mode holds the same numbers in two tensors.

Forward FLOPs as the native PyTorch path of `xLSTMBackend` in its default "inference" mode
computes them (`wrap_chunkwise_arbitrary_sequence_length`; the xlstm package's kernels not
installed), which is what FlopCounterMode counts. For a sequence of n tokens the first
⌊n/C⌋·C run chunkwise (C = chunk_size, 64) and the other n mod C token by token; n = 1 is one
step:
- the projections (T×d)·(d×Q) twice, (T×d)·(d×V) twice, (T×d)·(d×H) twice and (T×V)·(V×d):
  `weights`;
- per chunk and head (`scan`): the state update Kᵀ·V (d_k×C)·(C×d_v); the intra-chunk scores
  Q·Kᵀ (C×d_k)·(d_k×C) and their product with V (C×C)·(C×d_v); the inter-chunk reads of the
  state Q·C (C×d_k)·(d_k×d_v) and of the normaliser Q·n (C×d_k)·(d_k×1):
  per chunked token and head 4·d_k·d_v + 2·C·(d_k + d_v) + 2·d_k;
- per recurrent token and head (`scan`): the outer product k·vᵀ, (d_k×1)·(1×d_v), the read-out
  q·C (1×d_k)·(d_k×d_v) and q·n (1×d_k)·(d_k×1): 4·d_k·d_v + 2·d_k. A decode step is one.
Per sequence the layer keeps the H·d_k·d_v matrix memory, the H·d_k normaliser and H
stabilisers, in the state dtype (fp32 in Hugging Face: `inference_state_dtype`).

Element-wise work (--elementwise) is estimated, not counted op by op: the gates' soft caps and
log-sigmoids, the stabilised decay matrix of each chunk (7 per entry of its C×C blocks), the
scaled and gated queries, the state's decay, the normaliser, the division and the per-head
LayerNorm and output gate."""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, ROW, SCAN, Cache, Keeping, Kind,
                   Part, Published, Span, State, gemm, linear)
from .registry import Entry


@dataclass(frozen=True)
class Mlstm(Kind):
    """One mLSTM layer: `heads` heads, queries and keys `qk_width` wide, values `v_width`
    wide, chunks of `chunk` tokens, `bias` on q, k, v, the output gate, the value norm and
    out_proj."""

    heads: int
    qk_width: int
    v_width: int
    chunk: int = 64
    bias: bool = False
    slot = "mlstm"
    chunked_scan = True

    def __post_init__(self) -> None:
        for name, width in (("qk", self.qk_width), ("v", self.v_width)):
            if width % self.heads:
                raise ValueError(f"mlstm: the {name} width {width} is not divisible by "
                                 f"{self.heads} heads")

    @property
    def d_k(self) -> int:
        return self.qk_width // self.heads

    @property
    def d_v(self) -> int:
        return self.v_width // self.heads

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        Q, V, H, b = self.qk_width, self.v_width, self.heads, self.bias
        parts = linear("q", d, Q, b) + linear("k", d, Q, b) + linear("v", d, V, b)
        parts += linear("o_gate", d, V, b) + linear("i_gate", d, H, True)
        parts += linear("f_gate", d, H, True)
        parts.append(Part("norm.weight", V, LAYERS, (V,), COLUMN, module="norm"))
        if b:
            parts.append(Part("norm.bias", V, LAYERS, (V,), COLUMN, module="norm"))
        return parts + linear("out", V, d, b, ROW)

    def count_period(self) -> int:
        """⌊n/C⌋·C tokens run chunkwise and the rest token by token: one polynomial in the
        length on each block of `chunk` lengths."""
        return self.chunk

    # -------------------------------------------------------------------------------- FLOPs

    def _weights(self, d: int, t: int) -> list[Part]:
        Q, V, H = self.qk_width, self.v_width, self.heads
        return [gemm("q", t, d, Q), gemm("k", t, d, Q),  # (T×d)·(d×Q)
                gemm("v", t, d, V), gemm("o_gate", t, d, V),  # (T×d)·(d×V)
                gemm("i_gate", t, d, H), gemm("f_gate", t, d, H)]  # (T×d)·(d×H)

    def _recurrence(self, t: int) -> Part:
        """k·vᵀ (d_k×1)·(1×d_v), q·C (1×d_k)·(d_k×d_v) and q·n (1×d_k)·(d_k×1), per head."""
        k, v = self.d_k, self.d_v
        return Part("scan.recurrent", t * self.heads * (4 * k * v + 2 * k), SCAN)

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T = x.batch, x.n, x.tokens
        k, v, H, C = self.d_k, self.d_v, self.heads, self.chunk
        chunked = 0 if x.scan == "recurrent" else b * (n // C) * C
        parts = self._weights(d, T)
        if chunked:
            parts += [
                # Kᵀ·V per chunk, (d_k×C)·(C×d_v): 2·d_k·d_v per token
                Part("chunk.state_update", chunked * H * 2 * k * v, SCAN),
                # Q·Kᵀ (C×d_k)·(d_k×C) and (Q·Kᵀ∘D)·V (C×C)·(C×d_v)
                Part("chunk.intra", chunked * H * 2 * C * (k + v), SCAN),
                # Q·C (C×d_k)·(d_k×d_v) and Q·n (C×d_k)·(d_k×1)
                Part("chunk.state_reads", chunked * H * (2 * k * v + 2 * k), SCAN)]
        if T - chunked:
            parts.append(self._recurrence(T - chunked))
        return parts + [gemm("out", T, self.v_width, d, ROW)]  # (T×V)·(V×d)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """One recurrent step per token (`mlstm_recurrent_step_native`)."""
        t = batch * (last - first + 1)
        return self._weights(d, t) + [self._recurrence(t),
                                      gemm("out", t, self.v_width, d, ROW)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """An estimate (see the module): per token and head 6 for the soft caps, 5 for the
        forget gate's log-sigmoid and cumulative sum, 2·d_k for the scaled, gated query, and
        3·d_v for the normaliser's maximum, the division and the sum with the intra-chunk
        part; per chunked token and head 7·C for its row of the stabilised decay matrix
        (difference, mask, + i, maximum, − m, exp, product with the scores); per chunk and
        head 2·d_k·d_v for the state's decay; per token the LayerNorm (7 per value, 5 without
        its bias) and the output gate (sigmoid 4 and product 1 per value)."""
        b, n, T = x.batch, x.n, x.tokens
        k, v, H, C = self.d_k, self.d_v, self.heads, self.chunk
        chunks = 0 if x.scan == "recurrent" else b * (n // C)
        chunked = chunks * C
        per_token = H * (11 + 2 * k + 3 * v)
        recurrent = (T - chunked) * H * 2 * k * v  # the state's decay, every step
        core = T * per_token + chunked * H * 7 * C + chunks * H * 2 * k * v + recurrent
        norm = T * self.v_width * ((7 if self.bias else 6) + 5)
        return [Part("elementwise.mlstm_core", core, ELEMENTWISE),
                Part("elementwise.norm_and_gate", norm, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        H = self.heads
        return Cache(label="mlstm", states=(
            State("matrix_memory", H * self.d_k * self.d_v, "state"),
            State("normaliser", H * self.d_k, "state"),
            State("stabiliser", H, "state")))

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """An estimate, 16-bit: what the native autograd path keeps for backward, as the
        projections' outputs (q, k, v, the three gates), each chunk's C×C score and decay
        matrices per head (fp32), the chunk states per head (d_k·d_v per chunk, fp32), the
        core's output, the norm's input and out_proj's input; split over the heads."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        Q, V, H, C = self.qk_width, self.v_width, self.heads, self.chunk
        return [("qkv_gates", 2 * sb * (2 * Q + 2 * V + 2 * H) * split),
                ("chunk_matrices", 4 * sb * 2 * H * C * split),
                ("chunk_states", Fraction(4 * sb * H * self.d_k * self.d_v, C) * split),
                ("core_output", 2 * sb * V * split),
                ("norm_and_out_inputs", 2 * sb * 2 * V * split)]

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has mLSTM (matrix-memory "
            "recurrent) layers",))

    def describe(self) -> str:
        return f"mLSTM {self.heads}x{self.d_k}/{self.d_v}"

    def notes(self) -> list[str]:
        return [f"mLSTM (xLSTM): as Hugging Face's native inference path computes it (what "
                f"FlopCounterMode counts): the q/k/v and gate projections, then the first "
                f"⌊n/{self.chunk}⌋·{self.chunk} tokens chunkwise (state update, intra-chunk "
                "scores and values, state reads) and the rest token by token (outer product "
                "and read-outs), state/scan family; its element-wise work is an estimate"]

    def decode_notes(self) -> list[str]:
        return ["mLSTM decodes by the recurrence: per token and head the outer product k·vᵀ, "
                "the read-outs q·C and q·n (4·d_k·d_v + 2·d_k FLOPs); per sequence it keeps "
                "the H·d_k·d_v matrix memory, H·d_k normaliser and H stabilisers in the state "
                "dtype (Hugging Face: fp32)"]


@dataclass(frozen=True)
class MlstmConfig:
    """`mlstm:` in a model file (transformers xLSTMConfig's names in comments)."""

    num_heads: Annotated[int, Min(1)]
    qk_width: Annotated[int, Min(1)]  # int(qk_dim_factor · hidden_size)
    v_width: Annotated[int, Min(1)]  # int(v_dim_factor · hidden_size)
    chunk_size: Annotated[int, Min(1)] = 64
    bias: bool = False  # use_bias


def build(cfg: Any, name: str) -> Mlstm:
    m = cfg.mlstm
    if m is None:
        raise ValueError("mlstm layers need an mlstm block (num_heads, qk_width, v_width)")
    return Mlstm(heads=m.num_heads, qk_width=m.qk_width, v_width=m.v_width,
                 chunk=m.chunk_size, bias=m.bias)


REGISTER = Entry(layer_types=("mlstm",), build=build, blocks=(("mlstm", MlstmConfig),))
