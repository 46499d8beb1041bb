"""Formatting of the `conventions` and `attention` reports: tables and CSV. No arithmetic.

rich is imported (through `flopcalc.render`) only inside the table functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .render import block, conventions_text, exact, heading, human, new_table, to_csv, with_human

if TYPE_CHECKING:
    from .attention import AttentionReport
    from .conventions import ConventionsReport


def signed_percent(x: float) -> str:
    """'+5.6%', '-27.7%', '+<0.1%'; '0.0%' only for an exact zero."""
    if x == 0:
        return "0.0%"
    sign = "+" if x > 0 else "-"
    return f"{sign}<0.1%" if abs(x) < 0.05 else f"{sign}{abs(x):.1f}%"


# ------------------------------------------------------------------------------- conventions

_CONVENTIONS_CSV = ("model", "seq", "tokens", "recompute", "name", "per_token", "total",
                    "delta_pct", "assumption_violated", "rounded", "formula", "source", "notes")


def conventions_csv(report: "ConventionsReport") -> str:
    s = report.settings
    return to_csv(_CONVENTIONS_CSV, (
        [report.model["name"], s["seq"], s["tokens"], s["recompute"], r.name, r.per_token,
         r.total, f"{r.delta_pct:.4f}", str(r.assumption_violated).lower(),
         str(r.rounded).lower(), r.formula, r.source, "; ".join(r.notes)]
        for r in report.conventions))


def _flag(row: Any) -> str:
    # A mark the legend below the tables explains.
    return f"{row.name} (!)" if row.assumption_violated else row.name


def conventions_tables(report: "ConventionsReport") -> list[Any]:
    s, rows = report.settings, report.conventions
    kind = "hardware FLOPs for the exact rows (--recompute full)" if s["recompute"] == "full" \
        else "model FLOPs"
    out: list[Any] = [
        heading(report.model['title'], f" ({report.model['name']})\n"
                f"seq {s['seq']:,}, D = {s['tokens']:,} tokens ({human(s['tokens'])}; "
                f"{s['tokens_source']}); {kind}\n")]

    table = new_table(f"Training FLOPs per token at seq {s['seq']:,}",
                      ["convention", "per token", f"vs {report.reference}"])
    for r in rows:
        delta = "reference" if r.name == report.reference else signed_percent(r.delta_pct)
        table.add_row(_flag(r), with_human(r.per_token) if isinstance(r.per_token, int)
                      else exact(r.per_token), delta)
    out.append(table)

    table = new_table(f"Training FLOPs for D = {s['tokens']:,} tokens ({human(s['tokens'])})",
                      ["convention", "FLOPs"])
    for r in rows:
        table.add_row(_flag(r), with_human(r.total))
    out.append(table)

    sp = report.spread
    out.append(f"Spread: {sp.max} is {sp.ratio:.3g}x {sp.min} per token.")
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


# --------------------------------------------------------------------------------- attention

def attention_csv(report: "AttentionReport") -> str:
    rows: list[list[Any]] = [["term", t.name, t.formula, t.per_head, t.total]
                             for t in report.terms]
    rows += [["total", "exact_total", "sum of the terms", report.exact_per_head,
              report.exact_total],
             ["total", "leading_order", "2·m·n·(d_k + d_v)", report.leading_order_per_head,
              report.leading_order]]
    rows.append(["total", "difference", "4·m·n − m·(d_v + 1)", report.difference_per_head,
                 report.difference])
    if report.closed_form is not None:
        rows.append(["total", "closed_form", "2·n²·(d_k + d_v) + 4·n² − n·(d_v + 1)",
                     report.closed_form_per_head, report.closed_form])
    return to_csv(("section", "name", "formula", "per_head", "total"), rows)


def attention_tables(report: "AttentionReport") -> list[Any]:
    st = report.settings
    heads = st["heads"]
    per = "head" if heads == 1 else "heads"
    table = new_table(
        f"Exact attention FLOPs (seed 004): m = {st['m']:,}, n = {st['n']:,}, "
        f"d_k = {st['d_k']:,}, d_v = {st['d_v']:,}, H = {heads:,}",
        ["term", "formula", "per head", f"x {heads:,} {per}"])
    for t in report.terms:
        table.add_row(t.name, t.formula, exact(t.per_head), with_human(t.total))
    table.add_row("exact_total", "sum of the above", exact(report.exact_per_head),
                  with_human(report.exact_total), style="bold")
    table.add_row("leading_order", "2·m·n·(d_k + d_v)", exact(report.leading_order_per_head),
                  with_human(report.leading_order))
    table.add_row("difference", "4·m·n − m·(d_v + 1)", exact(report.difference_per_head),
                  with_human(report.difference))
    if report.closed_form is not None:
        table.add_row("closed form", "seed 004, m = n", exact(report.closed_form_per_head),
                      with_human(report.closed_form))
    return [f"{st['m']:,} queries attend to {st['n']:,} keys, in {heads:,} {per}.",
            table, f"Source: {report.source}.", conventions_text(report.convention)]
