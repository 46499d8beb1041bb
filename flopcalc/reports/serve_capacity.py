"""`serve`'s capacity: how many requests vLLM 0.33.0 fits (`engines.vllm`): its engine set up
for the model, the memory left for the cache on each pipeline stage, the cache groups and
blocks, and the concurrency it logs.

The memory left for the cache is given (`--kv-memory`, the engine's logged "Available KV cache
memory", or `--kv-blocks`, its block count) or estimated: the fraction `gpu_memory_utilization`
of the device's memory, less the weights a device holds and the peak of the engine's profiling
run as the named vLLM release runs it (`engines.profiling`: its forward over
`max_num_batched_tokens` tokens, then its sampler warm-up over min(max_num_seqs, tokens) rows
of the vocabulary), an interval where the install decides the sampler's path.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional, Sequence

from ..records import dataclass
from ..counting.layers import layer_activations
from ..counting.memory import Setup
from ..engines import vllm as E
from ..errors import FlopcalcError
from ..kinds import base as p
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..predict.latency import DeviceCosts, Layout
from .common import context_warning
from .serve_speculative import Draft, check_draft_tokens
from .serve_weights import stage_bounds


# ------------------------------------------------------------------------------------ options


@dataclass(frozen=True)
class ServeLayout:
    """--tp, --pp, --dp and --ep: one replica is tp x pp devices, dp replicas."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def replica(self) -> Layout:
        """How one replica splits the model."""
        return Layout(self.tp, self.pp, self.ep)


@dataclass(frozen=True)
class EngineOptions:
    """vLLM's settings that size the cache (its own option names, less the dashes)."""

    max_model_len: Optional[int] = None  # None: the model's context
    block_size: Optional[int] = None  # None: vLLM's choice for the attention backend
    kv_dtype: str = "auto"
    gpu_memory_utilization: Fraction = Fraction(92, 100)
    max_num_batched_tokens: int = E.DEFAULT_MAX_NUM_BATCHED_TOKENS
    max_num_seqs: int = E.DEFAULT_MAX_NUM_SEQS
    async_scheduling: bool = True
    prefix_caching: bool = True
    hybrid_kv_cache_manager: bool = True
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    gdn_prefill_backend: str = "auto"
    vllm_release: Optional[str] = None  # whose profiling run (--engine vllm==X); None: 0.33


@dataclass(frozen=True)
class CacheMemory:
    """The memory for the cache as the engine had it: bytes per device of each stage
    (--kv-memory) or a block count (--kv-blocks); neither: estimated on the accelerator."""

    kv_memory: Optional[Sequence[int]] = None
    kv_blocks: Optional[int] = None


# ------------------------------------------------------------------------------------ reports


@dataclass
class CacheGroup:
    kind: str  # full, sliding, chunked, mla, indexer (with mla: a uniform-type group), state
    layers: int
    layer_indices: list[int]
    draft_layers: int
    block_size: int  # tokens per block
    page_bytes: int  # the group's page (one layer's; the sum for a uniform-type group)
    block_bytes: int  # Σ of its layers' pages: one block of the group
    blocks_per_request: int  # at max_model_len
    window: Optional[int]
    chunk: Optional[int]


@dataclass
class Hybrid:
    """The hybrid alignment: the attention block grown until its page holds a state."""

    attention_block_size: int
    attention_bytes_per_token: int
    state_bytes: int
    state_page_padded: Optional[int]
    padding_pct: float
    block_multiple: int


@dataclass
class StageMemory:
    stage: int
    layers: list[int]  # [first, last) decoder layers
    device_bytes: Optional[int]
    requested_bytes: Optional[int]  # ceil(memory x gpu_memory_utilization)
    weights_bytes: Optional[int]
    activation_bytes: Optional[int]
    available_bytes: int  # for the KV cache
    available_gib: str  # as the engine logs it
    bytes_per_block: int
    num_blocks: int
    fits: bool
    # estimated: the ends the sampler's paths give (engines.profiling), else None
    activation_low_bytes: Optional[int] = None
    activation_high_bytes: Optional[int] = None
    available_low_bytes: Optional[int] = None  # with the high activation peak
    available_high_bytes: Optional[int] = None
    non_torch_bytes: Optional[int] = None  # estimated: outside torch, as the release counts it
    # estimated, vLLM 0.33 (engines.graphs): the model runner's persistent buffers, and the
    # CUDA-graph estimate's point (inside activation_bytes; its interval inside the ends)
    buffers_bytes: Optional[int] = None
    cudagraph_bytes: Optional[int] = None


@dataclass
class MemoryBudget:
    source: str  # given (--kv-memory), blocks (--kv-blocks) or estimated
    how: list[str]
    stages: list[StageMemory]


@dataclass
class Capacity:
    engine: str
    groups: list[CacheGroup]
    hybrid: Optional[Hybrid]
    bytes_per_block: int
    num_blocks: int  # the null block included, as the engine counts them
    blocks_per_request: int
    max_concurrency: float  # num_blocks / blocks_per_request, the engine's float
    tokens: int  # the logged "GPU KV cache size": int(max_concurrency x max_model_len)
    log_line: str
    fits: bool
    error: str
    estimated_max_model_len: Optional[int]
    kv_cache_bytes: int  # num_blocks x bytes_per_block, per device
    bytes_per_token: int  # every layer's cache per token on one device (attention layers)
    state_bytes_per_sequence: int  # every recurrent layer's states on one device
    scheduled_sequences: int  # min(floor(max_concurrency), max_num_seqs)
    request_tokens: Optional[int]  # --prompt + --gen
    concurrency_at_request: Optional[float]
    memory: MemoryBudget


# ----------------------------------------------------------------------------- the engine


def check_layout(spec: ModelSpec, tp: int, pp: int, ep: int) -> None:
    """A layout vLLM starts with: whole heads on each device, a layer on each stage, the routed
    experts split evenly (a one-line error naming the fix otherwise)."""
    kinds = [k for g in spec.groups("decoder") for _, k in g.layer.slots()]
    units = sorted({u for k in kinds if (u := k.tp_units()) and u % tp})
    if units:
        raise FlopcalcError(f"--tp {tp} must divide the {units[0]} heads of every layer "
                            "(each device holds whole heads)")
    for k in kinds:
        h = getattr(k, "kv_heads", None)
        if h and h % tp and tp % h and k.engine_cache(1) and \
                k.engine_cache(1)[0].layout in ("full", "sliding", "chunked"):
            raise FlopcalcError(f"--tp {tp}: the {h} KV heads must divide it or be divided by it "
                                "(vLLM splits or replicates whole heads)")
    layers = spec.n_layers("decoder")
    if pp > layers:
        raise FlopcalcError(f"--pp {pp} is more than the {layers} layers; a stage needs a layer")
    experts = {k.ep_units() for k in kinds if k.ep_units()}
    if ep > 1 and not experts:
        raise FlopcalcError("--ep applies to mixtures of experts; this model is dense")
    if any(e % ep for e in experts):
        raise FlopcalcError(f"--ep {ep} must divide the {min(experts)} routed experts")


def forward_peak(spec: ModelSpec, tokens: int, tp: int) -> int:
    """An upper estimate of the profiling forward's activation peak on one device: the largest
    layer's tensors for `tokens` tokens (what a training step keeps for one layer with
    FlashAttention, `counting.memory`: more than one inference layer has live at once)."""
    setup = Setup(seq=tokens, batch=1, tp=tp, flash=True)
    layer = max((p.total(layer_activations(g.layer, spec.d_model, setup))
                 for g in spec.groups("decoder")), default=0)
    return p.ceil_fraction(Fraction(layer))


NEMOTRON_H = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")
QWEN3_5 = ("Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
           "Qwen3_5MoeForConditionalGeneration")
TORCH_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def config_ssm_dtype(raw: dict[str, Any]) -> Optional[str]:
    """The SSM-state dtype vLLM takes from a Hugging Face config when --mamba-ssm-cache-dtype is
    auto (`model_executor/models/config.py`): NemotronH's `mamba_ssm_cache_dtype`, float32 when
    absent (812-839); the Qwen3.5 family's `mamba_ssm_dtype` (953-980); else None (the conv
    dtype)."""
    arch = raw.get("architectures") or []
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    if any(a in NEMOTRON_H for a in arch):
        return TORCH_NAMES.get(str(raw.get("mamba_ssm_cache_dtype", "float32")))
    if any(a in QWEN3_5 for a in arch):
        return TORCH_NAMES.get(str(text.get("mamba_ssm_dtype")))
    return None


def resolve_gdn(backend: str, hw: Optional[Hardware]) -> str:
    """vLLM's `auto` GDN prefill kernel: FlashInfer on NVIDIA Hopper and Blackwell (SM90,
    SM100/SM120 with CUDA 13), Triton elsewhere."""
    if backend != "auto":
        return backend
    from ..models.accelerators import HOPPER_UP

    if hw is None:
        return "flashinfer"
    return "flashinfer" if hw.architecture in HOPPER_UP else "triton"


def context_length(loaded: LoadedModel, given: Optional[int]) -> tuple[int, str, list[str]]:
    """max_model_len, where it came from, and a warning when it passes the model's context."""
    spec = loaded.spec
    if given is None:
        if spec.max_seq_len is None:
            raise FlopcalcError(f"{loaded.name} states no context length: give --max-model-len L")
        return spec.max_seq_len, "the model's context (max_seq_len)", []
    return given, "--max-model-len", context_warning(loaded.name, "--max-model-len", given,
                                                     spec.max_seq_len)


@dataclass
class EngineSetup:
    """The engine as it starts for the model: its settings, the layers' cache specs (a
    drafter's included) and the hybrid alignment of attention blocks to state pages."""

    engine: E.Engine
    layers: list[E.LayerSpec]
    alignment: Optional[Any]
    block_size: int  # as given, or vLLM's choice


def engine_setup(loaded: LoadedModel, opts: EngineOptions, layout: ServeLayout,
                 draft: Optional[Draft], max_model_len: int,
                 hw: Optional[Hardware]) -> EngineSetup:
    """vLLM's engine for the model: its block size (64 where FlashMLA-sparse serves), the
    tokens a drafter adds, and every layer's cache spec with a drafter's."""
    spec, tp, o = loaded.spec, layout.tp, opts
    caches = E.model_caches(spec, tp)
    sparse = any(c.layout == "indexer" for _, cs in caches for c in cs)
    latent = any(c.layout == "mla" for _, cs in caches for c in cs)
    # fp8_ds_mla is FlashMLA-sparse's layout, the one backend that lists it
    # (v1/attention/backends/mla/flashmla_sparse.py: supported_kv_cache_dtypes; dense FlashMLA
    # takes auto/fp8/fp8_e4m3 alone), and its kernel pages hold 64 tokens
    # (get_supported_kernel_block_sizes: [64])
    ds_layout = latent and o.kv_dtype == "fp8_ds_mla"
    block_size = o.block_size
    if block_size is None:  # FlashMLA-sparse + the indexer need MultipleOf(64): vLLM on Hopper
        block_size = 64 if sparse or ds_layout else E.DEFAULT_BLOCK_SIZE
    elif ds_layout and block_size % 64:
        raise FlopcalcError(f"--kv-cache-dtype fp8_ds_mla runs on FlashMLA-sparse alone, whose "
                            f"pages hold 64 tokens: --block-size {block_size} is refused; give "
                            "64 or leave it out")
    k = draft.tokens if draft is not None else 0
    if draft is not None:
        check_draft_tokens(k, max_model_len, o.max_num_batched_tokens)
    mtp = draft is not None and draft.method == "mtp"
    if mtp and not spec.mtp_layers:
        raise FlopcalcError(f"{loaded.name} has no multi-token-prediction modules (mtp_layers): "
                            "give --draft MODEL for a draft model")
    engine = E.Engine(
        max_model_len=max_model_len, tp=tp, pp=layout.pp, block_size=block_size,
        kv_dtype=o.kv_dtype, max_num_batched_tokens=o.max_num_batched_tokens,
        async_scheduling=o.async_scheduling, prefix_caching=o.prefix_caching,
        hma=o.hybrid_kv_cache_manager, speculative_tokens=k,
        # multi-module MTP reads k tokens ahead (config/vllm.py:655-680)
        extra_retained_tokens=max(0, k - 1) if mtp and spec.mtp_layers > 1 else 0,
        mamba_cache_dtype=o.mamba_cache_dtype, mamba_ssm_cache_dtype=o.mamba_ssm_cache_dtype,
        gdn_prefill_backend=resolve_gdn(o.gdn_prefill_backend, hw))
    drafts: list = []
    if mtp:
        drafts = E.mtp_caches(spec, tp)
    elif draft is not None and draft.spec is not None:
        if draft.spec.architecture != "decoder-only":  # a drafter proposes the next tokens
            raise FlopcalcError(f"serve --draft needs a decoder-only draft model; {draft.name} "
                                f"is {draft.spec.architecture}: give a small model of the "
                                "target's family (or --draft mtp)")
        drafts = [(i, c) for i, c in E.model_caches(draft.spec, tp)]
    layers, alignment = E.engine_layers(caches, engine, drafts)
    return EngineSetup(engine, layers, alignment, block_size)


def served_dtype(layers: list[E.LayerSpec], kv_dtype: str) -> str:
    if kv_dtype.startswith("fp8") and any(x.layout == "indexer" for x in layers) and \
            kv_dtype != "fp8_ds_mla":
        return "fp8_ds_mla"
    return kv_dtype


# ------------------------------------------------------------------- memory, blocks, requests


@dataclass
class Available:
    """The memory for the cache before the engine plans its blocks: bytes per stage, where
    they came from and how, and each stage's (device, requested, weights, activation) bytes
    when estimated."""

    bytes: list[int]
    source: str
    how: list[str]
    stages: list[tuple[Optional[int], Optional[int], Optional[int], Optional[int]]]
    # estimated: each stage's (activation low, activation high) over the sampler's paths
    bounds: Optional[list[tuple[int, int]]] = None
    non_torch: Optional[list[int]] = None  # estimated: each stage's non-torch memory
    buffers: Optional[int] = None  # estimated, 0.33: the persistent buffers on each device
    cudagraphs: Optional[int] = None  # estimated, 0.33: the CUDA-graph point, in the peak


def available_memory(spec: ModelSpec, opts: EngineOptions, memory: CacheMemory,
                     hw: Optional[Hardware], setup: EngineSetup, stage_w: list[Fraction],
                     weights_source: str) -> Available:
    """Given (--kv-memory), counted from --kv-blocks, or estimated on the accelerator: its
    memory x gpu_memory_utilization less each stage's weights and the profiling run's peak
    (the last stage samples; `engines.profiling`), with the ends of its interval."""
    from ..engines.overheads import cublas_workspace, device_total, non_torch
    from ..engines.graphs import counts_graphs, graph_estimate, persistent_buffers
    from ..engines.profiling import NOT_COUNTED, profile_peak, run

    pp, n_layers = setup.engine.pp, spec.n_layers("decoder")
    tokens = opts.max_num_batched_tokens
    unknown: list[tuple[Optional[int], Optional[int], Optional[int], Optional[int]]] = \
        [(None, None, None, None)] * pp
    if memory.kv_memory is not None and memory.kv_blocks is not None:
        raise FlopcalcError("give --kv-memory BYTES or --kv-blocks N, not both")
    if memory.kv_memory is not None:
        return Available(list(memory.kv_memory), "given", [
            "--kv-memory: the bytes per device the engine had for the cache (its log's "
            "'Available KV cache memory', or --kv-cache-memory-bytes)"], unknown)
    if memory.kv_blocks is not None:
        blocks = memory.kv_blocks
        probe = E.plan(setup.layers, setup.engine, [1 << 62], n_layers)
        return Available([blocks * st.bytes_per_block for st in probe.stages], "blocks", [
            f"--kv-blocks {blocks:,}: the engine's block count (num_gpu_blocks), each "
            "worker's memory taken as that many blocks"], unknown)
    if hw is None or hw.memory_bytes is None:
        raise FlopcalcError("serve needs the memory left for the cache: give --accelerator "
                            "NAME (estimated), --kv-memory BYTES or --kv-blocks N")
    utilization = opts.gpu_memory_utilization
    total, total_source = device_total(hw.name, hw.memory_bytes, hw.usable_memory_bytes)
    requested = math.ceil(total * utilization)
    forward = forward_peak(spec, tokens, setup.engine.tp)
    peak = profile_peak(opts.vllm_release, forward, tokens, opts.max_num_seqs,
                        spec.vocab_size, spec.d_model,
                        E.VALUE_BYTES.get(setup.engine.model_dtype, 2))
    # every stage runs matmuls: PyTorch's cuBLAS workspace is in each one's torch peak
    workspace = cublas_workspace(hw.architecture)
    outside = non_torch(opts.vllm_release, setup.engine.tp, hw.name)
    # 0.33 also takes the model runner's persistent buffers (in its mem_get_info total) and
    # the CUDA-graph estimate (engines.graphs): the buffers with the non-torch memory, the
    # graphs with the activation peak, as its "Actual usage" line groups them
    buffers = graphs = None
    if counts_graphs(opts.vllm_release):
        buffers = persistent_buffers(
            tokens, opts.max_num_seqs, setup.engine.max_model_len,
            getattr(spec, "embed_dim", None) or spec.d_model,  # get_inputs_embeds_size
            E.VALUE_BYTES.get(setup.engine.model_dtype, 2), opts.block_size)
        graphs = graph_estimate(opts.max_num_seqs, tokens,
                                hw.architecture == "blackwell" and "rtx" not in hw.name)
    extra = buffers.bytes if buffers else 0
    g_point, g_floor, g_high = (graphs.point, graphs.floor, graphs.high) if graphs else (0,) * 3
    available, stages, bounds = [], [], []
    for s, w in enumerate(stage_w):
        wb = p.ceil_fraction(w)
        # only the last pipeline stage samples (profile_run: get_pp_group().is_last_rank)
        act, low, high = (peak.point, peak.low, peak.high) if s == len(stage_w) - 1 else \
            (max(forward, peak.hidden),) * 3
        # the graph interval widens the peak's: low activation with the floor, high with the top
        act, low, high = (act + workspace + g_point, low + workspace + g_floor,
                          high + workspace + g_high)
        available.append(requested - wb - act - outside.bytes - extra)
        stages.append((total, requested, wb, act))
        bounds.append((low, high))
    release = run(opts.vllm_release).version
    how = [f"estimated: ceil({total:,} x {float(utilization):g}) = "
           f"{requested:,} bytes (the device's memory x gpu_memory_utilization), less the "
           f"weights one device holds, the peak of vLLM {release}'s profiling run and the "
           "memory outside torch it counts"
           + (", the model runner's persistent buffers and the CUDA-graph estimate"
              if graphs else "")
           + ("" if release != "0.33" or opts.vllm_release else
              " (the current release; --engine vllm==X for another)"),
           *([f"device total {total:,} bytes: {total_source} (the preset's "
              f"{hw.memory_bytes:,} is nvidia-smi's)"] if total_source else []),
           f"forward {forward:,} bytes: the largest layer's tensors for {tokens:,} tokens "
           "(max_num_batched_tokens; training's FlashAttention tensors, more than inference "
           "keeps at once)", *peak.how,
           f"+ PyTorch's cuBLAS workspace {workspace:,} bytes in the torch peak "
           "(aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize: 32 MiB on "
           "Hopper, 4096 KiB x 2 + 16 KiB x 8 elsewhere; taken on the profiling run's first "
           "matmul)", *outside.how,
           *([buffers.how, graphs.how] if buffers and graphs else [])]
    if peak.low != peak.high:
        how.append(f"the point takes the first sampler path ({peak.point + workspace:,} "
                   f"bytes); the install decides: activation peak {peak.low + workspace:,}-"
                   f"{peak.high + workspace:,} bytes, available low/high beside the point")
    how.append(NOT_COUNTED)
    if any(a <= 0 for a in available):
        raise FlopcalcError(
            f"the weights ({max(p.ceil_fraction(w) for w in stage_w):,} bytes per device) and "
            f"activations leave no memory for the cache on {hw.name} at gpu_memory_utilization "
            f"{float(utilization):g}: add devices (--tp, --pp), quantise "
            "(--weights-dtype) or raise --gpu-memory-utilization; weights: "
            f"{weights_source}")
    return Available(available, "estimated", how, stages, bounds,
                     [outside.bytes] * len(stage_w), buffers.bytes if buffers else None,
                     g_point if graphs else None)


def build_capacity(spec: ModelSpec, plan: E.Plan, setup: EngineSetup, available: Available,
                   costs: DeviceCosts, max_model_len: int, max_num_seqs: int,
                   request: Optional[int]) -> Capacity:
    """The engine's plan as the report shows it: cache groups, the hybrid alignment, each
    stage's memory and blocks, and the concurrency at max_model_len and at the request."""
    groups = [CacheGroup(
        kind=g.layout if not g.uniform_type else "+".join(dict.fromkeys(x.layout for x in g.layers)),
        layers=len(g.layers), layer_indices=[x.layer for x in g.layers],
        draft_layers=sum(x.draft for x in g.layers), block_size=g.block_size,
        page_bytes=g.page_bytes, block_bytes=g.block_bytes(),
        blocks_per_request=g.blocks_per_request(max_model_len, plan.in_flight_tokens),
        window=g.layers[0].window, chunk=g.layers[0].chunk) for g in plan.groups]
    hybrid = None
    a = setup.alignment
    if a is not None:
        hybrid = Hybrid(a.block_size, a.attention_page_1, a.state_page, a.padded,
                        100 * ((a.padded or a.state_page) - a.state_page) / a.state_page,
                        a.align_multiple)
    bounds = stage_bounds(spec, setup.engine.pp)
    stages = []
    for s, st in enumerate(plan.stages):
        dev, req, wb, ab = available.stages[s]
        ends: tuple = (None,) * 4
        nt = available.non_torch[s] if available.non_torch is not None else None
        if available.bounds is not None and req is not None and wb is not None:
            low, high = available.bounds[s]
            less = (nt or 0) + (available.buffers or 0)
            ends = (low, high, req - wb - high - less, req - wb - low - less)
        stages.append(StageMemory(s, list(bounds[s]), dev, req, wb, ab, st.available_bytes,
                                  E.format_gib(st.available_bytes), st.bytes_per_block,
                                  st.num_blocks, st.fits, *ends, nt, available.buffers,
                                  available.cudagraphs))
    capacity = Capacity(
        engine=f"vLLM {E.VLLM_VERSION}", groups=groups, hybrid=hybrid,
        bytes_per_block=plan.bytes_per_block, num_blocks=plan.num_blocks,
        blocks_per_request=plan.blocks_per_request, max_concurrency=plan.max_concurrency,
        tokens=plan.tokens, log_line=plan.log_line, fits=plan.fits, error=plan.error,
        estimated_max_model_len=plan.estimated_max_len,
        kv_cache_bytes=plan.num_blocks * plan.bytes_per_block,
        bytes_per_token=costs.token_bytes, state_bytes_per_sequence=costs.state_bytes,
        scheduled_sequences=min(int(plan.max_concurrency), max_num_seqs),
        request_tokens=request,
        concurrency_at_request=E.concurrency_at(plan, request) if request else None,
        memory=MemoryBudget(available.source, available.how, stages))
    if request is not None and request > max_model_len:
        raise FlopcalcError(f"--prompt + --gen = {request:,} is more than --max-model-len "
                            f"{max_model_len:,}: the engine refuses such a request")
    return capacity


def conventions(engine: E.Engine, plan: E.Plan, kinds: set[str]) -> list[str]:
    """How vLLM's capacity is computed, one line each."""
    blocks = ["full and latent layers cdiv(L, bs)"]
    if kinds & {"sliding", "chunked"}:
        blocks.append(f"sliding windows cdiv(min(w − 1 + T, L), bs) + 1, chunked "
                      f"cdiv(min(c + T, L), bs), T = {plan.in_flight_tokens:,} tokens in flight "
                      f"({engine.concurrent_batches} steps of max_num_batched_tokens"
                      + (", async scheduling" if engine.async_scheduling else "") + ")")
    if "state" in kinds:
        blocks.append("recurrent layers " + (
            "2 state blocks per request and group in align mode, + the kernel's prefill "
            "checkpoint (Mamba-2: 1)" if engine.prefix_caching else "1 state block per request "
            "and group") + ", + 1 per speculative token; the attention block grows until its "
            "page holds a state page, which is padded to it")
    return [
        f"capacity as vLLM {E.VLLM_VERSION} computes it at start-up (v1/core/kv_cache_utils.py, "
        "kv_cache_planning.py): per-layer cache specs on one tensor-parallel rank, cache "
        "groups, bytes per block = the largest group's pages, num_blocks = available // bytes "
        "per block (the least over pipeline stages), max concurrency = num_blocks / Σ groups' "
        "blocks per request at max_model_len, 'GPU KV cache size' = int(concurrency x L)",
        "blocks per request: " + "; ".join(blocks),
        "tensor parallelism: KV heads split over --tp, one replicated per device when there are "
        "fewer; a latent (MLA) cache is never split; Mamba heads and conv channels split",
        f"--kv-cache-dtype {engine.kv_dtype} (auto = the model dtype, {engine.model_dtype}); fp8 "
        "caches keep per-tensor scales outside the pages; DeepSeek's sparse MLA serves fp8 as "
        "fp8_ds_mla (656 bytes per token); nvfp4 K/V are ½ byte per value + an fp8 scale per 16",
    ]
