"""Two things vLLM 0.33 subtracts before sizing the cache that releases up to 0.11 do not
(`--engine vllm==0.33`, the default): the model runner's persistent buffers, and the CUDA-graph
memory estimate (default since 0.21).

**Persistent buffers** (exact from the code). 0.33's `vllm/utils/mem_utils.py`
memory_profiling takes `total_consumed = free at the first snapshot − free after the profiling
run` (mem_get_info), so every tensor the model runner allocated after that snapshot and still
holds counts; 0.11 and 0.21.0 (`utils/mem_utils.py`: non_kv_cache_memory = non-torch growth +
torch's peak increase + weights) miss them. The
tensors, from `v1/worker/gpu_model_runner.py` GPUModelRunner.__init__ ("Persistent buffers for
CUDA graphs") and `v1/worker/block_table.py` BlockTable (the InputBatch's placeholder table),
with T = max_num_batched_tokens, R = max_num_seqs, L = max_model_len:

    inputs_embeds  T × inputs_embeds_size × model dtype   (d, or the config's projection size)
    input_ids 4T, positions 8T, is_padding 1T, req_indices 8T, is_token_ids 1T, slot_mapping 8T
    query_pos 8 × max(R + 1, T)
    block_table    R × ceil(L / 16) × 4   (CacheConfig.DEFAULT_BLOCK_SIZE 16 when none is set)
    per request    query_start_loc 4(R + 1); seq_lens, num_computed_tokens,
                   prev_num_draft_tokens, num_scheduled_tokens, encoder_seq_lens,
                   num_decode_draft_tokens, num_accepted_tokens 4R each; prev_positions 8R;
                   discard_request_mask 1R

each rounded up to PyTorch's 512-byte allocation unit. Not counted: the InputBatch's sampling
tensors (a few float32 per request), M-RoPE positions (multimodal), a drafter's buffers, and
the caching allocator's segment rounding (< 2 MiB per segment).

**CUDA graphs** (an interval). 0.33's `v1/worker/gpu_worker.py` determine_available_memory
subtracts `profile_cudagraph_memory()` (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, default 1;
0.21.0's code takes the same estimate, the first release where it is on by default).
That captures, per mode (FULL_AND_PIECEWISE: PIECEWISE for every capture size, FULL for the
uniform-decode sizes ≤ max_num_seqs), its two largest graphs and takes
`max over modes of the first capture + Σ modes (graphs − 1) × max(second capture, 1 MiB)`.
The captures are measured on the device; nothing in the code fixes them, so:

- low end of what is subtracted: the code's floor, the first captures 0 and every other graph
  1 MiB: `(graphs − 1) MiB` per mode;
- high end: the largest published estimate outside a reported bug, 4.38 GiB (vllm#37296,
  a tp-2 worker, 212 graph addresses);
- point: the middle of the published estimates cited below (0.13, 0.36, 4.38 GiB → 0.36 GiB),
  never below the floor. Not fitted to any log this repository checks against.

The capture sizes (`config/vllm.py` _set_cudagraph_sizes): max size = min(2 × max_num_seqs,
512; 1024 on sm_100), then min with max_num_batched_tokens; sizes 1, 2, 4, 8..248 by 8,
256.. by 16 up to it, plus max_num_batched_tokens when it is within it. A draft (decode query
length > 1) and `--enforce-eager` are not modelled here.
"""

from __future__ import annotations

from typing import Optional

from ..records import dataclass

MiB = 1 << 20
GiB = 1 << 30
CENTI = GiB // 100  # published figures are hundredths of a GiB
ALLOC_UNIT = 512  # PyTorch's CUDACachingAllocator kMinBlockSize: every size rounded up to it
DEFAULT_BLOCK_SIZE = 16  # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE

# Published "Estimated CUDA graph memory" figures of vLLM ≥ 0.19 (per worker):
PUBLISHED_GRAPHS: tuple[tuple[int, str], ...] = (
    (13 * CENTI, "noonghunna/club-3090#1087: 0.13 GiB estimated (0.09 actual), a 27B fp8 "
                 "model at tp 2 on RTX 5090s"),
    (36 * CENTI, "gpustack/runner#251: 0.36 GiB, vLLM 0.27.1 at tp 2, PIECEWISE=16 graphs"),
    (438 * CENTI, "vllm-project/vllm#37296: 4.30 and 4.38 GiB, the two workers of a tp-2 "
                  "NVFP4 model (212 graph addresses)"),
)
# vllm-project/vllm#53013's 118.65 GiB (a 2.4T-parameter model, tp 2 × dp 4) is reported as a
# bug in the estimate and left out.


def _unit(n: int) -> int:
    return -(-n // ALLOC_UNIT) * ALLOC_UNIT


@dataclass
class Buffers:
    """The model runner's persistent buffers on one device, as 0.33 allocates them."""

    bytes: int
    parts: list[tuple[str, int]]
    how: str


def persistent_buffers(tokens: int, max_num_seqs: int, max_model_len: int, embed_size: int,
                       value_bytes: int, block_size: Optional[int] = None) -> Buffers:
    """vLLM 0.33's GPUModelRunner persistent buffers and the InputBatch's placeholder block
    table (see the module docstring), each rounded to 512 bytes."""
    t, r = tokens, max_num_seqs
    blocks = -(-max_model_len // (block_size or DEFAULT_BLOCK_SIZE))
    parts = [
        ("inputs_embeds", t * embed_size * value_bytes),  # (T × d) in the model dtype
        ("input_ids", 4 * t), ("positions", 8 * t), ("is_padding", t),
        ("req_indices", 8 * t), ("is_token_ids", t), ("slot_mapping", 8 * t),
        ("query_pos", 8 * max(r + 1, t)),
        ("block_table", r * blocks * 4),  # (R × ceil(L / block)) int32
        ("query_start_loc", 4 * (r + 1)),
        *((name, 4 * r) for name in ("seq_lens", "num_computed_tokens",
                                     "prev_num_draft_tokens", "num_scheduled_tokens",
                                     "encoder_seq_lens", "num_decode_draft_tokens",
                                     "num_accepted_tokens")),
        ("prev_positions", 8 * r), ("discard_request_mask", r),
    ]
    parts = [(name, _unit(b)) for name, b in parts]
    total = sum(b for _, b in parts)
    how = (f"persistent buffers as vLLM 0.33 holds them ({total:,} bytes, "
           f"{total / GiB:.3f} GiB; v1/worker/gpu_model_runner.py GPUModelRunner.__init__ and "
           "v1/worker/block_table.py, counted by vllm/utils/mem_utils.py memory_profiling's "
           "total_consumed): inputs_embeds "
           f"{tokens:,} × {embed_size:,} × {value_bytes} = {parts[0][1]:,}, block table "
           f"{max_num_seqs:,} × {blocks:,} × 4 = {parts[8][1]:,}, per-token and per-request "
           f"indices {total - parts[0][1] - parts[8][1]:,} (each rounded to 512 bytes)")
    return Buffers(total, parts, how)


def capture_sizes(max_num_seqs: int, tokens: int, sm100: bool = False) -> list[int]:
    """The default cudagraph_capture_sizes of vLLM 0.33 (config/vllm.py _set_cudagraph_sizes,
    decode query length 1, performance mode 'balanced')."""
    top = min(min(max_num_seqs * 2, 1024 if sm100 else 512), tokens)
    sizes = [i for i in (1, 2, 4) if i <= top]
    if top >= 8:
        sizes += list(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += list(range(256, top + 1, 16))
    if tokens <= top and tokens not in sizes:
        sizes.append(tokens)
    if max_num_seqs <= top and max_num_seqs not in sizes:
        sizes.append(max_num_seqs)  # the uniform-decode size is appended
    return sorted(sizes)


@dataclass
class Graphs:
    """vLLM 0.33's CUDA-graph estimate on one device: what it captures, the interval of what
    it subtracts and the point."""

    piecewise: int
    full: int
    floor: int  # the code's minimum: (graphs − 1) MiB per mode
    high: int  # the largest published estimate
    point: int
    how: str


def graph_estimate(max_num_seqs: int, tokens: int, sm100: bool = False) -> Graphs:
    """The CUDA-graph memory vLLM 0.33 subtracts (FULL_AND_PIECEWISE, the default mode)."""
    sizes = capture_sizes(max_num_seqs, tokens, sm100)
    piecewise = len(sizes)
    full = sum(1 for s in sizes if s <= max_num_seqs)
    floor = (max(piecewise - 1, 0) + max(full - 1, 0)) * MiB
    published = sorted(b for b, _ in PUBLISHED_GRAPHS)
    high = max(published[-1], floor)
    point = max(published[len(published) // 2], floor)
    how = (f"CUDA-graph estimate as vLLM 0.33 subtracts it (v1/worker/gpu_model_runner.py "
           "profile_cudagraph_memory, default since 0.21: the two largest graphs of each mode "
           "captured, then first capture + (graphs − 1) × max(second, 1 MiB)): PIECEWISE "
           f"{piecewise} and FULL {full} graphs (largest {sizes[-1] if sizes else 0}; "
           f"config/vllm.py _set_cudagraph_sizes), measured on the device, not computable: "
           f"{floor:,} bytes (the code's 1 MiB per further graph) to {high:,} "
           f"({high / GiB:.2f} GiB, the largest published estimate); point {point:,} "
           f"({point / GiB:.2f} GiB, the middle published estimate; "
           + "; ".join(s for _, s in PUBLISHED_GRAPHS) + ")")
    return Graphs(piecewise, full, floor, high, point, how)


def counts_graphs(version: Optional[str]) -> bool:
    """Whether the release line subtracts the CUDA-graph estimate and the persistent buffers
    (0.33; the lines up to 0.11 do neither)."""
    return (version or "0.33") == "0.33"
