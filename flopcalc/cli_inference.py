"""`flopcalc infer`, `flopcalc train` and `flopcalc accelerators`: options in, one report out.

Registered on `flopcalc.cli.app` when cli.py imports this module; the arithmetic lives in
`flopcalc.inference`, the accelerator presets in `flopcalc.accelerators`, the formatting in
`flopcalc.render_inference`. Errors are `FlopcalcError`s, which cli.main turns into exit 2.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Optional

import typer
from typing import Annotated

from .cli import (AttentionFlag, AttentionOpt, BatchOpt, Format, FormatOpt, ModelArg, SeqOpt,
                  SetOpt, TokensOpt, app, emit, load, opt_count, opt_length)
from .errors import FlopcalcError
from .numbers import parse_count, parse_length

if TYPE_CHECKING:
    from .accelerators import Hardware


class StorageDtype(str, Enum):
    """Dtypes of stored weights and KV cache (their byte sizes are in inference.DTYPE_BYTES)."""

    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    fp32 = "fp32"


class ComputeDtype(str, Enum):
    """Dtypes an accelerator preset may list a peak for: accelerators.DTYPES (a test checks it;
    that module is not imported here, to keep it off every command's start-up)."""

    fp64 = "fp64"
    fp32 = "fp32"
    tf32 = "tf32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    fp4 = "fp4"


PromptOpt = Annotated[str, typer.Option(
    "--prompt", metavar="N",
    help="Prompt tokens per sequence, processed by the prefill; k = 1024.")]
GenOpt = Annotated[str, typer.Option(
    "--gen", metavar="N", help="Generated tokens per sequence: one decode step each; k = 1024.")]
KvDtypeOpt = Annotated[StorageDtype, typer.Option(
    "--kv-dtype", help="dtype of the cached K and V.", case_sensitive=False)]
WeightsDtypeOpt = Annotated[StorageDtype, typer.Option(
    "--weights-dtype", help="dtype of the weights; also picks the accelerator's peak.",
    case_sensitive=False)]
AcceleratorOpt = Annotated[Optional[str], typer.Option(
    "--accelerator", metavar="NAME",
    help="Accelerator preset (flopcalc accelerators) or a YAML file in that schema.")]
CountOpt = Annotated[str, typer.Option(
    "--count", metavar="N",
    help="Number of devices; peak (and bandwidth) scale by it: perfect scaling.")]
PeakOpt = Annotated[Optional[str], typer.Option(
    "--peak", metavar="FLOP/S",
    help="Dense peak FLOP/s per device, overriding the preset (989.5T, 1.3e15).")]
BandwidthOpt = Annotated[Optional[str], typer.Option(
    "--bandwidth", metavar="BYTES/S",
    help="Memory bandwidth in bytes/s per device, overriding the preset (3.35T).")]
MfuOpt = Annotated[str, typer.Option(
    "--mfu", metavar="F",
    help="Model FLOPs utilisation: the sustained share of peak, 0.4 or 40%.")]
TrainDtypeOpt = Annotated[ComputeDtype, typer.Option(
    "--dtype", help="Which of the accelerator's peaks to use.", case_sensitive=False)]


def _hardware(accelerator: Optional[str], dtype: str, count: str, peak: Optional[str],
              bandwidth: Optional[str], need_bandwidth: bool = True) -> Optional[Hardware]:
    n = parse_count(count, "--count")
    if accelerator is None and peak is None and bandwidth is None:
        if n != 1:
            raise FlopcalcError("--count multiplies an accelerator: give --accelerator NAME (or "
                                "--peak and --bandwidth) too")
        return None
    from .accelerators import resolve_hardware

    return resolve_hardware(accelerator, dtype, n, opt_count(peak, "--peak"),
                            opt_count(bandwidth, "--bandwidth"), need_bandwidth)


@app.command()
def infer(
    model: ModelArg,
    prompt: PromptOpt,
    gen: GenOpt,
    batch: BatchOpt = "1",
    kv_dtype: KvDtypeOpt = StorageDtype.bf16,
    weights_dtype: WeightsDtypeOpt = StorageDtype.bf16,
    attention: AttentionFlag = AttentionOpt.causal,
    accelerator: AcceleratorOpt = None,
    count: CountOpt = "1",
    peak: PeakOpt = None,
    bandwidth: BandwidthOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Prefill and decode FLOPs with the KV context, KV-cache and weight bytes, and with
    --accelerator the roofline lower bounds on time and tokens/s."""
    from . import render_inference as render
    from .inference import build_infer_report

    loaded = load(model, set_)
    hw = _hardware(accelerator, weights_dtype.value, count, peak, bandwidth)
    report = build_infer_report(
        loaded, prompt=parse_length(prompt, "--prompt"), gen=parse_length(gen, "--gen"),
        batch=parse_count(batch, "--batch"), attention=attention.value,
        kv_dtype=kv_dtype.value, weights_dtype=weights_dtype.value, hw=hw)
    emit(fmt, report.to_dict, lambda: render.infer_csv(report),
         lambda: render.infer_tables(report), report.warnings)


@app.command()
def train(
    model: ModelArg,
    mfu: MfuOpt,
    tokens: TokensOpt = None,
    seq: SeqOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    accelerator: AcceleratorOpt = None,
    count: CountOpt = "1",
    dtype: TrainDtypeOpt = ComputeDtype.bf16,
    peak: PeakOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Wall-clock days and accelerator-hours to train on D tokens, for the exact count and 6ND."""
    from . import render_inference as render
    from .numbers import parse_fraction
    from .inference import build_train_report
    from .report import build_report

    loaded = load(model, set_)
    utilisation = parse_fraction(mfu, "--mfu")
    hw = _hardware(accelerator, dtype.value, count, peak, None, need_bandwidth=False)
    if hw is None:
        raise FlopcalcError("train needs --accelerator NAME (flopcalc accelerators lists them) "
                            "or --peak FLOP/s per device")
    model_report = build_report(loaded, seq=opt_length(seq, "--seq"),
                                tokens=opt_count(tokens, "--tokens"), attention=attention.value)
    report = build_train_report(model_report, hw, utilisation)
    emit(fmt, report.to_dict, lambda: render.train_csv(report),
         lambda: render.train_tables(report), report.warnings)


@app.command()
def accelerators(fmt: FormatOpt = Format.table) -> None:
    """Every shipped accelerator preset: memory, bandwidth and dense peak FLOP/s per dtype."""
    from . import render_inference as render
    from .accelerators import all_accelerators, preset_row

    rows = [preset_row(a) for a in all_accelerators()]
    emit(fmt, lambda: {"schema_version": 1, "accelerators": rows},
         lambda: render.accelerators_csv(rows), lambda: render.accelerators_tables(rows))
