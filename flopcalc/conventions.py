"""`flopcalc conventions`: training FLOPs under the published conventions, side by side. Pure
arithmetic on ints and Fractions: no I/O, no typer/rich/yaml.

Why tools disagree: each paper's estimate is its own formula (`published.py`), written for the
architecture its authors trained. This module evaluates every one of them for the same model at
the same sequence length and sets it against this tool's exact count (`exact_full`, from
`flopcalc.counting`). Notation as in `published.py`.

Encoder-decoder models: the published formulas are decoder-only. They are applied with L = all
layers (encoder + decoder) and source length = target length = s; each such row says so and what
it leaves out (cross-attention). The exact rows count the real model (`counting.model_flops`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Callable, Union

from . import counting as c
from .arch import Arch
from .published import (Shape, chinchilla, delta_pct, exact, kaplan, megatron,
                        megatron_assumptions, palm, shape_of, six_nd, six_nd_total)
from .report import exact_number

SCHEMA_VERSION = 1
REFERENCE = "exact_full"

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


def _row(name: str, per_token: Fraction, tokens: int, ref: Fraction, formula: str, source: str,
         notes: list[str], violated: bool = False) -> Row:
    total = per_token * tokens
    return Row(name=name, per_token=exact_number(per_token), per_token_exact=str(per_token),
               total=c.round_fraction(total), delta_pct=delta_pct(per_token, ref), formula=formula,
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
