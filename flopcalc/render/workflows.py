"""`list`, `sweep`, `compare` and `check` as tables, text and CSV. Formatting only."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import conventions_text, new_table
from .text import (Numbers, column_unit, human, human_bytes, in_unit, percent, scan_words,
                   with_human)

if TYPE_CHECKING:
    from ..reports.check import CheckReport
    from ..reports.compare import CompareReport
    from ..reports.listing import ListReport
    from ..reports.sweep import SweepReport


# ------------------------------------------------------------------------------- preset list

def list_csv(report: "ListReport") -> str:
    if not report.presets:
        return ""
    keys = [f.name for f in fields(report.presets[0])]
    return to_csv(keys, ([getattr(r, k) for k in keys] for r in report.presets))


def list_tables(report: "ListReport", nums: Numbers) -> list[Any]:
    table = new_table("Presets (flopcalc model NAME)",
                      ["name", "L", "d", "heads", "d_ff", "ctx", "params", "active"],
                      caption="L: layers (encoder+decoder); heads: query/KV; d_ff: per expert "
                      "when routed (experts/top-k after it); ctx: context.")
    for r in report.presets:
        heads = f"{r.n_heads}" + (f"/{r.n_kv_heads}" if r.n_kv_heads != r.n_heads else "")
        width = f"{r.d_ff}" + (f" ({r.experts}/{r.top_k})" if r.experts else "")
        table.add_row(r.model, str(r.n_layers), str(r.d_model), heads, width,
                      f"{r.context:,}" if r.context else "-", nums.count(r.params_total),
                      human(r.params_active) if r.params_active != r.params_total else "")
    return [table]


# ------------------------------------------------------------------------------------- sweep

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


# ----------------------------------------------------------------------------------- compare

def compare_csv(report: "CompareReport") -> str:
    if not report.models:
        return ""
    s = report.settings
    keys = [f.name for f in fields(report.models[0]) if f.name != "flops_families"]
    extra = list(dict.fromkeys(k for m in report.models for k in m.flops_families
                               if k not in ("weights", "attention")))
    header = [keys[0], "batch", "attention", "scan", *keys[1:],
              *(f"flops_{k}" for k in extra)]
    return to_csv(header, ([m.model, s.batch, s.attention, s.scan,
                            *(getattr(m, k) for k in keys[1:]),
                            *(m.flops_families.get(k, 0) for k in extra)]
                           for m in report.models))


_COMPARE_ROWS = (
    ("params_total", "params"), ("params_active", "active params"),
    ("params_active_without_embedding", "active w/o embedding"),
    ("n", "N for 6ND"), ("seq", "seq"), ("flops_forward", "forward FLOPs"),
    ("flops_forward_per_token", "forward / token"), ("attention_share_pct", "attention share"),
    ("crossover_seq", "crossover s*"), ("crossover_d_model_multiple", "s* / d_model"),
    ("training_tokens", "training D"), ("training_six_nd", "6ND"),
    ("training_exact", "exact training"), ("six_nd_below_exact_pct", "6ND below exact"),
)


_COMPARE_CAPTION = ("training D: each model's published training tokens (published), else 20 "
                    "per parameter, the Chinchilla rule of thumb (20 per param), unless --tokens "
                    "sets one D for all (--tokens); 6ND and exact training are on that D.")


def compare_tables(report: "CompareReport", nums: Numbers) -> list[Any]:
    s = report.settings
    lengths = f"seq {s.seq:,}" if s.seq is not None else (
        f"seq {s.seqs[0]:,}" if len(set(s.seqs)) == 1 else "each model at its own seq")
    table = new_table(f"Compared ({lengths}, batch {s.batch}, attention {s.attention}"
                      f"{scan_words(s.scan)})",
                      ["", *[m.model for m in report.models]], caption=_COMPARE_CAPTION)
    for key, label in _COMPARE_ROWS:
        cells = []
        for m in asdict_rows(report):
            v = m[key]
            if v is None:
                cells.append("-")
            elif key.endswith("_pct"):
                cells.append(percent(v))
            elif isinstance(v, float):
                cells.append(f"{v:.4g}")
            elif key in ("seq", "crossover_seq"):
                cells.append(nums.whole(v))
            elif key == "training_tokens":
                cells.append(f"{nums.count(v)} ({m['training_tokens_source']})")
            else:
                cells.append(nums.count(v))
        table.add_row(label, *cells)
    return [table, conventions_text(report.conventions)]


def asdict_rows(report: "CompareReport") -> list[dict[str, Any]]:
    return [asdict(m) for m in report.models]


# ------------------------------------------------------------------------------------- check

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
