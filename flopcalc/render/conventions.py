"""`conventions` and `attention` as tables and CSV. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import block, conventions_text, heading, new_table, plain
from .text import Numbers, human, signed_percent, whole

if TYPE_CHECKING:
    from ..reports.attention import AttentionReport
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


def attention_csv(report: "AttentionReport") -> str:
    rows: list[list[Any]] = [["term", t.name, t.formula, t.per_head, t.total]
                             for t in report.terms]
    rows += [["total", "exact_total", "sum of the terms", report.exact_per_head,
              report.exact_total],
             ["total", "leading_order", "2·m·n·(d_k + d_v)", report.leading_order_per_head,
              report.leading_order],
             ["total", "difference", "4·m·n − m·(d_v + 1)", report.difference_per_head,
              report.difference]]
    if report.closed_form is not None:
        rows.append(["total", "closed_form", "2·n²·(d_k + d_v) + 4·n² − n·(d_v + 1)",
                     report.closed_form_per_head, report.closed_form])
    return to_csv(("section", "name", "formula", "per_head", "total"), rows)


def attention_tables(report: "AttentionReport", nums: Numbers) -> list[Any]:
    st = report.settings
    per = "head" if st.heads == 1 else "heads"
    table = new_table(
        f"Exact attention FLOPs: m = {st.m:,}, n = {st.n:,}, d_k = {st.d_k:,}, "
        f"d_v = {st.d_v:,}, H = {st.heads:,}",
        ["term", "formula", "per head", f"x {st.heads:,} {per}"], numeric_from=2)
    for t in report.terms:
        table.add_row(t.name, t.formula, nums.whole(t.per_head), nums.count(t.total))
    table.add_row("exact_total", "sum of the above", nums.whole(report.exact_per_head),
                  nums.count(report.exact_total), style="bold")
    table.add_row("leading_order", "2·m·n·(d_k + d_v)",
                  nums.whole(report.leading_order_per_head), nums.count(report.leading_order))
    table.add_row("difference", "4·m·n − m·(d_v + 1)", nums.whole(report.difference_per_head),
                  nums.count(report.difference))
    if report.closed_form is not None:
        table.add_row("closed form", "the notes' m = n form",
                      nums.whole(report.closed_form_per_head or 0), nums.count(report.closed_form))
    return [plain(f"{st.m:,} queries attend to {st.n:,} keys, in {st.heads:,} {per}."),
            table, plain(f"Source: {report.source}."), conventions_text(report.convention)]
