"""`model`, `list`, `show`, `sweep` and `compare`: options in, one report out.

Each command is a report builder (`*_report`, which `check` budgets reuse with the same parsed
options) and a thin function that renders it. Heavy imports happen inside the functions, so
`flopcalc --help` and `--format json` stay fast.
"""

from __future__ import annotations

from typing import Annotated, Any, List, Optional

import typer

from .options import (AttentionFlag, AttentionOpt, BatchOpt, BriefOpt, DebugOpt, ElementwiseOpt,
                      Format, FormatOpt, ModelArg, SeqOpt, SetOpt, TgtSeqOpt, TokensOpt,
                      plot_option)
from .runtime import check_brief, emit, handles_errors, load, write

SweepPlotOpt = plot_option("the sweep")
ComparePlotOpt = plot_option("the comparison")


def model_report(model: str, set_: Optional[List[str]] = None, seq: Optional[int] = None,
                 tgt_seq: Optional[int] = None, batch: int = 1, tokens: Optional[int] = None,
                 attention: AttentionOpt = AttentionOpt.full, elementwise: bool = False) -> Any:
    from .. import api

    return api.model(model, seq=seq, tgt_seq=tgt_seq, batch=batch, tokens=tokens,
                     attention=AttentionOpt(attention).value, elementwise=elementwise, set=set_)


@handles_errors
def model(
    model: ModelArg,
    seq: SeqOpt = None,
    tgt_seq: TgtSeqOpt = None,
    batch: BatchOpt = 1,
    tokens: TokensOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    elementwise: ElementwiseOpt = False,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    brief: BriefOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Parameters, forward FLOPs by component, training FLOPs and the attention crossover."""
    from ..render import model as render

    check_brief(brief, fmt)
    report = model_report(model, set_, seq, tgt_seq, batch, tokens, attention, elementwise)
    emit(fmt, report, render.model_csv, render.model_tables,
         render.model_brief if brief else None)


@handles_errors
def list_(fmt: FormatOpt = Format.table, debug: DebugOpt = False) -> None:
    """Every shipped preset with its key dimensions and parameter count."""
    from ..render import workflows as render
    from ..reports.listing import build_list_report

    emit(fmt, build_list_report(), render.list_csv, render.list_tables)


@handles_errors
def show(model: ModelArg, set_: SetOpt = None, debug: DebugOpt = False) -> None:
    """Print the resolved config as YAML; the output is itself a valid preset."""
    from ..models.validation import validate_model
    from ..reports.listing import config_yaml

    loaded = load(model, set_)
    write(config_yaml(validate_model(loaded.raw, loaded.label)[0]))


def sweep_report(model: str, seq: str = "1k..1M", points: Optional[int] = None,
                 batch: int = 1, attention: AttentionOpt = AttentionOpt.full,
                 set_: Optional[List[str]] = None) -> Any:
    from .. import api

    return api.sweep(model, seq=seq, points=points, batch=batch,
                     attention=AttentionOpt(attention).value, set=set_)


@handles_errors
def sweep(
    model: ModelArg,
    seq: Annotated[str, typer.Option(
        "--seq", metavar="SPEC", help="Lengths: 1k,2k,4k; a range 1k..1M (every power of two); "
        "or a range with --points N (N log-spaced lengths). k = 1024.")] = "1k..1M",
    points: Annotated[Optional[int], typer.Option(
        "--points", help="With a range: this many log-spaced integer lengths.")] = None,
    batch: BatchOpt = 1,
    attention: AttentionFlag = AttentionOpt.full,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    plot: SweepPlotOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Forward FLOPs over many sequence lengths: where attention's s² term takes over."""
    from ..render import workflows as render

    report = sweep_report(model, seq, points, batch, attention, set_)
    if plot is not None:
        from ..render.plot import plot_sweep

        plot_sweep(report, plot)
    emit(fmt, report, render.sweep_csv, render.sweep_tables)


def compare_report(models: List[str], seq: Optional[int] = None, batch: int = 1,
                   tokens: Optional[int] = None, attention: AttentionOpt = AttentionOpt.full,
                   set_: Optional[List[str]] = None) -> Any:
    from .. import api

    return api.compare(models, seq=seq, batch=batch, tokens=tokens,
                       attention=AttentionOpt(attention).value, set=set_)


@handles_errors
def compare(
    models: Annotated[List[str], typer.Argument(metavar="MODEL...", help="Models to compare.")],
    seq: SeqOpt = None,
    batch: BatchOpt = 1,
    tokens: TokensOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    plot: ComparePlotOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Key figures of several models side by side (each at its own default length unless
    --seq). --set applies to every model."""
    from ..render import workflows as render

    report = compare_report(models, seq, batch, tokens, attention, set_)
    if plot is not None:
        from ..render.plot import plot_compare

        plot_compare(report, plot)
    emit(fmt, report, render.compare_csv, render.compare_tables)
