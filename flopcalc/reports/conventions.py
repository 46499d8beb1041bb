"""The `conventions` report: training FLOPs under the published conventions, side by side.

Why tools disagree: each paper's estimate is its own formula (`counting.published`), written
for the architecture its authors trained. This report evaluates every one of them for the same
model at the same sequence length and sets it against this tool's exact count (`exact_full`).

Encoder-decoder models: the published formulas are decoder-only. They are applied with L = all
layers (encoder + decoder) and source length = target length = s; each such row says so and what
it leaves out (cross-attention). The exact rows count the real model.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Callable, Optional, Union

from ..records import dataclass
from ..kinds.base import Scan, round_fraction
from ..counting.published import (MAXTEXT_COMMIT, MEGATRON_LM_COMMIT, Shape, chinchilla,
                                  codebase, delta_pct, exact, kaplan, megatron,
                                  megatron_assumptions, palm, shape_of, six_nd, six_nd_total)
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..numbers import counted
from .common import (SCHEMA_VERSION, ModelInfo, Report, chunked_scans, context_warning,
                     exact_number, first_attention, first_ffn, model_info, scan_lines)

REFERENCE = "exact_full"


@dataclass(frozen=True, slots=True)
class Convention:
    """One published convention: its name, formula and citation, and the function computing it
    (None: the convention cannot count this model)."""

    name: str
    formula: str
    source: str
    # None: a codebase's own function, whose value and notes come from `codebase`
    per_token: Optional[Callable[[Shape, int], Optional[Fraction]]]
    decoder_only: bool = True  # a published decoder-only formula (see the module docstring)
    uses_n: bool = False  # has an N term (which covers cross-attention weights)
    on_spec: bool = False  # computed from the whole model rather than its Shape


PUBLISHED = (
    Convention("six_nd", "6·N", "Kaplan et al. 2020 §2.1 (C ≈ 6ND); N = non-embedding params "
               "(active ones for a mixture of experts)", six_nd, decoder_only=False),
    Convention("six_nd_total", "6·N_total", "the 6ND rule with every parameter (embeddings and "
               "every expert included): GPT-3's Table D.1 (Brown et al. 2020) and Llama 3's "
               "3.8e25 FLOPs (Llama Team 2024) are this times D", six_nd_total,
               decoder_only=False),
    Convention("kaplan", "3·(2·N + 2·L·s·d_q)", "Kaplan et al. 2020, Table 1: C_forward = 2N + "
               "2·n_layer·n_ctx·d_attn (flopcalc's reading of its context term: the causal "
               "average of the two attention matmuls)", kaplan, uses_n=True),
    Convention("palm", "6·N_matmul + 12·L·h·d_h·s", "Chowdhery et al. 2022 (PaLM), Appendix B, "
               "with N every matmul weight (a tied LM head included, as PaLM's 540.35B, "
               "nanoGPT's estimate_mfu and torchtitan count it)", palm, uses_n=True),
    Convention("megatron", "72·B·s·L·d²·(1 + s/(6d) + V/(12·d·L)) / (B·s)",
               "Narayanan et al. 2021 (Megatron-LM), §5.1, without recomputation", megatron),
    Convention("chinchilla", "3·(2·s·V·d + L·(2·s·d·(d_q + 2·d_kv) + 2·s²·d_q + 3·h·s² + "
               "2·s²·d_q + 2·s·d_q·d + 2·s·k·d·f) + 2·s·d·V) / s, k = 2 MLP matrices (3 if "
               "gated)", "Hoffmann et al. 2022 (Chinchilla), Appendix F as printed (embedding "
               "and logit terms included), with the model's real K/V and MLP shapes; backward = "
               "2 × forward", chinchilla, on_spec=True),  # type: ignore[arg-type]
    Convention("megatron_lm", "3·(Σ_layers (attention + MLP or MoE) + 2·d·V·(1 + mtp) + "
               "mtp·2·(2·d² + 3·d)), attention 2·(d·(d_q + 2·d_kv + gate) + d_q·d) + 2·s·d_q",
               "Megatron-LM, megatron/training/training.py, num_floating_point_operations, GPT "
               f"path (transformer_flops), at commit {MEGATRON_LM_COMMIT}; its batch total "
               "per token", None, on_spec=True),
    Convention("megatron_lm_hybrid", "3·(Σ_layers (attention, Mamba, gated DeltaNet, MLP or "
               "MoE term) + 2·d·V·(1 + mtp)), Mamba 2·d·(4d + 2·G·N + H) + 14·d·N + 4·d²",
               "Megatron-LM, megatron/training/training.py, num_floating_point_operations, "
               f"hybrid path (hybrid_flops, a model with a hybrid_layer_pattern), at commit "
               f"{MEGATRON_LM_COMMIT}; its batch total per token", None, on_spec=True),
    Convention("maxtext", "3·(Σ_layers (qkv + projection + causal attention + FFN, router "
               "included) + 2·d·V), causal attention 2·s·h·d_h (windows and chunks by their keys "
               "in models mixing local and global layers)",
               "MaxText, src/maxtext/utils/maxtext_utils.py, calculate_tflops_training_per_device "
               f"(learnable-weight + attention TFLOPs), at commit {MAXTEXT_COMMIT}; its per-device "
               "total per token", None, on_spec=True),
)

EXACT_SOURCE = ("flopcalc's exact count, as in flopcalc model: every matmul of this model, "
                "LM head included")


@dataclass
class Row:
    """One convention evaluated for one model: per token, for D tokens, and against exact_full."""

    name: str
    # None in the four figures: not applicable (the convention cannot count this model; the
    # notes say why)
    per_token: Optional[Union[int, float]]  # an int when whole, else the nearest float
    per_token_exact: Optional[str]  # the exact rational, e.g. "1049624211456" or "123/7"
    total: Optional[int]  # per_token × D, rounded to the nearest integer when not whole
    delta_pct: Optional[float]  # 100·(per_token − exact_full) / exact_full: negative = below
    formula: str
    source: str
    assumption_violated: bool = False
    rounded: bool = False
    notes: list[str] = field(default_factory=list)
    applicable: bool = True


@dataclass
class Spread:
    """The largest and smallest per-token figure among the rows, and their ratio."""

    max: str
    min: str
    ratio: float


@dataclass
class ConventionsSettings:
    seq: int
    tokens: int
    tokens_source: str
    recompute: str
    flops: str  # "model", or "hardware" with recomputation
    scan: str  # how the exact rows count chunked scans' core (--scan): chunked or recurrent


@dataclass
class Dims:
    """The symbols of the formulas, from the model's first decoder (or encoder) layer."""

    n_layers: int
    n_encoder_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_q: int
    d_kv: int
    d_ff: int
    mlp: str
    vocab_size: int
    n: int
    n_total: int
    n_matmul: int
    layers_alike: bool  # False: the layers differ, and the formulas use sums over layers


@dataclass
class ConventionsReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: ConventionsSettings
    dims: Dims
    conventions: list[Row]
    reference: str
    spread: Spread
    how_counted: list[str]
    warnings: list[str] = field(default_factory=list)


def _decoder_only_note(m: Shape, s: int, uses_n: bool) -> str:
    dec = m.n_layers - m.n_encoder_layers
    weights = ", though N includes its weights" if uses_n else ""
    return (f"decoder-only formula applied to all L = {m.n_layers} layers ({m.n_encoder_layers} "
            f"encoder + {dec} decoder) with source length = target length = {s:,}; it has no "
            f"cross-attention term{weights}")


def _window_note(spec: ModelSpec) -> Optional[str]:
    local = sorted({mask.describe() for g in spec.groups() for m in g.layer.mixers
                    for _, mask in m.pair_terms() if mask.keys_bounded})
    if not local:
        return None
    return (f"counts every layer's attention at the full length; this model's "
            f"{' and '.join(local)} layers see fewer keys (exact_causal counts them)")


def _row(name: str, per_token: Optional[Fraction], tokens: int, ref: Fraction, formula: str,
         source: str, notes: list[str], violated: bool = False) -> Row:
    if per_token is None:
        return Row(name=name, per_token=None, per_token_exact=None, total=None, delta_pct=None,
                   formula=formula, source=source, notes=notes, applicable=False)
    total = per_token * tokens
    return Row(name=name, per_token=exact_number(per_token), per_token_exact=str(per_token),
               total=round_fraction(total), delta_pct=delta_pct(per_token, ref),
               formula=formula, source=source, assumption_violated=violated,
               rounded=per_token.denominator != 1 or total.denominator != 1, notes=notes)


def rows(spec: ModelSpec, seq: int, tokens: int, recompute: bool = False,
         scan: Scan = "chunked") -> list[Row]:
    """Every convention for `spec` at sequence length `seq` and D = `tokens`, exact rows last.

    `recompute`: the exact rows count one more forward pass (full activation recomputation):
    hardware FLOPs rather than model FLOPs. `scan`: how the exact rows count chunked scans'
    core (--scan). The published rows are unchanged by either.
    """
    m = shape_of(spec)
    passes = 4 if recompute else 3
    ref = exact(spec, seq, "full", passes, scan)
    window = _window_note(spec)
    out = []
    for conv in PUBLISHED:
        notes = [_decoder_only_note(m, seq, conv.uses_n)] if (
            conv.decoder_only and spec.is_encoder_decoder) else []
        if window and conv.name in ("kaplan", "palm", "megatron", "chinchilla"):
            notes.append(window)
        broken = megatron_assumptions(spec) if conv.name == "megatron" else []
        if conv.name == "palm" and m.attn_v_width != m.attn_width:
            notes.append(f"query/key width {m.attn_width:,} and value width {m.attn_v_width:,} "
                         "(summed over layers) differ: the attention term is "
                         "6·L·H·(Q_k + Q_v)·T, PaLM's 12·L·H·Q·T with each matmul's own width")
        if conv.per_token is None:  # a codebase: value and notes (or why not) in one walk
            count = codebase(spec, seq, conv.name)
            value, notes = count.per_token, list(count.notes)
        else:
            value = conv.per_token(spec if conv.on_spec else m, seq)  # type: ignore[arg-type]
        out.append(_row(conv.name, value, tokens, ref, conv.formula, conv.source,
                        broken + notes, violated=bool(broken)))
    passes_text = "4 × forward" if recompute else "3 × forward"
    extra = ["--recompute full: one extra forward pass recomputes the activations (the LM head "
             "included), so these are hardware FLOPs (4 × forward), not model FLOPs"] \
        if recompute else []
    if spec.mtp_layers:
        served = {a: exact(spec, seq, a, passes, scan, mtp=False) for a in ("full", "causal")}
        extra.append(f"with {counted(spec.mtp_layers, 'multi-token-prediction module')}, "
                     f"trained with the model: {exact_number(ref - served['full']):,} per "
                     f"token; without: {exact_number(served['full']):,} (full), "
                     f"{exact_number(served['causal']):,} (causal)")
    out.append(_row("exact_full", ref, tokens, ref, f"{passes_text}, full attention (s² pairs)",
                    EXACT_SOURCE, list(extra)))
    out.append(_row("exact_causal", exact(spec, seq, "causal", passes, scan), tokens, ref,
                    f"{passes_text}, causal attention (the pairs each layer's mask lets through)",
                    EXACT_SOURCE, list(extra)))
    return out


def spread(table: list[Row]) -> Spread:
    """Over the rows that apply (the exact rows always do)."""
    value = {r.name: Fraction(r.per_token_exact) for r in table if r.per_token_exact is not None}
    hi, lo = max(value, key=value.__getitem__), min(value, key=value.__getitem__)
    return Spread(hi, lo, float(value[hi] / value[lo]))


def how_counted(spec: ModelSpec, m: Shape, recompute: bool, scan: str) -> list[str]:
    active = "active non-embedding" if spec.is_moe else "non-embedding"
    lines = [
        "2 FLOPs per multiply-add: a matmul (T x in)·(in x out) costs 2·T·in·out",
        f"N = {active} params = {m.n:,} (total minus token and position embeddings and an "
        f"untied LM head); N_total = {m.n_total:,}; N_matmul = {m.n_matmul:,} (every parameter "
        "but lookup tables)",
        "training = 3 x forward (backward = 2 x forward); figures are per training token",
        f"delta_pct: 100·(row − {REFERENCE}) / {REFERENCE}; negative = below exact",
        "exact rows: every matmul counted, LM head included; not counted: bias adds, norms, "
        "activations, softmax, residual adds, embedding lookups",
    ]
    if recompute:
        lines.append("--recompute full: exact rows count 4 x forward (hardware FLOPs), the LM "
                     "head's 2·d·V per token recomputed too; Megatron's own 4-pass form, "
                     "96·B·s·L·d²·(1 + s/(6d) + V/(16·d·L)), recomputes the layers only, so it is "
                     "2·d·V per token below exact_full here; the published rows are model FLOPs "
                     "as their papers define them")
    if spec.is_encoder_decoder:
        lines.append("encoder-decoder: source length = target length = s; D counts target "
                     "tokens; the published formulas are decoder-only and use L = encoder + "
                     "decoder layers")
    return lines + [f"exact rows: {line}" for line in scan_lines(scan, chunked_scans(spec))]


def _dims(spec: ModelSpec, m: Shape) -> Dims:
    att = first_attention(spec, spec.output_stack)
    first = spec.groups(spec.output_stack)[0].layer.ffn
    ffn = first.published(spec.d_model) if first is not None else first_ffn(spec)
    width = ffn.expert_width or (ffn.ffn_widths[0] if ffn.ffn_widths else 0)
    return Dims(n_layers=m.n_layers, n_encoder_layers=m.n_encoder_layers, d_model=m.d_model,
                n_heads=att.heads, n_kv_heads=att.kv_heads, head_dim=att.head_dim,
                d_q=att.qk_width, d_kv=att.kv_width, d_ff=width, mlp=ffn.ffn,
                vocab_size=m.vocab, n=m.n,
                n_total=m.n_total, n_matmul=m.n_matmul,
                layers_alike=len(spec.groups(spec.output_stack)) == 1)


def build_conventions_report(loaded: LoadedModel, seq: int, tokens: int, tokens_source: str,
                             recompute: bool = False, scan: Scan = "chunked"
                             ) -> ConventionsReport:
    """Every row, the settings, and what was assumed."""
    spec = loaded.spec
    m = shape_of(spec)
    table = rows(spec, seq, tokens, recompute, scan)
    return ConventionsReport(
        schema_version=SCHEMA_VERSION, command="conventions", model=model_info(loaded),
        settings=ConventionsSettings(seq, tokens, tokens_source,
                                     "full" if recompute else "none",
                                     "hardware" if recompute else "model", scan),
        dims=_dims(spec, m), conventions=table, reference=REFERENCE, spread=spread(table),
        how_counted=how_counted(spec, m, recompute, scan),
        warnings=context_warning(loaded.name, "--seq", seq, spec.max_seq_len))
