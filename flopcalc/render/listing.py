"""`list` and `accelerators` as tables and CSV (`show` writes YAML through `data`). Formatting
only."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .data import to_csv
from .output import block, new_table
from .text import Numbers, human, human_bytes, rate

if TYPE_CHECKING:
    from ..reports.listing import ListReport


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


def accelerators_csv(rows: list[dict[str, Any]]) -> str:
    from ..models.accelerators import DTYPES

    header = ["accelerator", "title", "vendor", "memory_bytes", "usable_memory_bytes",
              "memory_bandwidth", *(f"peak_flops_{d}" for d in DTYPES), "system", "source",
              "usable_memory_source"]
    body = ([r["name"], r["title"], r["vendor"], r["memory_bytes"], r["usable_memory_bytes"],
             r["memory_bandwidth"], *(r["peak_flops"].get(d) for d in DTYPES), r["system"],
             r["source"], r["usable_memory_source"]] for r in rows)
    return to_csv(header, body)


def accelerators_tables(rows: list[dict[str, Any]], nums: Numbers) -> list[Any]:
    def peak(r: dict[str, Any], dtype: str) -> str:
        value = r["peak_flops"].get(dtype)
        return "-" if value is None else f"{value / 10**12:,.4g}"

    table = new_table("Accelerators (--accelerator NAME)",
                      ["name", "memory", "usable", "bandwidth", "bf16", "fp8", "fp32"],
                      caption="Dense peak TFLOP/s per device (no 2:4 sparsity); bandwidth of "
                      "memory; usable: the capacity the driver reports, which runs size "
                      "against (-: not recorded, the nominal size is used). --format json shows "
                      "every dtype, the sources and the notes.")
    for r in rows:
        usable = r["usable_memory_bytes"]
        table.add_row(r["name"], human_bytes(r["memory_bytes"], binary=False),
                      "-" if usable is None else human_bytes(usable, binary=True).split(" / ")[1],
                      rate(r["memory_bandwidth"], "B/s"), peak(r, "bf16"), peak(r, "fp8"),
                      peak(r, "fp32"))
    sources = block("Sources:", (f"- {r['name']}: {r['source']}" for r in rows))
    return [table, sources]
