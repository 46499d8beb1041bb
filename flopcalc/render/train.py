"""`train` as tables, brief lines and CSV: training FLOPs, then time and cost on a fleet.
Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import long_csv
from .escape import one_line
from .output import conventions_text, heading, new_table
from .text import (named, Numbers, amount, duration, human, packed_form, packed_words, percent,
                   rate, scan_words, whole)

if TYPE_CHECKING:
    from ..reports.train import TrainReport


def train_tables(report: "TrainReport", nums: Numbers) -> list[Any]:
    s, t, a = report.settings, report.training, report.accelerator
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"D = {whole(s.tokens)} tokens ({human(s.tokens)}; {s.tokens_source}), seq {s.seq:,}, "
        f"attention {s.attention}{scan_words(s.scan)}\n")]
    passes = "4 x forward: hardware FLOPs" if t.passes == 4 else "3 x forward"
    table = new_table(f"Training FLOPs on D = {human(s.tokens)} tokens", ["estimate", "FLOPs"])
    table.add_row(f"exact ({passes})", nums.count(t.exact), style="bold")
    table.add_row("6ND (N non-embedding)", nums.count(t.six_nd))
    table.add_row("6ND below exact", percent(t.six_nd_below_exact_pct))
    out.append(table)

    mfu = f"{100 * s.mfu:.4g}% MFU"
    count = f"{a.count:,}" + (f" (fewest for {s.days:g} days)" if s.days is not None else "")
    table = new_table(f"{count} x {a.title} at {mfu}", ["", "exact", "6ND"])
    table.add_row("sustained FLOP/s", rate(report.achieved_flops, "FLOP/s"), "")
    table.add_row("wall-clock", duration(report.seconds.exact), duration(report.seconds.six_nd),
                  style="bold")
    table.add_row("accelerator-hours", nums.whole(report.accelerator_hours.exact),
                  nums.whole(report.accelerator_hours.six_nd))
    if report.cost is not None:
        table.add_row(f"cost at {s.price:g} per hour", nums.whole(report.cost.exact),
                      nums.whole(report.cost.six_nd))
    out.append(table)
    out.append(conventions_text(report.conventions))
    return out


def train_brief(report: "TrainReport") -> str:
    s, t, a = report.settings, report.training, report.accelerator
    lines = [f"{named(report.model)}: D {human(s.tokens)} tokens at seq {s.seq:,}, "
             f"{a.count:,} x {one_line(a.name)}, {s.dtype} peak, {100 * s.mfu:.4g}% MFU, "
             f"attention {s.attention}{scan_words(s.scan)}{packed_words(s.packed)}"
             + (f", recompute {s.recompute}" if s.recompute != "none" else ""),
             f"exact         {t.exact:,} FLOPs ({human(t.exact)}; attention {s.attention})",
             f"6ND           {t.six_nd:,} FLOPs ({human(t.six_nd)}), "
             f"{percent(t.six_nd_below_exact_pct)} below",
             f"days          {amount(report.days.exact)} exact, {amount(report.days.six_nd)} 6ND",
             f"hours         {report.accelerator_hours.exact:,.0f} accelerator-hours exact "
             f"({report.accelerator_hours.six_nd:,.0f} 6ND)"]
    if report.cost is not None:
        lines.append(f"cost          {report.cost.exact:,.0f} exact ({report.cost.six_nd:,.0f} "
                     "6ND)")
    return "\n".join(lines) + "\n"


def train_csv(report: "TrainReport") -> str:
    s = report.settings
    packed = [packed_form(s.packed)] if s.packed else []  # a column only when packed
    return long_csv(["model", "seq", *(["packed"] if packed else []), "tokens", "count"],
                    [report.model.name, s.seq, *packed, s.tokens, s.count], report.to_dict(),
                    ("settings", "training", "accelerator", "achieved_flops", "seconds", "days",
                     "accelerator_hours", "cost"))
