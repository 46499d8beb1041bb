"""`flopcalc mfu`: MFU and HFU from a measured throughput, under every convention."""

from __future__ import annotations

from fractions import Fraction

from ..errors import FlopcalcError
from .base import Command, Render
from .common import load, platform
from .options import CAUSAL, OPTIONS, pick


def run(model, *, tokens_per_second, per_device, step_time, global_batch, accelerator, count,
        seq, packed, dtype, peak, recompute, attention, scan, set):  # noqa: A002
    from ..reports.common import default_seq
    from ..reports.mfu import build_mfu_report
    from ..reports.packing import parse_packed

    loaded = load(model, set)
    seq = seq or default_seq(loaded.spec)
    samples = parse_packed(packed, seq, loaded.spec, loaded.name)
    if (tokens_per_second is None) == (step_time is None):
        raise FlopcalcError("give the measurement: --tokens-per-second T, or --step-time S with "
                            "--global-batch B (sequences per step)")
    hw = platform(accelerator, dtype, count, peak, None, need_bandwidth=False).hw
    if hw is None:
        raise FlopcalcError("mfu needs --accelerator NAME (flopcalc accelerators lists them) or "
                            "--peak FLOP/s per device")
    if step_time is not None:
        if global_batch is None:
            raise FlopcalcError("--step-time needs --global-batch B (sequences per step) to "
                                "know the tokens it processed")
        rate = Fraction(global_batch * seq) / step_time
        given = f"{float(step_time):g} s per step of {global_batch:,} sequences of {seq:,}"
    else:
        if global_batch is not None:
            raise FlopcalcError("--global-batch goes with --step-time, not --tokens-per-second")
        rate = tokens_per_second * (hw.count if per_device else 1)
        given = (f"{float(tokens_per_second):,g} tokens/s "
                 + ("per device" if per_device else "in all"))
    return build_mfu_report(loaded, hw, seq, rate, given, step_time, global_batch, recompute,
                            scan, attention, samples)


COMMAND = Command(
    "mfu", "MFU from a measured throughput under every named convention side by side (6ND, "
    "PaLM, Megatron, exact full and causal), and HFU with recomputation; a figure above 100% is "
    "shown as impossible, with the convention that causes it.",
    (*pick("tokens_per_second", "per_device", "step_time", "global_batch", "accelerator",
           "count", "seq", "packed", "dtype", "peak", "recompute"),
     OPTIONS["attention"].but(default="causal", why=CAUSAL), *pick("scan", "set")),
    run, presentation=("format", "brief"), report=("mfu", "MfuReport"),
    render=Render("mfu", "mfu_csv", "mfu_tables", "mfu_brief"))
