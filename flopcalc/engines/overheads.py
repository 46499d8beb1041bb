"""What vLLM subtracts for the cache beyond the weights and the profiling run's tensors, per
release line (`--engine vllm==X`): the device total it multiplies by gpu_memory_utilization,
PyTorch's cuBLAS workspace inside the torch peak, the memory outside torch's allocator its
snapshot counts, and (0.21+) its CUDA-graph estimate.

    available = total × gpu_memory_utilization − weights − (activation peak + cuBLAS workspace)
                − non-torch memory the release counts − CUDA-graph estimate (0.21+)

Which non-torch memory counts is decided by where each release takes its first snapshot:

- 0.6 (V0, `worker/worker.py` init_device, determine_num_available_blocks): free memory read
  after the CUDA context, before `init_worker_distributed_environment`; the peak is the drop in
  free memory to the end of the profiling run, so NCCL's communicators, the custom all-reduce's
  buffers and what the run loads outside torch count; the context does not.
- 0.8 (`v1/worker/gpu_worker.py` determine_available_memory): torch's allocated peak plus all
  device memory torch has not allocated (`mem_get_info` used − `allocated_bytes.all.current`),
  the CUDA context included.
- 0.10 (0.10.1.1 `v1/worker/gpu_worker.py` init_device: `MemorySnapshot()` before
  `init_worker_distributed_environment`; `utils/__init__.py` memory_profiling
  non_torch_increase from that snapshot): distributed start-up and the run's non-torch growth.
- 0.11, 0.33 (init_device: "Initialize the distributed environment BEFORE taking memory
  snapshot … NCCL buffers are allocated before we measure"): only what grows outside torch from
  that snapshot to the end of the profiling run.

The device total and the non-torch parts are not in vLLM's source: they are the driver's and
NCCL's. They come from published measurements (the sources below): device totals for the H100
and H200, non-torch memory for the H100 only; other devices keep their preset's memory and take
the H100's non-torch figures, and the output says so.
"""

from __future__ import annotations

from typing import Optional

from ..records import dataclass

MiB = 1 << 20
GiB = 1 << 30

# PyTorch's cuBLAS workspace, taken from the caching allocator on the first matmul of a stream
# and kept (aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize, "':4096:2:16:8'
# default, 32MiB for Hopper"): sm_90 4096 KiB × 8, others 4096 KiB × 2 + 16 KiB × 8. vLLM's
# profiling run is the first forward after loading, so it falls inside the torch peak increase.
CUBLAS_HOPPER = 4096 * 1024 * 8  # 33,554,432
CUBLAS_OTHER = 4096 * 1024 * 2 + 16 * 1024 * 8  # 8,519,680

# The llm-d benchmark's vLLM 0.11.0 runs on H100 (llm-d/llm-d-benchmark
# config_explorer/empirical-vllm-memory-results.md, image vllm/vllm-openai:v0.11.0): "Free memory
# on device (78.57/79.18 GiB) on startup" at tp 1, 77.64 at tp 2; "non-torch forward increase
# memory" 0.13 GiB at tp 1 (0.14 for Qwen3-32B and Llama-3.3-70B), 0.55 at tp 2 (0.54). Figures
# printed to 0.01 GiB, kept as hundredths of a GiB.
CENTI = GiB // 100  # 10,737,418 bytes (floor)


@dataclass(frozen=True)
class DeviceTotal:
    """The device total vLLM multiplies by gpu_memory_utilization (`torch.cuda.mem_get_info()`,
    the driver's total less what it reserves), with where it is published."""

    bytes: int
    source: str


# H100 80GB HBM3: nvidia-smi 81,559 MiB; CUDA reports 81,082 MiB (torch 2.0.1's
# get_device_properties "total_memory=81082MB"; 81,089 and 81,090 with torch 2.7) and vLLM 0.11
# logs "Free memory on device (78.57/79.18 GiB)": 81,082 MiB = 79.182 GiB lies in that rounding.
DEVICE_TOTALS: dict[str, DeviceTotal] = {
    "h100-sxm": DeviceTotal(
        81_082 * MiB, "CUDA's total for an H100 80GB HBM3: 81,082 MiB (torch's "
        "get_device_properties total_memory=81082MB; vLLM 0.11 logs 'Free memory on device "
        "(78.57/79.18 GiB)', llm-d/llm-d-benchmark config_explorer/"
        "empirical-vllm-memory-results.md), 477 MiB below the 81,559 MiB nvidia-smi shows: "
        "the driver's reservation"),
    # H200: nvidia-smi 143,771 MiB; torch's get_device_properties "total_memory=143156MB", a
    # vLLM V0 log "total_gpu_memory (139.81GiB)" (143,160-143,170 MiB with another driver)
    "h200": DeviceTotal(
        143_156 * MiB, "CUDA's total for an H200: 143,156 MiB (torch's get_device_properties "
        "total_memory=143156MB; a vLLM V0 log's 'total_gpu_memory (139.81GiB)' is within "
        "15 MiB), 615 MiB below the 143,771 MiB nvidia-smi shows: the driver's reservation"),
}

# Measured outside torch on an H100 (llm-d benchmark, vLLM 0.11.0, the rows above):
MEASURED_ON = "h100-sxm"
CONTEXT = 61 * CENTI  # before any snapshot at tp 1: 79.18 − 78.57 = 0.61 GiB free gone
DISTRIBUTED = 93 * CENTI  # distributed start-up at tp 2: 78.57 − 77.64 = 0.93 GiB
GROWTH_TP1 = 13 * CENTI  # from the snapshot to the end of the profiling run, tp 1
GROWTH_TP2 = 55 * CENTI  # the same at tp 2 (NCCL connects lazily, on its first collectives)


@dataclass(frozen=True)
class Counted:
    """What a release's memory profile subtracts beyond weights and torch's peak increase."""

    version: str
    source: str
    context: bool  # the CUDA context and everything before vLLM's first reading
    distributed: bool  # NCCL communicators and the custom all-reduce, made at start-up
    cudagraphs: bool  # subtracts profile_cudagraph_memory's estimate (0.21+)


RELEASES: dict[str, Counted] = {
    "0.6": Counted("0.6", "vLLM 0.6.0 worker/worker.py init_device (init_gpu_memory before "
                   "init_worker_distributed_environment) and determine_num_available_blocks "
                   "(peak = init free − free after profile_run)", False, True, False),
    "0.8": Counted("0.8", "vLLM 0.8.0 v1/worker/gpu_worker.py determine_available_memory "
                   "(allocated peak + device used − torch allocated: the context included)",
                   True, True, False),
    "0.10": Counted("0.10", "vLLM 0.10.1.1 v1/worker/gpu_worker.py init_device "
                    "(MemorySnapshot before init_worker_distributed_environment) and "
                    "utils/__init__.py memory_profiling (non_torch_increase from it)",
                    False, True, False),
    "0.11": Counted("0.11", "vLLM 0.11.0 v1/worker/gpu_worker.py init_device (the snapshot "
                    "after init_worker_distributed_environment) and utils/__init__.py "
                    "memory_profiling", False, False, False),
    "0.33": Counted("0.33", "vLLM 0.33.0 v1/worker/gpu_worker.py init_device (the snapshot "
                    "after init_worker_distributed_environment), determine_available_memory "
                    "(− profile_cudagraph_memory when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, "
                    "default 1 since 0.21)", False, False, True),
}


def counted(version: Optional[str]) -> Counted:
    return RELEASES[version or "0.33"]


def cublas_workspace(architecture: Optional[str]) -> int:
    """PyTorch's default cuBLAS workspace on one stream: 32 MiB on Hopper (sm_90), 8,519,680
    bytes elsewhere."""
    return CUBLAS_HOPPER if architecture == "hopper" else CUBLAS_OTHER


@dataclass
class NonTorch:
    """The memory outside torch's allocator a release subtracts on one device, its parts and
    how each was found."""

    bytes: int
    parts: list[tuple[str, int]]
    how: list[str]


def non_torch(version: Optional[str], tp: int, device: Optional[str]) -> NonTorch:
    """The non-torch memory vLLM `version` counts on one device of a tp-way replica: the growth
    from its snapshot through the profiling run, the distributed start-up where the snapshot
    precedes it (tp > 1), the CUDA context where the release reads all device memory (0.8).
    Published for tp 1 and 2 on an H100; tp > 2 takes tp 2's (each rank's NCCL ring and the
    custom all-reduce's own buffers do not grow with the ring; more peers would add to it)."""
    c = counted(version)
    multi = tp > 1
    parts = [("growth through the profiling run (kernels loaded on first use, cuBLAS handles"
              + (", NCCL's connections)" if multi else ")"), GROWTH_TP2 if multi else GROWTH_TP1)]
    if c.distributed and multi:
        parts.append(("distributed start-up (NCCL communicators, custom all-reduce buffers)",
                      DISTRIBUTED))
    if c.context:
        parts.append(("CUDA context and torch's start, before the first reading", CONTEXT))
    total = sum(b for _, b in parts)
    how = [f"non-torch memory as vLLM {c.version} counts it ({c.source}): "
           + " + ".join(f"{name} {b:,}" for name, b in parts) + f" = {total:,} bytes "
           f"({total / GiB:.2f} GiB); measured on an H100 with vLLM 0.11.0 at tp "
           f"{'2' if multi else '1'} (llm-d/llm-d-benchmark config_explorer/"
           "empirical-vllm-memory-results.md: 'non-torch forward increase memory' "
           f"{'0.55' if multi else '0.13'} GiB"
           + (", free on start-up 78.57 → 77.64 GiB from tp 1 to tp 2" if c.distributed and multi
              else "") + (", 0.61 GiB in use before vLLM's snapshot" if c.context else "") + ")"
           + ("; tp > 2 taken as tp 2" if tp > 2 else "")
           + ("" if device == MEASURED_ON else f"; measured on the H100, unverified on {device}")]
    return NonTorch(total, parts, how)


def device_total(name: str, memory_bytes: int, usable_bytes: Optional[int]
                 ) -> tuple[int, Optional[str]]:
    """The total vLLM multiplies by gpu_memory_utilization: CUDA's figure where it is published
    for the device and the run did not narrow its memory (--memory-fraction, --reserve), else
    the memory given; with the source, or None when unchanged."""
    known = DEVICE_TOTALS.get(name)
    if known is None or usable_bytes is None or memory_bytes != usable_bytes:
        return memory_bytes, None
    return known.bytes, known.source
