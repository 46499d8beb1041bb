"""The `serve` report: how many requests a serving engine fits, as vLLM 0.33.0 computes it (its
paged KV-cache blocks and cache groups, `engines.vllm`), what prefix caching and speculative
decoding change, and, on an accelerator, the time a user sees (`predict.latency`).

The memory left for the cache is given (`--kv-memory`, the engine's logged "Available KV cache
memory", or `--kv-blocks`, its block count) or estimated: the fraction `gpu_memory_utilization`
of the device's memory, less the weights a device holds and an estimate of the activation peak
of the engine's profiling forward over `max_num_batched_tokens` tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence

from ..engines import vllm as E
from .serve_sglang import SglangCapacity
from ..predict.latency import Collective, DeviceCosts, Layout, Network, Speeds, Step, share
from ..counting.layers import layer_activations, layer_decode
from ..counting.memory import Setup
from ..counting.model import decode_flops, model_flops, model_params, workload
from ..counting.storage import StorageRow, resolve_plan, storage_rows, stored, summary, total
from ..models.quantization import Plan, plan_from_flags
from ..predict.roofline import decode_time
from ..counting.inference import affine_segments
from ..errors import FlopcalcError
from ..kinds import base as p
from ..kinds.base import EXPERT, FIRST, LAST, SPREAD
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from .common import SCHEMA_VERSION, ModelInfo, Report, context_warning, model_info
from .infer import AcceleratorInfo, accelerator_info, check_decoder_only
from .serve_load import Disaggregated, Pareto, Performance

# Matmuls of real shapes reach 80-90 % of the best shape's (MAMF) rate: stas00/ml-engineering
# compute/accelerator/benchmarks/README.md; the estimate takes the middle.
SHAPE_FACTOR = Fraction(85, 100)
MAX_CHUNKS = 100_000  # prefill steps timed one by one


@dataclass
class ServeSettings:
    engine: str  # "vLLM 0.33.0"
    max_model_len: int
    max_model_len_source: str
    devices: int  # tp x pp x dp
    tp: int
    pp: int
    dp: int
    ep: int
    block_size: int  # --block-size (before hybrid alignment)
    kv_dtype: str
    kv_dtype_served: str  # after the engine's canonicalisation (fp8 → fp8_ds_mla on sparse MLA)
    model_dtype: str
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    async_scheduling: bool
    prefix_caching: bool
    mamba_cache_mode: Optional[str]  # align / none (models with recurrent layers)
    hybrid_kv_cache_manager: bool
    mamba_cache_dtype: str
    mamba_ssm_cache_dtype: str
    gdn_prefill_backend: str
    weights_dtype: str
    experts_dtype: str
    in_flight_tokens: int  # what window layers are sized for
    attention: str = "causal"  # how the prefill's attention is counted (--attention)


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


@dataclass
class Weights:
    params: int
    dtype: str
    experts_dtype: str
    bytes: int  # the whole model, scales included
    device_bytes: list[int]  # what one device of each pipeline stage holds
    source: str = ""  # where the formats came from: a flag, config.json, a preset
    storage: list[StorageRow] = field(default_factory=list)  # per module: format and bytes
    from_checkpoint: bool = False  # the checkpoint's formats (no flag said)


@dataclass
class PrefixSharing:
    tokens: int
    cached_tokens: int  # the prefix's whole blocks: what a request skips computing
    shared_blocks: list[int]  # per group
    shared_blocks_total: int
    blocks_per_request: int  # a request's own blocks once the prefix is shared
    max_concurrency: float  # (num_blocks − shared) / own blocks
    tokens_capacity: int  # int(max_concurrency x max_model_len)
    prefill_flops_saved: int  # per request: the prefix's prefill
    prefill_flops: Optional[int]  # per request, with --prompt: what is left to compute


@dataclass
class StepTime:
    flops: int  # per device
    bytes: int  # per device, from memory
    comm_bytes: int  # per device, sent in collectives
    collectives: int
    bound_s: float
    estimate_s: float
    binds: str


@dataclass
class Speculation:
    method: str  # mtp or draft
    draft: str  # the draft model, or the MTP modules
    draft_tokens: int
    acceptance: float
    expected_tokens_per_step: float  # (1 − a^(k+1)) / (1 − a)
    draft_layers: int  # layers the draft adds to the cache
    draft_bytes_per_token: int  # their cache per token on a device
    verify_flops: int  # the target over k + 1 tokens per sequence (whole model)
    draft_flops: int  # k draft steps (whole draft)
    verify_bytes: int  # what one device reads and writes in the verify step
    draft_bytes: int  # ... in the k draft steps
    verify: Optional[StepTime]
    draft_step: Optional[StepTime]
    step_bound_s: Optional[float]  # verify + k draft steps
    step_estimate_s: Optional[float]
    tpot_bound_s: Optional[float]  # per token: step / expected tokens
    tpot_estimate_s: Optional[float]
    speedup_bound: Optional[float]  # plain decode step / speculative time per token, bounds
    speedup_estimate: Optional[float]
    speedup_ceiling: float  # expected tokens per step: a free draft, verification at decode cost


@dataclass
class Timing:
    prompt: int
    gen: int
    batch: int  # sequences decoding together on one replica
    computed_prompt_tokens: int  # prompt − shared prefix
    prefill_chunks: int
    network: dict[str, Any]
    speeds: dict[str, Any]
    ttft_bound_s: float
    ttft_estimate_s: float
    prefill_flops: int  # whole model, the computed prompt tokens
    first_step: StepTime
    last_step: StepTime
    tpot_bound_s: float  # mean over the generated tokens
    tpot_estimate_s: float
    tokens_per_s_per_sequence_bound: float
    tokens_per_s_per_sequence_estimate: float
    tokens_per_s_aggregate_bound: float  # batch x dp replicas
    tokens_per_s_aggregate_estimate: float
    request_bound_s: float  # ttft + gen x tpot
    request_estimate_s: float


@dataclass
class ServeReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: ServeSettings
    conventions: list[str]
    capacity: Capacity
    weights: Weights
    prefix: Optional[PrefixSharing]
    speculative: Optional[Speculation]
    accelerator: Optional[AcceleratorInfo]
    timing: Optional[Timing]
    warnings: list[str] = field(default_factory=list)
    performance: Optional[Performance] = None  # under load (reports.serve_load)
    disaggregated: Optional[Disaggregated] = None
    pareto: Optional[Pareto] = None
    sglang: Optional[SglangCapacity] = None  # --engine sglang: its token pool


# ----------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Draft:
    """A speculative drafter: the model's own MTP modules, or another model."""

    method: str  # mtp | draft
    name: str
    spec: Optional[ModelSpec]  # a draft model
    tokens: int
    acceptance: Fraction
    storage: Optional[Plan] = None  # how a draft model's weights are stored (None: bf16)


def _draft_storage(draft: Draft) -> Plan:
    return draft.storage or plan_from_flags("bf16", None)


def check_layout(spec: ModelSpec, tp: int, pp: int, ep: int) -> None:
    kinds = [k for g in spec.groups("decoder") for _, k in g.layer.slots()]
    units = sorted({u for k in kinds if (u := k.tp_units()) and u % tp})
    if units:
        raise FlopcalcError(f"--tp {tp} must divide the {units[0]} heads of every layer "
                            "(each device holds whole heads)")
    for k in kinds:
        h = getattr(k, "kv_heads", None)
        if h and h % tp and tp % h and k.engine_cache(1) and \
                k.engine_cache(1)[0].kind in ("full", "sliding", "chunked"):
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


def stage_bounds(spec: ModelSpec, pp: int) -> list[tuple[int, int]]:
    out, start = [], 0
    for n in E.pp_partition(spec.n_layers("decoder"), pp):
        out.append((start, start + n))
        start += n
    return out


def stage_weights(spec: ModelSpec, layout: Layout, plan: Plan,
                  extra_last: Fraction = Fraction(0)) -> list[Fraction]:
    """Weight bytes one device of each pipeline stage holds: its layers (each tensor's
    tensor-/expert-parallel share), the embeddings on the first stage, the final norm and head
    on the last (and `extra_last`: a drafter's)."""
    entries = stored(spec, plan)
    per_layer: dict[int, Fraction] = {}
    outside: list[tuple[p.Part, Fraction]] = []
    layers = spec.n_layers("decoder")
    tied = any(s.part.tied for s in entries)
    for s in entries:
        b = s.bytes * share(s.part, layout)
        if s.layer is not None:
            per_layer[s.layer] = per_layer.get(s.layer, Fraction(0)) + b
        elif s.part.stage == SPREAD:  # towers, other stacks: spread with the layers
            per_layer[-1] = per_layer.get(-1, Fraction(0)) + b
        else:
            outside.append((s.part, b))
    spread = sum(per_layer.values(), Fraction(0))
    bounds = stage_bounds(spec, layout.pp)
    out = []
    for st, (a, b_) in enumerate(bounds):
        if tied or -1 in per_layer:  # tensors shared between layers: in proportion
            w = spread * Fraction(b_ - a, layers)
        else:
            w = sum((per_layer.get(i, Fraction(0)) for i in range(a, b_)), Fraction(0))
        for q, qb in outside:
            if (q.stage == FIRST and st == 0) or (q.stage == LAST and st == layout.pp - 1):
                w += qb
        if st == layout.pp - 1:
            w += extra_last
        out.append(w)
    return out


def activation_peak(spec: ModelSpec, tokens: int, tp: int, max_num_seqs: int) -> int:
    """An estimate of the profiling forward's activation peak on one device: the largest
    layer's tensors for `tokens` tokens (what a training step keeps for one layer with
    FlashAttention, `counting.memory`: more than one inference layer has live at once), and
    the fp32 logits of min(max_num_seqs, tokens) sequences with their probabilities."""
    setup = Setup(seq=tokens, batch=1, tp=tp, flash=True)
    layer = max((p.total(layer_activations(g.layer, spec.d_model, setup))
                 for g in spec.groups("decoder")), default=0)
    logits = 2 * min(max_num_seqs, tokens) * spec.vocab_size * 4
    return p.ceil_fraction(Fraction(layer)) + logits


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
    if hw is None:
        return "flashinfer"
    name = hw.name.lower()
    return "flashinfer" if name.startswith(("h100", "h200", "b200", "b300", "gb")) \
        else "triton"


# --------------------------------------------------------------------------------- building


def build_serve_report(loaded: LoadedModel, *, hw: Optional[Hardware], max_model_len: Optional[int],
                       tp: int, pp: int, dp: int, ep: int, gpu_memory_utilization: Fraction,
                       block_size: Optional[int], kv_dtype: str, max_num_batched_tokens: int,
                       max_num_seqs: int, async_scheduling: bool, prefix_caching: bool,
                       hybrid_kv_cache_manager: bool, mamba_cache_dtype: str,
                       mamba_ssm_cache_dtype: str, gdn_prefill_backend: str,
                       kv_memory: Optional[Sequence[int]], kv_blocks: Optional[int],
                       weights_dtype: Optional[str], experts_dtype: Optional[str],
                       shared_prefix: Optional[int], draft: Optional[Draft],
                       prompt: Optional[int], gen: int, batch: int, network: Network,
                       compute_efficiency: Optional[Fraction] = None,
                       memory_efficiency: Optional[Fraction] = None,
                       efficiency_source: str = "", attention: str = "causal",
                       load: Optional[Any] = None, pareto: bool = False) -> ServeReport:
    spec = loaded.spec
    check_decoder_only(loaded, "serve")
    check_layout(spec, tp, pp, ep)
    warnings: list[str] = []
    if max_model_len is None:
        if spec.max_seq_len is None:
            raise FlopcalcError(f"{loaded.name} states no context length: give --max-model-len L")
        max_model_len, len_source = spec.max_seq_len, "the model's context (max_seq_len)"
    else:
        len_source = "--max-model-len"
        warnings += context_warning(loaded.name, "--max-model-len", max_model_len,
                                    spec.max_seq_len)
    storage = resolve_plan(loaded, weights_dtype, experts_dtype)
    layout = Layout(tp, pp, ep)
    caches = E.model_caches(spec, tp)
    sparse = any(c.kind == "indexer" for _, cs in caches for c in cs)
    latent = any(c.kind == "mla" for _, cs in caches for c in cs)
    # fp8_ds_mla is FlashMLA-sparse's layout, the one backend that lists it
    # (v1/attention/backends/mla/flashmla_sparse.py: supported_kv_cache_dtypes; dense FlashMLA
    # takes auto/fp8/fp8_e4m3 alone), and its kernel pages hold 64 tokens
    # (get_supported_kernel_block_sizes: [64])
    ds_layout = latent and kv_dtype == "fp8_ds_mla"
    if block_size is None:  # FlashMLA-sparse + the indexer need MultipleOf(64): vLLM on Hopper
        block_size = 64 if sparse or ds_layout else E.DEFAULT_BLOCK_SIZE
    elif ds_layout and block_size % 64:
        raise FlopcalcError(f"--kv-dtype fp8_ds_mla runs on FlashMLA-sparse alone, whose pages "
                            f"hold 64 tokens: --block-size {block_size} is refused; give 64 or "
                            "leave it out")
    k = draft.tokens if draft is not None else 0
    if draft is not None:
        check_draft_tokens(k, max_model_len, max_num_batched_tokens)
    mtp = draft is not None and draft.method == "mtp"
    if mtp and not spec.mtp_layers:
        raise FlopcalcError(f"{loaded.name} has no multi-token-prediction modules (mtp_layers): "
                            "give --draft MODEL for a draft model")
    engine = E.Engine(
        max_model_len=max_model_len, tp=tp, pp=pp, block_size=block_size, kv_dtype=kv_dtype,
        max_num_batched_tokens=max_num_batched_tokens, async_scheduling=async_scheduling,
        prefix_caching=prefix_caching, hma=hybrid_kv_cache_manager, speculative_tokens=k,
        # multi-module MTP reads k tokens ahead (config/vllm.py:655-680)
        extra_retained_tokens=max(0, k - 1) if mtp and spec.mtp_layers > 1 else 0,
        mamba_cache_dtype=mamba_cache_dtype, mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
        gdn_prefill_backend=resolve_gdn(gdn_prefill_backend, hw))
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
    n_layers = spec.n_layers("decoder")

    # weights per device per stage (a drafter's on the last stage)
    extra = Fraction(0)
    if mtp:
        extra = sum((s.bytes * share(s.part, layout) for s in stored(spec, storage, mtp=True)),
                    Fraction(0))
    elif draft is not None and draft.spec is not None:
        extra = DeviceCosts(draft.spec, Layout(tp), engine,
                            _draft_storage(draft)).held_weight_bytes()
    stage_w = stage_weights(spec, layout, storage, extra)
    all_params = p.total(model_params(spec))
    entries = stored(spec, storage)
    weights_name, experts = summary(entries)
    weights = Weights(all_params, weights_name, experts, p.ceil_fraction(total(entries)),
                      [p.ceil_fraction(w) for w in stage_w], storage.source,
                      storage_rows(entries, storage), storage.flags is None)

    # memory for the cache
    bounds = stage_bounds(spec, pp)
    act = activation_peak(spec, max_num_batched_tokens, tp, max_num_seqs)
    stage_info: list[tuple[Optional[int], Optional[int], Optional[int], Optional[int]]] = []
    if kv_memory is not None and kv_blocks is not None:
        raise FlopcalcError("give --kv-memory BYTES or --kv-blocks N, not both")
    if kv_memory is not None:
        available = list(kv_memory)
        source = "given"
        how = ["--kv-memory: the bytes per device the engine had for the cache (its log's "
               "'Available KV cache memory', or --kv-cache-memory-bytes)"]
        stage_info = [(None, None, None, None)] * pp
    elif kv_blocks is not None:
        probe = E.plan(layers, engine, [1 << 62], n_layers)
        available = [kv_blocks * st.bytes_per_block for st in probe.stages]
        source = "blocks"
        how = [f"--kv-blocks {kv_blocks:,}: the engine's block count (num_gpu_blocks), each "
               "worker's memory taken as that many blocks"]
        stage_info = [(None, None, None, None)] * pp
    else:
        if hw is None or hw.memory_bytes is None:
            raise FlopcalcError("serve needs the memory left for the cache: give --accelerator "
                                "NAME (estimated), --kv-memory BYTES or --kv-blocks N")
        requested = math.ceil(hw.memory_bytes * gpu_memory_utilization)
        available, stage_info = [], []
        for w in stage_w:
            wb = p.ceil_fraction(w)
            available.append(requested - wb - act)
            stage_info.append((hw.memory_bytes, requested, wb, act))
        source = "estimated"
        how = [f"estimated: ceil({hw.memory_bytes:,} x {float(gpu_memory_utilization):g}) = "
               f"{requested:,} bytes (the device's memory x gpu_memory_utilization), less the "
               "weights one device holds and an activation peak",
               f"activation peak {act:,} bytes: the largest layer's tensors for "
               f"{max_num_batched_tokens:,} tokens (max_num_batched_tokens: the engine's "
               "profiling forward; training's FlashAttention tensors, more than inference "
               "keeps at once) + fp32 logits and probabilities of min(max_num_seqs, tokens) "
               "sequences",
               "not counted: CUDA graphs, NCCL and cuBLAS workspaces, the CUDA context, "
               "allocator fragmentation (the engine measures these: typically 1-4 GiB); give "
               "--kv-memory for the engine's own figure"]
        if any(a <= 0 for a in available):
            raise FlopcalcError(
                f"the weights ({max(weights.device_bytes):,} bytes per device) and activations "
                f"leave no memory for the cache on {hw.name} at gpu_memory_utilization "
                f"{float(gpu_memory_utilization):g}: add devices (--tp, --pp), quantise "
                "(--weights-dtype) or raise --gpu-memory-utilization; weights: "
                f"{storage.source}")
    plan = E.plan(layers, engine, available, n_layers)
    if not plan.fits:
        warnings.append(f"the engine would refuse to start: {plan.error}")

    costs = DeviceCosts(spec, layout, engine, storage)
    group_rows = []
    for g in plan.groups:
        group_rows.append(CacheGroup(
            kind=g.kind if not g.uniform_type else "+".join(dict.fromkeys(x.kind for x in
                                                                            g.layers)),
            layers=len(g.layers), layer_indices=[x.layer for x in g.layers],
            draft_layers=sum(x.draft for x in g.layers), block_size=g.block_size,
            page_bytes=g.page_bytes, block_bytes=g.block_bytes(),
            blocks_per_request=g.blocks_per_request(max_model_len, plan.in_flight_tokens),
            window=g.layers[0].window, chunk=g.layers[0].chunk))
    hybrid = None
    if alignment is not None:
        hybrid = Hybrid(alignment.block_size, alignment.attention_page_1, alignment.state_page,
                        alignment.padded,
                        100 * ((alignment.padded or alignment.state_page) - alignment.state_page)
                        / alignment.state_page, alignment.align_multiple)
    stages = []
    for s, st in enumerate(plan.stages):
        dev, req, wb, ab = stage_info[s]
        stages.append(StageMemory(s, list(bounds[s]), dev, req, wb, ab, st.available_bytes,
                                  E.format_gib(st.available_bytes), st.bytes_per_block,
                                  st.num_blocks, st.fits))
    request = prompt + gen if prompt is not None else None
    capacity = Capacity(
        engine=f"vLLM {E.VLLM_VERSION}", groups=group_rows, hybrid=hybrid,
        bytes_per_block=plan.bytes_per_block, num_blocks=plan.num_blocks,
        blocks_per_request=plan.blocks_per_request, max_concurrency=plan.max_concurrency,
        tokens=plan.tokens, log_line=plan.log_line, fits=plan.fits, error=plan.error,
        estimated_max_model_len=plan.estimated_max_len,
        kv_cache_bytes=plan.num_blocks * plan.bytes_per_block,
        bytes_per_token=costs.token_bytes, state_bytes_per_sequence=costs.state_bytes,
        scheduled_sequences=min(int(plan.max_concurrency), max_num_seqs),
        request_tokens=request,
        concurrency_at_request=E.concurrency_at(plan, request) if request else None,
        memory=MemoryBudget(source, how, stages))
    if request is not None and request > max_model_len:
        raise FlopcalcError(f"--prompt + --gen = {request:,} is more than --max-model-len "
                            f"{max_model_len:,}: the engine refuses such a request")

    prefix = _prefix(spec, plan, shared_prefix, prompt, max_model_len, attention) \
        if shared_prefix else None
    settings = ServeSettings(
        engine=f"vLLM {E.VLLM_VERSION}", max_model_len=max_model_len,
        max_model_len_source=len_source, devices=tp * pp * dp, tp=tp, pp=pp, dp=dp, ep=ep,
        block_size=block_size, kv_dtype=kv_dtype,
        kv_dtype_served=_served_dtype(layers, kv_dtype), model_dtype=engine.model_dtype,
        gpu_memory_utilization=float(gpu_memory_utilization),
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        async_scheduling=async_scheduling, prefix_caching=prefix_caching,
        mamba_cache_mode=(("align" if prefix_caching else "none")
                          if any(x.kind == "state" for x in layers) else None),
        hybrid_kv_cache_manager=hybrid_kv_cache_manager, mamba_cache_dtype=mamba_cache_dtype,
        mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
        gdn_prefill_backend=engine.gdn_prefill_backend, weights_dtype=weights_name,
        experts_dtype=experts, in_flight_tokens=plan.in_flight_tokens, attention=attention)
    report = ServeReport(
        schema_version=SCHEMA_VERSION, command="serve", model=model_info(loaded),
        settings=settings, conventions=[], capacity=capacity, weights=weights, prefix=prefix,
        speculative=None, accelerator=accelerator_info(hw) if hw is not None else None,
        timing=None, warnings=warnings)
    speeds = None
    if hw is not None and hw.bandwidth is not None:
        speeds = Speeds(hw.peak_flops, hw.bandwidth, compute_efficiency or Fraction(1),
                        memory_efficiency or Fraction(1))
    if prompt is not None and speeds is None:
        warnings.append("--prompt times a request on a device: give --accelerator NAME (or "
                        "--peak and --bandwidth)")
    if prompt is not None and speeds is not None:
        report.timing = _timing(spec, costs, speeds, network, engine, prompt, gen, batch, dp,
                                cached_tokens(plan, shared_prefix, prompt)
                                if shared_prefix else 0, efficiency_source, attention)
        if network.spec is None and (tp > 1 or ep > 1 or pp > 1):
            warnings.append("no network: the collectives between devices are counted "
                            "(timing.*.comm_bytes) but not timed; give --network NAME")
    if draft is not None:
        report.speculative = _speculation(spec, draft, plan, costs, speeds, network, engine,
                                          layout, storage, (prompt or 0) + 1, batch)
    if load is not None:
        _under_load(report, load, pareto, spec, costs, plan, hw, network, prompt, gen, dp,
                    tp, ep, draft)
    report.conventions = _conventions(report, engine, network)
    return report


def _under_load(report: ServeReport, load: Any, pareto: bool, spec: ModelSpec,
                costs: DeviceCosts, plan: E.Plan, hw: Optional[Hardware], network: Network,
                prompt: Optional[int], gen: int, dp: int, tp: int, ep: int,
                draft: Optional[Draft] = None) -> None:
    """Throughput and latency under load (`reports.serve_load`), or one layout's Pareto
    points."""
    from . import serve_load as L

    if prompt is None:
        raise FlopcalcError("--concurrency, --request-rate and --pareto need the request's "
                            "lengths: give --prompt N (and --gen N)")
    if hw is None or hw.bandwidth is None:
        raise FlopcalcError("--concurrency, --request-rate and --pareto time an engine on a "
                            "device: give --accelerator NAME")
    s = report.settings
    kw: dict[str, Any] = dict(peak=hw.peak_flops, bandwidth=hw.bandwidth, net=network,
                              opts=load, prompt=prompt, gen=gen, max_num_seqs=s.max_num_seqs,
                              max_num_batched_tokens=s.max_num_batched_tokens)
    if draft is not None:
        dcosts = (DeviceCosts(draft.spec, Layout(tp), costs.engine, costs.fmt, costs.experts)
                  if draft.spec is not None else None)
        kw["speculation"] = L.Speculation(
            draft.tokens, float(expected_tokens(draft.tokens, draft.acceptance)),
            draft.spec, dcosts, spec.vocab_size * spec.d_model * 2 / tp)
    if load.prefill_devices == "auto":
        report.disaggregated = L.best_split(spec, costs, plan, replica_devices=tp * s.pp,
                                            devices=s.devices, **kw)
        return
    if load.prefill_devices is not None:
        report.disaggregated = L.build_disaggregated(
            spec, costs, plan, replica_devices=tp * s.pp, devices=s.devices,
            prefill_devices=load.prefill_devices, **kw)
        return
    if pareto:
        pts = L.pareto_points(spec, costs, plan, tp=tp, dp=dp, ep=ep, **kw)
        report.pareto = L.Pareto(tp * dp * s.pp, L.ENGINES[load.engine].title, prompt, gen,
                                 len(pts), [], [], pts, "")
        return
    report.performance = L.build_performance(spec, costs, plan, dp=dp, devices=s.devices,
                                             **kw)


def _served_dtype(layers: list[E.LayerSpec], kv_dtype: str) -> str:
    if kv_dtype.startswith("fp8") and any(x.kind == "indexer" for x in layers) and \
            kv_dtype != "fp8_ds_mla":
        return "fp8_ds_mla"
    return kv_dtype


def _body_flops(spec: ModelSpec, n: int, attention: str = "causal") -> int:
    """Prefill FLOPs of one sequence of n tokens without the LM head (engines compute the
    logits of the last token only); causal by default: engines skip masked key blocks."""
    if n == 0:
        return 0
    parts = model_flops(spec, workload(spec, n, None, 1, attention))  # type: ignore[arg-type]
    return p.total(parts) - sum(x.value for x in parts if x.head)


def _head_flops(spec: ModelSpec, tokens: int) -> int:
    return 2 * tokens * spec.d_model * spec.vocab_size if spec.head != "none" else 0


def _prefix(spec: ModelSpec, plan: E.Plan, prefix: int, prompt: Optional[int],
            max_model_len: int, attention: str = "causal") -> PrefixSharing:
    if prefix > max_model_len:
        raise FlopcalcError(f"--shared-prefix {prefix:,} is longer than --max-model-len "
                            f"{max_model_len:,}")
    if prompt is not None and prefix > prompt:
        raise FlopcalcError(f"--shared-prefix {prefix:,} is longer than the --prompt "
                            f"{prompt:,}")
    shared = E.shared_prefix_blocks(plan, prefix)
    total = sum(shared)
    own = plan.blocks_per_request - total
    conc = (plan.num_blocks - total) / own
    cached = cached_tokens(plan, prefix, prompt)
    saved = _body_flops(spec, cached, attention)
    left = None
    if prompt is not None:
        left = _body_flops(spec, prompt, attention) - saved + _head_flops(spec, 1)
    return PrefixSharing(prefix, cached, shared, total, own, conc, int(conc * max_model_len),
                         saved, left)


def cached_tokens(plan: E.Plan, prefix: int, prompt: Optional[int]) -> int:
    """Prompt tokens a prefix-cache hit skips: the prefix's whole blocks (of the attention
    groups' block size), and never the prompt's last token, which is computed for its logits."""
    bs = min((g.block_size for g in plan.groups if g.kind != "state"), default=1)
    if prompt is not None:
        prefix = min(prefix, prompt - 1)
    return prefix // bs * bs


def _step_time(step: Step, speeds: Speeds, net: Network) -> StepTime:
    return StepTime(p.ceil_fraction(step.flops), p.ceil_fraction(step.bytes),
                    p.ceil_fraction(step.comm_bytes), step.collectives,
                    float(step.seconds(speeds, net, False)), float(step.seconds(speeds, net, True)),
                    step.binds(speeds))


def _timing(spec: ModelSpec, costs: DeviceCosts, speeds: Speeds, net: Network, engine: E.Engine,
            prompt: int, gen: int, batch: int, dp: int, prefix: int,
            efficiency_source: str, attention: str = "causal") -> Timing:
    chunk = engine.max_num_batched_tokens
    start = prefix  # tokens served from the prefix cache
    if E.cdiv(prompt - start, chunk) > MAX_CHUNKS:
        raise FlopcalcError(f"--prompt {prompt:,} in chunks of --max-num-batched-tokens "
                            f"{chunk:,} is more than {MAX_CHUNKS:,} engine steps; give a larger "
                            "--max-num-batched-tokens")
    bound = est = Fraction(0)
    chunks, a = 0, start
    body_a = _body_flops(spec, a, attention)
    prefill = 0
    while a < prompt:
        b = min(prompt, a + chunk)
        body_b = _body_flops(spec, b, attention)
        flops = body_b - body_a + (_head_flops(spec, 1) if b == prompt else 0)
        prefill += flops
        step = costs.prefill_chunk(flops, a, b)
        bound += step.seconds(speeds, net, False)
        est += step.seconds(speeds, net, True)
        chunks += 1
        a, body_a = b, body_b
    first_c, last_c = prompt + 1, prompt + max(gen, 1)
    first, last = costs.decode(first_c, first_c, batch), costs.decode(last_c, last_c, batch)
    steps = max(gen, 1)
    comm_step = Step(Fraction(0), Fraction(0), costs.comm(batch))

    def total(estimate: bool) -> Fraction:
        def compute(c: int) -> Fraction:
            return costs.decode(c, c, batch).compute_s(speeds, estimate)

        def memory(c: int) -> Fraction:
            return costs.decode(c, c, batch).memory_s(speeds, estimate)

        t = decode_time(compute, memory, affine_segments(spec, first_c, last_c))
        return t.seconds + steps * comm_step.comm_s(net, estimate)

    decode_bound, decode_est = total(False), total(True)
    tpot_b, tpot_e = decode_bound / steps, decode_est / steps
    return Timing(
        prompt=prompt, gen=gen, batch=batch, computed_prompt_tokens=prompt - start,
        prefill_chunks=chunks,
        network=_network_info(net),
        speeds={"peak_flops": speeds.peak, "bandwidth": speeds.bandwidth,
                "compute_efficiency": float(speeds.compute_efficiency),
                "memory_efficiency": float(speeds.memory_efficiency),
                "source": efficiency_source},
        ttft_bound_s=float(bound), ttft_estimate_s=float(est), prefill_flops=prefill,
        first_step=_step_time(first, speeds, net), last_step=_step_time(last, speeds, net),
        tpot_bound_s=float(tpot_b), tpot_estimate_s=float(tpot_e),
        tokens_per_s_per_sequence_bound=float(1 / tpot_b),
        tokens_per_s_per_sequence_estimate=float(1 / tpot_e),
        tokens_per_s_aggregate_bound=float(batch * dp / tpot_b),
        tokens_per_s_aggregate_estimate=float(batch * dp / tpot_e),
        request_bound_s=float(bound + decode_bound), request_estimate_s=float(est + decode_est))


def check_draft_tokens(k: int, max_model_len: int, max_num_batched_tokens: int) -> None:
    """A speculative step verifies k + 1 tokens of a sequence in one engine step, and vLLM's
    scheduler schedules at most the step's token budget (max_num_batched_tokens) for a request
    and never a position past max_model_len − 1 (v1/core/sched/scheduler.py: "This is
    necessary when using spec decoding"): draft tokens beyond that are never verified."""
    if k < 1:
        raise FlopcalcError("--draft-tokens must be at least 1")
    limit = min(max_model_len, max_num_batched_tokens) - 1
    if k > limit:
        raise FlopcalcError(
            f"--draft-tokens {k:,} is more than a step can verify: k + 1 tokens of a sequence "
            f"must fit one engine step (--max-num-batched-tokens {max_num_batched_tokens:,}) "
            f"and the context (--max-model-len {max_model_len:,}); give at most {limit:,} "
            "(engines use a few, e.g. 1-8)")


def expected_tokens(k: int, a: Fraction) -> Fraction:
    """Tokens a speculative step yields on average when each draft token is accepted with
    probability a independently (Leviathan, Kalman and Matias 2023, "Fast Inference from
    Transformers via Speculative Decoding", eq. 1): (1 − a^(k+1)) / (1 − a); k + 1 at a = 1.
    a^(k+1) is exact up to k = 4096 and in floating point beyond (a rational power's digits
    grow with k; the figure is reported as a float)."""
    if a == 1:
        return Fraction(k + 1)
    power = a ** (k + 1) if k <= 4096 else Fraction(float(a) ** (k + 1))
    return (1 - power) / (1 - a)


def _mtp_step(spec: ModelSpec, costs: DeviceCosts, c: int, batch: int, layout: Layout,
              storage: Plan, last: Optional[int] = None) -> tuple[int, Step]:
    """The MTP draft tokens for `batch` sequences at positions c..last (default c), one step
    each: the 2d → d projection, the module's layer (a decode step) and the shared LM head
    (whole-model FLOPs, and the device's steps summed, in closed form in the step count)."""
    d = spec.d_model
    last = c if last is None else last
    n = last - c + 1
    flops = (n * 2 * batch * 2 * d * d  # (B×2d)·(2d×d) per step
             + p.total(layer_decode(spec.mtp_layer, d, batch, c, last))
             + n * _head_flops(spec, batch))  # (B×d)·(d×V) per step
    # the output head's matrix: an untied head on the last stage, else the tied token table
    # (split by vocabulary, read by the matmul rather than looked up)
    vocab = [s for s in stored(spec, storage) if s.part.role == p.VOCAB and not s.part.lookup]
    head = next((s for s in vocab if s.part.stage == p.LAST), None) or vocab[0]
    mtp = stored(spec, storage, mtp=True)
    first = spec.n_layers("decoder")
    weights = sum((s.bytes * share(s.part, layout) for s in mtp
                   if s.part.role != EXPERT and s.layer == first), Fraction(0))
    weights += head.bytes * share(head.part, layout)
    ffn = spec.mtp_layer.ffn
    if ffn is not None and ffn.reads(d, batch) is not None:
        r = ffn.reads(d, batch)
        stacked = sum((s.bytes * share(s.part, layout) for s in mtp
                       if s.part.role == EXPERT and s.layer == first), Fraction(0))
        weights += stacked * Fraction(r.expected) / r.experts
    kv = Fraction(0)
    token = 0
    for _, kind in spec.mtp_layer.slots():
        caches = kind.engine_cache(layout.tp)
        tok = sum(E.token_bytes(x, costs.engine, False) for x in caches if x.kind != "state")
        if kind.cache().per_token:
            kv += kind.cache_reads(c, last) * Fraction(tok, kind.cache().per_token)
        token += tok
    comms: tuple[Collective, ...] = ()
    if layout.tp > 1:
        comms = (Collective("allreduce", batch * d * 2, layout.tp,
                            n * len(spec.mtp_layer.sublayers())),)
    step = Step(Fraction(flops, layout.tp), n * weights + batch * (kv + n * token), comms)
    return flops, step


def _speculation(spec: ModelSpec, draft: Draft, plan: E.Plan, costs: DeviceCosts,
                 speeds: Optional[Speeds], net: Network, engine: E.Engine, layout: Layout,
                 storage: Plan, c: int, batch: int) -> Speculation:
    k, a = draft.tokens, draft.acceptance
    expect = expected_tokens(k, a)
    verify = costs.decode(c, c + k, batch)
    verify_flops = p.total(decode_flops(spec, c, c + k, batch))
    draft_flops, draft_step = 0, Step(Fraction(0), Fraction(0))
    if draft.method == "mtp":
        draft_flops, draft_step = _mtp_step(spec, costs, c, batch, layout, storage, c + k - 1)
        draft_layers = spec.mtp_layers
        tok = sum(E.token_bytes(x, engine, False) for _, kind in spec.mtp_layer.slots()
                  for x in kind.engine_cache(layout.tp) if x.kind != "state") * draft_layers
    else:
        assert draft.spec is not None
        dcosts = DeviceCosts(draft.spec, Layout(layout.tp), engine, _draft_storage(draft))
        draft_step = dcosts.decode_steps(c, c + k - 1, batch)
        draft_flops = p.total(decode_flops(draft.spec, c, c + k - 1, batch))
        draft_layers = draft.spec.n_layers("decoder")
        tok = dcosts.token_bytes
    vt = dt = None
    sb = se = tb = te = ub = ue = None
    if speeds is not None:
        vt, dt = _step_time(verify, speeds, net), _step_time(draft_step, speeds, net)
        plain = costs.decode(c, c, batch)
        sb = verify.seconds(speeds, net, False) + draft_step.seconds(speeds, net, False)
        se = verify.seconds(speeds, net, True) + draft_step.seconds(speeds, net, True)
        tb, te = sb / expect, se / expect
        ub = float(plain.seconds(speeds, net, False) / tb)
        ue = float(plain.seconds(speeds, net, True) / te)
        sb, se, tb, te = float(sb), float(se), float(tb), float(te)
    return Speculation(
        method=draft.method, draft=draft.name, draft_tokens=k, acceptance=float(a),
        expected_tokens_per_step=float(expect), draft_layers=draft_layers,
        draft_bytes_per_token=tok, verify_flops=verify_flops, draft_flops=draft_flops,
        verify_bytes=p.ceil_fraction(verify.bytes), draft_bytes=p.ceil_fraction(draft_step.bytes),
        verify=vt, draft_step=dt, step_bound_s=sb, step_estimate_s=se, tpot_bound_s=tb,
        tpot_estimate_s=te, speedup_bound=ub, speedup_estimate=ue,
        speedup_ceiling=float(expect))


def _network_info(net: Network) -> dict[str, Any]:
    n = net.spec
    if n is None:
        return {"name": None}
    return {"name": net.name, "title": n.title, "domain_size": n.domain_size,
            "scale_up_bandwidth": n.scale_up_bandwidth,
            "scale_out_bandwidth": n.scale_out_bandwidth,
            "scale_up_efficiency": n.scale_up_efficiency,
            "scale_out_efficiency": n.scale_out_efficiency, "latency_base_ns": n.latency_base_ns,
            "latency_scale_up_ns": n.latency_scale_up_ns}


def _conventions(r: ServeReport, engine: E.Engine, net: Network) -> list[str]:
    s = r.settings
    kinds = {g.kind for g in r.capacity.groups}
    blocks = ["full and latent layers cdiv(L, bs)"]
    if kinds & {"sliding", "chunked"}:
        blocks.append(f"sliding windows cdiv(min(w − 1 + T, L), bs) + 1, chunked "
                      f"cdiv(min(c + T, L), bs), T = {s.in_flight_tokens:,} tokens in flight "
                      f"({engine.concurrent_batches} steps of max_num_batched_tokens"
                      + (", async scheduling" if s.async_scheduling else "") + ")")
    if "state" in kinds:
        blocks.append("recurrent layers " + (
            "2 state blocks per request and group in align mode, + the kernel's prefill "
            "checkpoint (Mamba-2: 1)" if s.prefix_caching else "1 state block per request and "
            "group") + ", + 1 per speculative token; the attention block grows until its page "
            "holds a state page, which is padded to it")
    lines = [
        f"capacity as {s.engine} computes it at start-up (v1/core/kv_cache_utils.py, "
        "kv_cache_planning.py): per-layer cache specs on one tensor-parallel rank, cache "
        "groups, bytes per block = the largest group's pages, num_blocks = available // bytes "
        "per block (the least over pipeline stages), max concurrency = num_blocks / Σ groups' "
        "blocks per request at max_model_len, 'GPU KV cache size' = int(concurrency x L)",
        "blocks per request: " + "; ".join(blocks),
        "tensor parallelism: KV heads split over --tp, one replicated per device when there are "
        "fewer; a latent (MLA) cache is never split; Mamba heads and conv channels split",
        f"--kv-dtype {s.kv_dtype} (auto = the model dtype, {s.model_dtype}); fp8 caches keep "
        "per-tensor scales outside the pages; DeepSeek's sparse MLA serves fp8 as fp8_ds_mla "
        "(656 bytes per token); nvfp4 K/V are ½ byte per value + an fp8 scale per 16",
        f"weights {s.weights_dtype}"
        + (f", routed experts {s.experts_dtype}" if s.experts_dtype != s.weights_dtype else "")
        + f" ({r.weights.source})"
        + (": each module's format with its scales, zero points and indices (weights.storage)"
           if r.weights.from_checkpoint else
           ": scaled formats count their scales (nvfp4: an fp8 scale per 16 values and an fp32 "
           "per matrix; mxfp4: an e8m0 per 32; fp8-tensor: an fp32 per matrix; fp8-block: an "
           "fp32 per 128 x 128) and keep embeddings, head, norms and routers in bf16"),
    ]
    if r.prefix is not None:
        lines.append("shared prefix: its whole blocks in full and latent groups are held once; "
                     "window, chunked and state groups keep their own; its prefill is not "
                     f"recomputed (prefill FLOPs with attention {s.attention})")
    if r.speculative is not None:
        lines.append("speculative decoding: a step verifies k + 1 tokens per sequence (the "
                     "target's decode over them) after k draft steps; expected tokens per step "
                     "(1 − a^(k+1)) / (1 − a) (Leviathan et al. 2023)")
    if r.timing is not None:
        where = (f"on {net.name}" if net.spec is not None else "not timed (no network)")
        lines += [
            "time per step on one device: bound max(FLOPs / peak, bytes / bandwidth) + "
            "collective bytes / raw link bandwidth; estimate with compute at "
            f"{r.timing.speeds['compute_efficiency']:.4g} of peak, memory at "
            f"{r.timing.speeds['memory_efficiency']:.4g} of bandwidth "
            f"({r.timing.speeds['source']}), collectives by NCCL's alpha-beta model {where}",
            "FLOPs / tp per device; bytes: each tensor's share, experts expected under uniform "
            "routing, the KV the device holds for the keys attended, states read and written",
            "prefill: chunks of max_num_batched_tokens, "
            + ("causal attention (the default: masked blocks skipped)" if s.attention == "causal"
               else "full attention (--attention full: every pair, chunk after chunk)")
            + ", the LM head on the last token only; TTFT for one request on an idle "
            "engine; TPOT the mean over the generated tokens at --batch sequences; decode "
            "steps over the keys each layer caches",
            "collectives: tensor parallelism all-reduces T x d (bf16) after each sublayer (2 per "
            "layer); expert parallelism dispatches and combines T·k·d by all-to-all; pipeline "
            "stages run one after another (no micro-batch pipelining)",
        ]
    return lines
