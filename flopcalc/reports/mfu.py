"""The `mfu` report: model (and hardware) FLOPs utilisation from a measured throughput, under
every named convention side by side, with any figure above 100% flagged as impossible and the
reason given (`counting.utilisation` holds the formulas and their sources)."""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..counting.utilisation import counted
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from ..kinds.base import Scan
from .common import (SCHEMA_VERSION, ModelInfo, Report, chunked_scans, context_warning,
                     model_info, scan_lines)
from .infer import AcceleratorInfo, accelerator_info
from .packing import packed_line


@dataclass
class Measured:
    tokens_per_second: float  # all devices together
    tokens_per_second_per_device: float
    step_seconds: Optional[float]  # when given (with --global-batch)
    global_batch: Optional[int]
    given: str  # what was measured, as given


@dataclass
class MfuSettings:
    attention: str  # the convention of the headline MFU and HFU (--attention)
    # sample lengths packed into each sequence (--packed); empty: one sample per sequence
    packed: list[int] = field(default_factory=list)


@dataclass
class MfuRow:
    name: str
    flops_per_token: float
    flops_per_token_exact: str  # the exact rational
    utilisation: float  # share of peak (1.0 = 100%)
    achieved_flops_per_device: float  # FLOP/s per device under this convention
    hardware: bool  # an HFU (counts recomputation)
    possible: bool  # utilisation <= 100%
    formula: str
    source: str
    cause: str  # why a figure above 100% cannot be (empty when possible)


@dataclass
class MfuReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    seq: int
    recompute: str
    scan: str  # how the exact rows count chunked scans' core (--scan): chunked or recurrent
    accelerator: AcceleratorInfo
    measured: Measured
    conventions: list[str]
    rows: list[MfuRow]
    mfu: Optional[float]  # exact_<attention>: by default exact_causal, what the kernels run
    hfu: Optional[float]  # hfu_exact_<attention>
    warnings: list[str] = field(default_factory=list)
    attention: str = "causal"  # which exact row is the headline MFU (--attention)
    settings: Optional[MfuSettings] = None  # as the other commands' settings


def _cause(name: str, rows: dict[str, float], spec_has_window: bool) -> str:
    if rows.get("exact_causal", 0) > 1:
        return ("even the FLOPs this model must execute (exact, causal) exceed the devices' "
                "peak in this time: the throughput, --count, --per-device or the peak (--dtype, "
                "--peak) is wrong")
    if name == "exact_full" or name in ("palm", "megatron", "megatron_core",
                                        "megatron_recompute", "hfu_exact_full"):
        what = "sliding-window and causal masks" if spec_has_window else "the causal mask"
        return (f"{name} counts attention over every (query, key) pair; {what} leave(s) the "
                "kernels a fraction of them (exact_causal counts what runs)")
    return (f"{name} counts more FLOPs per token than this model executes (exact_causal): "
            "parameters or pairs that do no work")


def build_mfu_report(loaded: LoadedModel, hw: Hardware, seq: int, tokens_per_second: Fraction,
                     given: str, step_seconds: Optional[Fraction],
                     global_batch: Optional[int], recompute: str,
                     scan: Scan = "chunked", attention: str = "causal",
                     packed: tuple[int, ...] = ()) -> MfuReport:
    spec = loaded.spec
    peak_all = hw.peak_flops * hw.count
    rows = []
    figures = {}
    table = counted(spec, seq, recompute, scan, packed)
    for c in table:
        figures[c.name] = float(c.per_token * tokens_per_second / peak_all)
    window = any(getattr(m, "mask", None) is not None and m.mask.pattern != "causal"
                 and not m.bidirectional for g in spec.groups() for m in g.layer.mixers)
    for c in table:
        util = figures[c.name]
        ok = util <= 1
        rows.append(MfuRow(c.name, float(c.per_token), str(c.per_token), util,
                           float(c.per_token * tokens_per_second / hw.count), c.hardware, ok,
                           c.formula, c.source, "" if ok else _cause(c.name, figures, window)))
    per_device = float(tokens_per_second) / hw.count
    conventions = [
        f"MFU (the headline, as flopcalc step and plan give it) = exact_{attention}; HFU = "
        f"hfu_exact_{attention}, the same count plus recomputation (never below MFU); the other "
        "rows are other conventions, labelled",
        "MFU = training FLOPs per token (each convention's numerator) x tokens/s of all devices "
        f"/ (devices x dense {hw.dtype} peak); the denominator is the same for every row",
        "exact_full counts every (query, key) pair, as PyTorch's FlopCounterMode does; "
        "exact_causal the pairs each layer's mask lets through: what a flash kernel executes",
        f"HFU rows add what --recompute {recompute} runs again (full: the layers' forward, not "
        "the head; selective: the attention core)",
        "a figure above 100% is impossible and is shown as such, with the convention's reason",
        *(f"exact and HFU rows: {line}" for line in scan_lines(scan, chunked_scans(spec))),
    ]
    if packed:
        conventions += [f"exact and HFU rows: {packed_line(packed)}",
                        "six_nd, palm, megatron, megatron_core and megatron_recompute are their "
                        f"published formulas at seq {seq:,}: they know no packing"]
    warnings = context_warning(loaded.name, "--seq", seq, spec.max_seq_len)
    bad = [r.name for r in rows if not r.possible]
    if bad:
        warnings.append("impossible (above 100% of peak): " + ", ".join(bad))
    return MfuReport(
        schema_version=SCHEMA_VERSION, command="mfu", model=model_info(loaded), seq=seq,
        recompute=recompute, scan=scan, accelerator=accelerator_info(hw),
        measured=Measured(float(tokens_per_second), per_device,
                          None if step_seconds is None else float(step_seconds), global_batch,
                          given),
        conventions=conventions, rows=rows,
        mfu=figures.get(f"exact_{attention}"), hfu=figures.get(f"hfu_exact_{attention}"),
        warnings=warnings, attention=attention,
        settings=MfuSettings(attention, list(packed)))
