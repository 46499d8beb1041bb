"""`step` as tables, brief lines and CSV: one training step's time, where it goes, its
communication and memory. Formatting only. `attention_words` and `headline_notes` serve `plan`
too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import long_csv
from .escape import one_line
from .mfu import pct, warnings_block
from .output import block, conventions_text, heading, new_table
from .text import Numbers, duration, human, human_bytes, packed_form, packed_words

if TYPE_CHECKING:
    from ..reports.step import StepReport


def _layout_line(lay: Any) -> str:
    words = [f"tp {lay.tp}", f"pp {lay.pp}"] + ([f"vp {lay.vp}"] if lay.vp > 1 else [])
    words += [f"dp {lay.dp}"] + ([f"cp {lay.cp}"] if lay.cp > 1 else [])
    words += ([f"ep {lay.ep}"] if lay.ep > 1 else [])
    words += [f"ZeRO-{lay.zero}", f"micro-batch {lay.micro_batch} x {lay.micro_batches}",
              f"recompute {lay.recompute}"]
    if lay.sequence_parallel:
        words.append("sequence parallel")
    if lay.flash:
        words.append("flash")
    return ", ".join(words)


def attention_words(report: Any) -> str:
    """The MFU's attention convention, in the headline's words."""
    s = report.settings
    return f"{s.attention} attention" if s is not None else "causal attention"


def _notes(report: Any) -> list[str]:
    """What a headline assumed and how it compares with published runs, one line each."""
    lines = [f"- assumed: {line}" for line in report.assumed]
    if report.published is not None:
        lines.append(f"- {report.published.line}")
    return lines


def headline_notes(report: Any) -> list[Any]:
    lines = _notes(report)
    return [block("About these figures:", lines)] if lines else []


def step_tables(report: "StepReport", nums: Numbers) -> list[Any]:
    lay, mc = report.layout, report.machine
    t = report.time["step_seconds"]
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"{lay.devices:,} x {mc.accelerator} ({mc.dtype}) on {mc.network}; seq "
        f"{report.seq:,}, {lay.global_batch:,} sequences per step\n{_layout_line(lay)}\n")]
    table = new_table("One training step", ["", "low", "estimate", "high"])
    table.add_row("step time", duration(t.low), duration(t.estimate), duration(t.high),
                  style="bold")
    tps = report.throughput["tokens_per_second"]
    per = report.throughput["tokens_per_second_per_device"]
    table.add_row("tokens/s", nums.whole(tps.low), nums.whole(tps.estimate),
                  nums.whole(tps.high))
    table.add_row("tokens/s per device", f"{per.low:,.1f}", f"{per.estimate:,.1f}",
                  f"{per.high:,.1f}")
    table.add_row(f"MFU (exact, {attention_words(report)})", pct(report.mfu.low),
                  pct(report.mfu.estimate), pct(report.mfu.high))
    table.add_row("HFU (+ recomputation)", pct(report.hfu.low), pct(report.hfu.estimate),
                  pct(report.hfu.high))
    tr = report.training
    table.add_row(f"days for {human(tr.tokens)} tokens", f"{tr.days.low:,.2f}",
                  f"{tr.days.estimate:,.2f}", f"{tr.days.high:,.2f}")
    if tr.cost is not None:
        table.add_row("cost", nums.whole(tr.cost.low), nums.whole(tr.cost.estimate),
                      nums.whole(tr.cost.high))
    out.append(table)
    out += headline_notes(report)

    br = report.time["breakdown"]
    table = new_table("Where the time goes (seconds per step)",
                      ["", "low", "estimate", "high"])
    rows = [("matmuls", "gemm"), ("attention", "attention"),
            ("memory-bound kernels", "memory_bound"), ("LM head + loss", "head"),
            ("recomputation", "recompute"), ("pipeline bubble", "bubble"),
            ("optimizer", "optimizer")]
    for label, key in rows:
        values = [getattr(br[e], key) for e in ("low", "estimate", "high")]
        if any(values):
            table.add_row(label, *(f"{v:.4g}" for v in values))
    for axis in ("tp", "cp", "ep", "pp", "dp", "embedding"):
        values = [br[e].exposed.get(axis, 0.0) for e in ("low", "estimate", "high")]
        if any(values):
            table.add_row(f"exposed {axis} communication", *(f"{v:.4g}" for v in values))
    values = [br[e].exposed.get("host", 0.0) for e in ("low", "estimate", "high")]
    if any(values):
        table.add_row("device waiting on host launches", *(f"{v:.4g}" for v in values))
    table.add_row("step", *(f"{br[e].total:.4g}" for e in ("low", "estimate", "high")),
                  style="bold")
    out.append(table)

    table = new_table("Communication per device per step (estimate)",
                      ["axis", "bytes sent", "seconds", "exposed s"], numeric_from=1)
    used = [(axis, c) for axis, c in report.communication.items() if c.bytes]
    for axis, c in used:
        table.add_row(axis, nums.bytes(c.bytes), f"{c.seconds:.4g}", f"{c.exposed_seconds:.4g}")
    if used:
        out.append(table)
        out.append(block("Collectives:", (f"- {axis}: {c.collectives}" for axis, c in used)))
    m = report.memory
    fit = ("" if m.fits is None else
           f" of {human_bytes(m.capacity or 0, binary=False)}: "
           + ("fits" if m.fits else "does NOT fit"))
    out.append(heading("Memory per device", f": {human_bytes(m.total)} (weights "
                       f"{human_bytes(m.weights)}, gradients {human_bytes(m.gradients)}, "
                       f"optimizer {human_bytes(m.optimizer)}, activations "
                       f"{human_bytes(m.activations)}){fit}; bubble "
                       f"{pct(report.bubble_fraction)} of the estimate\n"))
    if report.unknowns:
        out.append(block("Not given (unknown), so ranged over for the interval:", (
            f"- --{u.option.replace('_', '-')}: estimate {u.estimate}, low end {u.low}, high "
            f"end {u.high}" for u in report.unknowns)))
    out += warnings_block(report.warnings)
    out.append(conventions_text(report.conventions))
    return out


def step_brief(report: "StepReport") -> str:
    t = report.time["step_seconds"]
    tps = report.throughput["tokens_per_second_per_device"]
    return "\n".join([
        f"{one_line(report.model.title)}: {_layout_line(report.layout)}",
        f"step       {t.estimate:.4g} s  [{t.low:.4g}, {t.high:.4g}]",
        f"tokens/s   {tps.estimate:,.1f} per device  [{tps.low:,.1f}, {tps.high:,.1f}]",
        f"MFU        {pct(report.mfu.estimate)}  [{pct(report.mfu.low)}, "
        f"{pct(report.mfu.high)}]  ({attention_words(report)}"
        f"{packed_words(report.settings.packed if report.settings else None)})",
        f"memory     {human_bytes(report.memory.total)} per device"
        + ("" if report.fits is None else (" (fits)" if report.fits else " (does NOT fit)")),
        *(line[2:] for line in _notes(report)),
    ]) + "\n"


def step_csv(report: "StepReport") -> str:
    lay = report.layout
    doc = report.to_dict()
    lengths = report.settings.packed if report.settings else None
    packed = [packed_form(lengths)] if lengths else []  # a column only when packed
    return long_csv(["model", "seq", *(["packed"] if packed else []), "tp", "pp", "dp", "cp",
                     "ep", "zero"],
                    [report.model.name, report.seq, *packed, lay.tp, lay.pp, lay.dp, lay.cp, lay.ep,
                     lay.zero], doc, ("settings", "layout", "time", "throughput", "mfu", "hfu",
                                      "communication", "bubble_fraction", "memory", "fits",
                                      "training"))
