"""Training FLOPs under the published conventions, side by side, and seed 004's exact attention
count. Pure arithmetic on ints and Fractions: no I/O, no typer/rich/yaml.

Why tools disagree: each paper's estimate is its own formula, written for the architecture its
authors trained. `compare` evaluates every one of them for the same model at the same sequence
length and sets it against this tool's exact count (`exact_full`, from `flopcalc.counting`).

Notation (SPEC §3): N non-embedding params, N_total all params, L layers, s sequence length,
d d_model, h query heads, h_kv KV heads, d_h head_dim, d_q = h·d_h, d_kv = h_kv·d_h, f d_ff,
V vocab. Every figure is training FLOPs per token (forward + backward) unless a name says not.

Encoder-decoder models: the published formulas are decoder-only. They are applied with L = all
layers (encoder + decoder) and source length = target length = s; each such row says so and what
it leaves out (cross-attention). The exact rows count the real model (`counting.model_flops`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Callable, Optional, Union

from . import counting as c
from .arch import Arch
from .report import exact_number

SCHEMA_VERSION = 1
REFERENCE = "exact_full"

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


# --------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Convention:
    """One published convention: its name, formula and citation, and the function computing it."""

    name: str
    formula: str
    source: str
    per_token: Callable[[Shape, int], Fraction]
    decoder_only: bool = True  # a published decoder-only formula (see the module docstring)
    uses_n: bool = False  # has an N term (which covers cross-attention weights)


PUBLISHED = (
    Convention("six_nd", "6·N", "Kaplan et al. 2020 §2.1 (C ≈ 6ND); N = non-embedding params",
               six_nd, decoder_only=False),
    Convention("six_nd_total", "6·N_total", "the 6ND rule with every parameter (embeddings "
               "included), as quick estimates often apply it", six_nd_total, decoder_only=False),
    Convention("kaplan", "3·(2·N + 2·L·s·d_q)", "Kaplan et al. 2020, Table 1 (its attention "
               "term is the causal average)", kaplan, uses_n=True),
    Convention("palm", "6·N + 12·L·h·d_h·s", "Chowdhery et al. 2022 (PaLM), Appendix B; "
               "nanoGPT's estimate_mfu", palm, uses_n=True),
    Convention("megatron", "72·B·s·L·d²·(1 + s/(6d) + V/(12·d·L)) / (B·s)",
               "Narayanan et al. 2021 (Megatron-LM), §5.1, without recomputation", megatron),
    Convention("chinchilla", "3·(2·s·V·d + L·(2·s·d·(d_q + 2·d_kv) + 2·s²·d_q + 3·h·s² + "
               "2·s²·d_q + 2·s·d_q·d + 2·s·k·d·f) + 2·s·d·V) / s, k = 2 MLP matrices (3 if "
               "gated)", "Hoffmann et al. 2022 (Chinchilla), Appendix F, with the model's real "
               "K/V and MLP shapes; backward = 2 × forward", chinchilla),
)

EXACT_SOURCE = ("flopcalc's exact count, as in flopcalc model: every matmul of this model, "
                "LM head included")


@dataclass
class Row:
    """One convention evaluated for one model: per token, for D tokens, and against exact_full."""

    name: str
    per_token: Union[int, float]  # an int when whole, else the nearest float (rounded: true)
    per_token_exact: str  # the exact rational, e.g. "1049624211456" or "123/7"
    total: int  # per_token × D, rounded to the nearest integer when not whole (rounded: true)
    delta_pct: float  # 100·(per_token − exact_full) / exact_full: negative = below exact
    formula: str
    source: str
    assumption_violated: bool = False
    rounded: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class Spread:
    """The largest and smallest per-token figure among the rows, and their ratio."""

    max: str
    min: str
    ratio: float


@dataclass
class ConventionsReport:
    schema_version: int
    model: dict[str, str]
    settings: dict[str, Any]
    dims: dict[str, Any]
    conventions: list[Row]
    reference: str
    spread: Spread
    how_counted: list[str]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _decoder_only_note(m: Shape, s: int, uses_n: bool) -> str:
    dec = m.n_layers - m.n_encoder_layers
    weights = ", though N includes its weights" if uses_n else ""
    return (f"decoder-only formula applied to all L = {m.n_layers} layers ({m.n_encoder_layers} "
            f"encoder + {dec} decoder) with source length = target length = {s:,}; it has no "
            f"cross-attention term{weights}")


def _pct(x: Fraction, ref: Fraction) -> float:
    return float(100 * (x - ref) / ref) if ref else 0.0


def _row(name: str, per_token: Fraction, tokens: int, ref: Fraction, formula: str, source: str,
         notes: list[str], violated: bool = False) -> Row:
    total = per_token * tokens
    return Row(name=name, per_token=exact_number(per_token), per_token_exact=str(per_token),
               total=c.round_fraction(total), delta_pct=_pct(per_token, ref), formula=formula,
               source=source, assumption_violated=violated,
               rounded=per_token.denominator != 1 or total.denominator != 1, notes=notes)


def rows(cfg: Arch, seq: int, tokens: int, recompute: bool = False) -> list[Row]:
    """Every convention for `cfg` at sequence length `seq` and D = `tokens`, exact rows last.

    `recompute`: the exact rows count one more forward pass (full activation recomputation):
    hardware FLOPs rather than model FLOPs. The published rows are unchanged.
    """
    m = shape_of(cfg)
    passes = 4 if recompute else 3
    ref = exact(cfg, seq, "full", passes)
    out = []
    for conv in PUBLISHED:
        notes = [_decoder_only_note(m, seq, conv.uses_n)] if (
            conv.decoder_only and cfg.is_encoder_decoder) else []
        broken = megatron_assumptions(m) if conv.name == "megatron" else []
        out.append(_row(conv.name, conv.per_token(m, seq), tokens, ref, conv.formula,
                        conv.source, broken + notes, violated=bool(broken)))
    passes_text = "4 × forward" if recompute else "3 × forward"
    extra = ["--recompute full: one extra forward pass recomputes the activations, so these "
             "are hardware FLOPs (4 × forward), not model FLOPs"] if recompute else []
    out.append(_row("exact_full", ref, tokens, ref, f"{passes_text}, full attention (s² pairs)",
                    EXACT_SOURCE, list(extra)))
    out.append(_row("exact_causal", exact(cfg, seq, "causal", passes), tokens, ref,
                    f"{passes_text}, causal attention (s(s+1)/2 pairs)", EXACT_SOURCE,
                    list(extra)))
    return out


def spread(table: list[Row]) -> Spread:
    hi = max(table, key=lambda r: Fraction(r.per_token_exact))
    lo = min(table, key=lambda r: Fraction(r.per_token_exact))
    return Spread(hi.name, lo.name,
                  float(Fraction(hi.per_token_exact) / Fraction(lo.per_token_exact)))


def how_counted(cfg: Arch, m: Shape, recompute: bool) -> list[str]:
    lines = [
        "2 FLOPs per multiply-add: a matmul (T x in)·(in x out) costs 2·T·in·out",
        f"N = non-embedding params = {m.n:,} (total minus token and position embeddings and "
        f"an untied LM head); N_total = {m.n_total:,}",
        "training = 3 x forward (backward = 2 x forward); figures are per training token",
        f"delta_pct: 100·(row − {REFERENCE}) / {REFERENCE}; negative = below exact",
        "exact rows: every matmul counted, LM head included; not counted: bias adds, norms, "
        "activations, softmax, residual adds, embedding lookups",
    ]
    if recompute:
        lines.append("--recompute full: exact rows count 4 x forward (hardware FLOPs); the "
                     "published rows are model FLOPs as their papers define them (Megatron's "
                     "own 4-pass form is 96·B·s·L·d²·(1 + s/(6d) + V/(16·d·L)))")
    if cfg.is_encoder_decoder:
        lines.append("encoder-decoder: source length = target length = s; D counts target "
                     "tokens; the published formulas are decoder-only and use L = encoder + "
                     "decoder layers")
    return lines


def report(name: str, cfg: Arch, seq: int, tokens: int, tokens_source: str,
           recompute: bool = False) -> ConventionsReport:
    """The `flopcalc conventions` report: every row, the settings, and what was assumed."""
    m = shape_of(cfg)
    table = rows(cfg, seq, tokens, recompute)
    warnings = []
    if cfg.max_seq_len and seq > cfg.max_seq_len:
        warnings.append(f"--seq {seq:,} exceeds {name}'s context of {cfg.max_seq_len:,} "
                        "tokens; the counts are given for the longer sequence anyway")
    return ConventionsReport(
        schema_version=SCHEMA_VERSION,
        model={"name": name, "title": cfg.title or name, "architecture": cfg.architecture},
        settings={"seq": seq, "tokens": tokens, "tokens_source": tokens_source,
                  "recompute": "full" if recompute else "none",
                  "flops": "hardware" if recompute else "model"},
        dims={"n_layers": m.n_layers, "n_encoder_layers": m.n_encoder_layers,
              "d_model": m.d_model, "n_heads": m.n_heads, "n_kv_heads": m.kv_heads,
              "head_dim": m.head_dim, "d_q": m.d_q, "d_kv": m.d_kv, "d_ff": m.d_ff,
              "mlp": "gated" if m.gated else "plain", "vocab_size": m.vocab,
              "n": m.n, "n_total": m.n_total},
        conventions=table,
        reference=REFERENCE,
        spread=spread(table),
        how_counted=how_counted(cfg, m, recompute),
        warnings=warnings,
    )


# --------------------------------------------------------------------------------------------
# The line under the `model` table's training section
# --------------------------------------------------------------------------------------------

def _relative(x: Fraction, ref: Fraction) -> str:
    """'27.7% below', '3.0% above' or 'within 0.1% of' (as in '... exact')."""
    pct = _pct(x, ref)
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
