"""Lightning attention (MiniMax, "MiniMax-01: Scaling Foundation Models with Lightning
Attention", 2025, arXiv:2501.08313; the kernel: Qin et al., "Lightning Attention-2", 2024,
arXiv:2401.04658), the linear attention of MiniMax-Text-01: SiLU'd queries, keys and values, a
fixed per-head exponential decay (ALiBi-like slopes), computed block by block (an intra-block
masked QKᵀ·V and an inter-block read of the running KᵀV state), an RMSNorm over all heads, a
sigmoid output gate and the output projection.

Tensors (Hugging Face's `MiniMaxLightningAttention`, transformers 5.24
`models/minimax/modeling_minimax.py`), with H heads of D (HD = H·D): qkv_proj d → 3HD, the
output gate d → HD, the norm's gain over HD, out_proj HD → d, no biases. The slopes and decay
tables are buffers, not parameters. Under tensor parallelism (vLLM's
MiniMaxText01LinearAttention) the projections and the norm's gain split by heads (the norm's
variance is all-reduced), out_proj is row-parallel.

Forward FLOPs as the Hugging Face PyTorch path computes them (what FlopCounterMode counts):
- qkv_proj (T×d)·(d×3HD), output_gate (T×d)·(d×HD), out_proj (T×HD)·(HD×d): `weights`;
- blocks of b tokens, the last one shorter (no padding), per block of s tokens and head: the
  intra-block scores Q·Kᵀ (s×D)·(D×s) and their product with V (s×s)·(s×D), the inter-block
  read (Q·decay)·KV (s×D)·(D×D) (the first block's too, against the zero state), the state
  update (K·decay)ᵀ·V (D×s)·(s×D): 4·B·H·D·(Σ s² + L·D) in all, `scan` (the s² part is the
  quadratic one; with L ≤ b it is all of it).
A decode step runs the recurrence: S ← λ·S + kᵀv (a decay, the outer product and an add: 3
FLOPs per state value) and o = q·S (2 per state value), `scan`, besides the projections.
Hugging Face runs every call that finds a state (decode, and a multi-token continuation too)
token by token this way, its kᵀv a (D×1)·(1×D) matmul that FlopCounterMode counts as 2·D².
The state, H·D·D values per sequence, is kept in the model's dtype (Hugging Face's
MiniMaxCache.linear_cache): here the cache dtype.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, LAYERS, ROW, SCAN, Cache, Keeping, Kind, Part, Published,
                   Span, State, gemm, linear)
from .mlp import ACTIVATION_FLOPS
from .registry import Entry

SIGMOID = 4  # negate, exp, add, divide


@dataclass(frozen=True)
class Lightning(Kind):
    """One lightning-attention mixer: `heads` heads of `head_dim`, blocks of `block` tokens;
    `activation` is applied to q, k and v (MiniMax: SiLU)."""

    heads: int
    head_dim: int
    block: int = 256
    activation: str = "silu"
    slot = "lightning"
    chunked_scan = True

    @property
    def inner(self) -> int:
        """HD: heads·head_dim."""
        return self.heads * self.head_dim

    def blocks(self, n: int) -> tuple[int, int]:
        """(number of blocks, Σ s² over their lengths s) for n tokens: ⌊n/b⌋ full blocks and a
        shorter last one of n mod b."""
        full, rest = divmod(n, self.block)
        return full + (1 if rest else 0), full * self.block ** 2 + rest ** 2

    # --------------------------------------------------------------------------- parameters

    def params(self, d: int, active: bool = False) -> list[Part]:
        HD = self.inner
        return (linear("qkv", d, 3 * HD, False) + linear("output_gate", d, HD, False)
                + [Part("norm.weight", HD, LAYERS, (HD,), COLUMN)]
                + linear("out", HD, d, False, ROW))

    def count_period(self) -> int:
        """Blocks of `block` tokens, the last one shorter: one polynomial per block of lengths."""
        return self.block

    # -------------------------------------------------------------------------------- FLOPs

    def forward(self, d: int, x: Span) -> list[Part]:
        b, n, T = x.batch, x.n, x.tokens
        H, D, HD = self.heads, self.head_dim, self.inner
        _, squares = self.blocks(n)
        pairs = b * H * squares  # (query, key) pairs inside blocks, over the batch and heads
        rows = b * H * n
        head = [gemm("qkv", T, d, 3 * HD),  # (T×d)·(d×3HD)
                gemm("output_gate", T, d, HD)]  # (T×d)·(d×HD)
        if x.scan == "recurrent":  # the decode step's core on every token
            return head + self._recurrence(T) + [gemm("out", T, HD, d, ROW)]
        return head + [
            Part("blocks.scores", 2 * pairs * D, SCAN),  # Q·Kᵀ, (s×D)·(D×s) per block
            Part("blocks.values", 2 * pairs * D, SCAN),  # (s×s)·(s×D)
            Part("blocks.state_read", 2 * rows * D * D, SCAN),  # (s×D)·(D×D)
            Part("blocks.state_update", 2 * rows * D * D, SCAN),  # (D×s)·(s×D)
            gemm("out", T, HD, d, ROW),  # (T×HD)·(HD×d)
        ]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """The recurrence, one token per sequence and step: the same for every position."""
        t = batch * (last - first + 1)
        HD = self.inner
        return [
            gemm("qkv", t, d, 3 * HD),
            gemm("output_gate", t, d, HD),
            *self._recurrence(t),
            gemm("out", t, HD, d, ROW),
        ]

    def _recurrence(self, t: int) -> list[Part]:
        """The recurrence on `t` tokens (a decode step's, or the whole forward's under --scan
        recurrent)."""
        state = self.heads * self.head_dim * self.head_dim
        return [Part("scan.update", 3 * t * state, SCAN),  # λ·S + k⊗v
                Part("scan.readout", 2 * t * state, SCAN)]  # q·S: D multiply-adds per channel

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The Hugging Face path's element-wise work, op by op: the activation on q, k and v;
        per block the decay exp(−slope·s) (3 per head), the intra-block scores times the decay
        mask, Q·decay, inter + intra and K·decay, the state's decay and the add; the RMSNorm over
        HD (square, mean, scale, gain; eps and rsqrt per token), the gate's sigmoid and the
        product."""
        b, n, T = x.batch, x.n, x.tokens
        H, D, HD = self.heads, self.head_dim, self.inner
        count, squares = self.blocks(n)
        activation = ACTIVATION_FLOPS[self.activation] * T * 3 * HD
        blocks = (3 * H * count + b * H * squares + 3 * b * H * n * D
                  + 2 * b * H * count * D * D)
        if x.scan == "recurrent":  # the decay λ = exp(−slope) once per head (negate, exp)
            blocks = 2 * H
        norm_gate = 4 * T * HD + 2 * T + SIGMOID * T * HD + T * HD
        return [Part("elementwise.activation", activation, ELEMENTWISE),
                Part("elementwise.blocks", blocks, ELEMENTWISE),
                Part("elementwise.norm_gate", norm_gate, ELEMENTWISE)]

    # ---------------------------------------------------------------------------------- cache

    def cache(self) -> Cache:
        return Cache(label="lightning", states=(
            State("kv_state", self.heads * self.head_dim * self.head_dim, "cache"),))

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """What a training step keeps besides the block's input, 16-bit, split over the
        tensor-parallel heads: OpenNLPLab/lightning-attention's LightningAttention2 kernel
        (`lightning_attn/ops/triton/lightning_attn2.py`, which saves q, k, v and the slopes)
        with PyTorch autograd around it as MiniMax-01's layer calls it: the qkv projection's
        output (the activation's input), the activated q, k, v, the kernel's output (the norm's
        input) and the norm's fp32 reciprocal per token, the gate's sigmoid and the normed
        output (the product's operands), and out_proj's input."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        HD = self.inner
        return [("qkv_proj_output", 2 * sb * 3 * HD * split),
                ("qkv", 2 * sb * 3 * HD * split),
                ("norm_input", 2 * sb * HD * split),
                ("norm_rstd", Fraction(4 * sb)),
                ("gate", 2 * sb * HD * split),
                ("norm_output", 2 * sb * HD * split),
                ("o_input", 2 * sb * HD * split)]

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        return Published(departures=(
            "assumes attention in every layer; this model has lightning (linear) attention "
            "layers",))

    def describe(self) -> str:
        return f"lightning attention {self.heads}x{self.head_dim}, blocks of {self.block:,}"

    def notes(self) -> list[str]:
        return ["lightning attention: as the Hugging Face PyTorch path computes it (what "
                "FlopCounterMode counts): the qkv, gate and output projections and, block by "
                "block (no padding, the last block shorter), the intra-block Q·Kᵀ and its product "
                "with V, the read of the running KᵀV state and its update (state/scan family)"]

    def decode_notes(self) -> list[str]:
        return ["lightning attention decodes by the recurrence: the projections, the state "
                "update λ·S + kᵀv (3 FLOPs per state value: the decay, the product and the add; "
                "Hugging Face writes kᵀv as a (D×1)·(1×D) matmul, 2 per value to "
                "FlopCounterMode) and the read-out q·S (2 per state value); per sequence it keeps "
                "the H·D·D state in the KV dtype (Hugging Face keeps it in the model's dtype). "
                "Hugging Face also runs a multi-token call on an existing state token by token"]


@dataclass(frozen=True)
class LightningConfig:
    """`lightning:` in a model file. The heads default to the model's attention heads and
    head_dim (Hugging Face's MiniMax uses the same for both kinds)."""

    block_size: Annotated[int, Min(1)] = 256
    n_heads: Optional[Annotated[int, Min(1)]] = None
    head_dim: Optional[Annotated[int, Min(1)]] = None


def build(cfg: Any, name: str) -> Lightning:
    m = cfg.lightning or LightningConfig()
    heads = m.n_heads or cfg.n_heads
    if heads is None:
        raise ValueError("lightning layers need heads: set lightning.n_heads or n_heads")
    head_dim = m.head_dim or cfg.head_dim
    if head_dim is None:
        if cfg.d_model % heads:
            raise ValueError(f"d_model={cfg.d_model} is not divisible by the {heads} lightning "
                             "heads; set lightning.head_dim (or head_dim)")
        head_dim = cfg.d_model // heads
    return Lightning(heads=heads, head_dim=head_dim, block=m.block_size,
                     activation=cfg.activation)


REGISTER = Entry(layer_types=("lightning",), build=build, blocks=(("lightning", LightningConfig),))
