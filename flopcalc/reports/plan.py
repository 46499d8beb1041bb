"""The `plan` report: every parallel layout of a model on N devices that fits in memory, ranked
by the estimated step time, the best few with where their time goes, and why the best wins
(`predict.plans` holds the search; `predict.steptime` the time model)."""

from __future__ import annotations

import time
from dataclasses import field
from typing import Optional

from ..records import dataclass
from ..predict.plans import Candidate, Resolved, search
from ..predict.steptime import Layout, profile
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from .common import (SCHEMA_VERSION, ModelInfo, Report, attention_line, context_warning,
                     eager_hint, kernel_line, model_info)
from .step import (Breakdown, PublishedRange, RunSettings, StepLayout, StepMachine, breakdown,
                   layout_info, machine_info, model_flops_per_sequence, published_range)


@dataclass
class Plan:
    rank: int
    layout: StepLayout
    step_seconds: float  # the estimate
    tokens_per_second: float
    mfu: float
    memory_bytes: int  # per device (the first pipeline stage)
    breakdown: Breakdown
    summary: str  # where its time goes, in a line


@dataclass
class PlanReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    seq: int
    global_batch: int
    devices: int
    machine: StepMachine
    conventions: list[str]
    fitting: int  # layouts that fit in memory
    search_seconds: float
    plans: list[Plan]
    why: list[str]  # why the best wins over the others
    warnings: list[str] = field(default_factory=list)
    settings: Optional[RunSettings] = None
    assumed: list[str] = field(default_factory=list)  # what the search chose, not the user
    published: Optional[PublishedRange] = None  # the best's MFU against published runs


def summary(b: Breakdown) -> str:
    total = b.total or 1.0
    parts = {"matmuls": b.gemm, "attention": b.attention, "memory-bound": b.memory_bound,
             "head": b.head, "recompute": b.recompute, "bubble": b.bubble,
             "optimizer": b.optimizer}
    parts.update({f"{k} comm": v for k, v in b.exposed.items()})
    top = sorted(((v, k) for k, v in parts.items() if v > 0), reverse=True)[:4]
    return ", ".join(f"{k} {100 * v / total:.0f}%" for v, k in top)


def describe(lay: Layout) -> str:
    """`Layout.describe` with what the search also chooses: the expert tensor parallelism and
    token dispatcher, the pipeline schedule and the fp8 recipe."""
    words = [lay.describe()]
    if lay.ep > 1:
        words.append(f"{lay.dispatcher} dispatcher")
    if lay.pp > 1:
        words.append(f"{lay.schedule} schedule")
    if lay.fp8_recipe:
        words.append(f"fp8 {lay.fp8_recipe}")
    return ", ".join(words)


def why(best: Candidate, others: list[Candidate]) -> list[str]:
    """A line per runner-up: what the best saves against it, the largest differences first."""
    lines = []
    b = breakdown(best.time)
    for rank, other in enumerate(others, 2):
        o = breakdown(other.time)
        diff = {"matmuls": o.gemm - b.gemm, "attention": o.attention - b.attention,
                "memory-bound kernels": o.memory_bound - b.memory_bound,
                "recomputation": o.recompute - b.recompute, "the bubble": o.bubble - b.bubble,
                "the optimizer": o.optimizer - b.optimizer}
        for axis in ("tp", "cp", "ep", "pp", "dp"):
            diff[f"exposed {axis} communication"] = o.exposed.get(axis, 0) - b.exposed.get(
                axis, 0)
        top = sorted(((v, k) for k, v in diff.items() if abs(v) > 1e-4 * b.total),
                     key=lambda x: -abs(x[0]))[:3]
        said = "; ".join(f"{'saves' if v > 0 else 'spends'} {abs(v):.3g} s of {k}"
                         for v, k in top)
        lines.append(f"against #{rank} ({describe(other.layout)}, "
                     f"{other.time.total:.3g} s): the best {said or 'is within rounding'}")
    return lines


def build_plan_report(loaded: LoadedModel, hw: Hardware, res: Resolved, seq: int,
                      global_batch: int, devices: int, flash: bool, grad_fp32: bool,
                      tp_overlap: bool, top: int, mem: dict[str, object],
                      attention: str = "causal", recipes: tuple[str, ...] = (),
                      recompute: Optional[str] = None) -> PlanReport:
    spec = loaded.spec
    start = time.perf_counter()
    prof = profile(spec, seq)
    assert hw.memory_bytes is not None
    best, fitting = search(spec, prof, res.machine, devices, global_batch, hw.memory_bytes,
                           flash, grad_fp32, tp_overlap, top=top, recipes=recipes,
                           recompute=recompute, **mem)
    took = time.perf_counter() - start
    model_flops = model_flops_per_sequence(prof, attention) * global_batch
    plans = []
    for rank, c in enumerate(best, 1):
        b = breakdown(c.time)
        plans.append(Plan(rank, layout_info(c.layout), c.time.total,
                          global_batch * seq / c.time.total,
                          model_flops / (c.time.total * devices * hw.peak_flops), c.memory, b,
                          summary(b)))
    conventions = [
        f"searched: tensor parallelism dividing the heads within a fast domain of "
        f"{res.machine.net.domain}, pipeline depths up to the layers, context parallelism "
        "(with --flash) dividing the sequence, expert parallelism dividing the experts with "
        "expert tensor parallelism dividing tp (each token dispatcher: alltoall, allgather, "
        "flex), ZeRO 0-3, micro-batches dividing each replica's batch (up to 16), the pipeline "
        "schedule (1f1b, interleaved over 2-8 virtual stages dividing each stage's layers, "
        "zero-bubble, dualpipe with an even number of stages and dualpipev, each DualPipe "
        "with at least two micro-batches a stage), sequence parallelism whenever tp > 1, "
        + (f"recompute {recompute} (--recompute-modules) in every layout" if recompute
           else "the least recomputation that fits")
        + (f", and each fp8 recipe this device runs ({', '.join(recipes)})" if recipes
           else ""),
        f"ranked by the estimate of flopcalc step (typical efficiencies, attention as "
        f"{res.machine.attention_kernel}: {res.machine.attention_title}; its overlap model); "
        f"memory checked against {hw.memory_bytes / 1e9:,.0f} GB per device, ZeRO-3's gathered "
        "layer included",
        "each plan's line says where its time goes; flopcalc step with its options gives the "
        "interval and every detail",
        f"MFU = 3 x exact forward FLOPs (attention {attention}) per step / (step x devices x "
        "the dense peak of --dtype): flopcalc step's and flopcalc mfu's figure",
        attention_line(attention),
        kernel_line(flash),
    ]
    warnings = list(res.warnings) + context_warning(loaded.name, "--seq", seq,
                                                     spec.max_seq_len)
    if best and not flash:
        from ..predict.plans import setup_of

        warnings += eager_hint(spec, setup_of(seq, best[0].layout, **mem))  # type: ignore
    if not best:
        warnings.append(f"no layout of {devices:,} devices fits {hw.memory_bytes / 1e9:,.0f} GB "
                        "per device: more devices, a shorter --seq or --flash may help")
    return PlanReport(
        schema_version=SCHEMA_VERSION, command="plan", model=model_info(loaded), seq=seq,
        global_batch=global_batch, devices=devices, machine=machine_info(hw, res),
        conventions=conventions, fitting=fitting, search_seconds=took, plans=plans,
        why=why(best[0], best[1:]) if best else [], warnings=warnings,
        settings=RunSettings(attention, flash, "flash" if flash else "eager"),
        assumed=[] if not best else [
            "the best layout's parallel sizes, schedule, virtual stages, micro-batch, ZeRO stage "
            "and recomputation" + (", token dispatcher" if best[0].layout.ep > 1 else "")
            + (", fp8 recipe" if recipes else "") + " were searched, not stated by a source; "
            "dropout off"],
        published=None if not best or loaded.origin != "preset" else published_range(
            plans[0].mfu, loaded.name, hw.name))

