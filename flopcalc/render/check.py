"""`check` as one line per limit and CSV. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .data import to_csv
from .escape import one_line
from .text import human_bytes, with_human

if TYPE_CHECKING:
    from ..reports.check import CheckReport


_CHECK_COLUMNS = ("model", "command", "key", "bound", "status", "value", "limit", "margin",
                  "margin_pct", "settings", "unit", "compared")


def check_csv(report: "CheckReport") -> str:
    return to_csv(_CHECK_COLUMNS, ([getattr(r, k) for k in _CHECK_COLUMNS] for r in report.rows))


def fmt_number(v: int | float, unit: str = "count") -> str:
    """An exact figure with its rounded form: '8,589,934,592 (8.59 GB / 8 GiB)' for bytes,
    '8,030,261,248 (8.03B)' for counts."""
    if unit == "bytes" and isinstance(v, int):
        return f"{v:,} ({human_bytes(v)})" if abs(v) >= 1000 else f"{v:,} B"
    if unit == "share":  # a fraction of 1: '0.4286 (42.86%)', the exact figure first
        return f"{v:,} ({100 * v:.2f}%)"
    return with_human(v) if isinstance(v, int) else f"{v:,}"  # a float as it round-trips


def check_text(report: "CheckReport") -> str:
    """One line per limit (grep-able in CI logs; wrapped only to a terminal or $COLUMNS), then
    a count."""
    lines = []
    for r in report.rows:
        share = "" if r.margin_pct is None else f", {r.margin_pct:+.1f}%"
        # An interval's key shows the end it compared: time.step_seconds.high.
        lines.append(f"{r.status} {one_line(r.model)} {r.compared or r.key} = "
                     f"{fmt_number(r.value, r.unit)} ({r.bound} "
                     f"{fmt_number(r.limit, r.unit)}, margin {fmt_number(r.margin, r.unit)}"
                     f"{share}; {one_line(' '.join(filter(None, (r.command, r.settings))))})")
    failed = sum(r.status == "FAIL" for r in report.rows)
    lines.append(f"{len(report.rows) - failed} within limits, {failed} outside")
    return "\n".join(lines) + "\n"
