"""`conventions` as a table and CSV: every published convention beside the exact count.
Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import block, conventions_text, heading, new_table, plain
from .text import Numbers, human, signed_percent, whole

if TYPE_CHECKING:
    from ..reports.conventions import ConventionsReport, Row


_CONVENTIONS_CSV = ("model", "seq", "tokens", "recompute", "name", "per_token", "total",
                    "delta_pct", "assumption_violated", "rounded", "formula", "source", "notes")


def conventions_csv(report: "ConventionsReport") -> str:
    s = report.settings
    return to_csv(_CONVENTIONS_CSV, (
        [report.model.name, s.seq, s.tokens, s.recompute, r.name, r.per_token, r.total,
         r.delta_pct, r.assumption_violated, r.rounded, r.formula, r.source, "; ".join(r.notes)]
        for r in report.conventions))


NOT_APPLICABLE = "not applicable"


def _flag(row: "Row") -> str:
    # A mark the legend below the tables explains.
    return f"{row.name} (!)" if row.assumption_violated else row.name


def conventions_tables(report: "ConventionsReport", nums: Numbers) -> list[Any]:
    s, rows = report.settings, report.conventions
    kind = "hardware FLOPs for the exact rows (--recompute full)" if s.recompute == "full" \
        else "model FLOPs"
    out: list[Any] = [
        heading(report.model.title, f" ({one_line(report.model.name)})\n"
                f"seq {s.seq:,}, D = {whole(s.tokens)} tokens ({human(s.tokens)}; "
                f"{s.tokens_source}); {kind}\n")]

    table = new_table(f"Training FLOPs per token at seq {s.seq:,}",
                      ["convention", "per token", f"vs {report.reference}"])
    for r in rows:
        if r.per_token is None or r.delta_pct is None:
            table.add_row(_flag(r), NOT_APPLICABLE, "")
            continue
        delta = "reference" if r.name == report.reference else signed_percent(r.delta_pct)
        table.add_row(_flag(r), nums.count(r.per_token), delta)
    out.append(table)

    table = new_table(f"Training FLOPs for D = {whole(s.tokens)} tokens ({human(s.tokens)})",
                      ["convention", "FLOPs"])
    for r in rows:
        table.add_row(_flag(r), NOT_APPLICABLE if r.total is None else nums.count(r.total))
    out.append(table)

    sp = report.spread
    out.append(plain(f"Spread: {sp.max} is {sp.ratio:.3g}x {sp.min} per token."))
    out.append(block("Formulas and sources:",
                     (f"- {r.name} = {r.formula}: {r.source}" for r in rows)))
    notes = [f"- {r.name}{' (!)' if r.assumption_violated else ''}: {note}"
             for r in rows for note in r.notes]
    if any(r.rounded for r in rows):
        notes.append("- a figure that is not a whole number is rounded (rounded: true in JSON)")
    if notes:
        out.append(block("Notes:", notes))
    out.append(conventions_text(report.how_counted))
    return out
