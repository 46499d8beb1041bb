"""The `mfu`, `step` and `plan` reports as tables, brief lines and CSV. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import long_csv, to_csv
from .escape import one_line
from .output import block, conventions_text, heading, new_table
from .text import Numbers, duration, human, human_bytes, rate

if TYPE_CHECKING:
    from ..reports.mfu import MfuReport
    from ..reports.plan import PlanReport
    from ..reports.step import StepReport


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _warnings(lines: list[str]) -> list[Any]:
    return [block("Warnings:", (f"- {w}" for w in lines))] if lines else []


# ------------------------------------------------------------------------------------- mfu


def mfu_tables(report: "MfuReport", nums: Numbers) -> list[Any]:
    a, m = report.accelerator, report.measured
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"measured {m.given}: {m.tokens_per_second:,.0f} tokens/s in all, "
        f"{m.tokens_per_second_per_device:,.1f} per device; {a.count:,} x {one_line(a.name)} at "
        f"{rate(a.peak_flops, 'FLOP/s')} dense {a.dtype}; seq {report.seq:,}\n")]
    table = new_table("Utilisation under each convention",
                      ["convention", "FLOPs/token", "per device", "utilisation", ""],
                      numeric_from=1)
    for r in report.rows:
        verdict = "" if r.possible else "IMPOSSIBLE (> 100%)"
        label = r.name + (" (HFU)" if r.hardware else "")
        if r.name == f"exact_{report.attention}":
            label += " = MFU"
        elif r.name == f"hfu_exact_{report.attention}":
            label = r.name + " = HFU"
        table.add_row(label, human(r.flops_per_token), rate(r.achieved_flops_per_device,
                                                           "FLOP/s"),
                      pct(r.utilisation), verdict,
                      style="bold" if r.name in (f"exact_{report.attention}",
                                                 f"hfu_exact_{report.attention}") else None)
    out.append(table)
    causes = [f"- {r.name}: {r.cause}" for r in report.rows if not r.possible]
    if causes:
        out.append(block("Why the impossible figures cannot be:", causes))
    out.append(block("Formulas:", (f"- {r.name}: {r.formula} ({r.source})"
                                   for r in report.rows)))
    out += _warnings(report.warnings)
    out.append(conventions_text(report.conventions))
    return out


def mfu_csv(report: "MfuReport") -> str:
    header = ["model", "seq", "convention", "flops_per_token", "utilisation", "hardware",
              "possible", "cause"]
    rows = [[report.model.name, report.seq, r.name, r.flops_per_token, r.utilisation,
             r.hardware, r.possible, r.cause] for r in report.rows]
    return to_csv(header, rows)


def mfu_brief(report: "MfuReport") -> str:
    lines = [f"{one_line(report.model.title)}: "
             f"{report.measured.tokens_per_second_per_device:,.1f} tokens/s per device on "
             f"{one_line(report.accelerator.name)}"]
    if report.mfu is not None and report.hfu is not None:
        lines.append(f"MFU {pct(report.mfu)}, HFU {pct(report.hfu)} (exact, "
                     f"{report.attention} attention)")
    for r in report.rows:
        lines.append(f"{r.name:20s} {pct(r.utilisation):>7s}" + ("" if r.possible
                                                                  else "  IMPOSSIBLE"))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------ step


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


def _attention(report: Any) -> str:
    """The MFU's attention convention, in the headline's words."""
    s = report.settings
    return f"{s.attention} attention" if s is not None else "causal attention"


def _notes(report: Any) -> list[str]:
    """What a headline assumed and how it compares with published runs, one line each."""
    lines = [f"- assumed: {line}" for line in report.assumed]
    if report.published is not None:
        lines.append(f"- {report.published.line}")
    return lines


def _headline_notes(report: Any) -> list[Any]:
    lines = _notes(report)
    return [block("About these figures:", lines)] if lines else []


_LAYOUT_LEGEND = ("layout: parallel sizes (tp4 = tensor parallel 4; pp, vp, dp, cp, ep alike), "
                  "ZeRO stage, mb1x32 = micro-batches of 1 sequence, 32 per pipeline per step, "
                  "SP = sequence parallel; memory per device.")


def _layout_cell(lay: Any) -> str:
    """`_layout_line` in a table's words, none of which holds a space: 'tp4 pp16 vp8 dp64
    ZeRO-1 mb1x32 recompute-none SP flash'."""
    sizes = [("tp", lay.tp), ("pp", lay.pp), ("vp", lay.vp), ("dp", lay.dp), ("cp", lay.cp),
             ("ep", lay.ep)]
    words = [f"{axis}{n}" for axis, n in sizes if n > 1 or axis in ("tp", "pp", "dp")]
    words += [f"ZeRO-{lay.zero}", f"mb{lay.micro_batch}x{lay.micro_batches}",
              f"recompute-{lay.recompute}"]
    return " ".join(words + (["SP"] if lay.sequence_parallel else [])
                    + (["flash"] if lay.flash else []))


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
    table.add_row(f"MFU (exact, {_attention(report)})", pct(report.mfu.low),
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
    out += _headline_notes(report)

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
    out += _warnings(report.warnings)
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
        f"{pct(report.mfu.high)}]  ({_attention(report)})",
        f"memory     {human_bytes(report.memory.total)} per device"
        + ("" if report.fits is None else (" (fits)" if report.fits else " (does NOT fit)")),
        *(line[2:] for line in _notes(report)),
    ]) + "\n"


def step_csv(report: "StepReport") -> str:
    lay = report.layout
    doc = report.to_dict()
    return long_csv(["model", "seq", "tp", "pp", "dp", "cp", "ep", "zero"],
                    [report.model.name, report.seq, lay.tp, lay.pp, lay.dp, lay.cp, lay.ep,
                     lay.zero], doc, ("settings", "layout", "time", "throughput", "mfu", "hfu",
                                      "communication", "bubble_fraction", "memory", "fits",
                                      "training"))


# ------------------------------------------------------------------------------------ plan


def plan_tables(report: "PlanReport", nums: Numbers) -> list[Any]:
    mc = report.machine
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"{report.devices:,} x {mc.accelerator} ({mc.dtype}) on {mc.network}; seq "
        f"{report.seq:,}, {report.global_batch:,} sequences per step; {report.fitting:,} "
        f"layouts fit (searched in {report.search_seconds:.2f} s)\n")]
    # The layout is the one text column (it wraps between its words, each whole); where the
    # time goes follows as lines of its own, so that the table fits 80 columns unbroken.
    table = new_table("Best layouts by estimated step time",
                      ["#", "step", "tokens/s", f"MFU ({_attention(report).split()[0]})",
                       "memory", "layout"],
                      numeric_from=1, numeric_to=5, caption=_LAYOUT_LEGEND)
    for p in report.plans:
        table.add_row(str(p.rank), duration(p.step_seconds), nums.whole(p.tokens_per_second),
                      pct(p.mfu), human_bytes(p.memory_bytes, binary=False),
                      _layout_cell(p.layout))
    out.append(table)
    out.append(block("Where the time goes:", (f"- #{p.rank}: {p.summary}"
                                              for p in report.plans)))
    out += _headline_notes(report)
    if report.why:
        out.append(block("Why #1 wins:", (f"- {line}" for line in report.why)))
    out += _warnings(report.warnings)
    out.append(conventions_text(report.conventions))
    return out


def plan_csv(report: "PlanReport") -> str:
    header = ["model", "seq", "global_batch", "rank", "tp", "pp", "vp", "dp", "cp", "ep",
              "zero", "recompute", "micro_batch", "step_seconds", "tokens_per_second", "mfu",
              "memory_bytes", "attention"]
    rows = [[report.model.name, report.seq, report.global_batch, p.rank, p.layout.tp,
             p.layout.pp, p.layout.vp, p.layout.dp, p.layout.cp, p.layout.ep, p.layout.zero,
             p.layout.recompute, p.layout.micro_batch, p.step_seconds, p.tokens_per_second,
             p.mfu, p.memory_bytes, _attention(report).split()[0]] for p in report.plans]
    return to_csv(header, rows)
