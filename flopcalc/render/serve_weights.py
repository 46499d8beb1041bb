"""`serve`'s weights as a table: their bytes, each module's format where formats differ, what a
device of each stage holds, and the estimate's memory rows. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .output import new_table
from .text import Numbers

if TYPE_CHECKING:
    from ..reports.serve_capacity import MemoryBudget
    from ..reports.serve_weights import LoraReservation, Weights


def weights_table(w: "Weights", memory: "MemoryBudget", nums: Numbers,
                  lora: "Optional[LoraReservation]" = None) -> Any:
    table = new_table("Weights", ["", "bytes"])
    table.add_row(f"{w.params:,} params, {w.dtype}" + (f" (experts {w.experts_dtype})"
                                                        if w.experts_dtype != w.dtype else ""),
                  nums.bytes(w.bytes))
    if len({r.format for r in w.storage}) > 1:  # formats differ by module: each one's
        for r in w.storage:
            table.add_row(f"  {r.module}, {r.format}", nums.bytes(r.bytes))
    for i, b in enumerate(w.device_bytes):
        table.add_row("per device" + (f", stage {i}" if len(w.device_bytes) > 1 else "")
                      + (f" (as vLLM's {w.layout} MoE kernels load it)"
                         if w.layout != "checkpoint" else ""),
                      nums.bytes(b))
    if lora is not None:  # allocated with the weights
        for i, b in enumerate(lora.device_bytes):
            table.add_row(f"LoRA slots ({lora.max_loras} x rank {lora.max_lora_rank}) per "
                          "device" + (f", stage {i}" if len(lora.device_bytes) > 1 else ""),
                          nums.bytes(b))
    if memory.source == "estimated":
        st = memory.stages[0]
        if st.requested_bytes is not None:
            table.add_row("device memory x utilisation", nums.bytes(st.requested_bytes))
        if st.activation_bytes is not None:
            table.add_row("activation peak (estimated)", nums.bytes(st.activation_bytes))
        if st.activation_low_bytes is not None and \
                st.activation_low_bytes != st.activation_high_bytes:
            table.add_row("  low-high (sampler path, CUDA graphs)",
                          f"{st.activation_low_bytes:,}-{st.activation_high_bytes:,}")
        if st.cudagraph_bytes is not None:
            table.add_row("  of which CUDA graphs (vLLM 0.33, point)",
                          nums.bytes(st.cudagraph_bytes))
        if st.non_torch_bytes is not None:
            table.add_row("non-torch memory (as the release counts it)",
                          nums.bytes(st.non_torch_bytes))
        if st.buffers_bytes is not None:
            table.add_row("model runner's persistent buffers (vLLM 0.33)",
                          nums.bytes(st.buffers_bytes))
    return table
