"""The serving engines flopcalc knows, one entry each: the overheads its time model adds to
every step (`predict.engine_step`), and for an engine with its own capacity arithmetic (SGLang's
token pool) where that is and which `serve` options only it reads. `serve --engine NAME` takes
any name here; `register` adds one defined elsewhere (a test's toy engine, a plug-in) through
the same seam, and nothing else needs to change.
"""

from __future__ import annotations

from typing import Any, Optional

from ..records import dataclass


@dataclass(frozen=True)
class ServingEngine:
    """A serving engine flopcalc knows: what it adds to every step on top of its kernels, in
    seconds per step and per layer (low, estimate, high), per request, and which steps it
    replays from CUDA graphs (the time model of `predict.engine_step`); and, for an engine with
    its own capacity arithmetic, the function that adds it to a `serve` report (`capacity`: a
    module of `flopcalc.reports`, or a dotted module path, and its function, called as
    `function(report, loaded, hw, values)` with serve's parsed options) and the `serve` options
    only it reads (`options`)."""

    name: str
    title: str
    step_s: tuple[float, float, float]
    layer_s: tuple[float, float, float]
    source: str
    request_s: tuple[float, float, float] = (0.003, 0.008, 0.02)  # API server, once a request
    # the largest step (tokens) the engine replays from a CUDA graph when it holds prefill
    # tokens: 0 when only decode-only batches are captured
    graph_prefill_tokens: int = 0
    graph_source: str = ""
    capacity: Optional[tuple[str, str]] = None
    options: tuple[str, ...] = ()


# Per-step host work (schedule, prepare inputs, sample, detokenise) takes 1-5 ms when it runs
# serially with the GPU (Hugging Face, "Asynchronous continuous batching" (2025): the GPU idle
# 24% of an 8B model's run on an H200 at batch 32; WukLab, "Can Scheduling Overhead Dominate
# LLM Inference Performance?" (2024): more than half of vLLM 0.5's time, far less of SGLang's).
# Engines now overlap it with the GPU's previous step, which leaves the part that cannot
# overlap: vLLM V1's async scheduling (vLLM blog "vLLM V1: A Major Upgrade", 2025), SGLang's
# zero-overhead scheduler (LMSYS blog "SGLang v0.4", 2024-12-04), TensorRT-LLM's overlap
# scheduler (its docs, features/overlap-scheduler) on a C++ runtime. The per-layer gap is the
# replay of a captured CUDA graph: ~10-15 kernels a layer, 1-3 µs apart (NVIDIA's "Getting
# Started with CUDA Graphs" (2019): launch overhead per kernel falls from ~3-4 µs to ~1-2 µs).
# Once per request, before its prefill, the API server parses, tokenises and queues it, and
# streams the first token back: 3-20 ms (an instrumented vLLM 0.19 on MI300X, "CPU-GPU
# co-design for agentic inference" (2026): HTTP, tokenisation and scheduling 0.4-0.6 % of a
# single request's end-to-end time, a few seconds); added to TTFT and end-to-end latency.
ENGINES: dict[str, ServingEngine] = {
    "vllm": ServingEngine(
        "vllm", "vLLM (V1, async scheduling, CUDA graphs)", (0.0008, 0.0015, 0.003),
        (12e-6, 20e-6, 35e-6),
        "vLLM V1 blog (2025) and the async-scheduling write-ups: 1-5 ms of host work per "
        "step, mostly overlapped; CUDA graphs: ~1-3 µs per kernel",
        graph_prefill_tokens=512,
        graph_source="vLLM V1 replays piecewise CUDA graphs of every step up to "
        "max_cudagraph_capture_size = min(2 x max_num_seqs x (1 + draft tokens), 512, "
        "max_num_batched_tokens) tokens (vllm/config/vllm.py, _set_cudagraph_sizes), prefill "
        "tokens included; its CUDA-graph dispatcher runs a larger step without a graph"),
    "sglang": ServingEngine(
        "sglang", "SGLang (zero-overhead overlap scheduler, CUDA graphs)", (0.0004, 0.001, 0.002),
        (12e-6, 20e-6, 35e-6),
        "LMSYS 'SGLang v0.4' (2024): the CPU scheduler overlapped with the GPU; CUDA graphs: "
        "~1-3 µs per kernel",
        graph_source="SGLang replays CUDA graphs of decode batches only (its CudaGraphRunner "
        "captures ForwardMode.DECODE up to cuda_graph_max_bs); an extend (prefill) batch runs "
        "eagerly",
        capacity=("serve_sglang", "add_sglang"),
        options=("mem_fraction_static", "page_size", "chunked_prefill_size",
                 "max_running_requests", "context_length", "max_total_tokens")),
    "trtllm": ServingEngine(
        "trtllm", "TensorRT-LLM (C++ runtime, overlap scheduler, CUDA graphs)",
        (0.0002, 0.0007, 0.0015), (10e-6, 16e-6, 30e-6),
        "TensorRT-LLM docs, overlap scheduler; CUDA graphs: ~1-3 µs per kernel",
        graph_source="TensorRT-LLM's PyTorch backend replays CUDA graphs of generation-only "
        "batches (cuda_graph_config batch sizes); a batch with context requests runs "
        "eagerly"),
}


def register(engine: ServingEngine) -> None:
    """Add an engine defined outside flopcalc. Its name must be new."""
    if engine.name in ENGINES:
        raise ValueError(f"an engine named {engine.name!r} exists")
    ENGINES[engine.name] = engine


def unregister(name: str) -> None:
    del ENGINES[name]


def engine(name: str) -> ServingEngine:
    """The engine `name`, or an error naming the ones there are."""
    from ..errors import FlopcalcError

    found = ENGINES.get(name.lower()) if isinstance(name, str) else None
    if found is None:
        raise FlopcalcError(f"--engine {str(name)[:40]!r} is not an engine flopcalc knows; "
                            f"one of {', '.join(ENGINES)}")
    return found


def owner(option: str) -> Optional[ServingEngine]:
    """The engine whose own option `option` is (None: every engine's)."""
    return next((e for e in ENGINES.values() if option in e.options), None)


# ----------------------------------------------------------------------- vLLM versions' defaults


@dataclass(frozen=True)
class VllmDefaults:
    """What `vllm serve` chose when an option was not given, in one release line: the share of
    the device it takes, its token budget per step and sequences per step (which may depend on
    the device), and whether prefills are chunked (V0: only for long contexts). The cache
    arithmetic stays vLLM 0.33.0's (`engines.vllm`); these are the defaults it is fed."""

    version: str
    gpu_memory_utilization: str  # a decimal, as `--gpu-memory-utilization` takes it
    engine: str  # V0 or V1
    source: str

    def chunked_prefill(self, max_model_len: int, window: bool, recurrent: bool,
                        lora_or_draft: bool = False) -> bool:
        """V1 always chunks prefills (`_set_default_args_v1`: "V1 always uses chunked
        prefills"); V0 0.6 only for contexts over 32,768 tokens without sliding windows,
        recurrent (seqlen-agnostic) layers, LoRA, speculative decoding or prefix caching (off by
        default in V0): `EngineArgs.create_engine_config`."""
        if self.engine == "V1":
            return True
        return max_model_len > 32768 and not window and not recurrent and not lora_or_draft

    def batch(self, device: Optional[tuple[str, int]], max_model_len: int, chunked: bool
              ) -> tuple[int, int, str]:
        """(max_num_batched_tokens, max_num_seqs, why) for a device (its name and memory in
        bytes; None: none named, which vLLM's table treats as a small GPU)."""
        name, memory = (device[0].lower(), device[1]) if device else ("", 0)
        if self.engine == "V0":  # config.py SchedulerConfig; arg_utils EngineArgs.max_num_seqs
            if chunked:
                return 512, 256, "V0 with chunked prefill: 512 tokens (SchedulerConfig)"
            return max(max_model_len, 2048), 256, ("V0 without chunked prefill: max(max_model_len, "
                                                   "2048) tokens (SchedulerConfig)")
        if self.version == "0.8":  # large defaults by device name only
            if "h100" in name or "h200" in name:
                return 8192, 1024, "an H100/H200: 8192 tokens (_set_default_args_v1)"
            return 2048, 1024, "not an H100/H200: 2048 tokens (_set_default_args_v1)"
        if self.version in ("0.10", "0.11"):
            if memory >= 70 * (1 << 30) and "a100" not in name:
                return 8192, 1024, ">= 70 GiB and not an A100: 8192 tokens, 1024 sequences"
            return 2048, 256, "< 70 GiB or an A100: 2048 tokens, 256 sequences"
        return 8192, 1024, "8192 tokens, 1024 sequences (vllm serve on >= 70 GiB GPUs)"


# Read from each release's source distribution on the Python package index (paths in it).
VLLM_DEFAULTS: dict[str, VllmDefaults] = {
    "0.6": VllmDefaults("0.6", "0.90", "V0", "vLLM 0.6.0 vllm/engine/arg_utils.py (EngineArgs: "
                        "gpu_memory_utilization 0.90, block_size 16, max_num_seqs 256; "
                        "create_engine_config: chunked prefill only past 32K) and vllm/config.py "
                        "(SchedulerConfig: max_num_batched_tokens)"),
    "0.8": VllmDefaults("0.8", "0.90", "V1", "vLLM 0.8.0 vllm/engine/arg_utils.py (EngineArgs "
                        "gpu_memory_utilization 0.90; _set_default_args_v1: chunked prefill "
                        "always, 8192 tokens on H100/H200 else 2048, max_num_seqs 1024); V1 the "
                        "default engine (vllm/envs.py VLLM_USE_V1=1)"),
    "0.10": VllmDefaults("0.10", "0.9", "V1", "vLLM 0.10.0 vllm/config.py (CacheConfig "
                         "gpu_memory_utilization 0.9) and vllm/engine/arg_utils.py "
                         "(_set_default_args_v1: 8192 tokens and 1024 sequences at >= 70 GiB "
                         "but not an A100, else 2048 and 256)"),
    "0.11": VllmDefaults("0.11", "0.9", "V1", "vLLM 0.11.0 vllm/config/cache.py "
                         "(gpu_memory_utilization 0.9) and vllm/engine/arg_utils.py "
                         "(_set_default_args: as 0.10)"),
    "0.33": VllmDefaults("0.33", "0.92", "V1", "vLLM 0.33.0 config/cache.py "
                         "(gpu_memory_utilization 0.92) and engine/arg_utils.py (8192 tokens, "
                         "1024 sequences for vllm serve)"),
}
CURRENT = "0.33"


def parse(text: str) -> tuple[ServingEngine, Any]:
    """`NAME` or `NAME==X.Y`: vLLM's release lines whose defaults flopcalc knows
    (`VllmDefaults`), or SGLang's releases whose arithmetic it has (`engines.sglang.
    SglangRelease`, e.g. 0.4.9, 0.5.5)."""
    from ..errors import FlopcalcError

    if not isinstance(text, str) or "==" not in text:
        return engine(text), None
    name, _, version = text.partition("==")
    chosen = engine(name.strip())
    version = version.strip()
    if chosen is ENGINES.get("sglang"):  # its own arithmetic per release (engines.sglang)
        from .sglang import release

        return chosen, release(version)
    if chosen is not ENGINES["vllm"]:
        raise FlopcalcError(f"--engine {chosen.name}=={version[:20]!r}: flopcalc knows the "
                            "releases of vLLM and SGLang only; give --engine "
                            f"{chosen.name} and its options")
    # 0.10.1.1 and 0.10 name the same release line
    line = ".".join(version.split(".")[:2])
    found = VLLM_DEFAULTS.get(line)
    if found is None:
        raise FlopcalcError(f"--engine vllm=={version[:20]!r}: flopcalc knows the defaults of "
                            f"vLLM {', '.join(VLLM_DEFAULTS)}; give one of them (or plain "
                            "--engine vllm for 0.33)")
    return chosen, found
