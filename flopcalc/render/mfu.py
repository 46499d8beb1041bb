"""`mfu` as tables, brief lines and CSV: the utilisation under each convention. Formatting only.
`pct` and `warnings_block` serve `step` and `plan` too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import block, conventions_text, heading, new_table
from .text import Numbers, human, packed_form, packed_words, rate

if TYPE_CHECKING:
    from ..reports.mfu import MfuReport


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def warnings_block(lines: list[str]) -> list[Any]:
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
    out += warnings_block(report.warnings)
    out.append(conventions_text(report.conventions))
    return out


def mfu_csv(report: "MfuReport") -> str:
    lengths = report.settings.packed if report.settings else None
    packed = [packed_form(lengths)] if lengths else []  # a column only when packed
    header = ["model", "seq", *(["packed"] if packed else []), "convention", "flops_per_token",
              "utilisation", "hardware", "possible", "cause"]
    rows = [[report.model.name, report.seq, *packed, r.name, r.flops_per_token, r.utilisation,
             r.hardware, r.possible, r.cause] for r in report.rows]
    return to_csv(header, rows)


def mfu_brief(report: "MfuReport") -> str:
    lines = [f"{one_line(report.model.title)}: "
             f"{report.measured.tokens_per_second_per_device:,.1f} tokens/s per device on "
             f"{one_line(report.accelerator.name)}"]
    if report.mfu is not None and report.hfu is not None:
        lengths = report.settings.packed if report.settings else None
        lines.append(f"MFU {pct(report.mfu)}, HFU {pct(report.hfu)} (exact, "
                     f"{report.attention} attention{packed_words(lengths)})")
    for r in report.rows:
        lines.append(f"{r.name:20s} {pct(r.utilisation):>7s}" + ("" if r.possible
                                                                  else "  IMPOSSIBLE"))
    return "\n".join(lines) + "\n"
