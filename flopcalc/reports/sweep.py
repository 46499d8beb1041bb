"""The `sweep` report: the forward pass over many sequence lengths, to watch the s² term take
over. Each row is the model's forward count at that length, so a sweep row always equals
`flopcalc model --seq` at the same length."""

from __future__ import annotations

import math
from dataclasses import field
from typing import Optional, Union

from ..records import dataclass
from ..kinds import base as p
from ..counting.crossover import crossover
from ..counting.model import model_flops, model_params, non_embedding, output_tokens, workload
from ..counting.polynomial import forward_families
from ..errors import FlopcalcError
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..numbers import parse_length
from .common import (SCHEMA_VERSION, ModelInfo, Report, context_warning, conventions,
                     model_info)

# The most lengths one sweep counts (a range's --points or a list): each row is a closed-form
# count (counting.polynomial), so 10,000 rows take well under a second and stay small in memory.
MAX_POINTS = 10_000


def parse_seq_spec(spec: str, points: int | None = None) -> list[int]:
    """'1k,2k,4k' → those lengths; 'A..B' → every power of two in [A, B], or with `points`
    N log-spaced integer lengths from A to B (duplicates removed). Sorted, unique."""
    if ".." in spec:
        lo_text, _, hi_text = spec.partition("..")
        lo, hi = parse_length(lo_text, "--seqs"), parse_length(hi_text, "--seqs")
        if lo > hi:
            raise FlopcalcError(f"--seqs {spec}: the range runs backwards; write LOW..HIGH")
        if points is None:
            return _powers_of_two(lo, hi, spec)
        return _log_spaced(lo, hi, points)
    if points is not None:
        raise FlopcalcError("--points goes with a range (--seqs LOW..HIGH); drop it or give a "
                            "range")
    parts = [part for part in spec.split(",") if part.strip()]
    if len(parts) > MAX_POINTS:
        raise FlopcalcError(f"--seqs: {len(parts):,} lengths; give at most {MAX_POINTS:,}")
    lengths = sorted({parse_length(part, "--seqs") for part in parts})
    if not lengths:
        raise FlopcalcError(f"--seqs '{spec}': no lengths; write e.g. 1k,2k,4k or 1k..1M")
    return lengths


def _powers_of_two(lo: int, hi: int, spec: str) -> list[int]:
    first = 1 << (lo - 1).bit_length()  # smallest power of two ≥ lo
    out = []
    power = first
    while power <= hi:
        out.append(power)
        power <<= 1
    if not out:
        raise FlopcalcError(f"--seqs {spec}: no power of two in the range; widen it or add "
                            "--points N")
    return out


def _log_spaced(lo: int, hi: int, points: int) -> list[int]:
    if not 1 <= points <= MAX_POINTS:
        raise FlopcalcError(f"--points {points}: give between 1 and {MAX_POINTS:,}")
    if points == 1 or lo == hi:
        return [lo] if points == 1 else sorted({lo, hi})
    first = math.log(lo)
    step = (math.log(hi) - first) / (points - 1)
    # round(exp(first + i·step)) for every i, mapped in C (10,000 points at every sweep);
    # rounding can step past an end only there, so the clamp runs only when it did
    values = set(map(round, map(math.exp, map(first.__add__, map(step.__mul__, range(points))))))
    if min(values) < lo or max(values) > hi:
        values = {min(hi, max(lo, v)) for v in values}
    return sorted(values | {lo, hi})


@dataclass
class SweepRow:
    seq: int
    weights: int
    attention: int
    families: dict[str, int]  # forward FLOPs by family (those that occur)
    forward: int
    forward_per_token: Union[int, float]  # exact int unless target lengths make it fractional
    attention_share_pct: float
    six_nd_undercount_pct: float  # how far 6ND (2N per token forward) is below exact
    past_crossover: bool


@dataclass
class SweepSettings:
    seq: str  # the spec as typed
    points: Optional[int]
    batch: int
    attention: str
    scan: str  # how chunked scans count their core (--scan): chunked or recurrent
    lengths: int
    tgt_seq: Optional[str]  # "= seq" for an encoder-decoder model


@dataclass
class SweepCrossover:
    seq: Optional[int]
    exact: Optional[str]
    d_model_multiple: Optional[float]
    note: str


@dataclass
class SweepReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: SweepSettings
    params_total: int
    params_active: int
    n: int  # the N of 6ND: (active) non-embedding parameters
    conventions: list[str]
    crossover: SweepCrossover
    rows: list[SweepRow]
    warnings: list[str] = field(default_factory=list)


def sweep_row(spec: ModelSpec, seq: int, batch: int, attention: p.Convention, n: int,
              crossover_seq: Optional[int], scan: p.Scan = "chunked") -> SweepRow:
    """One row, counted directly (a sweep counts its rows in closed form, to the same ints)."""
    w = workload(spec, seq, None, batch, attention, scan)
    return _row(seq, p.families(model_flops(spec, w)), output_tokens(spec, w), n, crossover_seq)


def _row(seq: int, families: dict[str, int], tokens: int, n: int,
         crossover_seq: Optional[int]) -> SweepRow:
    forward = sum(families.values())
    attn = families.get(p.ATTENTION, 0)
    # Training = 3·forward per token; 6ND = 3·(2N): 6ND is (fwd − 2N)/fwd below exact, i.e.
    # 100·(F − 2N·T)/F for F forward FLOPs over T tokens. An int over an int is rounded once,
    # correctly, as float(Fraction) is: the same floats without building Fractions.
    per_token = forward // tokens if forward % tokens == 0 else forward / tokens
    # positional, in field order: 10,000 rows make keyword passing show
    return SweepRow(seq, families.get(p.WEIGHTS, 0), attn, families, forward, per_token,
                    100 * attn / forward if forward else 0.0,
                    100 * (forward - 2 * n * tokens) / forward,
                    crossover_seq is not None and seq >= crossover_seq)


def build_sweep_report(loaded: LoadedModel, spec_text: str, points: Optional[int], batch: int,
                       attention: p.Convention, scan: p.Scan = "chunked") -> SweepReport:
    spec = loaded.spec
    lengths = parse_seq_spec(spec_text, points)
    params, active = model_params(spec), model_params(spec, active=True)
    n = non_embedding(active)
    x = crossover(spec, attention)
    counts = forward_families(spec, lengths, batch, attention, scan)
    return SweepReport(
        schema_version=SCHEMA_VERSION, command="sweep", model=model_info(loaded),
        settings=SweepSettings(spec_text, points, batch, attention, scan, len(lengths),
                               "= seq" if spec.is_encoder_decoder else None),
        params_total=p.total(params), params_active=p.total(active), n=n,
        conventions=conventions(spec, attention, n=n, scan=scan) + [
            "6ND under = (exact − 6ND) / exact with exact = 3 x forward per output token"],
        crossover=SweepCrossover(x.seq, None if x.exact is None else str(x.exact),
                                 None if x.value is None else x.value / spec.d_model, x.reason),
        # every stack reads `seq` tokens a sequence (target length = source length)
        rows=[_row(seq, fam, batch * seq, n, x.seq) for seq, fam in zip(lengths, counts)],
        warnings=context_warning(loaded.name, "--seqs", lengths[-1], spec.max_seq_len))
