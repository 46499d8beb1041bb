"""Paged KV-cache capacity exactly as vLLM 0.33.0 computes it at start-up: each layer's cache
spec on one tensor-parallel rank, the hybrid block-size alignment, the cache groups, the bytes
of one block, the number of blocks that fit, the blocks one request of `max_model_len` tokens
needs, the maximum concurrency and the "GPU KV cache size" it logs. Pure integer arithmetic
(the concurrency is the float vLLM computes, `num_blocks / blocks_per_request`).

Each layer's kinds say what they keep (`Kind.engine_cache`, an `EngineCache` per cache); this
module pages them as vLLM's `KVCacheSpec`s do. Citations are paths in the vLLM 0.33.0 wheel
(`site-packages/vllm/`) with its line numbers:

- Page of one block (`v1/kv_cache_interface.py`): attention `bs·H_kv·(d_k + d_v)·dtype`
  (579-601); latent attention `bs·(r_kv + d_rope)·dtype`, one head, never split by tensor
  parallelism (728-805); DeepSeek's `fp8_ds_mla` layout 656 bytes per token and `nvfp4_ds_mla`
  352 (`model_executor/layers/attention/mla_attention.py:1371-1400`); the DeepSeek-V3.2
  indexer's keys `bs·(d_i + d_i/128·4)`, fp8 with an fp32 scale per 128
  (`models/deepseek_v2.py:638-668,731-736`); a Mamba state `Σ prod(shape)·dtype` (1093-1129).
- Blocks per request at L (`kv_cache_interface.py`): full, latent, indexer `cdiv(L, bs)`
  (643-648); sliding window `cdiv(min(w − 1 + extra + T, L), bs) + 1` (918-955); chunked
  `cdiv(min(c + T, L), bs)` (864-888); Mamba `1 + s`, or `2 + s + checkpoint` in prefix
  caching's align mode (1135-1141); with T = the in-flight tokens,
  `max_concurrent_batches × max_num_batched_tokens`, max_concurrent_batches = pp + 1 with
  async scheduling on the V2 model runner, else pp (`config/vllm.py:587-609`).
- Hybrid alignment (`platforms/interface.py:940-1137`): the attention block grows to
  `k·cdiv(state page, k·attention page of one token)` tokens (k = max(16, block size), a
  multiple of 128 with latent attention, lcm with the prefill checkpoint alignment in align
  mode), and the state page is padded to the attention page.
- Grouping (`v1/core/kv_cache_planning.py:1113-1200`): one group when every spec is equal; one
  `UniformTypeKVCacheSpecs` group (page = Σ) when they are one type with one block size
  (full + latent + indexer count as one type); otherwise pages are unified to the largest
  (346-408) and layers bucketed by spec, `group_size` = the smallest bucket (the largest when
  it is under 1.5 × the smallest), each bucket split into `cdiv(n, group_size)` strided groups
  (416-556). With the hybrid manager off, window and chunked layers become full (744-816).
- Blocks (`kv_cache_planning.py:574-605,1461-1604`): bytes per block = the largest group's Σ
  of pages; num_blocks = ⌊available / bytes per block⌋, the least over pipeline stages; a
  request must fit next to the null block: `bytes_per_block·Σ blocks ≤ available −
  bytes_per_block`, else vLLM refuses to start (50-87) and estimates the longest length that
  fits by bisection (1288-1334).
- Capacity (`v1/core/kv_cache_utils.py:1061-1154`): max_concurrency = num_blocks / Σ_groups
  blocks per request; "GPU KV cache size" = int(max_concurrency × L) tokens.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Optional, Sequence

from ..records import dataclass
from ..errors import FlopcalcError
from ..kinds.base import EngineCache, cdiv

VLLM_VERSION = "0.33.0"
DEFAULT_BLOCK_SIZE = 16  # config/cache.py:185
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92  # config/cache.py:215
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192  # `vllm serve` on >= 70 GiB GPUs, engine/arg_utils.py
DEFAULT_MAX_NUM_SEQS = 1024  # the same table
KERNEL_BLOCK = 16  # FlashAttention / FlashAttention-MLA: MultipleOf(16)
MLA_HYBRID_BLOCK = 128  # platforms/interface.py:1083-1088
GiB = 1 << 30

# Bytes per stored value of each engine dtype (`auto`: the model's dtype). The ds_mla and
# nvfp4 layouts are sized by their own rules below.
VALUE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
KV_DTYPES = ("auto", "bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla",
             "nvfp4_ds_mla", "nvfp4")
STATE_DTYPES = ("auto", "bf16", "fp16", "fp32")
ATTENTION = ("full", "sliding", "chunked", "mla", "indexer")


def format_gib(nbytes: int) -> str:
    """How vLLM prints a byte count (`utils/mem_utils.py:30-31`): round(x / 2³⁰, 2)."""
    return f"{round(nbytes / GiB, 2)}"


@dataclass(frozen=True)
class Engine:
    """The engine's settings that size the cache (vLLM's names in brackets).

    `kv_dtype` [kv_cache_dtype], `model_dtype` [dtype: what `auto` means], `block_size`,
    `max_num_batched_tokens`, `async_scheduling`, `prefix_caching` [enable_prefix_caching:
    Mamba layers then keep states in `align` mode], `hma` [the hybrid KV cache manager],
    `speculative_tokens` [num_speculative_tokens], `extra_retained_tokens` (multi-module MTP:
    k − 1), `mamba_cache_dtype` (conv states; `auto`: the model dtype) and
    `mamba_ssm_cache_dtype` (SSM states; `auto`: the conv dtype), `tp`, `pp`."""

    max_model_len: int
    tp: int = 1
    pp: int = 1
    block_size: int = DEFAULT_BLOCK_SIZE
    kv_dtype: str = "auto"
    model_dtype: str = "bf16"
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    async_scheduling: bool = True
    prefix_caching: bool = True
    hma: bool = True
    speculative_tokens: int = 0
    extra_retained_tokens: int = 0
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    gdn_prefill_backend: str = "flashinfer"  # the prefill kernel of Gated DeltaNet layers

    @property
    def concurrent_batches(self) -> int:
        """max_concurrent_batches (config/vllm.py:587-598), on the V2 model runner."""
        return self.pp + 1 if self.async_scheduling else self.pp

    @property
    def in_flight_tokens(self) -> int:
        """max_in_flight_tokens (config/vllm.py:600-609): what window layers are sized for."""
        return self.concurrent_batches * self.max_num_batched_tokens

    def value_bytes(self, dtype: str) -> int:
        return VALUE_BYTES[self.model_dtype if dtype == "auto" else dtype]

    @property
    def conv_bytes(self) -> int:
        return self.value_bytes(self.mamba_cache_dtype)

    @property
    def ssm_bytes(self) -> int:
        dtype = self.mamba_ssm_cache_dtype
        return self.conv_bytes if dtype == "auto" else self.value_bytes(dtype)


# ------------------------------------------------------------------------- per-layer specs


@dataclass(frozen=True)
class LayerSpec:
    """One layer's KVCacheSpec on one rank: what `v1/kv_cache_interface.py` sizes. `layer` is
    its decoder layer (draft layers after the target's), `name` unique."""

    layer: int
    name: str
    layout: str  # full | sliding | chunked | mla | indexer | state
    block_size: int
    per_token: int = 0  # bytes of one token (attention kinds)
    window: Optional[int] = None
    chunk: Optional[int] = None
    state_bytes: int = 0
    padded: Optional[int] = None
    align: bool = False  # mamba_cache_mode == "align"
    speculative_blocks: int = 0
    checkpoint_blocks: int = 0
    extra_retained: int = 0
    tag: tuple = ()
    draft: bool = False  # is_draft: compare=False, it never separates specs

    @property
    def page_bytes(self) -> int:
        if self.padded is not None:
            return self.padded
        if self.layout == "state":
            return self.state_bytes
        return self.block_size * self.per_token

    def blocks_per_request(self, length: int, in_flight: int) -> int:
        """cdiv(max_memory_usage_bytes, page_size_bytes) at max_model_len = `length`."""
        bs = self.block_size
        if self.layout == "sliding":
            return cdiv(min(self.window - 1 + self.extra_retained + in_flight, length), bs) + 1
        if self.layout == "chunked":
            return cdiv(min(self.chunk + in_flight, length), bs)
        if self.layout == "state":
            if self.align:
                return 2 + self.speculative_blocks + self.checkpoint_blocks
            return 1 + self.speculative_blocks
        return cdiv(length, bs)

    def spec_key(self) -> tuple:
        return (self.layout, self.block_size, self.per_token, self.window, self.chunk,
                self.state_bytes, self.padded, self.align, self.speculative_blocks,
                self.checkpoint_blocks, self.extra_retained, self.tag)

    def type_key(self) -> tuple:
        """The registered base type (`single_type_kv_cache_manager.py:2656-2716`): full, latent
        and indexer layers are one type."""
        if self.layout in ("full", "mla", "indexer"):
            return ("full",)
        if self.layout == "sliding":
            return ("sliding", self.window)
        if self.layout == "chunked":
            return ("chunked", self.chunk)
        return ("state", self.speculative_blocks, self.checkpoint_blocks, self.page_bytes)


def token_bytes(cache: EngineCache, engine: Engine, sparse: bool) -> int:
    """Bytes one token of one layer takes on one rank (attention kinds)."""
    dtype = engine.kv_dtype
    if cache.layout == "indexer":  # fp8 keys + one fp32 scale per 128, uint8 cache
        return cache.k_dim + cache.k_dim // 128 * 4
    if cache.layout == "mla":
        if sparse and dtype.startswith("fp8"):
            dtype = "fp8_ds_mla"  # FLASHMLA_SPARSE serves quantised fp8 as fp8_ds_mla
        latent = cache.k_dim - cache.rope_dim
        if dtype == "fp8_ds_mla":  # 512 fp8 NoPE values, 4 fp32 scales, 64 bf16 RoPE = 656
            return latent + latent // 128 * 4 + 2 * cache.rope_dim
        if dtype == "nvfp4_ds_mla":
            if (latent, cache.rope_dim) != (512, 64):
                raise FlopcalcError("nvfp4_ds_mla is DeepSeek's layout for a 512-wide latent "
                                    "and 64 rotary dims; choose fp8 or auto")
            return 352
        if dtype == "nvfp4":
            raise FlopcalcError("--kv-cache-dtype nvfp4 packs softmax attention's K and V; for "
                                "latent attention vLLM has nvfp4_ds_mla")
        return cache.k_dim * engine.value_bytes(dtype)
    if dtype in ("fp8_ds_mla", "nvfp4_ds_mla"):
        raise FlopcalcError(f"--kv-cache-dtype {dtype} is a latent-attention (MLA) layout; this "
                            "model has softmax attention: choose fp8")
    if dtype == "nvfp4":  # FlashInfer: d/2 fp4 bytes + d/16 fp8 scales per head and side
        return cache.heads * sum(d // 2 + d // 16 for d in (cache.k_dim, cache.v_dim))
    return cache.heads * (cache.k_dim + cache.v_dim) * engine.value_bytes(dtype)


def state_bytes(cache: EngineCache, engine: Engine) -> int:
    """Bytes of one sequence's states of one layer on one rank."""
    total = 0
    for s in cache.states:
        size = engine.conv_bytes if s.dtype == "conv" else engine.ssm_bytes
        total += (s.values + s.per_draft * engine.speculative_tokens) * size
    return total


def _checkpoint(cache: EngineCache, engine: Engine) -> tuple[int, int]:
    """(prefill checkpoint blocks, their block multiple) of a state layer under the engine's
    prefill kernel (`mamba/abstract.py` get_mamba_prefill_checkpoint_alignment)."""
    if cache.checkpoint_kernel and cache.checkpoint_kernel != engine.gdn_prefill_backend:
        return 0, 1
    return cache.checkpoint_blocks, cache.checkpoint_alignment


def model_caches(spec: Any, tp: int) -> list[tuple[int, tuple[EngineCache, ...]]]:
    """(decoder layer index, its engine caches) of every decoder layer of a `ModelSpec`."""
    seen: dict[int, tuple[EngineCache, ...]] = {}
    out = []
    decoder = [x for x in spec.layers if x.stack == "decoder"]
    for i, layer in enumerate(decoder):
        if id(layer) not in seen:
            seen[id(layer)] = _layer_caches(layer, tp)
        out.append((i, seen[id(layer)]))
    return out


def _layer_caches(layer: Any, tp: int) -> tuple[EngineCache, ...]:
    out: list[EngineCache] = []
    for _, kind in layer.slots():
        caches = kind.engine_cache(tp)
        kept = kind.cache()
        if not caches and (kept.per_token or kept.states):
            raise FlopcalcError(f"{kind.describe()} keeps a cache but does not say how a paged "
                                "serving engine stores it (its kind needs engine_cache(): "
                                "docs/layer-kinds.md, Adding a kind of layer)")
        out += caches
    return tuple(out)


def mtp_caches(spec: Any, tp: int) -> list[tuple[int, tuple[EngineCache, ...]]]:
    """The multi-token-prediction modules' layers (DeepSeek's `num_nextn_predict_layers`), as
    vLLM's MTP drafter registers them after the target's (`models/deepseek_mtp.py`)."""
    n = spec.n_layers("decoder")
    caches = _layer_caches(spec.mtp_layer, tp)
    return [(n + j, caches) for j in range(spec.mtp_layers)]


@dataclass(frozen=True)
class Alignment:
    """What `_align_hybrid_block_size` decided: the attention block, the state page padded to
    it, and the pages it compared."""

    block_size: int
    attention_page_1: int  # one token's attention page
    state_page: int  # the largest state page, unpadded
    padded: Optional[int]  # the state page after padding (None: equal)
    align_multiple: int  # k: the block multiple


def engine_layers(caches: Sequence[tuple[int, Iterable[EngineCache]]], engine: Engine,
                  draft: Sequence[tuple[int, Iterable[EngineCache]]] = ()
                  ) -> tuple[list[LayerSpec], Optional[Alignment]]:
    """Every layer's spec on one rank, from each decoder layer's `EngineCache`s (`caches`:
    (layer index, its caches); `draft`: a drafter's layers, which join the same pool), after
    the hybrid block-size alignment when state and attention layers are both present."""
    target = [(i, tuple(cs)) for i, cs in caches]
    drafts = [(i, tuple(cs)) for i, cs in draft]
    every = [c for _, cs in target + drafts for c in cs]
    for c in every:
        if c.layout not in ATTENTION + ("state",):
            raise FlopcalcError(f"an engine cache of layout {c.layout!r}: layouts are "
                                f"{', '.join(ATTENTION)} and state")
        if any(s.dtype not in ("conv", "state") for s in c.states):
            raise FlopcalcError("an engine state's dtype class is conv or state")
    sparse = any(c.layout == "indexer" for c in every)
    attention = [c for c in every if c.layout != "state"]
    states = [c for c in every if c.layout == "state"]
    align = engine.prefix_caching and bool(states)
    block = engine.block_size
    state_block = block if align else engine.max_model_len  # models/config.py:750-787
    alignment = None
    padded = None
    if states and attention:
        first = next(c for c in attention if c.layout != "indexer")
        page_1 = token_bytes(first, engine, sparse)
        state_page = max(state_bytes(c, engine) for c in states)
        if state_page:
            k = max(KERNEL_BLOCK, block)
            if first.layout == "mla":
                k = max(k, MLA_HYBRID_BLOCK)
            if align:
                k = math.lcm(k, *(_checkpoint(c, engine)[1] for c in states))
            grown = k * cdiv(state_page, k * page_1)
            grown = KERNEL_BLOCK * cdiv(grown, KERNEL_BLOCK)
            block = max(block, grown)
            if align:
                state_block = block
            attn_page = block * page_1
            padded = None if attn_page == state_page else attn_page
            alignment = Alignment(block, page_1, state_page, padded, k)
    out: list[LayerSpec] = []
    for is_draft, layers in ((False, target), (True, drafts)):
        for i, cs in layers:
            for j, c in enumerate(cs):
                name = f"{'draft.' if is_draft else ''}layers.{i}" + (f".{j}" if j else "")
                if c.layout == "state":
                    out.append(LayerSpec(
                        i, name, "state", state_block, state_bytes=state_bytes(c, engine),
                        padded=padded, align=align,
                        speculative_blocks=engine.speculative_tokens,
                        checkpoint_blocks=_checkpoint(c, engine)[0] if align else 0,
                        draft=is_draft))
                    continue
                per_token = token_bytes(c, engine, sparse)
                out.append(LayerSpec(
                    i, name, c.layout, block, per_token, window=c.window, chunk=c.chunk,
                    extra_retained=engine.extra_retained_tokens if c.layout == "sliding" else 0,
                    tag=(c.heads, c.k_dim, c.v_dim, engine.kv_dtype), draft=is_draft))
    return out, alignment


# -------------------------------------------------------------------------------- grouping


@dataclass
class Group:
    """A KV cache group: layers sharing one block table."""

    layers: list[LayerSpec]
    uniform_type: bool = False  # a UniformTypeKVCacheSpecs (pages may differ per layer)

    @property
    def layout(self) -> str:
        return self.layers[0].layout

    @property
    def block_size(self) -> int:
        return self.layers[0].block_size

    @property
    def page_bytes(self) -> int:
        """The group spec's page (kv_cache_interface.py:1318-1320 for a uniform-type group)."""
        if self.uniform_type:
            return sum(x.page_bytes for x in self.layers)
        return self.layers[0].page_bytes

    def block_bytes(self, layers: Optional[set[str]] = None) -> int:
        """Σ of its layers' pages (of those in `layers`: a pipeline stage's)."""
        return sum(x.page_bytes for x in self.layers if layers is None or x.name in layers)

    def blocks_per_request(self, length: int, in_flight: int) -> int:
        return self.layers[0].blocks_per_request(length, in_flight)


def _promote(layers: list[LayerSpec]) -> list[LayerSpec]:
    """The hybrid manager off: window and chunked layers become full attention when full
    layers exist (kv_cache_planning.py:744-816)."""
    layouts = {x.layout for x in layers}
    if not layouts & {"full", "mla"} or not layouts & {"sliding", "chunked"}:
        return layers
    return [replace(x, layout="full", window=None, chunk=None, extra_retained=0)
            if x.layout in ("sliding", "chunked") else x for x in layers]


def _unify_pages(layers: list[LayerSpec]) -> list[LayerSpec]:
    """unify_kv_cache_spec_page_size (kv_cache_planning.py:346-408)."""
    pages = {x.page_bytes for x in layers}
    if len(pages) <= 1:
        return layers
    top = max(pages)
    out = []
    for x in layers:
        p = x.page_bytes
        if p == top:
            out.append(x)
        elif x.layout == "state":
            out.append(replace(x, padded=top))
        elif top % p == 0:
            out.append(replace(x, block_size=x.block_size * (top // p)))
        elif x.layout not in ("mla", "indexer"):
            out.append(replace(x, padded=top))
        else:
            raise FlopcalcError(f"the latent-attention page ({p:,} bytes) does not divide the "
                                f"largest page ({top:,}); vLLM cannot unify them")
    return out


def _hybrid_groups(layers: list[LayerSpec]) -> list[Group]:
    """_get_kv_cache_groups_uniform_page_size (kv_cache_planning.py:416-556)."""
    buckets: dict[tuple, list[LayerSpec]] = {}
    for x in layers:
        buckets.setdefault(x.spec_key(), []).append(x)
    sizes = [len(b) for b in buckets.values()]
    smallest, largest = min(sizes), max(sizes)
    group_size = largest if largest < smallest * 1.5 else smallest
    groups = []
    for b in buckets.values():
        n = cdiv(len(b), group_size)
        groups += [Group(b[i::n]) for i in range(n)]
    return groups


def kv_cache_groups(layers: list[LayerSpec], hma: bool = True) -> list[Group]:
    """get_kv_cache_groups (kv_cache_planning.py:1113-1200)."""
    if not hma:
        layers = _promote(layers)
    if not layers:
        return []
    if len({x.spec_key() for x in layers}) == 1:
        return [Group(list(layers))]
    if len({x.type_key() for x in layers}) == 1 and len({x.block_size for x in layers}) == 1:
        return [Group(list(layers), uniform_type=True)]
    return _hybrid_groups(_unify_pages(layers))


# -------------------------------------------------------------------------------- capacity


def pp_partition(layers: int, pp: int) -> list[int]:
    """Decoder layers per pipeline stage (`distributed/utils.py:198-238` get_pp_indices): the
    remainder goes to the stages before the last, from the second-to-last backwards."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


@dataclass
class Stage:
    """One pipeline stage's worker: its memory, its block bytes, its blocks."""

    available_bytes: int
    bytes_per_block: int
    num_blocks: int
    needed_bytes: int  # bytes_per_block × blocks of one request
    fits: bool


@dataclass
class Plan:
    """What vLLM decides at start-up."""

    groups: list[Group]
    stages: list[Stage]
    bytes_per_block: int  # the first stage's (the scheduler's config)
    num_blocks: int  # the least over stages, the null block included
    blocks_per_request: int
    max_concurrency: float
    tokens: int  # the logged "GPU KV cache size"
    fits: bool
    needed_bytes: int
    estimated_max_len: Optional[int]  # when it does not fit: vLLM's estimate
    in_flight_tokens: int
    log_line: str
    error: str = ""


def _per_request(groups: list[Group], length: int, in_flight: int) -> int:
    return sum(g.blocks_per_request(length, in_flight) for g in groups)


def _estimate_len(groups: list[Group], bpb: int, check: int, length: int,
                  in_flight: int) -> int:
    """_estimate_max_model_len_from_groups: bisection on bpb·Σ blocks(n) <= check."""
    def fits(n: int) -> bool:
        return bpb * _per_request(groups, n, in_flight) <= check

    if not fits(1):
        return 0
    lo, hi, best = 1, length, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def plan(layers: list[LayerSpec], engine: Engine, available: Sequence[int], n_layers: int,
         device: str = "GPU") -> Plan:
    """The plan for `available` bytes per worker (one per pipeline stage, or one for all) of a
    model of `n_layers` decoder layers (draft layers sit on the last stage)."""
    groups = kv_cache_groups(layers, engine.hma)
    if not groups:
        raise FlopcalcError("this model keeps no KV cache or state: nothing to page")
    pp = engine.pp
    if len(available) not in (1, pp):
        raise FlopcalcError(f"give one KV memory for every worker or one per pipeline stage "
                            f"({pp}), not {len(available)}")
    memory = [available[0]] * pp if len(available) == 1 else list(available)
    L, inflight = engine.max_model_len, engine.in_flight_tokens
    per_request = _per_request(groups, L, inflight)
    bounds, start = [], 0
    for n in pp_partition(n_layers, pp):
        bounds.append((start, start + n))
        start += n
    stages = []
    for s, (a, b) in enumerate(bounds):
        last = s == pp - 1
        names = {x.name for x in layers if (a <= x.layer < b and not x.draft)
                 or (x.draft and last)}
        bpb = max(g.block_bytes(names) for g in groups)
        avail = memory[s]
        needed = bpb * per_request
        stages.append(Stage(avail, bpb, avail // bpb if bpb else 0, needed,
                            needed <= avail - bpb))
    num_blocks = min(st.num_blocks for st in stages)
    failing = next((st for st in stages if not st.fits), None)
    error, estimate = "", None
    if failing is not None:
        check = failing.available_bytes - failing.bytes_per_block
        if check <= 0:
            error = ("No available memory for the cache blocks. Try increasing "
                     "`gpu_memory_utilization` when initializing the engine.")
            estimate = 0
        else:
            estimate = _estimate_len(groups, failing.bytes_per_block, check, L, inflight)
            hint = (f"Based on the available memory, the estimated maximum model length is "
                    f"{estimate}. " if estimate > 0 else "")
            error = (f"To serve at least one request with the model's max seq len ({L}), "
                     f"({format_gib(failing.needed_bytes)} GiB KV cache is needed, which is "
                     f"larger than the available KV cache memory ({format_gib(check)} GiB). "
                     f"{hint}Try increasing `gpu_memory_utilization` or decreasing "
                     "`max_model_len` when initializing the engine.")
    concurrency = num_blocks / per_request
    tokens = int(concurrency * L)
    line = (f"{device} KV cache size: {tokens:,} tokens, Maximum concurrency for {L:,} tokens "
            f"per request: {concurrency:.2f}x")
    return Plan(groups, stages, stages[0].bytes_per_block, num_blocks, per_request,
                concurrency, tokens, failing is None, stages[0].needed_bytes, estimate,
                inflight, line, error)


def concurrency_at(p: Plan, length: int) -> float:
    """Requests of `length` tokens the blocks hold at once (vLLM's ratio at that length)."""
    return p.num_blocks / _per_request(p.groups, length, p.in_flight_tokens)


def shared_prefix_blocks(p: Plan, prefix: int) -> list[int]:
    """Blocks of a shared prefix of `prefix` tokens that prefix caching holds once, per group:
    the prefix's whole blocks in groups that keep every token (full, latent, indexer); window,
    chunked and state groups keep per-sequence blocks at steady state."""
    return [prefix // g.block_size if g.layout in ("full", "mla", "indexer") else 0
            for g in p.groups]
