"""`flopcalc memory`: training memory per device, and whether it fits."""

from __future__ import annotations

from .base import Command, Render
from .common import data_parallel, expert_tp, load, platform, recompute_setting
from .options import pick


def run(model, *, seq, batch, dp, tp, pp, ep, etp, vp, schedule, zero, recompute,
        recompute_modules, sequence_parallel, dropout, flash, precision, optimizer, accelerator,
        count, memory_fraction, reserve, cp, lora_rank, qlora, fp8, offload_optimizer, zero3_buffer,
        grad_fp32, set, curve=False):  # noqa: A002
    from ..reports.memory import build_memory_report, setup_for

    dp = data_parallel(count, dp, tp, pp, cp)
    loaded = load(model, set)
    recompute = recompute_setting(loaded.spec, loaded.name, recompute, recompute_modules)
    setup = setup_for(loaded.spec, seq, batch=batch, dp=dp, tp=tp, pp=pp, ep=ep,
                      etp=expert_tp(loaded.spec, etp, tp, ep), vp=vp, schedule=schedule,
                      zero=zero, recompute=recompute, sequence_parallel=sequence_parallel,
                      dropout=dropout == "on", flash=flash, precision=precision,
                      optimizer=optimizer, cp=cp, lora_rank=lora_rank, qlora=qlora, fp8=fp8,
                      offload_optimizer=offload_optimizer, zero3_buffer=zero3_buffer,
                      grad_fp32=grad_fp32)
    hw = platform(accelerator, "bf16", None, memory_fraction=memory_fraction,
                  reserve=reserve).hw
    return build_memory_report(loaded, setup, hw, curve)


COMMAND = Command(
    "memory", "Training memory per device: weights, gradients and optimizer state (ZeRO), "
    "activations (tensor by tensor, with tensor/sequence/pipeline parallelism and "
    "recomputation), and with --accelerator whether it fits and the largest micro-batch that "
    "does.",
    pick("seq", "batch", "dp", "tp", "pp", "ep", "etp", "vp", "schedule", "zero", "recompute",
         "recompute_modules", "sequence_parallel", "dropout", "flash", "precision", "optimizer",
         "accelerator", "count", "memory_fraction", "reserve", "cp", "lora_rank", "qlora", "fp8",
         "offload_optimizer", "zero3_buffer", "grad_fp32", "set"),
    run, presentation=("format", "plot"), plotted="memory against the micro-batch",
    internal=("curve",), report=("memory", "MemoryReport"),
    render=Render("memory", "memory_csv", "memory_tables", plot="plot_memory"))
