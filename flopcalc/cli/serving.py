"""`infer`, `train` and `accelerators`: serving and training on real devices."""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, List, Optional

import typer

from .options import (AMOUNT, OptionError, LENGTH, AcceleratorOpt, AttentionFlag, AttentionOpt,
                      BandwidthOpt, BriefOpt, ComputeDtype, CountOpt, DebugOpt, Format,
                      FormatOpt, KvDtype, MfuOpt, ModelArg, PeakOpt, Recompute, RecomputeOpt,
                      SeqOpt, SetOpt, StorageDtype, TokensOpt, BatchOpt, plot_option)
from .runtime import check_brief, emit, handles_errors, load

InferPlotOpt = plot_option("decode FLOPs and bytes per step against the context")

PromptOpt = Annotated[int, typer.Option(
    "--prompt", click_type=LENGTH, metavar="N",
    help="Prompt tokens per sequence, processed by the prefill; k = 1024.")]
KvDtypeOpt = Annotated[KvDtype, typer.Option(
    "--kv-dtype", help="dtype of the cached K and V.", case_sensitive=False)]
WeightsDtypeOpt = Annotated[StorageDtype, typer.Option(
    "--weights-dtype", help="dtype the weights are stored in (int8, fp8, int4: weight-only "
    "quantisation).", case_sensitive=False)]
ComputeDtypeOpt = Annotated[ComputeDtype, typer.Option(
    "--compute-dtype", help="dtype of the matmuls: which of the accelerator's peaks applies.",
    case_sensitive=False)]


def _gen(value: str) -> int:
    """--gen: a length, or 0 for a prompt only."""
    from ..errors import FlopcalcError
    from ..numbers import parse_length

    if str(value).strip() == "0":
        return 0
    try:
        return parse_length(value, "--gen")
    except FlopcalcError as exc:
        raise OptionError(str(exc).removeprefix("--gen: ")) from None


def infer_report(model: str, prompt: int, gen: int, batch: int = 1,
                 kv_dtype: KvDtype = KvDtype.bf16,
                 weights_dtype: StorageDtype = StorageDtype.bf16,
                 compute_dtype: ComputeDtype = ComputeDtype.bf16,
                 attention: AttentionOpt = AttentionOpt.full,
                 accelerator: Optional[str] = None, count: int = 1,
                 peak: Optional[int] = None, bandwidth: Optional[int] = None,
                 max_batch: bool = False, set_: Optional[List[str]] = None,
                 curve: bool = False) -> Any:
    from .. import api

    return api.infer(model, prompt=prompt, gen=gen, batch=batch,
                     kv_dtype=KvDtype(kv_dtype).value,
                     weights_dtype=StorageDtype(weights_dtype).value,
                     compute_dtype=ComputeDtype(compute_dtype).value,
                     attention=AttentionOpt(attention).value, accelerator=accelerator,
                     count=count, peak=peak, bandwidth=bandwidth, max_batch=max_batch, set=set_,
                     curve=curve)


@handles_errors
def infer(
    model: ModelArg,
    prompt: PromptOpt,
    gen: Annotated[int, typer.Option("--gen", metavar="N", parser=_gen,
                                     help="Generated tokens per sequence: one decode step each; "
                                     "k = 1024; 0 counts the prompt only.")],
    batch: BatchOpt = 1,
    kv_dtype: KvDtypeOpt = KvDtype.bf16,
    weights_dtype: WeightsDtypeOpt = StorageDtype.bf16,
    compute_dtype: ComputeDtypeOpt = ComputeDtype.bf16,
    attention: AttentionFlag = AttentionOpt.full,
    accelerator: AcceleratorOpt = None,
    count: CountOpt = 1,
    peak: PeakOpt = None,
    bandwidth: BandwidthOpt = None,
    max_batch: Annotated[bool, typer.Option(
        "--max-batch", help="Serve the largest batch whose weights and KV cache fit the "
        "devices (needs --accelerator).")] = False,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    brief: BriefOpt = False,
    plot: InferPlotOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Prefill and decode FLOPs with the KV context, KV-cache and weight bytes, and with
    --accelerator the roofline lower bounds on time and tokens/s."""
    from ..render import serving as render

    check_brief(brief, fmt)
    report = infer_report(model, prompt, gen, batch, kv_dtype, weights_dtype, compute_dtype,
                          attention, accelerator, count, peak, bandwidth, max_batch, set_,
                          plot is not None)
    if plot is not None:
        from ..render.plot import plot_infer

        plot_infer(report, plot)
    emit(fmt, report, render.infer_csv, render.infer_tables,
         render.infer_brief if brief else None)


def train_report(model: str, mfu: Fraction, tokens: Optional[int] = None,
                 seq: Optional[int] = None, attention: AttentionOpt = AttentionOpt.full,
                 recompute: Recompute = Recompute.none, accelerator: Optional[str] = None,
                 count: int = 1, days: Optional[Fraction] = None,
                 dtype: ComputeDtype = ComputeDtype.bf16, peak: Optional[int] = None,
                 price: Optional[Fraction] = None, set_: Optional[List[str]] = None) -> Any:
    from .. import api

    return api.train(model, mfu=mfu, tokens=tokens, seq=seq,
                     attention=AttentionOpt(attention).value,
                     recompute=Recompute(recompute).value, accelerator=accelerator, count=count,
                     days=days, dtype=ComputeDtype(dtype).value, peak=peak, price=price,
                     set=set_)


@handles_errors
def train(
    model: ModelArg,
    mfu: MfuOpt,
    tokens: TokensOpt = None,
    seq: SeqOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    recompute: RecomputeOpt = Recompute.none,
    accelerator: AcceleratorOpt = None,
    count: CountOpt = 1,
    days: Annotated[Optional[Fraction], typer.Option(
        "--days", click_type=AMOUNT, metavar="N",
        help="A deadline instead of --count: the fewest devices that finish in N days.")] = None,
    dtype: Annotated[ComputeDtype, typer.Option(
        "--dtype", help="Which of the accelerator's peaks to use.",
        case_sensitive=False)] = ComputeDtype.bf16,
    peak: PeakOpt = None,
    price: Annotated[Optional[Fraction], typer.Option(
        "--price", click_type=AMOUNT, metavar="P",
        help="Price per accelerator-hour: adds the cost.")] = None,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    brief: BriefOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Wall-clock days, accelerator-hours and cost to train on D tokens, for the exact count and
    6ND; or, with --days, the devices needed."""
    from ..render import serving as render

    check_brief(brief, fmt)
    report = train_report(model, mfu, tokens, seq, attention, recompute, accelerator, count,
                          days, dtype, peak, price, set_)
    emit(fmt, report, render.train_csv, render.train_tables,
         render.train_brief if brief else None)


@handles_errors
def accelerators(fmt: FormatOpt = Format.table, debug: DebugOpt = False) -> None:
    """Every shipped accelerator preset: memory, bandwidth and dense peak FLOP/s per dtype."""
    from ..render import serving as render
    from ..reports.listing import build_accelerators_report

    report = build_accelerators_report()
    emit(fmt, report, lambda r: render.accelerators_csv(r.to_dict()["accelerators"]),
         lambda r, nums: render.accelerators_tables(r.to_dict()["accelerators"], nums))
