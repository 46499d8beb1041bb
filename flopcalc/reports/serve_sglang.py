"""`serve --engine sglang`: SGLang's token pool (`engines.sglang`) beside the serve report:
the memory fraction it defaults to on the device, the bytes left for the pool after the weights,
the bytes of one token across layers, `max_total_num_tokens` and its log line."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from ..engines import vllm as E
from ..engines import sglang as S
from ..errors import FlopcalcError

@dataclass
class SglangCapacity:
    engine: str  # "sglang"
    version: str  # the SGLang code the arithmetic follows
    gpu_mem_mib: Optional[int]  # what SGLang's defaults read (nvidia-smi memory.total)
    mem_fraction_static: float
    mem_fraction_static_source: str  # given, or SGLang's default rule
    chunked_prefill_size: int
    cuda_graph_max_bs: Optional[int]  # None: the release leaves it to its capture list
    page_size: int
    context_length: int
    kv_cache_dtype: str
    memory_source: str  # given (--kv-memory) or estimated
    total_gpu_memory_bytes: Optional[int]  # free before the weights (estimated: the device's)
    weights_bytes: Optional[int]  # one rank's
    rest_bytes: int  # what the pool may take
    cell_size: int  # bytes per token across the layers of one rank
    max_total_num_tokens: int
    kv_cache_bytes: int  # the pool's buffers on one rank
    max_running_requests: int  # the request pool: min(given, ...) or SGLang's default
    max_concurrency: float  # max_total_num_tokens / context_length
    log_line: str
    how: list[str]
    mamba_cache_per_req: int = 0  # recurrent states of one request on one rank
    max_mamba_cache_size: Optional[int] = None  # requests' states the state pool holds
    # what the default fraction keeps out of the static pool (MiB, SGLang's float), term by
    # term; None where the fraction was given or the device's memory is unknown
    reserved_mib: Optional[float] = None
    reserve_terms: Optional[list[str]] = None
    source: str = ""  # the release's files and lines the figures follow


def _free_before_weights(hw: Any, gpu_mem: int, tp: int) -> tuple[int, str]:
    """What SGLang's `init_torch_distributed` reads as free (`get_available_gpu_memory`, i.e.
    `torch.cuda.mem_get_info`) once the CUDA context and, at tp > 1, NCCL's communicators and
    the custom all-reduce are up: CUDA's device total where it is published (the driver's
    reservation below nvidia-smi's figure), less the context at tp 1, less SGLang's start-up
    at tp > 1 as a published SGLang log measures it (the context, the communicators with
    NCCL_CUMEM_ENABLE=0, which every release here sets on one node: 0.4.9 and 0.5.5
    entrypoints/engine.py `_set_envs_and_config`, 0.5.23 unless symmetric memory or KV
    sharding ask for it, and the all-reduce's buffers). Both are measurements
    (engines.overheads), not SGLang's code: the estimate says so."""
    from ..engines.overheads import CONTEXT, SGLANG_STARTUP, device_total

    usable = getattr(hw, "usable_memory_bytes", None)
    total, total_source = device_total(hw.name, hw.memory_bytes, usable)
    if total_source is None:
        total = gpu_mem * S.MiB
    parts = [f"{'CUDA' if total_source else 'the device'}'s {total:,} bytes"
             + (" (its published mem_get_info total)" if total_source else "")]
    if tp > 1:
        free = total - SGLANG_STARTUP
        parts.append(f"SGLang's start-up at tp > 1 {SGLANG_STARTUP:,} (the CUDA context, NCCL's "
                     "communicators with cuMem off and the custom all-reduce: 1.90 GiB in use "
                     "before the weights of an H200 worker at tp 8, 'avail mem=12.25 GB, mem "
                     "usage=125.65 GB', SemiAnalysisAI/InferenceX#2128)")
        measured_on = "h200"
    else:
        free = total - CONTEXT
        parts.append(f"the CUDA context {CONTEXT:,} (79.18 − 78.57 GiB free on an H100's "
                     "start-up, llm-d/llm-d-benchmark config_explorer/"
                     "empirical-vllm-memory-results.md)")
        measured_on = "h100-sxm"
    return free, " − ".join(parts) + (f"; measured on an {measured_on.split('-')[0].upper()}, "
                                      f"unverified on {hw.name}"
                                      if hw.name != measured_on else "")


def sglang_capacity(spec: Any, hw: Any, *, tp: int, pp: int, weights_bytes: int,
                    kv_memory: Optional[list[int]], mem_fraction_static: Optional[Fraction],
                    page_size: Optional[int], chunked_prefill_size: Optional[int],
                    max_running_requests: Optional[int], context_length: Optional[int],
                    kv_cache_dtype: Optional[str], max_total_tokens: Optional[int] = None,
                    release: Optional[S.SglangRelease] = None,
                    model_path: str = "", free_before: Optional[int] = None) -> SglangCapacity:
    """SGLang's token pool on one device as `release` (default 0.5.5) sizes it. `model_path`:
    what SGLang would be given (0.5.23 caps its prefill CUDA graphs when it names llama-2).
    `free_before`: the free memory SGLang reads before loading the weights, where it is known
    (its own code run on a stand-in device); otherwise estimated from the device."""
    rel = release or S.release(None)
    if pp != 1:
        raise FlopcalcError("--engine sglang models one pipeline stage: give --pp 1")
    context = context_length or spec.max_seq_len
    if context is None:
        raise FlopcalcError("the model states no context length: give --context-length L")
    dtype = kv_cache_dtype or "auto"
    caches = [c for _, cs in E.model_caches(spec, tp) for c in cs]
    latent = any(c.layout == "mla" for c in caches)
    cell = S.cell_size(caches, dtype, rel.mixed_kv_dims)
    gpu_mem = None
    if hw is not None:
        usable = getattr(hw, "usable_memory_bytes", None) or hw.memory_bytes
        gpu_mem = usable // S.MiB if usable else None
    chunk_default, graph_bs = rel.defaults(gpu_mem, tp, max_running_requests) \
        if rel.requests_at_most_half_the_tokens else rel.defaults(gpu_mem, tp)
    chunk = chunked_prefill_size if chunked_prefill_size is not None else chunk_default
    reserve = None
    if mem_fraction_static is not None:
        fraction = Fraction(str(mem_fraction_static)) if isinstance(mem_fraction_static, float) \
            else Fraction(mem_fraction_static)
        f_source = "--mem-fraction-static"
    else:
        reserve = rel.mem_fraction(gpu_mem, tp, pp, chunk, graph_bs, latent=latent,
                                   llama2="llama-2" in model_path.lower(),
                                   max_total_tokens=max_total_tokens)
        fraction = reserve.fraction
        if not gpu_mem:
            f_source = f"SGLang {rel.version}'s default when the device memory is unknown"
        elif rel.version == "0.5.23":
            f_source = (f"SGLang 0.5.23's default on {gpu_mem:,} MiB: round((gpu_mem − "
                        f"reserved) / gpu_mem, 3), reserved = "
                        + " + ".join(f"{v:g}" for _, v in reserve.terms)
                        + f" MiB (at least 10 GiB over 60 GiB) = {reserve.reserved_mib:g} MiB "
                        "(memory_hook.py:281-328)")
        elif rel.version == "0.4.9":
            f_source = (f"SGLang 0.4.9's default on {gpu_mem:,} MiB: round((gpu_mem − "
                        "reserved) / gpu_mem, 3), reserved by the device's band (H100/A100: "
                        f"(9.5 + tp·pp/2) GiB; H20/H200: (12 + tp·pp/2) GiB) with tp·pp = "
                        f"{tp * pp}")
        else:
            f_source = (f"SGLang {rel.version}'s default on {gpu_mem:,} MiB: round((gpu_mem − "
                        f"reserved) / gpu_mem, 3), reserved = 512 + max({chunk:,}, 2048)·1.5 + "
                        f"{graph_bs}·2 + {tp}·{pp}/8·1024 MiB, at least 10 GiB over 60 GiB")
    if not 0 < fraction <= 1:
        raise FlopcalcError(f"--mem-fraction-static {float(fraction):g} must be in (0, 1]")
    how = []
    if kv_memory is not None:
        if len(kv_memory) != 1:
            raise FlopcalcError("--engine sglang takes one --kv-memory: the bytes per device "
                                "its token pool may take")
        rest, source, total = Fraction(kv_memory[0]), "given", None
        how.append("--kv-memory: the bytes per device for the token pool (SGLang's rest "
                   "memory)")
    else:
        if hw is None or gpu_mem is None:
            raise FlopcalcError("--engine sglang needs the device's memory: give "
                                "--accelerator NAME (estimated) or --kv-memory BYTES")
        total, started = (free_before, "given") if free_before is not None \
            else _free_before_weights(hw, gpu_mem, tp)
        rest, source = S.rest_memory(total, total - weights_bytes, fraction), "estimated"
        how.append(f"estimated: free before the weights = {total:,} bytes ({started}); free "
                   f"after = that − {weights_bytes:,} bytes of weights (what loading allocates "
                   f"beyond them, measured by SGLang, not counted); rest = after − before·"
                   f"(1 − {float(fraction):g})")
    per_req = S.mamba_cache_per_req(caches)
    states = None
    if per_req and not rel.recurrent:
        raise FlopcalcError(f"SGLang {rel.version} {rel.no_recurrent}: give --engine "
                            f"sglang=={S.SGLANG_VERSION}")
    interval = rel.state_track_interval
    if per_req and interval and (page_size or 1) > 0 and interval % (page_size or 1):
        # the radix cache's extra buffer tracks a state every `interval` tokens, on page
        # boundaries (0.5.23 arg_groups/mamba_hook.py:134-135 asserts it at start-up)
        raise FlopcalcError(f"SGLang {rel.version} refuses --page-size {page_size} for a "
                            f"hybrid model: its Mamba radix cache tracks states every "
                            f"{interval} tokens, which the page must divide; give a page "
                            f"size dividing {interval} (1, 16, 64 ...)")
    if per_req:
        states, rest = S.split_for_states(rest, per_req, padding_slot=rel.state_padding_slot)
        held = states + 1 if rel.state_padding_slot else states
        how.append(f"recurrent states: {per_req:,} bytes per request (conv in bf16, SSM in "
                   f"fp32); mamba_full_memory_ratio 0.9 gives max_mamba_cache_size "
                   f"{states:,} ({held * per_req:,} bytes"
                   + (", its padding slot included" if rel.state_padding_slot else "")
                   + f"); the rest is the token pool; at most {states:,} // "
                   f"{rel.state_slots_per_request} requests (state slots a request"
                   + (": 3 + 2 for the radix cache's extra buffer with the overlap schedule"
                      if rel.state_slots_per_request == 5 else "") + ")")
    pool = S.token_pool(rest, cell, page_size or 1, context, max_running_requests,
                        max_total_tokens, latent=latent,
                        half_cap=rel.requests_at_most_half_the_tokens)
    reqs = pool.max_num_reqs
    if states is not None:
        # the request pool capped by the state pool: max_mamba_cache_size //
        # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (3 slots a request with the radix cache;
        # 0.5.23 kv_cache_configurator.py:3134-3157: + 2 with the extra buffer, none refused)
        reqs = min(reqs, states // rel.state_slots_per_request)
        if reqs <= 0 and rel.state_padding_slot:
            raise FlopcalcError(f"SGLang would refuse to start: its hybrid (mamba/linear-"
                                f"attention) state cache is too small to serve any requests "
                                f"(max_mamba_cache_size {states} // "
                                f"{rel.state_slots_per_request} slots a request = 0); give a "
                                "larger --mem-fraction-static or more devices (--tp)")
    return SglangCapacity(
        engine="sglang", version=rel.version, gpu_mem_mib=gpu_mem,
        mem_fraction_static=float(fraction), mem_fraction_static_source=f_source,
        chunked_prefill_size=chunk, cuda_graph_max_bs=graph_bs, page_size=page_size or 1,
        context_length=context, kv_cache_dtype=dtype, memory_source=source,
        total_gpu_memory_bytes=total, weights_bytes=weights_bytes if total else None,
        rest_bytes=pool.rest_bytes, cell_size=cell,
        max_total_num_tokens=pool.max_total_num_tokens, kv_cache_bytes=pool.kv_cache_bytes,
        max_running_requests=reqs,
        max_concurrency=pool.max_total_num_tokens / context, log_line=pool.log_line, how=how,
        mamba_cache_per_req=per_req, max_mamba_cache_size=states,
        reserved_mib=reserve.reserved_mib if reserve is not None else None,
        reserve_terms=[f"{name}: {v:g} MiB" for name, v in reserve.terms]
        + (["at least 10 GiB over 60 GiB of device memory: 10,240 MiB"] if reserve.floor
           else []) if reserve is not None and reserve.reserved_mib is not None else None,
        source=rel.source)


# --kv-cache-dtype as SGLang names it (server_args.py: auto, fp8_e5m2, fp8_e4m3, bf16; fp8 is
# vLLM's name for e4m3).
SGLANG_KV = {"auto": "auto", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8_e4m3",
             "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def add_sglang(report: Any, loaded: Any, hw: Any, values: dict[str, Any]) -> None:
    """`serve --engine sglang`: SGLang's token pool beside vLLM's report (the engine registry's
    capacity hook), from serve's parsed options."""
    kv = values["kv_cache_dtype"]
    if kv not in SGLANG_KV:
        raise FlopcalcError(f"--kv-cache-dtype {kv} is not one of SGLang's: "
                            + ", ".join(SGLANG_KV))
    report.sglang = sglang_capacity(
        loaded.spec, hw, tp=values["tp"], pp=values["pp"],
        weights_bytes=max(report.weights.device_bytes), kv_memory=values["kv_memory"],
        mem_fraction_static=values["mem_fraction_static"], page_size=values["page_size"],
        chunked_prefill_size=values["chunked_prefill_size"],
        max_running_requests=values["max_running_requests"],
        context_length=values["context_length"], kv_cache_dtype=SGLANG_KV[kv],
        max_total_tokens=values.get("max_total_tokens"), release=values.get("release"),
        model_path=str(getattr(loaded, "origin", "") or ""))
    if values.get("release") is not None:  # --engine sglang==X named one
        report.settings.engine += f" (SGLang {report.sglang.version})"
    report.conventions.append(
        f"sglang: SGLang's token pool as its {report.sglang.version} code sizes it "
        "(its memory defaults and pool sizing; files and lines in sglang.source): "
        "max_total_num_tokens = int(free after weights − free before × "
        "(1 − mem_fraction_static)) // bytes per token, in whole pages; recurrent states "
        "first (handle_max_mamba_cache); the rest of the report is vLLM's")
