"""Parameter and FLOP counts: pure arithmetic on Python ints, no I/O.

Conventions (SPEC §3; README "Conventions"):
- A matmul (T×in)·(in×out) costs 2·T·in·out FLOPs: one multiply and one add per multiply-add.
- Attention `full` counts every (query, key) pair; `causal` counts the s(s+1)/2 unmasked pairs of a
  decoder's self-attention (encoder and cross-attention stay full).
- Bias adds, norms, activations, softmax, residual adds and embedding lookups are left out unless
  `elementwise=True` (then they become separate `*.elementwise.*` parts, see `_elementwise_flops`).
  Left out, the forward count equals what `torch.utils.flop_counter.FlopCounterMode` reports for
  the same model, which only counts matmul-like aten ops.

Every count is a list of named `Part`s; a total is always the sum of its parts, never a separate
formula that could drift from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Literal

from .arch import Arch

Attention = Literal["full", "causal"]
Stack = Literal["encoder", "decoder"]

# FLOP part kinds. `weights`: a matmul against a weight matrix (grows linearly in seq).
# `attention`: the score and value matmuls against activations (grow with seq²).
# `elementwise`: bias adds, norms, activations, softmax, residual adds (opt-in).
WEIGHTS, ATTENTION, ELEMENTWISE = "weights", "attention", "elementwise"
# Param part kinds.
EMBEDDING, LAYERS, FINAL_NORM = "embedding", "layers", "final_norm"


@dataclass(frozen=True, slots=True)
class Part:
    """One named count: parameters of a tensor, or FLOPs of an operation."""

    name: str
    value: int
    kind: str
    shape: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Workload:
    """What one forward pass processes.

    `seq` is the decoder-only sequence length, or the encoder (source) length of an
    encoder-decoder model, whose decoder (target) length is `tgt_seq`.
    """

    seq: int
    tgt_seq: int
    batch: int = 1
    attention: Attention = "full"

    @property
    def output_tokens(self) -> int:
        """Tokens that reach the LM head: the ones a training token count D refers to."""
        return self.batch * self.tgt_seq


def workload(cfg: Arch, seq: int, tgt_seq: int | None = None, batch: int = 1,
             attention: Attention = "full") -> Workload:
    """A Workload for `cfg`; a decoder-only model has a single length, so tgt_seq = seq."""
    if not cfg.is_encoder_decoder or tgt_seq is None:
        tgt_seq = seq
    return Workload(seq=seq, tgt_seq=tgt_seq, batch=batch, attention=attention)


def total(parts: Iterable[Part], kind: str | None = None) -> int:
    """Sum of the parts (of one kind, if given)."""
    return sum(p.value for p in parts if kind is None or p.kind == kind)


def stacks(cfg: Arch) -> list[tuple[Stack, int]]:
    """The layer stacks of the model, in forward order, with their layer counts."""
    if cfg.is_encoder_decoder:
        return [("encoder", cfg.n_encoder_layers), ("decoder", cfg.n_layers)]
    return [("decoder", cfg.n_layers)]


def has_cross_attention(cfg: Arch, stack: Stack) -> bool:
    return cfg.is_encoder_decoder and stack == "decoder"


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

def _attention_params(cfg: Arch, prefix: str) -> list[Part]:
    d, d_q, d_kv = cfg.d_model, cfg.d_q, cfg.d_kv
    parts = [
        Part(f"{prefix}.q.weight", d * d_q, LAYERS, (d, d_q)),
        Part(f"{prefix}.k.weight", d * d_kv, LAYERS, (d, d_kv)),
        Part(f"{prefix}.v.weight", d * d_kv, LAYERS, (d, d_kv)),
    ]
    if cfg.bias.qkv:
        parts += [
            Part(f"{prefix}.q.bias", d_q, LAYERS, (d_q,)),
            Part(f"{prefix}.k.bias", d_kv, LAYERS, (d_kv,)),
            Part(f"{prefix}.v.bias", d_kv, LAYERS, (d_kv,)),
        ]
    parts.append(Part(f"{prefix}.o.weight", d_q * d, LAYERS, (d_q, d)))
    if cfg.bias.attn_out:
        parts.append(Part(f"{prefix}.o.bias", d, LAYERS, (d,)))
    return parts


def _mlp_matrices(cfg: Arch) -> list[tuple[str, int, int]]:
    """(name, in, out) of each MLP matrix: gate and up d→f (gate only when gated), down f→d."""
    d, f = cfg.d_model, cfg.d_ff
    ins = [("gate", d, f)] if cfg.mlp == "gated" else []
    return ins + [("up", d, f), ("down", f, d)]


def _mlp_params(cfg: Arch) -> list[Part]:
    parts = []
    for name, n_in, n_out in _mlp_matrices(cfg):
        parts.append(Part(f"mlp.{name}.weight", n_in * n_out, LAYERS, (n_in, n_out)))
        if cfg.bias.mlp:
            parts.append(Part(f"mlp.{name}.bias", n_out, LAYERS, (n_out,)))
    return parts


def _norm_params(cfg: Arch, prefix: str, kind: str = LAYERS) -> list[Part]:
    """LayerNorm: gain and bias of width d; RMSNorm: gain only; `none`: nothing."""
    d = cfg.d_model
    if cfg.norm == "none":
        return []
    parts = [Part(f"{prefix}.weight", d, kind, (d,))]
    if cfg.norm == "layernorm":
        parts.append(Part(f"{prefix}.bias", d, kind, (d,)))
    return parts


def sublayers(cfg: Arch, stack: Stack) -> list[str]:
    """The residual sublayers of one layer, in order; each has its own norm (pre or post)."""
    middle = ["cross_attn"] if has_cross_attention(cfg, stack) else []
    return ["attn", *middle, "mlp"]


def layer_params(cfg: Arch, stack: Stack) -> list[Part]:
    """Parameters of one layer of `stack`, by tensor, with shapes."""
    parts: list[Part] = []
    for sub in sublayers(cfg, stack):
        parts += _norm_params(cfg, f"{sub}_norm")
        parts += _mlp_params(cfg) if sub == "mlp" else _attention_params(cfg, sub)
    return parts


def model_params(cfg: Arch) -> list[Part]:
    """Whole-model parameters: embeddings, every layer (summed over the stack), final norms and
    an untied LM head. A tied LM head reuses the token embedding and adds nothing."""
    d, vocab = cfg.d_model, cfg.vocab_size
    parts: list[Part] = []
    if cfg.is_encoder_decoder and not cfg.share_encoder_embeddings:
        parts.append(Part("encoder.embed.tokens", vocab * d, EMBEDDING, (vocab, d)))
    parts.append(Part("embed.tokens", vocab * d, EMBEDDING, (vocab, d)))
    for stack, n_layers in stacks(cfg):
        if cfg.positions == "learned":
            assert cfg.max_seq_len is not None  # the config validator guarantees it
            name = "embed.positions" if stack == "decoder" else "encoder.embed.positions"
            parts.append(Part(name, cfg.max_seq_len * d, EMBEDDING, (cfg.max_seq_len, d)))
        for p in layer_params(cfg, stack):
            parts.append(Part(f"{stack}.{p.name}", n_layers * p.value, LAYERS, p.shape))
        if cfg.final_norm:
            parts += _norm_params(cfg, f"{stack}.final_norm", FINAL_NORM)
    if not cfg.tie_embeddings:
        parts.append(Part("lm_head.weight", d * vocab, EMBEDDING, (d, vocab)))
    return parts


# --------------------------------------------------------------------------------------------
# Forward FLOPs
# --------------------------------------------------------------------------------------------

def attention_pairs(n_q: int, n_k: int, causal: bool) -> int:
    """(query, key) pairs one head scores: all n_q·n_k, or the s(s+1)/2 a causal mask keeps."""
    if causal:
        assert n_q == n_k, "a causal mask needs as many queries as keys"
        return n_q * (n_q + 1) // 2
    return n_q * n_k


def _attention_flops(cfg: Arch, prefix: str, n_q: int, n_k: int, batch: int,
                     causal: bool) -> list[Part]:
    d, d_q, d_kv, h, d_h = cfg.d_model, cfg.d_q, cfg.d_kv, cfg.n_heads, cfg.d_head
    t_q, t_k = batch * n_q, batch * n_k
    pairs = batch * h * attention_pairs(n_q, n_k, causal)
    return [
        Part(f"{prefix}.q", 2 * t_q * d * d_q, WEIGHTS),  # (T_q×d)·(d×d_q)
        Part(f"{prefix}.k", 2 * t_k * d * d_kv, WEIGHTS),  # (T_k×d)·(d×d_kv)
        Part(f"{prefix}.v", 2 * t_k * d * d_kv, WEIGHTS),  # (T_k×d)·(d×d_kv)
        # Per head, QKᵀ (n_q×d_h)·(d_h×n_k) and AV (n_q×n_k)·(n_k×d_h): 2·d_h per scored pair.
        # GQA shares K/V between heads but every query head still scores its own pairs.
        Part(f"{prefix}.scores", 2 * pairs * d_h, ATTENTION),
        Part(f"{prefix}.av", 2 * pairs * d_h, ATTENTION),
        Part(f"{prefix}.o", 2 * t_q * d_q * d, WEIGHTS),  # (T_q×d_q)·(d_q×d)
    ]


def _mlp_flops(cfg: Arch, tokens: int) -> list[Part]:
    # Each matrix: (T×in)·(in×out) → 2·T·in·out.
    return [Part(f"mlp.{name}", 2 * tokens * n_in * n_out, WEIGHTS)
            for name, n_in, n_out in _mlp_matrices(cfg)]


def layer_flops(cfg: Arch, stack: Stack, w: Workload, elementwise: bool = False) -> list[Part]:
    """Forward FLOPs of one layer of `stack` for workload `w`."""
    n_self = w.seq if stack == "encoder" else w.tgt_seq
    causal = w.attention == "causal" and stack == "decoder"
    parts = _attention_flops(cfg, "attn", n_self, n_self, w.batch, causal)
    if has_cross_attention(cfg, stack):
        # Queries come from the decoder's tgt_seq tokens, keys and values from the encoder's seq.
        parts += _attention_flops(cfg, "cross_attn", w.tgt_seq, w.seq, w.batch, causal=False)
    parts += _mlp_flops(cfg, w.batch * n_self)
    if elementwise:
        parts += _elementwise_flops(cfg, stack, w)
    return parts


def model_flops(cfg: Arch, w: Workload, elementwise: bool = False) -> list[Part]:
    """Whole-model forward FLOPs: every layer (summed over its stack), then the LM head."""
    parts: list[Part] = []
    for stack, n_layers in stacks(cfg):
        for p in layer_flops(cfg, stack, w, elementwise):
            parts.append(Part(f"{stack}.{p.name}", n_layers * p.value, p.kind))
        if elementwise and cfg.final_norm and cfg.norm != "none":
            n = w.seq if stack == "encoder" else w.tgt_seq
            parts.append(Part(f"{stack}.final_norm.elementwise", _norm_cost(cfg, w.batch * n),
                              ELEMENTWISE))
    # LM head: (T×d)·(d×V) on every output position, tied or not.
    parts.append(Part("lm_head", 2 * w.output_tokens * cfg.d_model * cfg.vocab_size, WEIGHTS))
    return parts


# --------------------------------------------------------------------------------------------
# Element-wise operations (opt-in). Per-element costs; README "Element-wise costs" cites them.
# --------------------------------------------------------------------------------------------

# LayerNorm per element: mean (1 add), subtract (1), square (1), variance sum (1), normalise
# (1 mul by the reciprocal std), gain (1), bias (1) → 7; RMSNorm drops the mean, subtract and bias
# → 4. The per-row reductions' square roots and divisions are O(T), not O(T·d), and are ignored.
_NORM_PER_ELEMENT = {"layernorm": 7, "rmsnorm": 4, "none": 0}
# Activation per element of the d_ff-wide hidden: ReLU a compare (1); GELU, tanh form
# 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): 9;
# SiLU x·sigmoid(x) = x / (1 + exp(−x)): negate, exp, add, divide (4). A gated MLP adds the gate
# product (1).
_ACTIVATION_PER_ELEMENT = {"relu": 1, "gelu": 9, "silu": 4}
# Softmax per score: max-subtract (1), exp (1), sum (1), divide (1) → 4; plus the 1/√d_h scale (1).
_SOFTMAX_PER_SCORE = 5


def _norm_cost(cfg: Arch, tokens: int) -> int:
    return _NORM_PER_ELEMENT[cfg.norm] * tokens * cfg.d_model


def _elementwise_flops(cfg: Arch, stack: Stack, w: Workload) -> list[Part]:
    """Element-wise FLOPs of one layer: norms, biases, activation, softmax and residual adds."""
    n_self = w.seq if stack == "encoder" else w.tgt_seq
    tokens = w.batch * n_self
    d, f, d_q, d_kv = cfg.d_model, cfg.d_ff, cfg.d_q, cfg.d_kv
    causal = w.attention == "causal" and stack == "decoder"
    parts = []
    for sub in sublayers(cfg, stack):
        if cfg.norm != "none":
            parts.append(Part(f"{sub}.elementwise.norm", _norm_cost(cfg, tokens), ELEMENTWISE))
        parts.append(Part(f"{sub}.elementwise.residual", tokens * d, ELEMENTWISE))
    # Biases: one add per output element of each biased projection.
    attn_bias = 0
    for sub in sublayers(cfg, stack):
        if sub == "mlp":
            continue
        t_k = w.batch * (w.seq if sub == "cross_attn" else n_self)
        if cfg.bias.qkv:
            attn_bias += tokens * d_q + 2 * t_k * d_kv
        if cfg.bias.attn_out:
            attn_bias += tokens * d
    mlp_bias = tokens * sum(n_out for _, _, n_out in _mlp_matrices(cfg)) if cfg.bias.mlp else 0
    if attn_bias:
        parts.append(Part("attn.elementwise.bias", attn_bias, ELEMENTWISE))
    if mlp_bias:
        parts.append(Part("mlp.elementwise.bias", mlp_bias, ELEMENTWISE))
    gate = 1 if cfg.mlp == "gated" else 0
    parts.append(Part("mlp.elementwise.activation",
                      (_ACTIVATION_PER_ELEMENT[cfg.activation] + gate) * tokens * f, ELEMENTWISE))
    scores = w.batch * cfg.n_heads * attention_pairs(n_self, n_self, causal)
    parts.append(Part("attn.elementwise.softmax", _SOFTMAX_PER_SCORE * scores, ELEMENTWISE))
    if has_cross_attention(cfg, stack):
        cross = w.batch * cfg.n_heads * attention_pairs(w.tgt_seq, w.seq, False)
        parts.append(Part("cross_attn.elementwise.softmax", _SOFTMAX_PER_SCORE * cross,
                          ELEMENTWISE))
    return parts


# --------------------------------------------------------------------------------------------
# Derived figures: crossover and training
# --------------------------------------------------------------------------------------------

def layers_weights_attention(cfg: Arch, w: Workload) -> tuple[int, int]:
    """(weight-GEMM, attention-matrix) FLOPs of all layers: no LM head, no element-wise ops."""
    weights = attention = 0
    for stack, n_layers in stacks(cfg):
        parts = layer_flops(cfg, stack, w)
        weights += n_layers * total(parts, WEIGHTS)
        attention += n_layers * total(parts, ATTENTION)
    return weights, attention


def crossover_seq(cfg: Arch, attention: Attention = "full") -> Fraction:
    """The sequence length s* at which the layers' attention-matrix FLOPs equal their weight-GEMM
    FLOPs (LM head and embeddings excluded). Encoder-decoder: target length = source length.

    In s, the weight FLOPs are W·s and the attention FLOPs A·s² + B·s (B ≠ 0 only for the causal
    pair count s(s+1)/2), so s* = (W − B)/A. W, A and B come exactly from the counts at s = 1, 2.
    Dense MHA, d_ff = 4d, full attention: W = 24·d²·L, A = 4·d·L, B = 0, so s* = 6d.
    """
    w1, a1 = layers_weights_attention(cfg, workload(cfg, 1, 1, 1, attention))
    _, a2 = layers_weights_attention(cfg, workload(cfg, 2, 2, 1, attention))
    quad = Fraction(a2 - 2 * a1, 2)  # A·4 + B·2 − 2·(A + B) = 2A
    lin = a1 - quad
    return (w1 - lin) / quad


def per_token(flops: int, w: Workload) -> Fraction:
    """FLOPs per output token (per training token)."""
    return Fraction(flops, w.output_tokens)


def ceil_fraction(x: Fraction) -> int:
    return -(-x.numerator // x.denominator)


def non_embedding(param_parts: list[Part]) -> int:
    """N of 6ND: all parameters but token and position embeddings and an untied LM head."""
    return total(param_parts) - total(param_parts, EMBEDDING)


def round_fraction(x: Fraction) -> int:
    """Nearest integer, halves away from zero (counts here are never negative)."""
    return (2 * x.numerator + x.denominator) // (2 * x.denominator)


@dataclass(frozen=True, slots=True)
class TrainingCost:
    """Training FLOPs for `tokens` output tokens at one workload; see `training_cost`."""

    tokens: int
    n: int  # the N of 6ND: non-embedding parameters
    forward_per_token: Fraction
    attention_per_token: Fraction
    six_nd: int
    attention_correction: int
    exact: int
    rounded: bool  # True when a per-token figure was fractional and a total was rounded

    @property
    def six_nd_plus_attention(self) -> int:
        return self.six_nd + self.attention_correction


def training_cost(forward: int, attention: int, n_non_embedding: int, w: Workload,
                  tokens: int) -> TrainingCost:
    """Training = forward + backward, with backward = 2 × forward (Kaplan et al. 2020, §2.1):
    3 × forward FLOPs per token × D. 6ND is the same rule with forward ≈ 2N per token."""
    fwd, att = per_token(forward, w), per_token(attention, w)
    exact, correction = 3 * fwd * tokens, 3 * att * tokens
    return TrainingCost(
        tokens=tokens,
        n=n_non_embedding,
        forward_per_token=fwd,
        attention_per_token=att,
        six_nd=6 * n_non_embedding * tokens,
        attention_correction=round_fraction(correction),
        exact=round_fraction(exact),
        rounded=exact.denominator != 1 or correction.denominator != 1,
    )
