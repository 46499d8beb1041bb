"""`attention` as a table and CSV: one attention operation's FLOPs term by term. Formatting
only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .output import conventions_text, new_table, plain
from .text import Numbers

if TYPE_CHECKING:
    from ..reports.attention import AttentionReport


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
