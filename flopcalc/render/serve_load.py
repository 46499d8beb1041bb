"""`serve` under load, disaggregated and on the Pareto front as tables and notes. Formatting
only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import block, new_table
from .text import amount, duration

if TYPE_CHECKING:
    from ..reports.serve_load import Disaggregated, Pareto, Performance


def performance_tables(x: "Performance") -> list[Any]:
    who = (f"{x.concurrency:,} user{'s' if x.concurrency != 1 else ''} (closed loop)"
           if x.loop == "closed" else
           f"{x.concurrency:,} users (as many as the engines hold)" if x.loop == "offline" else
           f"Poisson arrivals at {x.request_rate:g} requests/s")
    table = new_table(f"Under load: {who}, {x.engine}, {x.replicas} replica"
                      f"{'s' if x.replicas > 1 else ''}",
                      ["", "low", "estimate", "high", "p50", "p90", "p99"])
    rows = (("output tokens/s", x.output_tokens_per_second, amount),
            ("output tokens/s per device", x.output_tokens_per_second_per_gpu, amount),
            ("output tokens/s per user", x.output_tokens_per_second_per_user, amount),
            ("requests/s", x.requests_per_second, amount))
    for label, v, f in rows:
        table.add_row(label, f(v.low), f(v.estimate), f(v.high), "", "", "",
                      style="bold" if label == "output tokens/s" else None)
    for label, m in (("time to first token", x.ttft_seconds),
                     ("time per output token", x.tpot_seconds),
                     ("end to end", x.e2e_seconds)):
        table.add_row(label + " (mean)", duration(m.low), duration(m.estimate),
                      duration(m.high), duration(m.p50.estimate), duration(m.p90.estimate),
                      duration(m.p99.estimate))
    if x.dollars_per_million_output_tokens is not None:
        d = x.dollars_per_million_output_tokens
        table.add_row("$ per million output tokens", f"{d.low:.4g}", f"{d.estimate:.4g}",
                      f"{d.high:.4g}", "", "", "")
    if getattr(x, "joules_per_output_token", None) is not None:
        j = x.joules_per_output_token
        table.add_row("joules per output token (boards)", f"{j.low:.4g}", f"{j.estimate:.4g}",
                      f"{j.high:.4g}", "", "", "")
    st = x.steady_step_seconds
    table.add_row(f"steady step, {x.steady_batch:.4g} decoding ({x.binds}-bound GEMMs)",
                  duration(st.low), duration(st.estimate), duration(st.high), "", "", "")
    lines = [f"- {line}" for line in x.model]
    lines.append(f"- cache holds {x.slots_per_replica:,} such requests per replica, "
                 f"max_num_seqs {x.max_num_seqs:,}; {x.steps_simulated:,} steps simulated "
                 "(estimate); percentiles at the estimate")
    return [table, block("Load model:", lines)]


def disaggregated_tables(x: "Disaggregated") -> list[Any]:
    table = new_table(f"Disaggregated: {x.prefill_devices} prefill + {x.decode_devices} decode "
                      f"devices, {x.users:,} users", ["", "low", "estimate", "high"])
    for label, v, f in (
            ("output tokens/s", x.output_tokens_per_second, amount),
            ("output tokens/s per device", x.output_tokens_per_second_per_gpu, amount),
            ("output tokens/s per user", x.output_tokens_per_second_per_user, amount),
            ("time to first token", x.ttft_seconds, duration),
            ("time per output token", x.tpot_seconds, duration),
            ("KV transfer per request", x.kv_transfer_seconds, duration),
            ("prefill pool, requests/s", x.prefill_requests_per_second, amount),
            ("decode pool, requests/s", x.decode_requests_per_second, amount)):
        table.add_row(label, f(v.low), f(v.estimate), f(v.high))
    lines = [f"- bottleneck: {x.bottleneck}; {x.decode_batch:.4g} sequences per decode "
             f"replica, {x.prompts_per_prefill_step:.4g} prompts per prefill step"]
    lines += [f"- {line}" for line in x.model]
    if x.splits:
        lines.append("- splits tried (prefill P, decode D): " + "; ".join(x.splits))
    return [table, block("Pools:", lines)]


def pareto_tables(x: "Pareto") -> list[Any]:
    table = new_table(f"Pareto front on {x.devices} devices: prompt {x.prompt:,}, gen "
                      f"{x.gen:,}, {x.engine} ({x.searched} points searched)",
                      ["layout", "users", "tokens/s per device", "tokens/s per user", "TPOT",
                       "TTFT"])
    for p in x.points:
        table.add_row(p.layout, f"{p.concurrency:,}", amount(p.output_tokens_per_second_per_gpu),
                      amount(p.output_tokens_per_second_per_user), duration(p.tpot_seconds),
                      duration(p.ttft_seconds))
    lines = [f"- {x.model}", "- layouts: " + ", ".join(x.layouts)]
    lines += [f"- skipped {s}" for s in x.skipped]
    return [table, block("Search:", lines)]
