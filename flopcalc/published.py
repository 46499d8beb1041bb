"""The published training-FLOP formulas, each for one model at one sequence length, and the
one-line comparison the `model` table prints. Pure arithmetic on ints and Fractions.

Notation (SPEC §3): N non-embedding params, N_total all params, L layers, s sequence length,
d d_model, h query heads, h_kv KV heads, d_h head_dim, d_q = h·d_h, d_kv = h_kv·d_h, f d_ff,
V vocab. Every figure is training FLOPs per token (forward + backward) unless a name says not.
`conventions.py` sets them side by side; this module stays small because `model` imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from . import counting as c
from .arch import Arch


# --------------------------------------------------------------------------------------------
# The sizes the published formulas are written in
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    """A model reduced to the symbols of the published formulas."""

    n_layers: int  # L: every layer; encoder + decoder for an encoder-decoder model
    n_encoder_layers: int
    d_model: int
    n_heads: int
    kv_heads: int
    head_dim: int
    d_q: int
    d_kv: int
    d_ff: int
    vocab: int
    gated: bool
    n: int  # N: non-embedding params (SPEC §3), from counting.model_params
    n_total: int  # N_total: all params

    @property
    def mlp_matrices(self) -> int:
        """d×f matrices in one MLP: gate, up and down when gated (SwiGLU/GeGLU), else up, down."""
        return 3 if self.gated else 2


def shape_of(cfg: Arch) -> Shape:
    parts = c.model_params(cfg)
    n_total = c.total(parts)
    return Shape(
        n_layers=cfg.n_layers + cfg.n_encoder_layers, n_encoder_layers=cfg.n_encoder_layers,
        d_model=cfg.d_model, n_heads=cfg.n_heads, kv_heads=cfg.kv_heads, head_dim=cfg.d_head,
        d_q=cfg.d_q, d_kv=cfg.d_kv, d_ff=cfg.d_ff, vocab=cfg.vocab_size,
        gated=cfg.mlp == "gated", n=c.non_embedding(parts), n_total=n_total,
    )


# --------------------------------------------------------------------------------------------
# The conventions: one function each, training FLOPs per token at sequence length s
# --------------------------------------------------------------------------------------------

def six_nd(m: Shape, s: int) -> Fraction:
    """6·N per token, N non-embedding (Kaplan et al. 2020, §2.1: C ≈ 6N). No attention term."""
    return Fraction(6 * m.n)


def six_nd_total(m: Shape, s: int) -> Fraction:
    """6·N_total per token: the rule of thumb with every parameter, embeddings included, as many
    quick estimates use it."""
    return Fraction(6 * m.n_total)


def kaplan(m: Shape, s: int) -> Fraction:
    """Kaplan et al. 2020, "Scaling Laws for Neural Language Models" (arXiv:2001.08361), Table 1:
    C_forward = 2N + 2·n_layer·n_ctx·d_attn, training 3 × forward. The context term counts each
    of QKᵀ and AV at half the full 4·s·d_q: the causal average."""
    # 3·(2·N + 2·L·s·d_q)
    return Fraction(3 * (2 * m.n + 2 * m.n_layers * s * m.d_q))


def palm(m: Shape, s: int) -> Fraction:
    """Chowdhery et al. 2022, "PaLM" (arXiv:2204.02311), Appendix B: model FLOPs per token
    6N + 12·L·H·Q·T (H heads of width Q, T the sequence length); nanoGPT's `estimate_mfu` uses
    the same formula. The attention term is full attention, 3 × 4·L·s·d_q."""
    # 6·N + 12·L·h·d_h·s
    return Fraction(6 * m.n + 12 * m.n_layers * m.n_heads * m.head_dim * s)


def megatron(m: Shape, s: int) -> Fraction:
    """Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
    Using Megatron-LM" (SC'21, arXiv:2104.04473), §5.1, without activation recomputation (3
    passes, not their 4): 72·B·s·L·d²·(1 + s/(6d) + V/(12·d·L)) per batch of B sequences.
    Written for multi-head attention with h·d_h = d and a two-matrix MLP with d_ff = 4d;
    `megatron_assumptions` lists where a model departs from that."""
    d, L = m.d_model, m.n_layers
    # 72·B·s·L·d²·(1 + s/(6d) + V/(12dL)) / (B·s) = 72·L·d² + 12·L·d·s + 6·d·V
    return 72 * L * d * d * (1 + Fraction(s, 6 * d) + Fraction(m.vocab, 12 * d * L))


def megatron_assumptions(m: Shape) -> list[str]:
    """Where the model differs from the block Megatron's formula was derived for (empty: none)."""
    broken = []
    if m.kv_heads != m.n_heads:
        kind = "MQA" if m.kv_heads == 1 else "GQA"
        broken.append(f"assumes multi-head attention; this model has {kind} ({m.kv_heads} KV "
                      f"heads for {m.n_heads} query heads), so its K/V projections are narrower")
    if m.gated:
        broken.append("assumes a two-matrix MLP; this model's MLP is gated (three matrices)")
    if m.d_ff != 4 * m.d_model:
        broken.append(f"assumes d_ff = 4d = {4 * m.d_model:,}; this model has d_ff = "
                      f"{m.d_ff:,}")
    if m.d_q != m.d_model:
        broken.append(f"assumes h·d_h = d; this model has h·d_h = {m.d_q:,} and d = "
                      f"{m.d_model:,}")
    return broken


def chinchilla_forward_per_sequence(m: Shape, s: int) -> int:
    """Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (arXiv:2203.15556),
    Appendix F: forward FLOPs of one sequence, with this model's real projection and MLP shapes.

    Counted as they count it: the embedding lookup as a matmul (2·s·V·d), softmax at 3 FLOPs per
    score, full (not causal) attention, the final logits; no norms, biases or activations.
    """
    d, h, d_q, d_kv, V = m.d_model, m.n_heads, m.d_q, m.d_kv, m.vocab
    embeddings = 2 * s * V * d  # their convention: the lookup costs a (s×V)·(V×d) matmul
    qkv = 2 * s * d * (d_q + 2 * d_kv)  # (s×d)·(d×(d_q + 2·d_kv)); GQA narrows K and V
    logits = 2 * s * s * d_q  # QKᵀ, every head: (s×d_h)·(d_h×s)
    softmax = 3 * h * s * s  # 3 per score, every head
    reductions = 2 * s * s * d_q  # softmax · V, every head: (s×s)·(s×d_h)
    output = 2 * s * d_q * d  # (s×d_q)·(d_q×d)
    dense = 2 * s * m.mlp_matrices * d * m.d_ff  # each MLP matrix (s×d)·(d×f) or (s×f)·(f×d)
    final_logits = 2 * s * d * V  # (s×d)·(d×V)
    layer = qkv + logits + softmax + reductions + output + dense
    return embeddings + m.n_layers * layer + final_logits


def chinchilla(m: Shape, s: int) -> Fraction:
    """Hoffmann et al. 2022, Appendix F: backward = 2 × forward, so 3 × forward per sequence,
    divided by its s tokens."""
    return Fraction(3 * chinchilla_forward_per_sequence(m, s), s)


def exact(cfg: Arch, s: int, attention: c.Attention = "full", passes: int = 3) -> Fraction:
    """This tool's count: `passes` × the exact forward FLOPs per output token
    (`counting.model_flops`, LM head and attention included). 3 passes: forward + a backward of
    twice the forward; 4 with full activation recomputation (one more forward)."""
    w = c.workload(cfg, s, attention=attention)
    return passes * c.per_token(c.total(c.model_flops(cfg, w)), w)


def delta_pct(x: Fraction, ref: Fraction) -> float:
    return float(100 * (x - ref) / ref) if ref else 0.0


def _relative(x: Fraction, ref: Fraction) -> str:
    """'27.7% below', '3.0% above' or 'within 0.1% of' (as in '... exact')."""
    pct = delta_pct(x, ref)
    if round(pct, 1) == 0:
        return "within 0.1% of"
    return f"{abs(pct):.1f}% {'below' if pct < 0 else 'above'}"


def model_line(cfg: Arch, seq: int, name: str, attention: c.Attention = "full",
               tgt_seq: Optional[int] = None) -> str:
    """One sentence for the `model` table: how 6ND and PaLM compare with the exact count of that
    report (same seq, target length and attention), and where to see the other conventions.
    Plain text, no rich markup. E.g. for llama-3.1-8b at seq 8192:
    '6ND is 27.7% below exact, PaLM 5.4% below; flopcalc conventions llama-3.1-8b --seq 8192
    adds Kaplan, Megatron and Chinchilla'
    """
    m = shape_of(cfg)
    w = c.workload(cfg, seq, tgt_seq, attention=attention)
    ref = 3 * c.per_token(c.total(c.model_flops(cfg, w)), w)
    palm_vs = _relative(palm(m, seq), ref).removesuffix(" of")
    return (f"6ND is {_relative(six_nd(m, seq), ref)} exact, PaLM {palm_vs}; flopcalc "
            f"conventions {name} --seq {seq} adds Kaplan, Megatron and Chinchilla")
