"""`flopcalc step`: the time of one training step on a parallel layout."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Optional

from ..errors import FlopcalcError
from .base import Command, Render
from .common import data_parallel, expert_tp, load, machine, recompute_setting
from .options import CAUSAL, OPTIONS, UNKNOWN, pick


def layout(spec: Any, seq: Optional[int], *, tp, pp, vp, dp, cp, ep, zero, recompute,
           sequence_parallel, micro_batch, global_batch, dropout, flash, grad_fp32,
           tp_overlap, capacity_factor, count, etp, dispatcher, moe_overlap,
           schedule, cuda_graph=False, compile=True, routing="uniform",
           async_tp=False  # noqa: A002
           ) -> tuple[Any, int, list[str]]:
    """The Layout of `step` from its options, with the unknowns (the options not given)."""
    from ..predict.steptime import Layout
    from ..reports.common import default_seq

    seq = seq or default_seq(spec)
    dp = data_parallel(count, dp, tp, pp, cp)
    if global_batch % dp:
        raise FlopcalcError(f"--global-batch {global_batch:,} must be a multiple of the "
                            f"{dp:,} data-parallel ranks (dp)")
    unknown = [name for name, value in (("micro_batch", micro_batch), ("vp", vp),
                                        ("recompute", recompute), ("dropout", dropout))
               if value is None]
    if vp is None and (pp == 1 or schedule not in ("1f1b", "interleaved")):
        unknown.remove("vp")  # nothing to interleave
    mb = micro_batch or 1
    if (global_batch // dp) % mb:
        raise FlopcalcError(f"--micro-batch {mb} must divide the {global_batch // dp:,} "
                            "sequences each data-parallel rank takes per step")
    if async_tp and not tp_overlap:
        raise FlopcalcError("--async-tp overlaps tensor-parallel communication: drop "
                            "--no-tp-overlap (or --async-tp for vanilla tensor parallelism)")
    lay = Layout(tp=tp, pp=pp, vp=vp or 1, dp=dp, cp=cp, ep=ep, zero=zero,
                 recompute=recompute or "none", sequence_parallel=sequence_parallel,
                 micro_batch=mb, global_batch=global_batch, dropout=dropout == "on",
                 flash=flash, grad_fp32=grad_fp32, tp_overlap=tp_overlap,
                 capacity=capacity_factor or Fraction(1), etp=expert_tp(spec, etp, tp, ep),
                 dispatcher=dispatcher, moe_overlap=moe_overlap, schedule=schedule,
                 cuda_graph=cuda_graph, compiled=compile, routing=routing,
                 async_tp=async_tp)
    return lay, seq, unknown


def run(model, *, seq, packed, tp, pp, vp, dp, cp, ep, etp, zero, recompute, recompute_modules,
        sequence_parallel,
        micro_batch, global_batch, dropout, flash, schedule, fp8_recipe, lora_rank, qlora,
        dispatcher, routing, moe_overlap, cuda_graph, compile, precision, optimizer,
        accelerator, count,
        network,
        efficiency, attention_kernel,
        dtype, peak, grad_fp32, tp_overlap, async_tp, capacity_factor, tokens, price,
        attention,
        set):  # noqa: A002
    from ..counting.memory import check_setup
    from ..predict.plans import least_recompute, setup_of, valid_vp
    from ..predict.steptime import profile
    from ..reports.packing import parse_packed
    from ..reports.step import build_step_report

    loaded = load(model, set)
    spec = loaded.spec
    recompute = recompute_setting(spec, loaded.name, recompute, recompute_modules)
    lay, seq, unknown = layout(
        spec, seq, tp=tp, pp=pp, vp=vp, dp=dp, cp=cp, ep=ep, zero=zero, recompute=recompute,
        sequence_parallel=sequence_parallel, micro_batch=micro_batch, global_batch=global_batch,
        dropout=dropout, flash=flash, grad_fp32=grad_fp32, tp_overlap=tp_overlap,
        capacity_factor=capacity_factor, count=count, etp=etp, dispatcher=dispatcher,
        moe_overlap=moe_overlap, schedule=schedule, cuda_graph=cuda_graph, compile=compile,
        routing=routing, async_tp=async_tp)
    samples = parse_packed(packed, seq, spec, loaded.name)
    if samples and not flash:
        raise FlopcalcError("--packed with --no-flash: an eager kernel scores every pair of the "
                            "sequence under a block-diagonal mask, so packing saves it nothing; "
                            "drop --no-flash (variable-length flash kernels run packed samples)")
    if fp8_recipe is not None and dtype != "fp8":
        raise FlopcalcError(f"--fp8-recipe {fp8_recipe} scales fp8 matmuls: give --dtype fp8 too")
    if dtype == "fp8":
        lay = replace(lay, fp8_recipe=fp8_recipe or "tensorwise")
    if qlora and not lora_rank:
        raise FlopcalcError("--qlora trains LoRA adapters on a 4-bit base: give --lora-rank R "
                            "too")
    if lora_rank:
        lay = replace(lay, lora_rank=lora_rank)
    mem = dict(precision=precision, optimizer=optimizer, fp8=dtype == "fp8", qlora=qlora)
    if "vp" in unknown and lay.schedule == "interleaved":
        # an interleaved schedule whose virtual stages a source does not state (torchtitan's
        # Llama 3.1 405B table): the estimate takes the fewest that work (more stages cut the
        # bubble but add point-to-point sends), the interval every one that works
        prof = profile(spec, seq, samples)
        fewest = next((v for v in range(2, 65) if valid_vp(prof, replace(lay, vp=v), v)
                       is None), None)
        if fewest is None:
            raise FlopcalcError(valid_vp(prof, replace(lay, vp=2), 2) or "--schedule "
                                "interleaved: no number of virtual stages up to 64 fits this "
                                "layout; give --vp or --schedule 1f1b")
        lay = replace(lay, vp=fewest)
    problem = check_setup(spec, setup_of(seq, lay, **mem)) or valid_vp(
        profile(spec, seq, samples), lay, lay.vp)
    if problem:
        raise FlopcalcError(problem)
    hw, res = machine(accelerator, dtype, lay.devices, peak, network, efficiency,
                      attention_kernel, flash)
    from ..models.accelerators import MICROSCALING

    if lay.fp8_recipe == "mxfp8" and hw.name != "custom" and \
            hw.architecture not in MICROSCALING:
        raise FlopcalcError(f"--fp8-recipe mxfp8 needs a device with microscaling formats "
                            f"({', '.join(MICROSCALING)}: its preset's architecture); {hw.name} "
                            "has none: use tensorwise, delayed, rowwise or blockwise")
    warnings: tuple[str, ...] = ()
    if "recompute" in unknown:
        least = least_recompute(spec, seq, lay, hw.memory_bytes, **mem)
        if least is not None and least != "none":
            lay = replace(lay, recompute=least)
            warnings = (f"--recompute not given: the estimate takes {least}, the least "
                        "recomputation with which this layout fits",)
    return build_step_report(loaded, hw, res, lay, seq, unknown, hw.memory_bytes, mem,
                             tokens=tokens, price=price, extra_warnings=warnings,
                             attention=attention, packed=samples)


COMMAND = Command(
    "step", "Time of one training step on a parallel layout: an interval (communication "
    "hidden where the layout can hide it, none hidden) and an estimate, where the time goes, communication per axis, the "
    "bubble, MFU, tokens/s, days and cost for D tokens, and the memory per device.",
    (*pick("seq", "packed", "tp", "pp"),
     OPTIONS["vp"].but(default=None, why=UNKNOWN + " (1, and every value that fits)"),
     *pick("dp", "cp", "ep", "etp", "zero"),
     OPTIONS["recompute"].but(default=None, why=UNKNOWN + " (the least that fits)"),
     OPTIONS["recompute_modules"], OPTIONS["sequence_parallel"],
     OPTIONS["micro_batch"].but(default=None, why=UNKNOWN + " (1, and every divisor that "
                                "fits)"),
     OPTIONS["global_batch"].but(required=True, why="a step's time is that of its batch"),
     OPTIONS["dropout"].but(default=None, why=UNKNOWN + " (off, and both)"),
     *pick("flash", "schedule", "fp8_recipe", "lora_rank", "qlora", "dispatcher",
           "routing", "moe_overlap", "cuda_graph", "compile", "precision", "optimizer",
           "accelerator", "count", "network", "efficiency", "attention_kernel", "dtype", "peak",
           "grad_fp32", "tp_overlap", "async_tp", "capacity_factor", "tokens", "price"),
     OPTIONS["attention"].but(default="causal", why=CAUSAL), OPTIONS["set"]),
    run, presentation=("format", "brief"), report=("step", "StepReport"),
    render=Render("step", "step_csv", "step_tables", "step_brief"))
