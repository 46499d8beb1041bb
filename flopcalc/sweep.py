"""`flopcalc sweep`: the forward pass over many sequence lengths, to watch the s² term take over.

Each row is the core count (`counting.model_flops`) at that length, so a sweep row always equals
`flopcalc model --seq` at the same length.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from . import counting as c
from .errors import FlopcalcError
from .numbers import parse_length
from .report import exact_number, pct

MAX_POINTS = 1_000_000


def parse_seq_spec(spec: str, points: int | None = None) -> list[int]:
    """'1k,2k,4k' → those lengths; 'A..B' → every power of two in [A, B], or with `points`
    N log-spaced integer lengths from A to B (duplicates removed). Sorted, unique."""
    if ".." in spec:
        lo_text, _, hi_text = spec.partition("..")
        lo, hi = parse_length(lo_text, "--seq"), parse_length(hi_text, "--seq")
        if lo > hi:
            raise FlopcalcError(f"--seq {spec}: the range runs backwards; write LOW..HIGH")
        if points is None:
            return _powers_of_two(lo, hi, spec)
        return _log_spaced(lo, hi, points)
    if points is not None:
        raise FlopcalcError("--points goes with a range (--seq LOW..HIGH); drop it or give a range")
    lengths = sorted({parse_length(part, "--seq") for part in spec.split(",") if part.strip()})
    if not lengths:
        raise FlopcalcError(f"--seq '{spec}': no lengths; write e.g. 1k,2k,4k or 1k..1M")
    return lengths


def _powers_of_two(lo: int, hi: int, spec: str) -> list[int]:
    first = 1 << (lo - 1).bit_length()  # smallest power of two ≥ lo
    out = []
    p = first
    while p <= hi:
        out.append(p)
        p <<= 1
    if not out:
        raise FlopcalcError(f"--seq {spec}: no power of two in the range; widen it or add "
                            "--points N")
    return out


def _log_spaced(lo: int, hi: int, points: int) -> list[int]:
    if not 1 <= points <= MAX_POINTS:
        raise FlopcalcError(f"--points {points}: give between 1 and {MAX_POINTS:,}")
    if points == 1 or lo == hi:
        return [lo] if points == 1 else sorted({lo, hi})
    step = (math.log(hi) - math.log(lo)) / (points - 1)
    values = {min(hi, max(lo, round(math.exp(math.log(lo) + i * step)))) for i in range(points)}
    return sorted(values | {lo, hi})


@dataclass
class SweepRow:
    seq: int
    weights: int
    attention: int
    forward: int
    forward_per_token: int | float  # exact int unless source and target lengths make it fractional
    attention_share_pct: float
    six_nd_undercount_pct: float  # how far 6ND (2N per token forward) is below exact
    past_crossover: bool


def sweep_rows(cfg: Any, lengths: list[int], batch: int, attention: c.Attention,
               n_non_embedding: int, crossover: float) -> list[SweepRow]:
    rows = []
    for seq in lengths:
        w = c.workload(cfg, seq, None, batch, attention)
        parts = c.model_flops(cfg, w)
        forward = c.total(parts)
        attn = c.total(parts, c.ATTENTION)
        per_token = c.per_token(forward, w)
        rows.append(SweepRow(
            seq=seq, weights=c.total(parts, c.WEIGHTS), attention=attn, forward=forward,
            forward_per_token=exact_number(per_token), attention_share_pct=pct(attn, forward),
            six_nd_undercount_pct=float(100 * (per_token - 2 * n_non_embedding) / per_token),
            past_crossover=seq >= crossover))
    return rows


def sweep_report(loaded: Any, spec: str, points: int | None, batch: int,
                 attention: c.Attention) -> dict[str, Any]:
    """The `sweep` document: settings, the crossover and one row per length."""
    from .report import conventions, crossover_point

    cfg = loaded.config
    lengths = parse_seq_spec(spec, points)
    n = c.non_embedding(c.model_params(cfg))
    point = crossover_point(cfg, attention)
    rows = sweep_rows(cfg, lengths, batch, attention, n, c.crossover_seq(cfg, attention))
    return {
        "schema_version": 1,
        "model": {"name": loaded.name, "title": cfg.title or loaded.name},
        "settings": {"seq": spec, "points": points, "batch": batch, "attention": attention,
                     "lengths": len(lengths),
                     "tgt_seq": "= seq" if cfg.is_encoder_decoder else None},
        "n_non_embedding": n,
        "conventions": conventions(cfg, attention, n=n) + [
            "6ND under = (exact − 6ND) / exact with exact = 3 x forward per output token"],
        "crossover": asdict(point),
        "rows": [asdict(r) for r in rows],
    }
