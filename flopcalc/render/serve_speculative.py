"""`serve --draft`'s speculative decoding as a table. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import new_table
from .text import Numbers, duration

if TYPE_CHECKING:
    from ..reports.serve_speculative import Speculation


def speculation_table(x: "Speculation", nums: Numbers) -> Any:
    table = new_table(f"Speculative decoding: {x.draft}, {x.draft_tokens} draft token"
                      f"{'s' if x.draft_tokens > 1 else ''}, acceptance {x.acceptance:g}",
                      ["", "value"])
    table.add_row("expected tokens per step", f"{x.expected_tokens_per_step:.4g}", style="bold")
    table.add_row("draft layers in the cache", f"{x.draft_layers}")
    table.add_row("  their cache per token", nums.bytes(x.draft_bytes_per_token))
    table.add_row("FLOPs per step: verify (k + 1 tokens)", nums.count(x.verify_flops))
    table.add_row("FLOPs per step: draft (k tokens)", nums.count(x.draft_flops))
    table.add_row("bytes per step and device: verify", nums.bytes(x.verify_bytes))
    table.add_row("bytes per step and device: draft", nums.bytes(x.draft_bytes))
    if x.tpot_bound_s is not None:
        table.add_row("time per step, bound / estimate",
                      f"{duration(x.step_bound_s)} / {duration(x.step_estimate_s)}")
        table.add_row("time per output token, bound / estimate",
                      f"{duration(x.tpot_bound_s)} / {duration(x.tpot_estimate_s)}")
        table.add_row("speed-up over plain decoding, bound / estimate",
                      f"{x.speedup_bound:.3g}x / {x.speedup_estimate:.3g}x", style="bold")
    table.add_row("speed-up ceiling (free draft)", f"{x.speedup_ceiling:.3g}x")
    return table
