"""`serve --shared-prefix` as a table: the blocks held once and the concurrency and prefill
they save. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import new_table
from .text import Numbers

if TYPE_CHECKING:
    from ..reports.serve_prefix import PrefixSharing


def prefix_table(x: "PrefixSharing", nums: Numbers) -> Any:
    table = new_table(f"Shared prefix of {x.tokens:,} tokens (prefix caching)", ["", "value"])
    table.add_row("blocks held once", f"{x.shared_blocks_total:,}")
    table.add_row("blocks of each request besides", f"{x.blocks_per_request:,}")
    table.add_row("maximum concurrency", f"{x.max_concurrency:.2f}x", style="bold")
    table.add_row("prefill FLOPs skipped per request", nums.count(x.prefill_flops_saved))
    if x.prefill_flops is not None:
        table.add_row("prefill FLOPs left per request", nums.count(x.prefill_flops))
    return table
