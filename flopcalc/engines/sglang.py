"""SGLang's token pool: how many tokens of KV cache `sglang.launch_server` allocates at start-up
(`max_total_num_tokens`, its log's "KV Cache is allocated. #tokens"). Pure arithmetic on ints
and Fractions; the engine itself is not needed.

Transcribed from SGLang's source, v0.5 series (late 2025; paths in the sgl-project/sglang
repository):

- `python/sglang/srt/server_args.py`, `ServerArgs._handle_gpu_memory_settings(gpu_mem)`: by the
  device's memory in MiB (`gpu_mem`, nvidia-smi's memory.total) the defaults of
  `chunked_prefill_size` and `cuda_graph_max_bs`, then, when `--mem-fraction-static` is not
  given, `reserved_mem` (MiB) = 512 + max(chunked_prefill_size, 2048)·1.5 (max_prefill_tokens
  when chunked prefill is off) + cuda_graph_max_bs·2 + tp·pp/8·1024, at least 10 GiB on devices
  over 60 GiB, + 2 GiB with an EAGLE drafter; mem_fraction_static = round((gpu_mem −
  reserved_mem) / gpu_mem, 3) (0.88 when the memory is unknown).
- `python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py` (earlier `model_runner.py`),
  `profile_max_num_token` / `_profile_available_bytes`: rest_memory = the free memory after the
  weights − the free memory before them × (1 − mem_fraction_static); max_total_num_tokens =
  int(rest_memory·2³⁰) // cell_size, with cell_size the bytes of one token across the layers of
  one rank: MHA `kv_heads(tp)·head_dim·layers·2·dtype`, kv_heads(tp) = max(1, kv_heads // tp);
  MLA `(kv_lora_rank + qk_rope_head_dim)·layers·dtype`, never split by tp.
- `init_memory_pool`: min with `--max-total-tokens`, then rounded down to whole pages
  (`max_total_num_tokens // page_size · page_size`); ≤ 0 → "Not enough memory. Please try to
  increase --mem-fraction-static." The request pool (`max_num_reqs`, the default of
  `--max-running-requests`) = min(max(int(max_total_num_tokens / context_len · 512), 2048),
  4096).
- Models with recurrent (Mamba / linear-attention) layers (`handle_max_mamba_cache`, radix
  cache on, no drafter): the states of one request take `mamba_cache_per_req` = Σ over the
  rank's recurrent layers of conv state·model dtype + SSM state·`mamba_ssm_dtype` (float32 by
  default); the rest is split so that states / KV = `mamba_full_memory_ratio` (0.9):
  max_mamba_cache_size = int(rest·0.9/1.9) // mamba_cache_per_req, and the token pool gets
  rest − max_mamba_cache_size·mamba_cache_per_req; only full-attention layers count in the
  cell size.
- 0.5.23 (`KVCacheConfigurator._handle_max_mamba_cache`, `_calculate_mamba_ratio`): the same
  split with the state pool's padding slot, max_mamba_cache_size = int((budget − per_req) //
  per_req) and (size + 1)·per_req taken (size ≤ 0 refused); the radix cache's strategy resolves
  to extra_buffer (overlap schedule on, triton linear-attention backend), so a request holds
  3 + 2 state slots: the request pool ≤ max_mamba_cache_size // 5 (0 refused), and the page
  size must divide the 256-token track interval.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Optional

from ..records import dataclass
from ..errors import FlopcalcError

SGLANG_VERSION = "0.5.5"  # plain --engine sglang: the release the arithmetic below follows
MiB = 1 << 20
GiB = 1 << 30
# --kv-cache-dtype: auto is the model's dtype (bf16 here)
KV_BYTES = {"auto": 2, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}


def gpu_defaults(gpu_mem_mib: Optional[int], tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) by the device's memory in MiB
    (0.5.5 `_handle_gpu_memory_settings`, CUDA branches)."""
    if gpu_mem_mib is None:
        return 4096, 160
    small = tp < 4
    if gpu_mem_mib < 20 * 1024:  # T4, 4080
        return 2048, 8
    if gpu_mem_mib < 35 * 1024:  # A10, 4090, 5090
        return 2048, 24 if small else 80
    if gpu_mem_mib < 60 * 1024:  # A100 40GB, L40
        return 4096, 32 if small else 160
    if gpu_mem_mib < 160 * 1024:  # H100, A100 80GB (< 90 GiB); H20, H200: the same
        return 8192, 256 if small else 512
    return 16384, 512  # B200, MI300


@dataclass(frozen=True)
class Reserve:
    """A release's default mem_fraction_static and the memory (MiB) it keeps out of the
    static pool for activations and CUDA graphs, term by term (None: device memory unknown)."""

    fraction: Fraction
    reserved_mib: Optional[float]
    terms: tuple = ()  # ("name", MiB) in the order the code adds them
    floor: bool = False  # the 10 GiB floor over 60 GiB decided it


def _rounded(gpu_mem_mib: int, reserved: float) -> Fraction:
    # round((gpu_mem − reserved_mem) / gpu_mem, 3): SGLang's float division and rounding
    return Fraction(str(round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)))


def default_mem_fraction_static(gpu_mem_mib: Optional[int], tp: int, pp: int,
                                chunked_prefill_size: int, cuda_graph_max_bs: int,
                                eagle: bool = False, **_: Any) -> Reserve:
    """mem_fraction_static when not given (0.5.5 server_args.py:787-800, in
    `_handle_gpu_memory_settings`, server_args.py:665): round((gpu_mem − reserved_mem) /
    gpu_mem, 3), the result a three-decimal setting."""
    if gpu_mem_mib is None:
        return Reserve(Fraction(88, 100), None)
    terms = [("constant", 512),
             ("prefill activations 1.5·max(chunk, 2048)", max(chunked_prefill_size, 2048) * 1.5),
             ("decode CUDA graphs 2·max_bs", cuda_graph_max_bs * 2),
             ("parallel tp·pp/8 GiB", tp * pp / 8 * 1024)]
    reserved = sum(v for _, v in terms)
    floor = gpu_mem_mib > 60 * 1024 and reserved < 10 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if eagle:
        reserved += 2 * 1024
        terms.append(("EAGLE drafter", 2048))
    return Reserve(_rounded(gpu_mem_mib, reserved), reserved, tuple(terms), floor)


def gpu_defaults_0_4_9(gpu_mem_mib: Optional[int], tp: int) -> tuple[int, Optional[int]]:
    """0.4.9 `ServerArgs.__post_init__`: chunked_prefill_size 2048 under 35 GiB, 8192 under
    160 GiB, else 16384 (4096 when the memory is unknown); cuda_graph_max_bs set only under
    35 GiB (8, or 80 from tp 4), else left to the CUDA-graph runner's capture list (None)."""
    if gpu_mem_mib is None:
        return 4096, None
    if gpu_mem_mib < 35 * 1024:
        return 2048, 8 if tp < 4 else 80
    return (8192 if gpu_mem_mib < 160 * 1024 else 16384), None


def default_mem_fraction_0_4_9(gpu_mem_mib: Optional[int], tp: int, pp: int,
                               chunked_prefill_size: int, cuda_graph_max_bs: Optional[int],
                               eagle: bool = False, **_: Any) -> Reserve:
    """0.4.9 `ServerArgs.__post_init__` (server_args.py:280-321): reserved_mem by bands of the
    device's memory, in GiB plus a share of tp·pp, not by the chunk; round((gpu_mem −
    reserved) / gpu_mem, 3)."""
    if gpu_mem_mib is None:
        return Reserve(Fraction(88, 100), None)
    parallel = tp * pp
    if gpu_mem_mib < 35 * 1024:  # T4, 4080 (< 20 GiB), A10, L40, 4090, 5090: the same
        reserved = (2.8 + parallel / 10) * 1024
    elif gpu_mem_mib < 90 * 1024:  # H100, A100
        reserved = (9.5 + parallel / 2) * 1024
    elif gpu_mem_mib < 160 * 1024:  # H20 (< 100 GiB), H200: the same
        reserved = (12 + parallel / 2) * 1024
    else:  # B200, MI300
        reserved = 32 * 1024
    terms = [("device band" + (f" + tp·pp = {parallel}" if gpu_mem_mib < 160 * 1024 else ""),
              reserved)]
    if eagle:
        reserved += 2 * 1024
        terms.append(("EAGLE drafter", 2048))
    return Reserve(_rounded(gpu_mem_mib, reserved), reserved, tuple(terms))


def gpu_defaults_0_5_23(gpu_mem_mib: Optional[int], tp: int,
                        max_running_requests: Optional[int] = None) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max_bs) by the device's memory (0.5.23
    arg_groups/memory_hook.py:89-188): as 0.5.5 but 4096 and 48 (160 from tp 4) under 35 GiB;
    a given --max-running-requests lowers the default max_bs to it."""
    if gpu_mem_mib is None:
        chunk, bs = 4096, 160
    elif gpu_mem_mib < 20 * 1024:  # T4, 4080
        chunk, bs = 2048, 8
    elif gpu_mem_mib < 35 * 1024:  # A10, 4090, 5090
        chunk, bs = 4096, 48 if tp < 4 else 160
    elif gpu_mem_mib < 60 * 1024:  # A100 40GB, L40
        chunk, bs = 4096, 32 if tp < 4 else 160
    elif gpu_mem_mib < 160 * 1024:  # H100, A100 80GB; H20, H200 (two bands, the same values)
        chunk, bs = 8192, 256 if tp < 4 else 512
    else:  # B200, MI300
        chunk, bs = 16384, 512
    if max_running_requests is not None and bs > max_running_requests:
        bs = max_running_requests  # memory_hook.py:182-188
    return chunk, bs


def prefill_graph_sizes(max_bs: int) -> list[int]:
    """The prefill CUDA graphs' token counts (0.5.23 arg_groups/cuda_graph_hook.py:480-497)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
             + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


def default_mem_fraction_0_5_23(gpu_mem_mib: Optional[int], tp: int, pp: int,
                                chunked_prefill_size: int, cuda_graph_max_bs: int,
                                latent: bool = False, llama2: bool = False, max_total_tokens: Optional[int] = None,
                                **_: Any) -> Reserve:
    """0.5.23 `handle_gpu_memory_settings` (arg_groups/memory_hook.py:281-328, with
    `reserve_for_graph_mb`, :357-399): 0.5.5's reserve plus the prefill CUDA graphs, which
    0.5.23 captures by default on CUDA (breakable backend): 8 MiB for each captured size up to
    the chunk (MLA: 1.5 GiB flat; the chunk capped at 8192 for MLA, at --max-total-tokens, and
    at 4096 when the model path names llama-2); 0.95 when the memory is unknown. Post-capture
    KV sizing is off by default (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING, environ.py:640), so
    the pre-capture heuristic is the one in force."""
    if gpu_mem_mib is None:
        return Reserve(Fraction(95, 100), None)
    if latent:
        prefill_bs = min(8192, chunked_prefill_size)
    else:
        prefill_bs = chunked_prefill_size
    if max_total_tokens is not None:
        prefill_bs = min(prefill_bs, max_total_tokens)
    if llama2:
        prefill_bs = min(prefill_bs, 4096)
    graphs = 1.5 * 1024 if latent else len(prefill_graph_sizes(prefill_bs)) * 8
    terms = [("constant", 512),
             ("prefill activations 1.5·max(chunk, 2048)", max(chunked_prefill_size, 2048) * 1.5),
             ("parallel tp·pp/8 GiB", tp * pp / 8 * 1024),
             ("decode CUDA graphs 2·max_bs", cuda_graph_max_bs * 2),
             ("prefill CUDA graphs " + ("1.5 GiB (MLA)" if latent else
                                        f"8·{len(prefill_graph_sizes(prefill_bs))} sizes"),
              graphs)]
    reserved = sum(v for _, v in terms)
    floor = gpu_mem_mib > 60 * 1024 and reserved < 10 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return Reserve(_rounded(gpu_mem_mib, reserved), reserved, tuple(terms), floor)


@dataclass(frozen=True)
class SglangRelease:
    """What one SGLang release does where flopcalc's arithmetic depends on it: its defaults by
    device (`defaults`, `mem_fraction`), whether it has the recurrent-state (Mamba / linear
    attention) pool, and the ratio by which that pool caps the request pool."""

    version: str
    source: str
    defaults: Any  # (gpu_mem_mib, tp[, max_running_requests]) -> (chunk, graph_bs or None)
    mem_fraction: Any  # (gpu_mem_mib, tp, pp, chunk, graph_bs, **model) -> Reserve
    recurrent: bool  # has handle_max_mamba_cache (Qwen3-Next, Nemotron-H, ...)
    # model_runner.py MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO: max_num_reqs is capped at
    # max_mamba_cache_size // this with the radix cache on (0.5.23: 3 + the extra buffer's 2)
    state_slots_per_request: int = 3
    # the state pool's padding slot counted in its split (0.5.23 _handle_max_mamba_cache)
    state_padding_slot: bool = False
    # tokens between tracked states of the Mamba radix cache's extra buffer, which the page
    # size must divide (0.5.23 validate_mamba_extra_buffer); None: no such rule
    state_track_interval: Optional[int] = None
    # the request pool is also capped at half the token pool (0.5.23 resolve_max_num_reqs)
    requests_at_most_half_the_tokens: bool = False
    # keys and values of different widths sized as n·(head_dim + v_head_dim) (0.5.23)
    mixed_kv_dims: bool = False
    # why the recurrent-state pool is refused where `recurrent` is False
    no_recurrent: str = "has no pool for recurrent (Mamba / linear attention) states and " \
        "does not serve this model"


# Read from each release's wheel on the Python package index (paths inside sglang/srt/) and
# checked against that code run on CPU (tools/sglang_reference, tests/engines/
# test_sglang_reference.py).
SGLANG_RELEASES: dict[str, SglangRelease] = {
    "0.4.9": SglangRelease(
        "0.4.9", "SGLang 0.4.9 server_args.py (ServerArgs.__post_init__ :280-351: "
        "mem_fraction_static by device bands, chunked_prefill_size, page_size 1) and "
        "model_executor/model_runner.py (profile_max_num_token :928-997, init_memory_pool "
        ":999-1035); no Mamba / linear-attention pool",
        gpu_defaults_0_4_9, default_mem_fraction_0_4_9, recurrent=False),
    "0.5.5": SglangRelease(
        "0.5.5", "SGLang 0.5.5 server_args.py (_handle_gpu_memory_settings :665-830, "
        "reserved_mem :787-809; _handle_page_size: 1, mamba_full_memory_ratio 0.9) and "
        "model_executor/model_runner.py (profile_max_num_token :1260-1323, "
        "handle_max_mamba_cache :1325, init_memory_pool :1502-1575, "
        "MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3)",
        gpu_defaults, default_mem_fraction_static, recurrent=True),
    "0.5.23": SglangRelease(
        "0.5.23", "SGLang 0.5.23 arg_groups/memory_hook.py (handle_gpu_memory_settings "
        ":47-343, reserve_for_graph_mb :357-399), arg_groups/cuda_graph_hook.py (prefill "
        "graph sizes :480-497), mem_cache/kv_cache_configurator.py (_profile_available_bytes "
        ":2990-3060, resolve_max_num_reqs :3119-3132) and model_executor/pool_configurator.py "
        "(DefaultPoolConfigurator: cell size :520-531, calculate_pool_sizes :637-647); "
        "hybrid models: mem_cache/kv_cache_configurator.py (_handle_max_mamba_cache "
        ":3229-3409, _calculate_mamba_ratio :3062-3088, "
        "MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3 :227, the state cap in "
        "resolve_max_num_reqs :3134-3161), model_executor/pool_configurator.py (full-attention "
        "layers only :229-236), arg_groups/overrides.py (_mamba_radix_cache_resolution "
        ":453-487: extra_buffer with the overlap schedule), mem_cache/allocation_sizing.py "
        "(get_mamba_tracking_slots :11-19: 2 more slots), arg_groups/mamba_hook.py "
        "(validate_mamba_extra_buffer :115-135: the page divides mamba_track_interval 256), "
        "arg_groups/fields/schedule.py (mamba_full_memory_ratio fallback 0.9 :220-227) and "
        "configs/mamba_utils.py (mamba2_state_dtype :47-107: conv bf16, SSM fp32; "
        "mamba_cache_per_req :115-125)",
        gpu_defaults_0_5_23, default_mem_fraction_0_5_23, recurrent=True,
        requests_at_most_half_the_tokens=True, mixed_kv_dims=True,
        state_slots_per_request=5, state_padding_slot=True, state_track_interval=256),
}


def release(version: Optional[str]) -> SglangRelease:
    """The release `version` names (0.4.9.post6 is 0.4.9's line), or an error listing the
    known ones; None: today's (0.5.5)."""
    if version is None:
        return SGLANG_RELEASES[SGLANG_VERSION]
    parts = version.strip().split(".")
    base = ".".join(p for p in parts[:3] if not p.startswith("post"))
    found = SGLANG_RELEASES.get(base)
    if found is None:
        raise FlopcalcError(f"--engine sglang=={version[:20]!r}: flopcalc knows the arithmetic "
                            f"of SGLang {', '.join(SGLANG_RELEASES)}; give one of them (or "
                            f"plain --engine sglang for {SGLANG_VERSION})")
    return found


MAMBA_FULL_MEMORY_RATIO = Fraction(9, 10)  # server_args.py: mamba_full_memory_ratio = 0.9
STATE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}  # --mamba-ssm-dtype (float32 by default)


def mamba_cache_per_req(caches: Iterable[Any], model_bytes: int = 2,
                        ssm_bytes: int = 4) -> int:
    """Bytes of one request's recurrent states on one rank: conv windows in the model dtype,
    SSM / recurrent states in mamba_ssm_dtype (Mamba2CacheParams.mamba_cache_per_req)."""
    return sum(st.values * (model_bytes if st.dtype == "conv" else ssm_bytes)
               for c in caches if c.layout == "state" for st in c.states)


def split_for_states(rest: Fraction, per_req: int,
                     ratio: Fraction = MAMBA_FULL_MEMORY_RATIO,
                     padding_slot: bool = False) -> tuple[int, Fraction]:
    """(max_mamba_cache_size, rest left for the token pool): handle_max_mamba_cache solving
    states + KV = rest and states / KV = ratio. `padding_slot` (0.5.23
    kv_cache_configurator.py:3350-3409): the pool holds one slot more than its size (slot 0
    pads), so size = int((budget − per_req) // per_req) and the states take (size + 1)·per_req;
    a size ≤ 0 is refused there."""
    raw = rest * ratio / (1 + ratio)
    if not padding_slot:
        size = int(raw) // per_req if raw > 0 else 0
        return size, rest - size * per_req
    size = (raw - per_req) // per_req  # floor, as the float // SGLang takes
    if size <= 0:
        raise FlopcalcError(
            f"SGLang would refuse to start: Not enough GPU memory for hybrid (mamba/linear-"
            f"attention) state cache (max_mamba_cache_size {size}: {max(int(rest), 0):,} bytes "
            f"left, {per_req:,} bytes of states a request); give a larger "
            "--mem-fraction-static or more devices (--tp)")
    return int(size), rest - (size + 1) * per_req


def cell_size(caches: Iterable[Any], kv_cache_dtype: str, mixed_kv_dims: bool = False) -> int:
    """Bytes of one token across every layer on one rank (`get_cell_size_per_token`), from the
    layers' engine caches (`EngineCache`, already per rank). `mixed_kv_dims`: the release sizes
    keys and values apart, n·(head_dim + v_head_dim) (0.5.23 pool_configurator.py:520-531)."""
    size = KV_BYTES[kv_cache_dtype]
    total = 0
    for c in caches:
        if c.layout == "full":
            if mixed_kv_dims:
                total += c.heads * (c.k_dim + c.v_dim) * size
                continue
            if c.k_dim != c.v_dim:
                raise FlopcalcError("SGLang's token pool is sized with one head_dim for keys "
                                    "and values before 0.5.23; this model's differ: give "
                                    "--engine sglang==0.5.23")
            total += c.heads * c.k_dim * 2 * size  # K and V: kv_heads(tp)·head_dim·2·dtype
        elif c.layout == "mla":
            total += c.k_dim * size  # (kv_lora_rank + qk_rope_head_dim)·dtype, one copy
        elif c.layout == "state":
            continue  # the states' pool, sized apart (mamba_cache_per_req)
        else:
            raise FlopcalcError(f"--engine sglang models full and latent (MLA) attention "
                                f"pools and recurrent states; this model has {c.layout} layers "
                                "(SGLang's hybrid SWA pool is not modelled yet): use --engine "
                                "vllm")
    if total == 0:
        raise FlopcalcError("this model keeps no KV cache: SGLang has no token pool to size")
    return total


def rest_memory(total_before: int, available_after: int, fraction: Fraction) -> Fraction:
    """Bytes left for the pool: free after the weights − free before × (1 − fraction)."""
    return available_after - total_before * (1 - fraction)


@dataclass(frozen=True)
class TokenPool:
    cell_size: int  # bytes per token on one rank
    rest_bytes: int  # int(rest_memory·2³⁰): what the pool may take
    profiled_tokens: int  # rest // cell, before --max-total-tokens and pages
    max_total_num_tokens: int
    kv_cache_bytes: int  # (max_total_num_tokens + page_size) × cell_size: the buffers
    max_num_reqs: int  # the request pool (max_running_requests' ceiling)
    log_line: str


def token_pool(rest: Fraction, cell: int, page_size: int, context_len: int,
               max_running_requests: Optional[int] = None,
               max_total_tokens: Optional[int] = None, latent: bool = False,
               half_cap: bool = False) -> TokenPool:
    """`profile_max_num_token` and `init_memory_pool`: the pool from `rest` bytes. `half_cap`:
    the request pool is at most half the token pool, given or not (0.5.23
    kv_cache_configurator.py:3123-3132)."""
    if page_size < 1:
        raise FlopcalcError(f"--page-size {page_size}: tokens per page must be at least 1")
    rest_bytes = int(rest)  # int(rest_memory * (1 << 30)): truncated towards zero
    tokens = profiled = rest_bytes // cell if rest_bytes > 0 else 0
    if max_total_tokens is not None:
        tokens = min(tokens, max_total_tokens)
    tokens = tokens // page_size * page_size
    if tokens <= 0:
        raise FlopcalcError("SGLang would refuse to start: Not enough memory. Please try to "
                            f"increase --mem-fraction-static ({rest_bytes:,} bytes left for a "
                            f"pool of {cell:,} bytes per token)")
    reqs = max_running_requests if max_running_requests is not None else \
        min(max(int(tokens / context_len * 512), 2048), 4096)
    if half_cap:
        reqs = min(reqs, tokens // 2)
    # memory_pool.py: each layer's buffer holds size + page_size slots (slot 0 pads), and the
    # log prints the buffers' bytes / 2³⁰ with two decimals: MLA one "KV size", MHA K and V
    buffers = (tokens + page_size) * cell
    if latent:
        sizes = f"KV size: {buffers / GiB:.2f} GB"
    else:
        sizes = f"K size: {buffers / 2 / GiB:.2f} GB, V size: {buffers / 2 / GiB:.2f} GB"
    line = f"KV Cache is allocated. #tokens: {tokens}, {sizes}"
    return TokenPool(cell, rest_bytes, profiled, tokens, buffers, reqs, line)
