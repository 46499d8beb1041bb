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

Routed experts, by release line (`release`: flopcalc's vLLM lines; None is the current, 0.33):

- 0.11 (vLLM 0.11.0 `lora/models.py` lines 59-67, `is_moe_model`): a MoE model is served with
  a warning that fused-MoE LoRA is not supported; `lora/layers/` has no MoE layer, so the
  experts get no slots (the router and attention do: they are linear layers). The older lines
  (0.6, 0.8, 0.10) are taken to behave so too (no MoE LoRA layer existed; not re-read here).
- 0.33 (vLLM 0.33.0 `lora/layers/fused_moe.py`; 0.34.0 allocates the same shapes):
  `FusedMoEWithLoRA` (line 30) wraps each MoE layer; per slot, with E_l the local experts and
  I_p the intermediate width per rank (`moe_config.intermediate_size_per_partition`: I/tp, or
  E/ep experts of width I under expert parallelism, whose MoE tp_size is 1, line 48),
  `_create_lora_a_weights` (line 172) allocates w13 A (E_l, r, H) once per slice
  (`_w13_slices`: 2 for gate and up, 1 for an ungated up, line 56) and w2 A (E_l, r, I_p);
  `_create_lora_b_weights` (line 205) w13 B (E_l, I_p, r) per slice and w2 B (E_l, H, r):
  E_l·r·(s·H + s·I_p + I_p + H) values. `FusedMoE3DWithLoRA` (line 486), chosen for models
  whose checkpoints fuse gate and up (`is_3d_moe_weight`: gpt-oss, Qwen3.5/3.6 MoE, Qwen3-VL
  MoE, Qwen3-Omni, Intern-S1-Pro; `lora/model_manager.py` `_is_3d_moe_model`), has one slice:
  w13 A (E_l, r, H) once and w13 B (E_l, 2·I_p, r): E_l·r·(2·H + 3·I_p). Defaults assumed:
  `fully_sharded_loras` and `enable_moe_shared_loras` off (`config/lora.py`).

Not counted: adapters on embeddings and the LM head (models that declare them), the Punica
wrapper's index buffers (a few int64 per batched token), `adapter_enabled` (max_loras + 1
int32 per MoE layer), the LoRA kernels' activations in the profiling run (rank-wide), and the
backend paddings of quantised experts (an MXFP4 backend rounds I_p and H up, `engines.
loading`; the unpadded widths are used) or whether that backend's kernel accepts LoRA.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from ..errors import FlopcalcError
from ..kinds.base import COLUMN, EXPERT, REPLICATED, ROW, Part

RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
DEFAULT_RANK = 16  # LoRAConfig.max_lora_rank
DEFAULT_MAX_LORAS = 1  # LoRAConfig.max_loras
# release lines whose LoRA leaves routed experts without slots (vLLM 0.11.0 lora/models.py)
NO_EXPERT_LORA = ("0.6", "0.8", "0.10", "0.11")
# the models vLLM 0.33 marks is_3d_moe_weight (gate and up fused on disk), by name or title
FUSED_W13 = re.compile(r"gpt-oss|qwen3[.-]?[56]|qwen3-vl|qwen3-omni|intern-?s1-?pro", re.I)


def fused_w13(*names: str) -> bool:
    """Whether vLLM wraps this model's experts with `FusedMoE3DWithLoRA` (one w13 A)."""
    return any(FUSED_W13.search(n or "") for n in names)


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


def expert_slot_values(parts: list[Part], tp: int, ep: int, rank: int, fused: bool) -> int:
    """Values one adapter slot takes on one device for the routed experts among `parts` (the
    weight stacks E × n_in × n_out of `experts.gate`, `.up`, `.down`), as vLLM 0.33's
    `FusedMoEWithLoRA` (or, `fused`, `FusedMoE3DWithLoRA`) allocates them."""
    stacks = [p for p in parts if p.role == EXPERT and len(p.shape) == 3 and p.module
              and p.module.startswith("experts.")]
    gated = any(p.module == "experts.gate" for p in stacks)
    total = 0
    for p in stacks:
        experts, n_in, n_out = p.shape
        local, split = (experts // ep, 1) if ep > 1 else (experts, tp)
        down = p.module.rsplit(".", 1)[-1] == "down"
        hidden, inter = (n_out, n_in) if down else (n_in, n_out)
        if inter % split:
            raise FlopcalcError(f"--tp {tp} must divide the experts' width {inter:,}")
        i_p = inter // split
        if down:  # w2 A (E_l, r, I_p) + w2 B (E_l, H, r)
            total += local * rank * (i_p + hidden)
            continue
        # w13 B (E_l, I_p, r) per slice (3D: one (E_l, 2·I_p, r), the same values); w13 A
        # (E_l, r, H) per slice, once for gate and up together when fused
        total += local * rank * i_p
        if not (fused and gated and p.module == "experts.up"):
            total += local * rank * hidden
    return total


def reserved_bytes(parts: Iterable[Part], tp: int, max_loras: int, rank: int,
                   value_bytes: int, ep: int = 1, release: Optional[str] = None,
                   fused: bool = False) -> int:
    """Bytes vLLM reserves on one device for `max_loras` slots over these layer tensors: the
    linear layers, and the routed experts where the release line puts adapters on them."""
    parts = list(parts)
    experts = release not in NO_EXPERT_LORA and any(p.role == EXPERT for p in parts)
    if experts and not any(p.module == "experts.gate" for p in parts):
        # an ungated MoE's router gets no adapter (vLLM 0.33 lora/model_manager.py:
        # "LoRA is not supported for non-gated MoE gate module")
        parts = [p for p in parts if p.module != "router"]
    values = sum(slot_values(p, tp, rank) for p in parts)
    if experts:
        values += expert_slot_values(parts, tp, ep, rank, fused)
    return max_loras * value_bytes * values
