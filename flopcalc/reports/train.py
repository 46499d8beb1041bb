"""The `train` report: the training FLOPs of `flopcalc model` turned into wall-clock time,
accelerator-hours and cost on named devices, or the devices needed to finish by a deadline.

time = FLOPs / (devices × dense peak × MFU); accelerator-hours = seconds × devices / 3,600;
cost = accelerator-hours × price. With a deadline (`days`), devices = ⌈FLOPs / (days × 86,400 ×
peak × MFU)⌉ for the exact count; the 6ND column then uses the same devices.
"""

from __future__ import annotations

from dataclasses import field, replace
from fractions import Fraction
from math import ceil
from typing import Optional

from ..records import dataclass
from ..errors import FlopcalcError
from ..kinds import base as p
from ..counting.model import (model_flops, model_params, mtp_flops, non_embedding,
                              output_tokens, recomputed_flops, workload)
from ..counting.recompute import describe as describe_recompute
from ..predict.roofline import training_seconds
from ..counting.training import training_cost
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from .common import (SCHEMA_VERSION, ModelInfo, Report, chunked_scans, context_warning,
                     default_seq, default_tokens, model_info, pct, scan_lines)
from .images import ImagesInfo, image_lines, place
from .packing import packed_line, parse_packed
from .infer import AcceleratorInfo, accelerator_info, devices

SECONDS_PER_DAY, SECONDS_PER_HOUR = 86_400, 3_600


@dataclass
class TrainSettings:
    seq: int
    tokens: int
    tokens_source: str
    attention: str
    scan: str  # how chunked scans count their core (--scan): chunked or recurrent
    # none, full (hardware FLOPs: one more forward) or Megatron-Core's recompute modules (a
    # comma list: the matmuls they run again)
    recompute: str
    dtype: str
    count: int
    mfu: float
    price: Optional[float]  # per accelerator-hour
    days: Optional[float]  # the deadline the device count was solved for
    # images per sequence through the vision towers (--images); `seq` then counts their tokens
    images: list[ImagesInfo] = field(default_factory=list)
    # sample lengths packed into each sequence (--packed); empty: one sample per sequence
    packed: list[int] = field(default_factory=list)


@dataclass
class TrainFlops:
    tokens: int
    n: int
    six_nd: int
    exact: int  # passes × forward per token × D (+ multi-token prediction)
    passes: int  # 3, or 4 with --recompute full
    mtp: int
    six_nd_below_exact_pct: float
    rounded: bool


@dataclass
class PerEstimate:
    exact: float
    six_nd: float


@dataclass
class TrainReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: TrainSettings
    conventions: list[str]
    training: TrainFlops
    accelerator: AcceleratorInfo
    achieved_flops: float  # count × peak × MFU, FLOP/s
    seconds: PerEstimate
    days: PerEstimate
    accelerator_hours: PerEstimate
    cost: Optional[PerEstimate]  # accelerator-hours × price
    warnings: list[str] = field(default_factory=list)


def devices_for(flops: int, days: Fraction, peak: int, mfu: Fraction) -> int:
    """The fewest devices that finish `flops` within `days` (at least 1)."""
    need = Fraction(flops) / (days * SECONDS_PER_DAY * peak * mfu)
    return max(1, ceil(need))


def build_train_report(loaded: LoadedModel, hw: Hardware, mfu: Fraction,
                       seq: Optional[int] = None, tokens: Optional[int] = None,
                       attention: p.Convention = "causal", recompute: str = "none",
                       price: Optional[Fraction] = None, days: Optional[Fraction] = None,
                       images: Optional[int] = None, image_size: Optional[str] = None,
                       scan: p.Scan = "chunked", packed: Optional[str] = None) -> TrainReport:
    spec = loaded.spec
    seq = seq or default_seq(spec)
    samples = parse_packed(packed, seq, spec, loaded.name)
    if samples and images:
        raise FlopcalcError("--packed with --images: the image tokens would join the samples' "
                            "lengths; give one or the other")
    w, placed = place(spec, workload(spec, seq, None, 1, attention, scan, samples), images,
                      image_size)
    seq = w.seq  # text + image tokens: the length the text model runs; D counts them too
    params = model_params(spec)
    n = non_embedding(model_params(spec, active=True))
    if tokens is None:
        tokens, source = default_tokens(spec, p.total(params))
    else:
        source = "--tokens"
    flops = model_flops(spec, w)
    full = recompute == "full"
    cost = training_cost(p.total(flops), p.total(flops, p.ATTENTION), n, output_tokens(spec, w),
                         tokens, mtp_forward=p.total(mtp_flops(spec, w)),
                         passes=4 if full else 3,
                         recomputed=recomputed_flops(spec, w, recompute))
    if days is not None:
        hw = replace(hw, count=devices_for(cost.exact, days, hw.peak_flops, mfu))
    achieved = hw.total_peak_flops * mfu

    def per(scale: Fraction, factor: Fraction = Fraction(1)) -> PerEstimate:
        return PerEstimate(
            float(training_seconds(cost.exact, hw.total_peak_flops, mfu) / scale * factor),
            float(training_seconds(cost.six_nd, hw.total_peak_flops, mfu) / scale * factor))

    hours = Fraction(SECONDS_PER_HOUR, hw.count)
    kind = "hardware FLOPs: 4 x forward (full recomputation)" if full else \
        "3 x forward (model FLOPs)" if recompute == "none" else \
        "hardware FLOPs: 3 x forward + the forward matmuls torchtitan's per-op checkpointing " \
        "runs again (every second matmul of each layer, routed experts' GEMMs)" \
        if recompute == "op" else \
        f"hardware FLOPs: 3 x forward + the forward matmuls --recompute-modules {recompute} " \
        "runs again"
    conventions = [
        f"training exact = {kind} per token x D, LM head and attention included; 6ND with N = "
        f"{'active ' if spec.is_moe else ''}non-embedding params = {n:,}",
        f"attention {attention} at seq {seq:,} (as flopcalc model --attention {attention}"
        + ("; causal, the default here, counts the pairs the kernels compute, as --mfu's "
           "figure from flopcalc mfu, step or plan does)" if attention == "causal" else ")"),
        *scan_lines(scan, chunked_scans(spec)),
        f"time = FLOPs / (count x dense {hw.dtype} peak x MFU); MFU {float(mfu):.4g} is the "
        "sustained share of peak",
        f"peak {devices(hw.count)}; accelerator-hours = wall-clock hours x count",
    ]
    if days is not None:
        conventions.append(f"count = the fewest devices that finish the exact count within "
                           f"{float(days):g} days (rounded up)")
    if price is not None:
        conventions.append(f"cost = accelerator-hours x {float(price):g} per accelerator-hour")
    conventions += image_lines(spec, placed) + ([packed_line(samples)] if samples else [])
    conventions += describe_recompute(recompute)
    return TrainReport(
        schema_version=SCHEMA_VERSION, command="train", model=model_info(loaded),
        settings=TrainSettings(seq, tokens, source, attention, scan, recompute,
                               hw.dtype, hw.count, float(mfu),
                               None if price is None else float(price),
                               None if days is None else float(days), placed,
                               list(samples)),
        conventions=conventions,
        training=TrainFlops(tokens, n, cost.six_nd, cost.exact, cost.passes, cost.mtp,
                            pct(cost.exact - cost.six_nd, cost.exact), cost.rounded),
        accelerator=accelerator_info(hw),
        achieved_flops=float(achieved),
        seconds=per(Fraction(1)),
        days=per(Fraction(SECONDS_PER_DAY)),
        accelerator_hours=per(hours),
        cost=None if price is None else per(hours, price),
        warnings=context_warning(loaded.name, "--seq", seq, spec.max_seq_len),
    )
