"""`memory`: training memory per device, and whether it fits."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, List, Optional

import typer

from .options import (COUNT, AcceleratorOpt, BatchOpt, DebugOpt, Format, FormatOpt, ModelArg,
                      SeqOpt, SetOpt, plot_option)
from .runtime import emit, handles_errors, load

MemoryPlotOpt = plot_option("memory against the micro-batch")


class RecomputeMode(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"


class Precision(str, Enum):
    mixed = "mixed"
    bf16 = "bf16"
    fp32 = "fp32"


class Optimizer(str, Enum):
    adamw = "adamw"
    adamw_8bit = "adamw-8bit"
    sgd = "sgd"


class Zero(str, Enum):
    zero0 = "0"
    zero1 = "1"
    zero2 = "2"
    zero3 = "3"


def _ways(name: str, help_: str) -> Any:
    return Annotated[int, typer.Option(name, click_type=COUNT, metavar="N", help=help_)]


DpOpt = _ways("--dp", "Data-parallel devices (ZeRO splits over these).")
TpOpt = _ways("--tp", "Tensor-parallel devices (must divide the heads).")
PpOpt = _ways("--pp", "Pipeline stages (at most the layers).")
EpOpt = _ways("--ep", "Expert-parallel devices (must divide the routed experts).")


def memory_report(model: str, seq: Optional[int] = None, batch: int = 1, dp: int = 1,
                  tp: int = 1, pp: int = 1, ep: int = 1, zero: Zero = Zero.zero0,
                  recompute: RecomputeMode = RecomputeMode.none, sequence_parallel: bool = False,
                  dropout: bool = False, flash: bool = False,
                  precision: Precision = Precision.mixed, optimizer: Optimizer = Optimizer.adamw,
                  accelerator: Optional[str] = None, count: Optional[int] = None,
                  set_: Optional[List[str]] = None, curve: bool = False) -> Any:
    from .. import api

    return api.memory(model, seq=seq, batch=batch, dp=dp, tp=tp, pp=pp, ep=ep,
                      zero=int(Zero(zero).value), recompute=RecomputeMode(recompute).value,
                      sequence_parallel=sequence_parallel, dropout=dropout, flash=flash,
                      precision=Precision(precision).value, optimizer=Optimizer(optimizer).value,
                      accelerator=accelerator, count=count, set=set_, curve=curve)


@handles_errors
def memory(
    model: ModelArg,
    seq: SeqOpt = None,
    batch: BatchOpt = 1,
    dp: DpOpt = 1,
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    zero: Annotated[Zero, typer.Option("--zero", help="ZeRO stage: 1 splits the optimizer, "
                                       "2 also the gradients, 3 also the weights.")] = Zero.zero0,
    recompute: Annotated[RecomputeMode, typer.Option(
        "--recompute", case_sensitive=False, help="Activation recomputation: selective drops "
        "the s² tensors, full keeps each layer's input only.")] = RecomputeMode.none,
    sequence_parallel: Annotated[bool, typer.Option(
        "--sequence-parallel", help="Split the norm and dropout activations over --tp too.")] = False,
    dropout: Annotated[bool, typer.Option(
        "--dropout", help="Keep dropout masks (off: modern LLMs train without dropout; "
        "Korthikanti et al.'s figures assume it).")] = False,
    flash: Annotated[bool, typer.Option(
        "--flash", help="Attention kernels that keep no s² matrix (FlashAttention).")] = False,
    precision: Annotated[Precision, typer.Option(
        "--precision", case_sensitive=False, help="mixed: 16-bit weights and gradients with an "
        "fp32 master copy; bf16: no master copy; fp32.")] = Precision.mixed,
    optimizer: Annotated[Optimizer, typer.Option(
        "--optimizer", case_sensitive=False, help="adamw (fp32 m and v), adamw-8bit, sgd "
        "(momentum).")] = Optimizer.adamw,
    accelerator: AcceleratorOpt = None,
    count: Annotated[Optional[int], typer.Option(
        "--count", click_type=COUNT, metavar="N",
        help="Devices in all: dp x tp x pp (derives --dp when only --tp and --pp are given).")] = None,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    plot: MemoryPlotOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Training memory per device: weights, gradients and optimizer state (ZeRO), activations
    (tensor by tensor, with tensor/sequence/pipeline parallelism and recomputation), and with
    --accelerator whether it fits and the largest micro-batch that does."""
    from ..render import memory as render

    report = memory_report(model, seq, batch, dp, tp, pp, ep, zero, recompute, sequence_parallel,
                           dropout, flash, precision, optimizer, accelerator, count, set_,
                           plot is not None)
    if plot is not None:
        from ..render.plot import plot_memory

        plot_memory(report, plot)
    emit(fmt, report, render.memory_csv, render.memory_tables)
