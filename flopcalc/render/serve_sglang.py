"""`serve --engine sglang`'s token pool as a table and its log lines. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import block, new_table
from .text import Numbers

if TYPE_CHECKING:
    from ..reports.serve_sglang import SglangCapacity


def sglang_tables(g: "SglangCapacity", nums: Numbers) -> list[Any]:
    table = new_table(f"SGLang token pool (SGLang {g.version} arithmetic, one device)",
                      ["", "value"])
    table.add_row("mem_fraction_static", f"{g.mem_fraction_static:g}" + (
        " (unused: --kv-memory)" if g.memory_source == "given" else " (given)"
        if g.mem_fraction_static_source.startswith("--") else " (SGLang's rule)"))
    if g.reserved_mib is not None:
        table.add_row("reserved by the default fraction", f"{g.reserved_mib:,g} MiB")
    table.add_row("chunked_prefill_size / cuda_graph_max_bs",
                  f"{g.chunked_prefill_size:,} / " + (f"{g.cuda_graph_max_bs:,}" if
                                                       g.cuda_graph_max_bs is not None
                                                       else "its capture list"))
    if g.total_gpu_memory_bytes is not None:
        table.add_row("free before the weights (estimated)",
                      nums.bytes(g.total_gpu_memory_bytes))
    if g.max_mamba_cache_size is not None:
        table.add_row("recurrent states per request", nums.bytes(g.mamba_cache_per_req))
        table.add_row("state pool (max_mamba_cache_size)", f"{g.max_mamba_cache_size:,}")
    table.add_row(f"memory for the pool ({g.memory_source})", nums.bytes(g.rest_bytes))
    table.add_row(f"bytes per token, every layer ({g.kv_cache_dtype})", f"{g.cell_size:,}")
    table.add_row(f"max_total_num_tokens (page {g.page_size:,})",
                  f"{g.max_total_num_tokens:,}", style="bold")
    table.add_row(f"requests of {g.context_length:,} tokens at once",
                  f"{g.max_concurrency:.2f}x")
    table.add_row("request pool (max_running_requests)", f"{g.max_running_requests:,}")
    return [table, block("SGLang log:", [g.log_line, f"- mem_fraction_static: "
                                         f"{g.mem_fraction_static_source}"]
                         + [f"- reserved: {x}" for x in g.reserve_terms or ()]
                         + [f"- {x}" for x in g.how]
                         + ([f"- follows {g.source}"] if g.source else []))]
