"""The `memory` report as tables and CSV. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..numbers import counted
from .data import long_csv
from .escape import one_line
from .output import conventions_text, heading, new_table
from .text import Numbers, human, human_bytes, percent

if TYPE_CHECKING:
    from ..reports.memory import MemoryReport


def memory_tables(report: "MemoryReport", nums: Numbers) -> list[Any]:
    s, m, a = report.settings, report.memory, report.activations
    parallel = f"dp {s.dp}, tp {s.tp}, pp {s.pp}" + (f", ep {s.ep}" if s.ep > 1 else "")
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"seq {s.seq:,}, micro-batch {s.batch}, {parallel} ({counted(s.devices, 'device')}), ZeRO-{s.zero}, "
        f"recompute {s.recompute}{', sequence parallel' if s.sequence_parallel else ''}\n")]
    table = new_table("Memory per device (the first pipeline stage)", ["", "bytes", "%"])
    for name, value in (("weights", m.weights), ("gradients", m.gradients),
                        ("optimizer state", m.optimizer), ("activations", m.activations)):
        table.add_row(name, nums.bytes(value), percent(100 * value / m.total if m.total else 0))
    table.add_row("total", nums.bytes(m.total), "100.0%", style="bold")
    if report.accelerator is not None:
        acc = report.accelerator
        table.add_row(f"{acc.name} memory a run may fill", nums.bytes(acc.memory_bytes), "")
        headroom = report.headroom_bytes or 0
        table.add_row("headroom" if headroom >= 0 else "short by",
                      nums.bytes(abs(headroom)), "fits" if report.fits else "does NOT fit")
        table.add_row("largest micro-batch that fits", f"{report.max_micro_batch:,}", "")
    out.append(table)

    table = new_table(f"Activations of one layer, micro-batch {s.batch}",
                      ["tensor", "bytes"])
    widest = max(a.layers, key=lambda g: g.bytes)
    for name, value in widest.tensors.items():
        table.add_row(name, nums.bytes(value))
    table.add_row(f"one layer ({widest.kind})", nums.bytes(widest.bytes), style="bold")
    for g in a.layers:
        if g is not widest:
            table.add_row(f"one layer ({g.kind})", nums.bytes(g.bytes))
    for name, value in a.components.items():
        if not name.startswith("layers."):
            table.add_row(name, nums.bytes(value))
    table.add_row("all activations on the device", nums.bytes(m.activations))
    table.add_row("per sample of the micro-batch", nums.bytes(a.per_sample))
    out.append(table)
    params = report.params
    out.append(heading("Parameters", f": {human(params['total'])} in all, "
                       f"{params['device']:,} ({human(params['device'])}) on this device "
                       f"before ZeRO; {human_bytes(m.total)} per device in all\n"))
    out.append(conventions_text(report.conventions))
    return out


def memory_csv(report: "MemoryReport") -> str:
    s = report.settings
    return long_csv(["model", "seq", "batch", "dp", "tp", "pp", "zero"],
                    [report.model.name, s.seq, s.batch, s.dp, s.tp, s.pp, s.zero],
                    report.to_dict(), ("settings", "params", "memory", "activations",
                                       "accelerator", "fits", "headroom_bytes",
                                       "max_micro_batch"))
