"""`serve`'s capacity as tables: the cache groups, the blocks and concurrency vLLM computes, its
log line, and how the memory for the cache was found. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import block, new_table
from .text import Numbers

if TYPE_CHECKING:
    from ..reports.serve import ServeSettings
    from ..reports.serve_capacity import CacheGroup, Capacity


KINDS = {"full": "full attention", "sliding": "sliding window", "chunked": "chunked local",
         "mla": "latent (MLA)", "indexer": "sparse indexer keys", "state": "recurrent state",
         "mla+indexer": "latent (MLA) + indexer keys"}


def _kind(g: "CacheGroup") -> str:
    name = KINDS.get(g.kind, g.kind)
    if g.window:
        name += f" {g.window:,}"
    if g.chunk:
        name += f" {g.chunk:,}"
    return name + (f" (+{g.draft_layers} draft)" if g.draft_layers else "")


def capacity_tables(c: "Capacity", s: "ServeSettings", nums: Numbers) -> list[Any]:
    """The cache groups, the capacity and the engine's log line."""
    out: list[Any] = []
    table = new_table("KV cache groups (one device)", ["kind", "layers", "block", "page bytes",
                                                       "bytes per block", "blocks / request"])
    for g in c.groups:
        table.add_row(_kind(g), f"{g.layers}", f"{g.block_size:,}", nums.plain(g.page_bytes),
                      nums.plain(g.block_bytes), f"{g.blocks_per_request:,}")
    out.append(table)

    table = new_table("Capacity", ["", "value"])
    if c.hybrid is not None:
        h = c.hybrid
        table.add_row("attention block grown to hold a state page",
                      f"{h.attention_block_size:,} tokens")
        table.add_row("  state page / padded to", f"{h.state_bytes:,} / "
                      f"{h.state_page_padded or h.state_bytes:,} (+{h.padding_pct:.2f}%)")
    table.add_row("cache per token, every layer", nums.bytes(c.bytes_per_token))
    if c.state_bytes_per_sequence:
        table.add_row("states per sequence, every layer", nums.bytes(c.state_bytes_per_sequence))
    table.add_row("bytes per block (largest group)", nums.bytes(c.bytes_per_block))
    for st in c.memory.stages:
        label = "memory for the cache" + (f", stage {st.stage}" if len(c.memory.stages) > 1
                                          else "")
        table.add_row(f"{label} ({c.memory.source})",
                      f"{nums.bytes(st.available_bytes)} = {st.available_gib} GiB")
        if st.available_low_bytes is not None and \
                st.available_low_bytes != st.available_high_bytes:
            table.add_row("  low-high (sampler path, CUDA graphs)",
                          f"{st.available_low_bytes / 2**30:.2f}-"
                          f"{st.available_high_bytes / 2**30:.2f} GiB")
    table.add_row("blocks (num_gpu_blocks)", f"{c.num_blocks:,}", style="bold")
    table.add_row(f"blocks per request of {s.max_model_len:,} tokens",
                  f"{c.blocks_per_request:,}")
    table.add_row("maximum concurrency", f"{c.max_concurrency:.2f}x", style="bold")
    table.add_row("GPU KV cache size (as logged)", f"{c.tokens:,} tokens", style="bold")
    table.add_row("sequences scheduled at once", f"{c.scheduled_sequences:,} (max_num_seqs "
                  f"{s.max_num_seqs:,})")
    if c.concurrency_at_request is not None:
        table.add_row(f"concurrency at {c.request_tokens:,} tokens (prompt + gen)",
                      f"{c.concurrency_at_request:.2f}x")
    if not c.fits:
        table.add_row("engine start", "refused: one request does not fit", style="bold")
        if c.estimated_max_model_len is not None:
            table.add_row("  longest that fits (vLLM's estimate)",
                          f"{c.estimated_max_model_len:,}")
    out.append(table)
    out.append(block("Engine log:", [c.log_line]))
    return out


def memory_notes(c: "Capacity") -> list[Any]:
    """How the memory for the cache was found (given, from blocks, or estimated)."""
    return [block("Memory for the cache:", (f"- {line}" for line in c.memory.how))] \
        if c.memory.how else []
