"""`plan` as a table of the best layouts and CSV. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .mfu import pct, warnings_block
from .output import block, conventions_text, heading, new_table
from .step import attention_words, headline_notes
from .text import Numbers, duration, human_bytes

if TYPE_CHECKING:
    from ..reports.plan import PlanReport


_LAYOUT_LEGEND = ("layout: parallel sizes (tp4 = tensor parallel 4; pp, vp, dp, cp, ep, etp "
                  "alike), the token dispatcher, the pipeline schedule (vp8: interleaved over "
                  "8 virtual stages), ZeRO stage, mb1x32 = "
                  "micro-batches of 1 sequence, 32 per pipeline per step, SP = sequence "
                  "parallel, the fp8 recipe; memory per device.")


def _layout_cell(lay: Any) -> str:
    """`step`'s layout line in a table's words, none of which holds a space: 'tp4 pp16 vp8 dp64
    ZeRO-1 mb1x32 recompute-none SP flash'."""
    sizes = [("tp", lay.tp), ("pp", lay.pp), ("vp", lay.vp), ("dp", lay.dp), ("cp", lay.cp),
             ("ep", lay.ep)]
    words = [f"{axis}{n}" for axis, n in sizes if n > 1 or axis in ("tp", "pp", "dp")]
    if lay.ep > 1 or lay.etp != 1:  # expert tensor parallelism, and how tokens reach experts
        words += [f"etp{lay.etp}"] + ([lay.dispatcher] if lay.ep > 1 else [])
    if lay.pp > 1 and lay.schedule != "interleaved":  # the pipeline schedule (vpN: interleaved)
        words.append(lay.schedule)
    words += [f"ZeRO-{lay.zero}", f"mb{lay.micro_batch}x{lay.micro_batches}",
              f"recompute-{lay.recompute}"]
    if lay.fp8_recipe:
        words.append(f"fp8-{lay.fp8_recipe}")
    return " ".join(words + (["SP"] if lay.sequence_parallel else [])
                    + (["flash"] if lay.flash else []))


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
                      ["#", "step", "tokens/s", f"MFU ({attention_words(report).split()[0]})",
                       "memory", "layout"],
                      numeric_from=1, numeric_to=5, caption=_LAYOUT_LEGEND)
    for p in report.plans:
        table.add_row(str(p.rank), duration(p.step_seconds), nums.whole(p.tokens_per_second),
                      pct(p.mfu), human_bytes(p.memory_bytes, binary=False),
                      _layout_cell(p.layout))
    out.append(table)
    out.append(block("Where the time goes:", (f"- #{p.rank}: {p.summary}"
                                              for p in report.plans)))
    out += headline_notes(report)
    if report.why:
        out.append(block("Why #1 wins:", (f"- {line}" for line in report.why)))
    out += warnings_block(report.warnings)
    out.append(conventions_text(report.conventions))
    return out


def plan_csv(report: "PlanReport") -> str:
    header = ["model", "seq", "global_batch", "rank", "tp", "pp", "vp", "dp", "cp", "ep",
              "zero", "recompute", "micro_batch", "step_seconds", "tokens_per_second", "mfu",
              "memory_bytes", "attention", "etp", "dispatcher", "schedule", "fp8_recipe"]
    rows = [[report.model.name, report.seq, report.global_batch, p.rank, p.layout.tp,
             p.layout.pp, p.layout.vp, p.layout.dp, p.layout.cp, p.layout.ep, p.layout.zero,
             p.layout.recompute, p.layout.micro_batch, p.step_seconds, p.tokens_per_second,
             p.mfu, p.memory_bytes, attention_words(report).split()[0], p.layout.etp,
             p.layout.dispatcher, p.layout.schedule, p.layout.fp8_recipe]
            for p in report.plans]
    return to_csv(header, rows)
