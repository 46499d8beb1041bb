"""`flopcalc plan`: the parallel layouts of a model on N devices that fit, ranked by step time."""

from __future__ import annotations

from ..errors import FlopcalcError
from .base import Command, Render
from .common import load, machine, recompute_setting
from .options import CAUSAL, OPTIONS, pick


def run(model, *, seq, global_batch, accelerator, count, network, efficiency,
        attention_kernel, dtype, peak,
        flash, grad_fp32, tp_overlap, precision, optimizer, recompute_modules, top, attention,
        set):  # noqa: A002
    from ..reports.common import default_seq
    from ..reports.plan import build_plan_report

    loaded = load(model, set)
    seq = seq or default_seq(loaded.spec)
    recompute = recompute_setting(loaded.spec, loaded.name, None, recompute_modules)
    hw, res = machine(accelerator, dtype, count, peak, network, efficiency,
                      attention_kernel, flash)
    if hw.memory_bytes is None:
        raise FlopcalcError("plan needs the accelerator's memory: give --accelerator NAME")
    from ..predict.plans import fp8_recipes

    mem = dict(precision=precision, optimizer=optimizer, fp8=dtype == "fp8")
    return build_plan_report(loaded, hw, res, seq, global_batch, count, flash, grad_fp32,
                             tp_overlap, top, mem, attention, fp8_recipes(hw, dtype),
                             recompute)


COMMAND = Command(
    "plan", "Search the parallel layouts of a model on N devices that fit in memory, rank them "
    "by estimated step time, and show the best with where their time goes.",
    (OPTIONS["seq"],
     OPTIONS["global_batch"].but(required=True, why="a step's time is that of its batch"),
     OPTIONS["accelerator"],
     OPTIONS["count"].but(required=True, why="the devices to lay the model out on"),
     *pick("network", "efficiency", "attention_kernel", "dtype", "peak", "flash", "grad_fp32",
           "tp_overlap", "precision", "optimizer", "recompute_modules", "top"),
     OPTIONS["attention"].but(default="causal", why=CAUSAL), OPTIONS["set"]),
    run, report=("plan", "PlanReport"), render=Render("plan", "plan_csv", "plan_tables"))
