"""`serve` as tables, brief lines and CSV: the heading, each part's tables in the order the
report holds them (`serve_capacity`, `serve_sglang`, `serve_weights`, `serve_prefix`,
`serve_speculative`, `serve_latency`, `serve_load`), the brief and the CSV. Formatting only:
units and rounding, no arithmetic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import conventions_text, heading
from .serve_capacity import capacity_tables, memory_notes
from .serve_latency import timing_table
from .serve_load import disaggregated_tables, pareto_tables, performance_tables
from .serve_prefix import prefix_table
from .serve_sglang import sglang_tables
from .serve_speculative import speculation_table
from .serve_weights import weights_table
from .text import named, Numbers, amount, duration

if TYPE_CHECKING:
    from ..reports.serve import ServeReport


def _layout(s: Any) -> str:
    parts = [f"tp {s.tp}"] + [f"{k} {v}" for k, v in (("pp", s.pp), ("dp", s.dp), ("ep", s.ep))
                              if v > 1]
    return ", ".join(parts)


def serve_tables(report: "ServeReport", nums: Numbers) -> list[Any]:
    s, c = report.settings, report.capacity
    device = (f"{s.devices:,} x {one_line(report.accelerator.title)}" if report.accelerator
              else f"{s.devices:,} device" + ("s" if s.devices > 1 else ""))
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"{s.engine}: {device} ({_layout(s)}), max model len "
        f"{s.max_model_len:,}, block {s.block_size}"
        + (f" (grown to {c.hybrid.attention_block_size:,} for the states)"
           if c.hybrid is not None and c.hybrid.attention_block_size != s.block_size else "")
        + f", KV {s.kv_dtype_served}, weights "
        f"{s.weights_dtype}" + (f" (experts {s.experts_dtype})"
                                if s.experts_dtype != s.weights_dtype else "")
        + f"\nmax_num_batched_tokens {s.max_num_batched_tokens:,}, async scheduling "
        f"{'on' if s.async_scheduling else 'off'}, prefix caching "
        f"{'on' if s.prefix_caching else 'off'}"
        + (f" (mamba cache mode {s.mamba_cache_mode})" if s.mamba_cache_mode else "") + "\n")]
    out += capacity_tables(c, s, nums)
    if report.sglang is not None:
        out += sglang_tables(report.sglang, nums)
    out.append(weights_table(report.weights, c.memory, nums, report.lora))
    if report.prefix is not None:
        out.append(prefix_table(report.prefix, nums))
    if report.speculative is not None:
        out.append(speculation_table(report.speculative, nums))
    if report.timing is not None:
        out.append(timing_table(report.timing, s, report.accelerator, nums))
    if report.performance is not None:
        out += performance_tables(report.performance)
    if report.pareto is not None:
        out += pareto_tables(report.pareto)
    if report.disaggregated is not None:
        out += disaggregated_tables(report.disaggregated)
    out += memory_notes(c)
    out.append(conventions_text(report.conventions))
    return out


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f}"


def serve_brief(report: "ServeReport") -> str:
    s, c = report.settings, report.capacity
    lines = [f"{named(report.model)}: {s.engine}, {s.devices} device"
             f"{'s' if s.devices > 1 else ''} "
             f"({_layout(s)}), max model len {s.max_model_len:,}, KV {s.kv_dtype_served}",
             f"groups        " + ", ".join(f"{g.layers} x {g.kind} (block {g.block_size:,})"
                                         for g in c.groups),
             f"weights       {max(report.weights.device_bytes):,} bytes per device "
             f"({_gib(max(report.weights.device_bytes))} GiB), "
             f"{s.weights_dtype}" + (f", experts {s.experts_dtype}"
                                     if s.experts_dtype != s.weights_dtype else "")
             + f" ({report.weights.source.split(';')[0]})"
             + (f"; LoRA slots {max(report.lora.device_bytes):,} bytes"
                if report.lora is not None else ""),
             f"memory        {c.memory.stages[0].available_bytes:,} bytes per device for the "
             f"cache ({c.memory.source}; {c.memory.stages[0].available_gib} GiB)",
             f"blocks        {c.num_blocks:,} of {c.bytes_per_block:,} bytes; "
             f"{c.blocks_per_request:,} per request",
             f"log           {c.log_line}"]
    if not c.fits:
        lines.append(f"refused       {c.error}")
    if report.sglang is not None:
        lines.append(f"sglang        max_total_num_tokens {report.sglang.max_total_num_tokens:,} "
                     f"(SGLang {report.sglang.version}'s code; mem_fraction_static "
                     f"{report.sglang.mem_fraction_static:g}, "
                     f"{report.sglang.cell_size:,} bytes per token)")
    if report.prefix is not None:
        lines.append(f"prefix        {report.prefix.tokens:,} shared tokens: "
                     f"{report.prefix.max_concurrency:.2f}x")
    x = report.speculative
    if x is not None:
        lines.append(f"speculative   {x.expected_tokens_per_step:.4g} tokens per step"
                     + (f", speed-up {x.speedup_estimate:.3g}x (estimate)"
                        if x.speedup_estimate is not None else ""))
    t = report.timing
    if t is not None:
        lines.append(f"TTFT          {duration(t.ttft_estimate_s)} estimate, >= "
                     f"{duration(t.ttft_bound_s)} (prefill attention "
                     f"{report.settings.attention})")
        lines.append(f"TPOT          {duration(t.tpot_estimate_s)} estimate, >= "
                     f"{duration(t.tpot_bound_s)}; {amount(t.tokens_per_s_per_sequence_estimate)}"
                     f" tokens/s per sequence, {amount(t.tokens_per_s_aggregate_estimate)} in "
                     "all")
    x = report.performance
    if x is not None:
        lines.append(f"under load    {amount(x.output_tokens_per_second.estimate)} output "
                     f"tokens/s ({amount(x.output_tokens_per_second.low)}-"
                     f"{amount(x.output_tokens_per_second.high)}), TTFT "
                     f"{duration(x.ttft_seconds.estimate)}, TPOT "
                     f"{duration(x.tpot_seconds.estimate)}")
    for p in report.pareto.points if report.pareto is not None else ():
        lines.append(f"front         {p.layout} x {p.concurrency:,} users: "
                     f"{amount(p.output_tokens_per_second_per_gpu)} tokens/s per device, "
                     f"{amount(p.output_tokens_per_second_per_user)} per user")
    return "\n".join(lines) + "\n"


# Units of serve's CSV rows, by the end of a key (the first that matches).
_UNITS = (("tokens_per_s", "tokens/s"), ("_ns", "ns"), ("_s", "s"), ("peak_flops", "FLOP/s"),
          ("bandwidth", "bytes/s"), ("flops", "FLOPs"), ("bytes", "bytes"),
          ("bytes_per_token", "bytes"), ("concurrency", "x"), ("expected_tokens_per_step",
                                                               "tokens"),
          ("speedup", "x"), ("ceiling", "x"), ("utilization", "fraction"),
          ("efficiency", "fraction"), ("acceptance", "fraction"), ("pct", "%"),
          ("blocks", "blocks"), ("blocks_total", "blocks"), ("block_size", "tokens"),
          ("chunks", "steps"), ("collectives", "collectives"), ("layers", "layers"),
          ("params", "params"), ("tokens", "tokens"), ("max_model_len", "tokens"),
          ("prompt", "tokens"), ("gen", "tokens"), ("batch", "sequences"),
          ("max_num_seqs", "sequences"), ("sequences", "sequences"), ("devices", "devices"),
          ("domain_size", "devices"), ("tp", "devices"), ("pp", "devices"), ("dp", "devices"),
          ("ep", "devices"), ("multiple", "tokens"), ("window", "tokens"), ("chunk", "tokens"),
          ("len", "tokens"))


_LEAVES = {"bytes_per_block": "bytes", "blocks_per_request": "blocks",
           "concurrency_at_request": "x", "state_bytes_per_sequence": "bytes",
           "device_bytes": "bytes", "available_gib": "GiB", "state_page_padded": "bytes",
           "shared_blocks": "blocks"}


def _unit(name: str, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in _LEAVES:
        return _LEAVES[leaf]
    if isinstance(value, str):
        return ""
    return next((u for end, u in _UNITS if leaf.endswith(end)), "")


def serve_csv(report: "ServeReport") -> str:
    """One row per figure: model and layout, then section, name, value and unit; the cache
    groups as `groups.N.*`, the pipeline stages as `capacity.memory.stages.N.*`."""
    s = report.settings
    doc = report.to_dict()
    key = [report.model.name, s.max_model_len, s.tp, s.pp, s.dp]
    rows = []
    for section in ("settings", "capacity", "weights", "prefix", "speculative", "timing",
                    "performance", "pareto", "disaggregated", "sglang", "lora"):
        value = doc.get(section)
        if not isinstance(value, dict):
            continue
        flat = _flatten(value, section)
        rows += [[*key, sec, name, leaf, _unit(name, leaf)] for sec, name, leaf in flat]
    return to_csv(["model", "max_model_len", "tp", "pp", "dp", "section", "name", "value",
                   "unit"], rows)


def _flatten(value: Any, section: str, path: str = "") -> list[tuple[str, str, Any]]:
    """(section, dotted name, leaf) of every number, text and flag; lists numbered."""
    out: list[tuple[str, str, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _flatten(v, section, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            out.append((section, path, " ".join(map(str, value))))
        else:
            for i, v in enumerate(value):
                out += _flatten(v, section, f"{path}.{i}")
    else:
        out.append((section, path, value))
    return out
