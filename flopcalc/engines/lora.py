"""The GPU memory vLLM reserves for LoRA adapters at start-up: `max_loras` slots of rank
`max_lora_rank` on every linear layer of the language model, allocated when the model loads
(inside the "Model loading took" measure), so they come out of the KV cache.

From vLLM's source (the vllm repository; `lora/`): `LoRAModelManager._create_lora_modules`
(`lora/model_manager.py`) wraps every linear module of the language model (towers of a
multimodal model are skipped), and each wrapper's `create_lora_weights` (`lora/layers/
base_linear.py`, `BaseLinearLayerWithLoRA`) allocates, per slice of a fused module (q, k, v;
gate, up), `lora_a_stacked` (max_loras, 1, rank, input_size) and `lora_b_stacked`
(max_loras, 1, output_size, rank) in `lora_dtype` (auto: the model dtype), where, without
fully sharded LoRAs,

- a column-parallel layer (q, k, v, gate, up) has the whole input and its rank's output:
  rank·n_in + rank·n_out/tp values per slot;
- a row-parallel layer (o, down; `lora/layers/row_parallel_linear.py`: input_size =
  input_size_per_partition) has its rank's input and the whole output: rank·n_in/tp +
  rank·n_out;
- a replicated layer: rank·(n_in + n_out).

The ranks vLLM accepts (`config/lora.py`, `MaxLoRARanks`): 1, 8, 16, 32, 64, 128, 256, 320, 512;
`max_cpu_loras` (host memory only) defaults to `max_loras` and must not be below it
(`LoRAConfig._validate_lora_config`).

Not counted: adapters on embeddings and the LM head (models that declare them), on routed
experts (`FusedMoEWithLoRA`; refused here), the Punica wrapper's index buffers (a few int64
per batched token) and the LoRA kernels' activations in the profiling run (rank-wide).
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..errors import FlopcalcError
from ..kinds.base import COLUMN, EXPERT, REPLICATED, ROW, Part

RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
DEFAULT_RANK = 16  # LoRAConfig.max_lora_rank
DEFAULT_MAX_LORAS = 1  # LoRAConfig.max_loras


def check(max_loras: Optional[int], rank: Optional[int], cpu: Optional[int]
          ) -> Optional[tuple[int, int, int]]:
    """(max_loras, max_lora_rank, max_cpu_loras) with vLLM's defaults, or None when no LoRA
    option is given; vLLM's refusals as one-line errors."""
    if max_loras is None and rank is None and cpu is None:
        return None
    n = DEFAULT_MAX_LORAS if max_loras is None else int(max_loras)
    r = DEFAULT_RANK if rank is None else int(rank)
    if n < 1:
        raise FlopcalcError(f"--max-loras {n}: at least 1 adapter (vLLM's max_loras >= 1)")
    if r not in RANKS:
        raise FlopcalcError(f"--max-lora-rank {r} is not a rank vLLM accepts: one of "
                            f"{', '.join(map(str, RANKS))}")
    c = n if cpu is None else int(cpu)
    if c < n:
        raise FlopcalcError(f"--max-cpu-loras {c} is below --max-loras {n}: vLLM keeps every "
                            "adapter of a batch in host memory too; give at least that many")
    return n, r, c


def slot_values(p: Part, tp: int, rank: int) -> int:
    """Values one adapter slot of rank `rank` takes on one device for a linear layer's weight
    `p` (n_in × n_out); 0 for a tensor vLLM gives no adapter."""
    if not p.matmul or p.lookup or len(p.shape) != 2:
        return 0
    n_in, n_out = p.shape
    if p.role == COLUMN:  # (rank × n_in) + (n_out/tp × rank)
        return rank * n_in + rank * (n_out // tp)
    if p.role == ROW:  # (rank × n_in/tp) + (n_out × rank)
        return rank * (n_in // tp) + rank * n_out
    if p.role == REPLICATED:
        return rank * (n_in + n_out)
    return 0


def reserved_bytes(parts: Iterable[Part], tp: int, max_loras: int, rank: int,
                   value_bytes: int) -> int:
    """Bytes vLLM reserves on one device for `max_loras` slots over these layer tensors."""
    parts = list(parts)
    if any(p.role == EXPERT for p in parts):
        raise FlopcalcError("--max-loras on a mixture of experts: vLLM's adapter slots on "
                            "routed experts (FusedMoEWithLoRA) are not modelled; serve it "
                            "without LoRA, or give --kv-memory from the engine's log")
    return max_loras * value_bytes * sum(slot_values(p, tp, rank) for p in parts)
