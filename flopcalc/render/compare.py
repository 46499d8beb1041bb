"""`compare` as a table (models side by side) and CSV. Formatting only."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from .data import to_csv
from .output import conventions_text, new_table
from .text import Numbers, percent, scan_words

if TYPE_CHECKING:
    from ..reports.compare import CompareReport


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
