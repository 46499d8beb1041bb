"""`serve`'s time a user sees (TTFT, TPOT, tokens/s) as a table. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .output import new_table
from .text import Numbers, amount, duration, rate

if TYPE_CHECKING:
    from ..reports.infer import AcceleratorInfo
    from ..reports.serve import ServeSettings
    from ..reports.serve_latency import StepTime, Timing


def _step_row(table: Any, label: str, st: "StepTime", nums: Numbers) -> None:
    table.add_row(label, duration(st.bound_s), duration(st.estimate_s),
                  f"{st.binds}; {nums.bytes(st.bytes)} read" +
                  (f", {st.collectives} collectives" if st.collectives else ""))


def timing_table(t: "Timing", s: "ServeSettings", a: Optional["AcceleratorInfo"],
                 nums: Numbers) -> Any:
    title = (f"Time a user sees: prompt {t.prompt:,}, gen {t.gen:,}, batch {t.batch} per replica"
             + (f" on {a.name}" if a else "") + (f", {t.network['name']}"
                                                 if t.network.get("name") else ""))
    table = new_table(title, ["", "bound", "estimate", ""])
    table.add_row(f"time to first token ({t.prefill_chunks} chunk"
                  f"{'s' if t.prefill_chunks != 1 else ''} of {s.max_num_batched_tokens:,})",
                  duration(t.ttft_bound_s), duration(t.ttft_estimate_s),
                  f"{nums.count(t.prefill_flops)} FLOPs ({s.attention})", style="bold")
    _step_row(table, "decode step, first", t.first_step, nums)
    _step_row(table, "decode step, last", t.last_step, nums)
    table.add_row("time per output token (mean)", duration(t.tpot_bound_s),
                  duration(t.tpot_estimate_s), "", style="bold")
    table.add_row("tokens/s per sequence", amount(t.tokens_per_s_per_sequence_bound),
                  amount(t.tokens_per_s_per_sequence_estimate), "")
    table.add_row(f"tokens/s, all {t.batch * s.dp:,} sequences", amount(
        t.tokens_per_s_aggregate_bound), amount(t.tokens_per_s_aggregate_estimate), "")
    table.add_row("whole request", duration(t.request_bound_s), duration(t.request_estimate_s),
                  "")
    sp = t.speeds
    table.add_row("device", rate(sp["peak_flops"], "FLOP/s"), rate(sp["bandwidth"], "B/s"),
                  f"estimate at {sp['compute_efficiency']:.3g} / {sp['memory_efficiency']:.3g}")
    return table
