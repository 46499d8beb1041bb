"""`sweep` as a table and CSV: one unit per FLOP column, a bar for attention's share.
Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .output import conventions_text, new_table
from .text import Numbers, column_unit, in_unit, percent, scan_words

if TYPE_CHECKING:
    from ..reports.sweep import SweepReport


_BAR_WIDTH = 12
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(share_pct: float, width: int = _BAR_WIDTH) -> str:
    """A horizontal bar of `width` cells for a 0-100 share, in eighths of a cell."""
    eighths = round(share_pct / 100 * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[rest] if rest else "")).ljust(width)


_SWEEP_COLUMNS = ("seq", "weights", "attention", "forward", "forward_per_token",
                  "attention_share_pct", "six_nd_undercount_pct", "past_crossover")


def _families(report: "SweepReport") -> list[str]:
    """The FLOP families beyond weights and attention that occur in the sweep."""
    return list(dict.fromkeys(k for row in report.rows for k in row.families
                              if k not in ("weights", "attention")))


def sweep_csv(report: "SweepReport") -> str:
    s = report.settings
    extra = _families(report)
    header = ["model", "batch", "attention", "scan", "seq", "weights_flops", "attention_flops",
              *(f"{k}_flops" for k in extra), "forward_flops", "forward_per_token",
              "attention_share_pct", "six_nd_undercount_pct", "past_crossover"]
    return to_csv(header, ([report.model.name, s.batch, s.attention, s.scan, row.seq, row.weights,
                            row.attention, *(row.families.get(k, 0) for k in extra),
                            *(getattr(row, k) for k in _SWEEP_COLUMNS[3:])]
                           for row in report.rows))


def sweep_tables(report: "SweepReport", nums: Numbers) -> list[Any]:
    """One unit per FLOP column, chosen from its largest value and named in its header, so
    that a column reads down without switching from T to e15."""
    x, s = report.crossover, report.settings
    extra = _families(report)
    keys = ["weights", "attention", *extra, "forward"]
    values = {k: [getattr(row, k) if k in ("weights", "attention", "forward")
                  else row.families.get(k, 0) for row in report.rows] for k in keys}
    units = {k: column_unit(max(map(abs, v), default=0)) for k, v in values.items()}
    used = sorted({u for u in units.values() if u[0] > 1})
    legend = ", ".join(f"{prefix}FLOPs = 1e{len(str(scale)) - 1} FLOPs"  # scale = 10^k
                       for scale, prefix in used)
    table = new_table(
        f"{report.model.title}: forward FLOPs by sequence length (batch {s.batch}, attention "
        f"{s.attention}{scan_words(s.scan)})",
        ["seq", *(f"{k}\n{units[k][1]}FLOPs" for k in keys), "attention share", "6ND under"],
        caption=("One unit per column" + (f" ({legend})" if legend else "") + ", 4 significant "
                 "digits (at most 6 decimals); --format json or csv gives every count exactly. "
                 "6ND under: how far 6ND is below the exact training count."))
    blanks = [""] * len(keys)
    marked = False
    for i, row in enumerate(report.rows):
        if row.past_crossover and not marked:
            multiple = f" ({x.d_model_multiple:.4g}d)" if x.d_model_multiple is not None else ""
            table.add_row(f"s* {x.seq:,}", *blanks, f"crossover{multiple}", "", style="bold")
            marked = True
        table.add_row(f"{row.seq:,}", *(in_unit(values[k][i], units[k][0]) for k in keys),
                      f"{bar(row.attention_share_pct)} {row.attention_share_pct:5.1f}%",
                      percent(row.six_nd_undercount_pct))
    if not marked:
        where = f"(s* {x.seq:,})" if x.seq is not None else "(no s*)"
        why = "crossover beyond the range" if x.seq is not None else "no crossover"
        table.add_row(where, *blanks, why, "")
    return [table, conventions_text(report.conventions)]
