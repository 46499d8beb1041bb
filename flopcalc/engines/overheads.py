"""What vLLM subtracts for the cache beyond the weights and the profiling run's tensors, per
release line (`--engine vllm==X`): the device total it multiplies by gpu_memory_utilization,
PyTorch's cuBLAS workspace inside the torch peak, the memory outside torch's allocator its
snapshot counts. (0.33 also subtracts a CUDA-graph estimate it measures by capturing two
graphs per mode at start-up, and its mem_get_info total takes the model runner's persistent
buffers: `engines.graphs`.)

    available = total × gpu_memory_utilization − weights − (activation peak + cuBLAS workspace)
                − non-torch memory the release counts

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

Releases up to 0.10 set NCCL_CUMEM_ENABLE=0; from 0.11 NCCL keeps its cuMem allocations (and
with them NVLink SHARP buffers on NVSwitch systems), which takes more at tp > 1.

The device total and the non-torch parts are not in vLLM's source: they are the driver's and
NCCL's. They come from published measurements (the sources below): device totals for the H100,
H200, RTX 5090 and RTX 4090; non-torch memory from H100 runs (an RTX 3090 worker's for tp > 1 with cuMem off).
Other devices keep their preset's memory and take these figures, and the output says where
they were measured.
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
    # RTX 5090: nvidia-smi 32,607 MiB. vLLM prints round(GiB, 2): "Free memory on device
    # (30.27/31.4 GiB)" puts the total in [31.395, 31.405) GiB and "Desired GPU memory
    # utilization is (0.92, 28.88 GiB)" 0.92 x total in [28.875, 28.885), so total in
    # [31.395, 31.3967) GiB = [32,148.5, 32,150.2] MiB: 32,149 (32,150 fits as well).
    "rtx-5090": DeviceTotal(
        32_149 * MiB, "CUDA's total for an RTX 5090: 32,149 MiB (±1), from a vLLM log's 'Free "
        "memory on device (30.27/31.4 GiB)' and 'Desired GPU memory utilization is (0.92, "
        "28.88 GiB)' (noonghunna/club-3090#1087), 458 MiB below the 32,607 MiB nvidia-smi "
        "shows: the driver's reservation"),
    # RTX 4090: nvidia-smi 24,564 MiB; PyTorch's out-of-memory message "GPU 0 has a total
    # capacity of 23.64 GiB" (3DTopia/Phidias-Diffusion#8, ali-vilab/VGen#104), printed to
    # 0.01 GiB: [23.635, 23.645) GiB = [24,202.2, 24,212.5) MiB, 24,207 taken; other drivers
    # print 23.61-23.68 GiB.
    "rtx-4090": DeviceTotal(
        24_207 * MiB, "CUDA's total for an RTX 4090: 23.64 GiB (24,207 MiB ± 5) as PyTorch's "
        "out-of-memory messages print it (3DTopia/Phidias-Diffusion#8, ali-vilab/VGen#104; "
        "other drivers 23.61-23.68 GiB), about 357 MiB below the 24,564 MiB nvidia-smi shows: "
        "the driver's reservation"),
}

# Measured outside torch, per device (each a published log's figure, hundredths of a GiB):
MEASURED_ON = "h100-sxm"
GROWTH_TP1 = 13 * CENTI  # V1 at tp 1, from the snapshot through the profiling run (llm-d, 0.11.0)
V0_TP1 = 16 * CENTI  # V0 at tp 1 on an H100: "non_torch_memory takes 0.16GiB" (vllm#12126)
# tp > 1 with NCCL's cuMem allocations on (vLLM ≥ 0.11 no longer sets NCCL_CUMEM_ENABLE=0; with
# cuMem, NCCL may use NVLink SHARP on NVSwitch systems): the growth after the snapshot (llm-d,
# 0.11.0, tp 2, "non-torch forward increase memory" 0.55); the start-up before it, 0.93 GiB
# (free on start-up 78.57 → 77.64 GiB from tp 1 to tp 2), is not counted by these releases
GROWTH_CUMEM = 55 * CENTI
STARTUP_CUMEM = 93 * CENTI  # shown, never subtracted
# tp > 1 with NCCL_CUMEM_ENABLE=0 (vLLM 0.6.0 worker_base.py init_worker, 0.8.0 __init__.py,
# 0.10.1.1 env_override.py) and the snapshot before distributed start-up: everything, start-up
# included: "non_torch_memory takes 0.20GiB" per RTX 3090 worker (vllm#14447, V0, 2025-04)
NO_CUMEM = 20 * CENTI
CONTEXT = 61 * CENTI  # in use before vLLM's first reading at tp 1: 79.18 − 78.57 GiB (llm-d)
# SGLang at tp > 1, in use when `init_torch_distributed` reads the free memory before the weights
# (the CUDA context, its NCCL and pynccl communicators with cuMem off, the custom all-reduce's
# buffers): an H200 worker of DeepSeek-V4-Pro at tp 8 logs "Load weight end. quant=fp8,
# fmt=e4m3, avail mem=12.25 GB, mem usage=125.65 GB" (SemiAnalysisAI/InferenceX#2128; SGLang's
# GB are GiB): 137.90 GiB free before the weights of CUDA's 139.80 (143,156 MiB), 1.90 GiB.
SGLANG_STARTUP = 190 * CENTI


@dataclass(frozen=True)
class Counted:
    """What a release's memory profile subtracts beyond weights and torch's peak increase."""

    version: str
    source: str
    context: bool  # the CUDA context and everything before vLLM's first reading (0.8)
    cumem: bool  # NCCL's cuMem allocations left on (vLLM does not set NCCL_CUMEM_ENABLE=0)
    v0: bool  # the V0 engine (its own tp 1 figure)


RELEASES: dict[str, Counted] = {
    "0.6": Counted("0.6", "vLLM 0.6.0 worker/worker.py init_device (init_gpu_memory before "
                   "init_worker_distributed_environment) and determine_num_available_blocks "
                   "(peak = init free − free after profile_run); worker_base.py "
                   "NCCL_CUMEM_ENABLE=0", False, False, True),
    "0.8": Counted("0.8", "vLLM 0.8.0 v1/worker/gpu_worker.py determine_available_memory "
                   "(allocated peak + device used − torch allocated: the context included); "
                   "__init__.py NCCL_CUMEM_ENABLE=0", True, False, False),
    "0.10": Counted("0.10", "vLLM 0.10.1.1 v1/worker/gpu_worker.py init_device "
                    "(MemorySnapshot before init_worker_distributed_environment), "
                    "utils/__init__.py memory_profiling (non_torch_increase from it), "
                    "env_override.py NCCL_CUMEM_ENABLE=0", False, False, False),
    "0.11": Counted("0.11", "vLLM 0.11.0 v1/worker/gpu_worker.py init_device (the snapshot "
                    "after init_worker_distributed_environment), utils/__init__.py "
                    "memory_profiling; NCCL_CUMEM_ENABLE no longer set", False, True, False),
    "0.33": Counted("0.33", "vLLM 0.33.0 v1/worker/gpu_worker.py init_device (the snapshot "
                    "after init_worker_distributed_environment) and "
                    "determine_available_memory; NCCL_CUMEM_ENABLE not set", False, True, False),
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
    """The non-torch memory vLLM `version` counts on one device of a tp-way replica, from
    published measurements: at tp 1 what loads outside torch through the profiling run; at
    tp > 1 with NCCL's cuMem on (0.11+) the growth after the snapshot, its start-up taken
    before it; with cuMem off (0.6-0.10, whose snapshot precedes distributed start-up)
    everything, start-up included; the CUDA context where the release reads all device memory
    (0.8). Published for tp 1 and 2 (0.11+) or per worker (cuMem off); tp > 2 takes them (each
    rank's ring neighbours and the custom all-reduce's own buffers do not grow with tp)."""
    c = counted(version)
    if tp == 1:
        parts = [("kernels and handles loaded through the profiling run",
                  V0_TP1 if c.v0 else GROWTH_TP1)]
        cite = ("vllm-project/vllm#12126, V0 on an H100: 0.16 GiB" if c.v0 else
                "llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md, "
                "vLLM 0.11.0 on an H100: 'non-torch forward increase memory' 0.13 GiB")
    elif c.cumem:
        parts = [("NCCL's connections, kernels and handles through the profiling run",
                  GROWTH_CUMEM)]
        cite = ("llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md, vLLM "
                "0.11.0 on 2 H100: 0.55 GiB; the distributed start-up before the snapshot, "
                f"{STARTUP_CUMEM:,} bytes (free on start-up 78.57 → 77.64 GiB), is not counted")
    else:
        parts = [("NCCL's communicators and buffers (cuMem off), the custom all-reduce, "
                  "kernels and handles", NO_CUMEM)]
        cite = ("vllm-project/vllm#14447, a V0 log per RTX 3090 worker, the snapshot before "
                "distributed start-up, NCCL_CUMEM_ENABLE=0: 0.20 GiB")
    if c.context:
        parts.append(("the CUDA context and torch's start, before any reading", CONTEXT))
        cite += "; context: 79.18 − 78.57 GiB free on start-up (llm-d, H100)"
    total = sum(b for _, b in parts)
    on = "an RTX 3090" if tp > 1 and not c.cumem else "an H100"
    how = [f"non-torch memory as vLLM {c.version} counts it ({c.source}): "
           + " + ".join(f"{name} {b:,}" for name, b in parts) + f" = {total:,} bytes "
           f"({total / GiB:.2f} GiB), measured ({cite})"
           + (f"; tp {tp} taken as the published tp" if tp > 2 else "")
           + (f"; measured on {on}, unverified on {device}"
              if device != MEASURED_ON or on != "an H100" else "")]
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
