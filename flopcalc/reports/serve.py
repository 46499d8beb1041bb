"""The `serve` report: how many requests a serving engine fits, as vLLM 0.33.0 computes it, what
prefix caching and speculative decoding change, and, on an accelerator, the time a user sees.
This module holds the report and its assembly; each part is a module of its own:
`serve_capacity` (the engine, the memory for the cache, blocks and concurrency),
`serve_weights`, `serve_prefix`, `serve_speculative`, `serve_latency` (TTFT and TPOT on an
idle engine), `serve_load` (under load) and `serve_sglang` (SGLang's token pool).
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Any, Optional, Sequence

from ..records import dataclass
from ..engines import vllm as E
from ..errors import FlopcalcError
from ..models.accelerators import Hardware
from ..models.quantization import Plan
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..predict.latency import DeviceCosts, Layout, Network
from . import serve_capacity, serve_latency, serve_prefix, serve_weights
from . import serve_load as L
from .common import SCHEMA_VERSION, ModelInfo, Report, model_info
from .infer import AcceleratorInfo, accelerator_info, check_decoder_only
from .serve_capacity import (Capacity, CacheMemory, EngineOptions, EngineSetup, ServeLayout,
                             available_memory, build_capacity, check_layout,
                             config_ssm_dtype, context_length, engine_setup, served_dtype)
from .serve_latency import Machine, Request, Timing, timing
from .serve_load import Disaggregated, LoadOptions, Pareto, Performance
from .serve_prefix import PrefixSharing, cached_tokens, prefix_sharing
from .serve_sglang import SglangCapacity
from .serve_speculative import CONVENTION, Draft, Speculation, expected_tokens, speculation
from ..engines.loading import choose
from .serve_weights import (LoraOptions, LoraReservation, WeightFormats, Weights,
                            build_weights, draft_weight_bytes, reserve)

__all__ = ["SHAPE_FACTOR", "Draft", "ServeOptions", "ServeReport", "ServeSettings",
           "build_serve_report", "config_ssm_dtype", "serve_report"]

# Matmuls of real shapes reach 80-90 % of the best shape's (MAMF) rate: stas00/ml-engineering
# compute/accelerator/benchmarks/README.md; the estimate takes the middle.
SHAPE_FACTOR = Fraction(85, 100)


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
    lora: Optional[LoraReservation] = None  # --max-loras: vLLM's adapter slots


@dataclass(frozen=True)
class ServeOptions:
    """Everything `serve` is asked, as the records its parts take."""

    layout: ServeLayout = ServeLayout()
    engine: EngineOptions = EngineOptions()
    memory: CacheMemory = CacheMemory()
    formats: WeightFormats = WeightFormats()
    request: Request = Request()
    machine: Machine = Machine()
    draft: Optional[Draft] = None
    load: Optional[LoadOptions] = None  # under load (--concurrency, --request-rate, --pareto)
    pareto: bool = False  # one layout's points of the Pareto front
    lora: Optional[LoraOptions] = None  # --max-loras, --max-lora-rank, --max-cpu-loras


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
                       load: Optional[LoadOptions] = None, pareto: bool = False,
                       mxfp4_backend: str = "auto",
                       lora: Optional[LoraOptions] = None,
                       vllm_release: Optional[str] = None) -> ServeReport:
    """The command's keywords gathered into `ServeOptions` (`serve_report`)."""
    return serve_report(loaded, ServeOptions(
        layout=ServeLayout(tp, pp, dp, ep),
        engine=EngineOptions(
            max_model_len=max_model_len, block_size=block_size, kv_dtype=kv_dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
            async_scheduling=async_scheduling, prefix_caching=prefix_caching,
            hybrid_kv_cache_manager=hybrid_kv_cache_manager,
            mamba_cache_dtype=mamba_cache_dtype, mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
            gdn_prefill_backend=gdn_prefill_backend, vllm_release=vllm_release),
        memory=CacheMemory(kv_memory, kv_blocks),
        formats=WeightFormats(weights_dtype, experts_dtype, mxfp4_backend),
        request=Request(prompt, gen, batch, shared_prefix, attention),
        machine=Machine(hw, network, compute_efficiency, memory_efficiency, efficiency_source),
        draft=draft, load=load, pareto=pareto, lora=lora))


def serve_report(loaded: LoadedModel, o: ServeOptions) -> ServeReport:
    """Capacity first (the engine, the weights, the memory for the cache, its blocks), then
    what a shared prefix changes, then times on a device."""
    spec, lay = loaded.spec, o.layout
    check_decoder_only(loaded, "serve")
    check_layout(spec, lay.tp, lay.pp, lay.ep)
    max_model_len, len_source, warnings = context_length(loaded, o.engine.max_model_len)
    storage = o.formats.plan(loaded)
    setup = engine_setup(loaded, o.engine, lay, o.draft, max_model_len, o.machine.hw)
    hw = o.machine.hw
    loading = choose(o.formats.mxfp4_backend, hw.architecture if hw is not None else None,
                     o.engine.vllm_release, storage.method)
    weights, stage_w = build_weights(spec, lay.replica, storage, draft_weight_bytes(
        spec, o.draft, lay.replica, storage, setup.engine), loading)
    lora = None
    if o.lora is not None:  # allocated with the weights: out of the cache's memory
        lora = reserve(spec, storage, lay.replica, o.lora, setup.engine.model_dtype,
                       o.engine.vllm_release, loaded.name)
        stage_w = [w + r for w, r in zip(stage_w, lora.device_bytes)]
    available = available_memory(spec, o.engine, o.memory, hw, setup, stage_w,
                                 storage.source)
    plan = E.plan(setup.layers, setup.engine, available.bytes, spec.n_layers("decoder"))
    if not plan.fits:
        warnings.append(f"the engine would refuse to start: {plan.error}")
    costs = DeviceCosts(spec, lay.replica, setup.engine, storage)
    capacity = build_capacity(spec, plan, setup, available, costs, max_model_len,
                              o.engine.max_num_seqs, o.request.tokens)
    prefix = prefix_sharing(spec, plan, o.request, max_model_len) \
        if o.request.shared_prefix else None
    report = ServeReport(
        schema_version=SCHEMA_VERSION, command="serve", model=model_info(loaded),
        settings=_settings(o, setup, plan, max_model_len, len_source, weights),
        conventions=[], capacity=capacity, weights=weights, prefix=prefix, speculative=None,
        accelerator=accelerator_info(hw) if hw is not None else None, timing=None,
        warnings=warnings, lora=lora)
    _timed(report, o, spec, costs, plan, setup.engine, storage)
    if o.load is not None:
        _under_load(report, o, spec, costs, plan)
    report.conventions = _conventions(report, setup.engine, plan, o)
    return report


def _settings(o: ServeOptions, setup: EngineSetup, plan: E.Plan, max_model_len: int,
              len_source: str, weights: Weights) -> ServeSettings:
    e, lay, engine = o.engine, o.layout, setup.engine
    return ServeSettings(
        engine=f"vLLM {E.VLLM_VERSION}", max_model_len=max_model_len,
        max_model_len_source=len_source, devices=lay.devices, tp=lay.tp, pp=lay.pp, dp=lay.dp,
        ep=lay.ep, block_size=setup.block_size, kv_dtype=e.kv_dtype,
        kv_dtype_served=served_dtype(setup.layers, e.kv_dtype), model_dtype=engine.model_dtype,
        gpu_memory_utilization=float(e.gpu_memory_utilization),
        max_num_batched_tokens=e.max_num_batched_tokens, max_num_seqs=e.max_num_seqs,
        async_scheduling=e.async_scheduling, prefix_caching=e.prefix_caching,
        mamba_cache_mode=(("align" if e.prefix_caching else "none")
                          if any(x.layout == "state" for x in setup.layers) else None),
        hybrid_kv_cache_manager=e.hybrid_kv_cache_manager,
        mamba_cache_dtype=e.mamba_cache_dtype, mamba_ssm_cache_dtype=e.mamba_ssm_cache_dtype,
        gdn_prefill_backend=engine.gdn_prefill_backend, weights_dtype=weights.dtype,
        experts_dtype=weights.experts_dtype, in_flight_tokens=plan.in_flight_tokens,
        attention=o.request.attention)


def _timed(report: ServeReport, o: ServeOptions, spec: ModelSpec, costs: DeviceCosts,
           plan: E.Plan, engine: E.Engine, storage: Plan) -> None:
    """TTFT and TPOT on an idle engine (with --prompt on a device) and speculative decoding
    (with --draft)."""
    r, lay, net = o.request, o.layout, o.machine.network
    speeds = o.machine.speeds()
    if r.prompt is not None and speeds is None:
        report.warnings.append("--prompt times a request on a device: give --accelerator NAME "
                               "(or --peak and --bandwidth)")
    if r.prompt is not None and speeds is not None:
        cached = cached_tokens(plan, r.shared_prefix, r.prompt) if r.shared_prefix else 0
        report.timing = timing(spec, costs, speeds, net, engine, r, lay.dp, cached,
                               o.machine.efficiency_source)
        if net.spec is None and (lay.tp > 1 or lay.ep > 1 or lay.pp > 1):
            report.warnings.append("no network: the collectives between devices are counted "
                                   "(timing.*.comm_bytes) but not timed; give --network NAME")
    if o.draft is not None:
        report.speculative = speculation(spec, o.draft, costs, speeds, net, engine,
                                         lay.replica, storage, (r.prompt or 0) + 1, r.batch)


def _under_load(report: ServeReport, o: ServeOptions, spec: ModelSpec, costs: DeviceCosts,
                plan: E.Plan) -> None:
    """Throughput and latency under load (`reports.serve_load`), or one layout's Pareto
    points."""
    r, hw, load, draft = o.request, o.machine.hw, o.load, o.draft
    assert load is not None
    tp, dp, ep = o.layout.tp, o.layout.dp, o.layout.ep
    if r.prompt is None:
        raise FlopcalcError("--concurrency, --request-rate and --pareto need the request's "
                            "lengths: give --prompt N (and --gen N)")
    if hw is None or hw.bandwidth is None:
        raise FlopcalcError("--concurrency, --request-rate and --pareto time an engine on a "
                            "device: give --accelerator NAME")
    s = report.settings
    if load.range_ratio:
        from ..predict.scheduler import length_bounds

        longest = length_bounds(r.prompt, load.range_ratio)[1] \
            + length_bounds(r.gen, load.range_ratio, least=1)[1]
        if longest > s.max_model_len:
            raise FlopcalcError(
                f"--range-ratio {load.range_ratio:g} draws requests of up to {longest:,} tokens, "
                f"more than --max-model-len {s.max_model_len:,}: the engine refuses them; "
                "lower the ratio or the lengths, or raise --max-model-len")
    kw: dict[str, Any] = dict(peak=hw.peak_flops, bandwidth=hw.bandwidth, net=o.machine.network,
                    opts=load, prompt=r.prompt, gen=r.gen, max_num_seqs=s.max_num_seqs,
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
    if o.pareto:
        pts = L.pareto_points(spec, costs, plan, tp=tp, dp=dp, ep=ep, **kw)
        report.pareto = L.Pareto(tp * dp * s.pp, L.ENGINES[load.engine].title, r.prompt, r.gen,
                                 len(pts), [], [], pts, "")
        return
    report.performance = L.build_performance(spec, costs, plan, dp=dp, devices=s.devices,
                                             **kw)


def _conventions(r: ServeReport, engine: E.Engine, plan: E.Plan, o: ServeOptions) -> list[str]:
    """Each part's lines, in the order the report shows the parts."""
    lines = serve_capacity.conventions(engine, plan, {g.kind for g in r.capacity.groups})
    lines += serve_weights.conventions(r.weights)
    if r.lora is not None:
        lines.append(r.lora.how)
    if r.prefix is not None:
        lines += serve_prefix.conventions(o.request.attention)
    if r.speculative is not None:
        lines.append(CONVENTION)
    if r.timing is not None:
        lines += serve_latency.conventions(r.timing, o.request.attention, o.machine.network)
    return lines
