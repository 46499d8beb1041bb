"""The published training-FLOP formulas, each for one model at one sequence length, and the
one-line comparison the `model` table prints. Pure arithmetic on ints and Fractions.

Notation (SPEC §3): N non-embedding params (active ones for a mixture of experts), N_total all
params, L layers, s sequence length, d d_model, h query heads, d_h head width, d_q = h·d_h,
V vocab. Sums over layers (Σ d_q) replace L·d_q where layers differ. Every figure is training
FLOPs per token (forward + backward). The papers' formulas know nothing of windows: each counts
its attention term at the full length s, as its paper does.

The codebases' own FLOP functions (Megatron-LM's, MaxText's: `codebase`) are evaluated on the
whole model, each sublayer by its kind's `formula` term, as those functions would count it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..kinds.base import WEIGHTS, Convention, Published, Scan, total
from ..kinds.masks import Mask
from ..models.spec import ModelSpec
from .model import (model_flops, model_params, mtp_flops, non_embedding, output_tokens,
                    workload)


@dataclass(frozen=True, slots=True)
class Shape:
    """A model reduced to the symbols of the published formulas."""

    n_layers: int  # L: every layer; encoder + decoder for an encoder-decoder model
    n_encoder_layers: int
    d_model: int
    vocab: int
    attn_width: int  # Σ over layers of h·d_h (L·d_q when every layer is alike): queries/keys
    attn_v_width: int  # Σ over layers of h·d_v: the values (= attn_width unless they differ)
    n: int  # N: non-embedding params, active ones of a mixture of experts
    n_total: int  # N_total: every parameter, every expert
    n_matmul: int  # every parameter but lookup tables: a tied LM head counts, positions do not


def mixers_published(spec: ModelSpec) -> list[tuple[int, Published]]:
    """(layers, symbols) of every token mixer of every group (cross-attention left out: the
    formulas are decoder-only)."""
    return [(g.count, m.published(spec.d_model)) for g in spec.groups() for m in g.layer.mixers]


def shape_of(spec: ModelSpec) -> Shape:
    parts, active = model_params(spec), model_params(spec, active=True)
    lookup = sum(p.value for p in parts if p.lookup)
    return Shape(
        n_layers=spec.n_layers(), n_encoder_layers=spec.n_layers("encoder"),
        d_model=spec.d_model, vocab=spec.vocab_size,
        attn_width=sum(n * m.qk_width for n, m in mixers_published(spec)),
        attn_v_width=sum(n * m.v_width for n, m in mixers_published(spec)),
        n=non_embedding(active), n_total=total(parts),
        n_matmul=total(active) - lookup,
    )


# ------------------------------------------------------- the conventions, per token at length s

def six_nd(m: Shape, s: int) -> Fraction:
    """6·N per token, N non-embedding (Kaplan et al. 2020, §2.1: C ≈ 6N). No attention term."""
    return Fraction(6 * m.n)


def six_nd_total(m: Shape, s: int) -> Fraction:
    """6·N_total per token: the rule with every parameter, embeddings included. GPT-3's Table
    D.1 (Brown et al. 2020: 3.14e23 FLOPs for 175B) and Llama 3's 3.8e25 for 405B on 15.6T
    tokens (Llama Team 2024) are this figure times D."""
    return Fraction(6 * m.n_total)


def kaplan(m: Shape, s: int) -> Fraction:
    """Kaplan et al. 2020, "Scaling Laws for Neural Language Models" (arXiv:2001.08361), Table 1:
    C_forward = 2N + 2·n_layer·n_ctx·d_attn, training 3 × forward. Its context term counts one
    n_ctx-long product per layer, half of the 4·s·d_q the two attention matmuls cost at full
    length (flopcalc's reading: the causal average)."""
    # 3·(2·N + 2·Σ_layers s·d_q)
    return Fraction(3 * (2 * m.n + 2 * s * m.attn_width))


def palm(m: Shape, s: int) -> Fraction:
    """Chowdhery et al. 2022, "PaLM" (arXiv:2204.02311), Appendix B: model FLOPs per token
    6N + 12·L·H·Q·T (H heads of width Q, T the sequence length), where N is every matmul
    weight: PaLM's own 540.35B includes its shared embedding, nanoGPT's `estimate_mfu` keeps the
    tied token embedding (dropping only positions) and torchtitan counts the output layer. So N
    here is every parameter but lookup tables (position and token-type tables, an untied input
    embedding). The attention term is full attention, 3 × 2·L·s·(d_q + d_v): PaLM's Q is the
    one head width of both attention matmuls (scores over d_q, values over d_v); where they
    differ (latent attention: 192 and 128) each matmul takes its own, 6·L·H·(Q_k + Q_v)·T."""
    # 6·N_matmul + 6·Σ_layers s·(h·d_qk + h·d_v)  (= 12·Σ h·d_h·s when d_v = d_qk)
    return Fraction(6 * m.n_matmul + 6 * s * (m.attn_width + m.attn_v_width))


def megatron(m: Shape, s: int) -> Fraction:
    """Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
    Using Megatron-LM" (SC'21, arXiv:2104.04473), §5.1, without activation recomputation (3
    passes, not their 4): 72·B·s·L·d²·(1 + s/(6d) + V/(12·d·L)) per batch of B sequences.
    Written for multi-head attention with h·d_h = d and a two-matrix MLP with d_ff = 4d;
    `megatron_assumptions` lists where a model departs from that."""
    d, L = m.d_model, m.n_layers
    # 72·B·s·L·d²·(1 + s/(6d) + V/(12dL)) / (B·s) = 72·L·d² + 12·L·d·s + 6·d·V
    return 72 * L * d * d * (1 + Fraction(s, 6 * d) + Fraction(m.vocab, 12 * d * L))


def megatron_assumptions(spec: ModelSpec) -> list[str]:
    """Where the model differs from the block Megatron's formula was derived for (empty: none):
    each kind's own departures, then an MLP width other than 4d, then h·d_h other than d."""
    d = spec.d_model
    mixers = [m for _, m in mixers_published(spec)]
    # Mixtures of experts first, then dense MLPs: the widths below are the dense ones.
    ffns = sorted((g.layer.ffn.published(d) for g in spec.groups() if g.layer.ffn is not None),
                  key=lambda f: not f.experts)
    broken = list(dict.fromkeys(x for m in mixers + ffns for x in m.departures))
    widths = sorted({w for f in ffns for w in f.ffn_widths if w != 4 * d})
    if widths:
        broken.append(f"assumes d_ff = 4d = {4 * d:,}; this model has d_ff = "
                      + " and ".join(f"{w:,}" for w in widths))
    d_qs = sorted({w for m in mixers for w in (m.qk_width, m.v_width) if w and w != d})
    if d_qs:
        broken.append(f"assumes h·d_h = d; this model has h·d_h = {d_qs[0]:,} and d = {d:,}")
    return broken


def chinchilla_forward_per_sequence(spec: ModelSpec, s: int) -> int:
    """Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (arXiv:2203.15556),
    Appendix F: forward FLOPs of one sequence, with this model's real projection and MLP shapes
    (its weight matmuls as flopcalc counts them: GQA's narrower K and V, three gated matrices,
    the k routed experts of a mixture).

    Counted as Appendix F prints it: the embedding lookup as a matmul (2·s·V·d), softmax at 3
    FLOPs per score, full (not causal) attention, the final logits; no norms, biases or
    activations; no cross-attention (a decoder-only formula).
    """
    d, V = spec.d_model, spec.vocab_size
    w = workload(spec, s)  # one sequence, full attention (the defaults)
    embeddings = 2 * s * V * d  # their convention: the lookup costs a (s×V)·(V×d) matmul
    layers = 0
    for g in spec.groups():
        span = w.span(g.stack, "")  # self-attention and the feed-forward block
        own = [kind for kind in (*g.layer.mixers, g.layer.ffn) if kind is not None]
        weights = sum(total(kind.forward(d, span), WEIGHTS) for kind in own)
        layers += g.count * weights
        for m in g.layer.mixers:
            att = m.published(d)
            logits = 2 * s * s * att.qk_width  # QKᵀ, every head: (s×d_h)·(d_h×s)
            softmax = 3 * att.heads * s * s  # 3 per score, every head
            reductions = 2 * s * s * att.v_width  # softmax · V, every head
            layers += g.count * (logits + softmax + reductions)
    final_logits = 2 * s * d * V  # (s×d)·(d×V)
    return embeddings + layers + final_logits


def chinchilla(spec: ModelSpec, s: int) -> Fraction:
    """Hoffmann et al. 2022, Appendix F: backward = 2 × forward, so 3 × forward per sequence,
    divided by its s tokens."""
    return Fraction(3 * chinchilla_forward_per_sequence(spec, s), s)


# ---------------------------------------------------- the codebases' own formulas, per model

# The upstream commits the codebase rows transcribe (their kinds' `formula` terms cite them).
MEGATRON_LM_COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
MAXTEXT_COMMIT = "e591f30cbbf217ed67ef71263ec0538239f9c3b8"
CODEBASES = {
    "megatron_lm": "Megatron-LM's GPT path (transformer_flops)",
    "megatron_lm_hybrid": "Megatron-LM's hybrid path (hybrid_flops)",
    "maxtext": "MaxText's calculate_tflops_training_per_device",
}


@dataclass(frozen=True, slots=True)
class CodebaseCount:
    """A codebase's training FLOPs per token for one model, or None where its formula has no
    term for some part of the model; `notes`: where its count departs from the model, or, for
    None, why it does not apply."""

    per_token: Optional[Fraction]
    notes: tuple[str, ...]


def mixes_local_and_global(spec: ModelSpec) -> bool:
    """Whether the model has both local attention layers (a window or chunk bounds what they
    see) and global ones: the decoder blocks (Gemma 2/3/4, GPT-OSS, Llama 4) in which MaxText
    counts windows and chunks; its other blocks count every layer causal."""
    masks = [mask for g in spec.groups() for m in g.layer.mixers for _, mask in m.pair_terms()
             if isinstance(mask, Mask)]
    local = [mask.cache_bound is not None for mask in masks]
    return any(local) and not all(local)


def codebase(spec: ModelSpec, s: int, name: str) -> CodebaseCount:
    """Training FLOPs per token under codebase `name` (`CODEBASES`), as its function computes
    them for one sequence of s tokens, divided by its s tokens: 3 × (Σ over every sublayer of
    every layer of the kind's `formula` term + the codebase's output term), the MTP modules
    included where the model trains with them.

    Output terms per token: Megatron-LM (num_floating_point_operations, which returns the
    batch's total) the logits 2·d·V on every prediction head, 2·d·V·(1 + mtp), and on its GPT
    path each MTP module's 2d → d projection and norms, 2·(2·d² + 3·d); MaxText
    (calculate_tflops_training_per_device, per device for per_device_batch_size·
    max_target_length tokens, split into learnable-weight and attention TFLOPs: the total is
    their sum) its embedding_flops 2·d·V once, each MTP module its last layer without a head.
    Not applicable to encoders and encoder-decoder models (the formulas are decoder-only), to
    a token embedding of another width than d_model, or where a sublayer's `formula` is None.
    """
    label = CODEBASES[name]
    if spec.architecture != "decoder-only":
        return CodebaseCount(None, (f"not applicable: {label} is written for decoder-only "
                                    f"models; this one is {spec.architecture}",))
    if spec.embed_dim is not None:
        return CodebaseCount(None, (f"not applicable: {label} takes the logits d_model wide; "
                                    f"this model's embedding is {spec.embed_dim:,} wide",))
    d, mtp = spec.d_model, spec.mtp_layers
    local = name == "maxtext" and mixes_local_and_global(spec)
    layers = [(g.count, kind) for g in spec.groups() for _, kind in g.layer.slots()]
    layers += [(mtp, kind) for _, kind in spec.mtp_layer.slots()] if mtp else []
    forward, notes = Fraction(0), []
    for count, kind in layers:
        term = kind.formula(name, d, s, local=local)
        if term is None:
            return CodebaseCount(None, (f"not applicable: {label} has no term for this model's "
                                        f"{kind.describe()} layers",))
        forward += count * term
        notes += kind.formula_notes(name, d, s, local=local)
    forward += _output_flops(spec, name)
    return CodebaseCount(3 * forward, tuple(dict.fromkeys(notes + _output_notes(spec, name))))


def _output_flops(spec: ModelSpec, name: str) -> int:
    """Forward FLOPs per token outside the layers: MaxText's embedding_flops, 2·d·V once (its
    MTP modules share the head and add none); Megatron-LM's logits, 2·d·V for the model and
    each MTP module, and on its GPT path each module's 2d → d projection and norms."""
    d, V, mtp = spec.d_model, spec.vocab_size, spec.mtp_layers
    if name == "maxtext":
        return 2 * d * V  # (T×d)·(d×V)
    head = 2 * d * V * (1 + mtp)  # (T×d)·(d×V) on every prediction head
    if name == "megatron_lm":  # eh_proj (T×2d)·(2d×d), and the code's "3·d" for the norms
        head += mtp * 2 * (2 * d * d + 3 * d)
    return head


def _output_notes(spec: ModelSpec, name: str) -> list[str]:
    """Where the codebase's output and MTP terms depart from the model."""
    V, mtp, notes = spec.vocab_size, spec.mtp_layers, []
    if name != "maxtext" and V % 128:
        notes.append(f"logits at this model's V = {V:,}; Megatron-LM pads the vocabulary to "
                     "a multiple of 128 x TP (make-vocab-size-divisible-by), each padded row "
                     "2·d more per token")
    if name == "maxtext" and spec.towers:
        notes.append("text tokens only, as the exact rows without --images: with "
                     "use_multimodal MaxText adds its vision encoder's FLOPs")
    modules = f"the {mtp} multi-token-prediction module{'s' if mtp > 1 else ''}"
    if mtp and name == "megatron_lm_hybrid":
        notes.append(f"{modules} counted as their layers ('/' in hybrid_layer_pattern) and "
                     "their logits; hybrid_flops has no term for their 2d → d projection")
    elif mtp and name == "megatron_lm":
        notes.append(f"{modules} counted as the codebase does: a layer of the last layer's "
                     "kind, the 2d → d projection, its norms as 3·d and the logits")
    elif mtp:
        notes.append(f"{modules} counted as the codebase does: a layer of the last layer's "
                     "kind, no projection and no head")
    return notes


def exact(spec: ModelSpec, s: int, attention: Convention, passes: int, scan: Scan,
          mtp: bool = True, packed: tuple[int, ...] = ()) -> Fraction:
    """This tool's count: `passes` × the exact forward FLOPs per output token (LM head and
    attention included), with the multi-token-prediction modules that train with the model
    (`mtp=False`: without them, the model that serves). 3 passes: forward + a backward of twice
    the forward; 4 with full activation recomputation (one more forward). `scan`: how chunked
    scans count their core (`Workload.scan`); `packed`: sample lengths packed into each
    sequence (`Workload.packed`)."""
    w = workload(spec, s, attention=attention, scan=scan, packed=packed)
    forward = total(model_flops(spec, w)) + (total(mtp_flops(spec, w)) if mtp else 0)
    return passes * Fraction(forward, output_tokens(spec, w))


def delta_pct(x: Fraction, ref: Fraction) -> float:
    return float(100 * (x - ref) / ref) if ref else 0.0


def _relative(x: Fraction, ref: Fraction) -> str:
    """'27.7% below', '3.0% above' or 'within 0.1% of' (as in '... exact')."""
    pct = delta_pct(x, ref)
    if round(pct, 1) == 0:
        return "within 0.1% of"
    return f"{abs(pct):.1f}% {'below' if pct < 0 else 'above'}"


def model_line(spec: ModelSpec, seq: int, name: str, attention: Convention,
               tgt_seq: Optional[int] = None, scan: Scan = "chunked") -> str:
    """One sentence for the `model` table: how 6ND and PaLM compare with the exact count of that
    report (same seq, target length, attention and scan form), and where to see the other conventions.
    Plain text, no rich markup. E.g. for llama-3.1-8b at seq 8192:
    '6ND is 27.7% below exact, PaLM 5.4% below; flopcalc conventions llama-3.1-8b --seq 8192
    adds Kaplan, Megatron, Chinchilla and the Megatron-LM and MaxText codebases'
    """
    m = shape_of(spec)
    w = workload(spec, seq, tgt_seq, attention=attention, scan=scan)
    ref = 3 * Fraction(total(model_flops(spec, w)) + total(mtp_flops(spec, w)),
                       output_tokens(spec, w))  # training.exact: MTP modules included
    palm_vs = _relative(palm(m, seq), ref).removesuffix(" of")
    flag = "" if scan == "chunked" else f" --scan {scan}"
    return (f"6ND is {_relative(six_nd(m, seq), ref)} exact, PaLM {palm_vs}; flopcalc "
            f"conventions {name} --seq {seq}{flag} adds Kaplan, Megatron, Chinchilla and the "
            "Megatron-LM and MaxText codebases")
