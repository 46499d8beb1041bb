"""Formatting of `infer`, `train` and `accelerators`: reports in, text out; no arithmetic beyond
choosing how to show a number (units, rounding). rich is imported inside the table functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from .render import (block, conventions_text, exact, heading, human, new_table, percent, to_csv,
                     with_human)

if TYPE_CHECKING:
    from .inference import InferReport, Phase, TrainReport

_BYTE_UNITS = ((10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "KB"))
_TIME_UNITS = ((86_400, "days"), (3_600, "h"), (60, "min"), (1, "s"), (1e-3, "ms"), (1e-6, "µs"))


def human_bytes(n: float) -> str:
    """Decimal units, as vendors quote memory: 17.18 GB."""
    for scale, unit in _BYTE_UNITS:
        if abs(n) >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.4g} B"


def with_bytes(n: int) -> str:
    """'17,179,869,184 (17.18 GB)'."""
    return exact(n) if n < 1000 else f"{exact(n)} ({human_bytes(n)})"


def duration(seconds: float) -> str:
    """4 significant digits in the largest fitting unit: 9.155 days, 6.197 s, 9.762 ms."""
    for scale, unit in _TIME_UNITS:
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds * 1e9:.4g} ns"


def rate(value: float, unit: str) -> str:
    """989.5 TFLOP/s, 3.35 TB/s."""
    for scale, prefix in ((10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G")):
        if value >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def amount(x: float) -> str:
    """A float for a table: 4 significant digits, but whole with separators from 1,000 up."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def _header(title: str, name: str, line: str) -> Any:
    return heading(title, f" ({name})\n{line}\n")


# ----------------------------------------------------------------------------------- flatten

# Units for the CSV's unit column: exact keys first, then the first matching word of the path.
_UNIT_OF_KEY = {"prefill.weights": "FLOPs", "prefill.attention": "FLOPs",
                "decode.weights": "FLOPs", "decode.attention": "FLOPs", "total_flops": "FLOPs",
                "settings.context": "tokens", "decode.context_first": "tokens",
                "decode.context_last": "tokens", "decode.steps": "steps",
                "weights.params": "params", "accelerator.count": "devices",
                "settings.count": "devices", "settings.mfu": "fraction", "settings.seq": "tokens"}
_UNIT_OF_WORD = (("tokens_per_s", "tokens/s"), ("arithmetic_intensity", "FLOP/byte"),
                 ("peak_flops", "FLOP/s"), ("achieved_flops", "FLOP/s"),
                 ("bandwidth", "bytes/s"), ("steps", "steps"), ("seconds", "s"),
                 ("compute_s", "s"), ("memory_s", "s"), ("bytes", "bytes"), ("flops", "FLOPs"),
                 ("days", "days"), ("hours", "hours"), ("pct", "%"), ("tokens", "tokens"),
                 ("factor", "x"), ("six_nd", "FLOPs"), ("exact", "FLOPs"), ("training.n", "params"))


def _unit(path: str) -> str:
    if path in _UNIT_OF_KEY:
        return _UNIT_OF_KEY[path]
    for word, unit in _UNIT_OF_WORD:
        if word in path:
            return unit
    return ""


def _flatten(data: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(section, name, value) leaves of a report dict; maps of named parts keep their names."""
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{path}.{key}" if path else key)
        elif isinstance(value, bool):
            yield path, key, "true" if value else "false"
        elif not isinstance(value, list):
            yield path, key, "" if value is None else value


def _rows(data: dict[str, Any], sections: tuple[str, ...]) -> list[list[Any]]:
    rows = []
    for section in sections:
        value = data.get(section)
        if isinstance(value, dict):
            for sub, name, leaf in _flatten(value, section):
                if sub.endswith("components"):
                    unit = "bytes" if "bytes" in sub else "FLOPs"
                elif isinstance(leaf, str):
                    unit = ""
                else:
                    unit = _unit(f"{sub}.{name}")
                rows.append([sub, name, leaf, unit])
        elif value is not None:
            rows.append(["", section, value, _unit(section)])
    return rows


# ------------------------------------------------------------------------------------- infer

def infer_csv(report: "InferReport") -> str:
    rows = _rows(report.to_dict(), ("settings", "prefill", "decode", "kv_cache", "weights",
                                    "total_flops", "accelerator", "roofline"))
    return to_csv(["section", "name", "value", "unit"], rows)


def infer_tables(report: "InferReport") -> list[Any]:
    s, p, d, kv, w = report.settings, report.prefill, report.decode, report.kv_cache, report.weights
    out: list[Any] = [_header(
        report.model.title, report.model.name,
        f"prompt {s.prompt:,} + gen {s.gen:,} tokens, batch {s.batch}\n"
        f"prefill attention {s.attention}; weights {s.weights_dtype}, KV cache {s.kv_dtype}")]

    table = new_table(f"Prefill: {s.prompt:,} prompt tokens x batch {s.batch}", ["", "FLOPs"])
    table.add_row("weight GEMMs (incl. LM head)", with_human(p.weights))
    table.add_row(f"attention matrix ({s.attention})", with_human(p.attention))
    table.add_row("prefill", with_human(p.flops), style="bold")
    table.add_row("per prompt token", with_human(p.flops_per_token))
    out.append(table)

    table = new_table(f"Decode: {d.steps:,} steps x batch {s.batch}, each over the KV cache",
                      ["", "value"])
    table.add_row("context c (keys attended)", f"{d.context_first:,} → {d.context_last:,}")
    table.add_row("FLOPs, first step", with_human(d.flops_first))
    table.add_row("FLOPs, last step", with_human(d.flops_last))
    table.add_row(f"FLOPs, all {d.steps:,} steps", with_human(d.flops), style="bold")
    table.add_row("  weight GEMMs (incl. LM head)", with_human(d.weights))
    table.add_row("  attention over the cache", with_human(d.attention))
    table.add_row("FLOPs per generated token (mean)", with_human(d.flops_per_token))
    table.add_row("bytes moved, first step", with_bytes(d.bytes_first))
    table.add_row("bytes moved, last step", with_bytes(d.bytes_last))
    table.add_row("bytes moved, all steps", with_bytes(d.bytes))
    table.add_row("FLOP per byte, first / last step",
                  f"{d.arithmetic_intensity_first:.4g} / {d.arithmetic_intensity_last:.4g}")
    table.add_row("FLOP per byte, all steps", f"{d.arithmetic_intensity:.4g}")
    out.append(table)

    gqa = "MHA" if kv.n_kv_heads == kv.n_heads else f"{kv.n_kv_heads} KV heads, {kv.n_heads} query"
    table = new_table(f"KV cache ({s.kv_dtype}): {kv.tokens:,} tokens = batch x (prompt + gen)",
                      ["", "bytes"])
    table.add_row(f"per token ({gqa})", with_bytes(kv.bytes_per_token))
    table.add_row("KV cache", with_bytes(kv.bytes), style="bold")
    if kv.n_kv_heads != kv.n_heads:
        table.add_row(f"MHA ({kv.n_heads} KV heads) per token", with_bytes(kv.mha_bytes_per_token))
        table.add_row("MHA KV cache", with_bytes(kv.mha_bytes))
        table.add_row(f"GQA saves ({kv.gqa_factor:.4g}x smaller)", with_bytes(kv.gqa_saving_bytes))
    table.add_row(f"weights ({w.params:,} params, {w.dtype})", with_bytes(w.bytes))
    table.add_row("weights + KV cache", with_bytes(report.memory_bytes))
    out.append(table)

    if report.roofline is not None and report.accelerator is not None:
        out.append(_roofline_table(report))
    out.append(conventions_text(report.conventions))
    return out


def _bound(phase: "Phase") -> list[str]:
    return [duration(phase.seconds), phase.binds]


def _roofline_table(report: "InferReport") -> Any:
    a, r, d = report.accelerator, report.roofline, report.decode
    assert a is not None and r is not None
    rd = r.decode
    table = new_table(f"Roofline lower bounds: {a.count:,} x {a.title}", ["", "time >=", "bound"])
    devices = "" if a.count == 1 else f" x {a.count:,}"
    table.add_row(f"dense {a.dtype} peak{devices}", rate(a.total_peak_flops, "FLOP/s"),
                  "--peak" if a.peak_overridden else "")
    if a.total_bandwidth is not None:
        table.add_row(f"memory bandwidth{devices}", rate(a.total_bandwidth, "B/s"),
                      "--bandwidth" if a.bandwidth_overridden else "")
    table.add_row("prefill (time to first token)", *_bound(r.prefill))
    table.add_row(f"decode step, first (c = {d.context_first:,})", *_bound(rd.first))
    table.add_row(f"decode step, last (c = {d.context_last:,})", *_bound(rd.last))
    steps = (f"{rd.compute_bound_steps:,} compute, {rd.memory_bound_steps:,} memory"
             if rd.memory_bound_steps and rd.compute_bound_steps else rd.binds)
    table.add_row(f"decode, all {d.steps:,} steps", duration(rd.seconds), steps)
    table.add_row("prefill + decode", duration(r.total_seconds), "", style="bold")
    table.add_row("decode tokens/s (upper bound)", amount(rd.tokens_per_s), "")
    table.add_row("  at the first / last step",
                  f"{amount(rd.tokens_per_s_first)} / {amount(rd.tokens_per_s_last)}", "")
    if r.memory is not None:
        table.add_row("weights + KV cache / memory",
                      f"{human_bytes(r.memory.required_bytes)} / "
                      f"{human_bytes(r.memory.available_bytes)}",
                      "fits" if r.memory.fits else "does NOT fit")
    return table


# ------------------------------------------------------------------------------------- train

def train_csv(report: "TrainReport") -> str:
    rows = _rows(report.to_dict(), ("settings", "training", "accelerator", "achieved_flops",
                                    "seconds", "days", "accelerator_hours"))
    return to_csv(["section", "name", "value", "unit"], rows)


def train_tables(report: "TrainReport") -> list[Any]:
    s, t, a = report.settings, report.training, report.accelerator
    out: list[Any] = [_header(
        report.model.title, report.model.name,
        f"D = {s.tokens:,} tokens ({human(s.tokens)}; {s.tokens_source}), seq {s.seq:,}, "
        f"attention {s.attention}")]
    table = new_table(f"Training FLOPs on D = {human(s.tokens)} tokens", ["estimate", "FLOPs"])
    table.add_row("exact (3 x forward)", with_human(t.exact), style="bold")
    table.add_row("6ND (N non-embedding)", with_human(t.six_nd))
    table.add_row("6ND below exact", percent(t.six_nd_below_exact_pct))
    out.append(table)

    mfu = f"{100 * s.mfu:.4g}% MFU"
    table = new_table(f"Throughput of {a.count:,} x {a.title}", ["", "FLOP/s"])
    table.add_row(f"dense {a.dtype} peak per device" + (" (--peak)" if a.peak_overridden else ""),
                  rate(a.peak_flops, "FLOP/s"))
    table.add_row(f"sustained: x {a.count:,} x {mfu}", rate(report.achieved_flops, "FLOP/s"))
    out.append(table)

    table = new_table(f"Time on {a.count:,} x {a.name} at {mfu}", ["", "exact", "6ND"])
    table.add_row("wall-clock days", amount(report.days.exact), amount(report.days.six_nd),
                  style="bold")
    table.add_row("accelerator-hours", f"{report.accelerator_hours.exact:,.0f}",
                  f"{report.accelerator_hours.six_nd:,.0f}")
    table.add_row("wall-clock", duration(report.seconds.exact), duration(report.seconds.six_nd))
    out.append(table)
    out.append(conventions_text(report.conventions))
    return out


# ------------------------------------------------------------------------------ accelerators

def accelerators_csv(rows: list[dict[str, Any]]) -> str:
    from .accelerators import DTYPES as _DTYPES

    header = ["name", "title", "vendor", "memory_bytes", "memory_bandwidth",
              *(f"peak_flops_{d}" for d in _DTYPES), "source"]
    body = ([r["name"], r["title"], r["vendor"], r["memory_bytes"], r["memory_bandwidth"],
             *(r["peak_flops"].get(d, "") for d in _DTYPES), r["source"]] for r in rows)
    return to_csv(header, body)


def accelerators_tables(rows: list[dict[str, Any]]) -> list[Any]:
    def peak(r: dict[str, Any], dtype: str) -> str:
        value = r["peak_flops"].get(dtype)
        return "-" if value is None else f"{value / 10**12:,.4g}"

    table = new_table("Accelerators (--accelerator NAME)",
                      ["name", "memory", "bandwidth", "bf16", "fp8", "fp32"],
                      caption="Dense peak TFLOP/s per device (no 2:4 sparsity); bandwidth of "
                      "memory. --format json shows every dtype, the source and the notes.")
    for r in rows:
        table.add_row(r["name"], human_bytes(r["memory_bytes"]),
                      rate(r["memory_bandwidth"], "B/s"), peak(r, "bf16"), peak(r, "fp8"),
                      peak(r, "fp32"))
    sources = block("Sources:", (f"- {r['name']}: {r['source']}" for r in rows))
    return [table, sources]
