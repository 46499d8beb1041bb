"""`flopcalc serve`: serving capacity as the engine computes it, the time a user sees, and
throughput and latency under load."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..engines.registry import ENGINES
from ..errors import FlopcalcError
from .base import Command, Render
from .common import config_json, data_parallel, load, platform
from .options import CAUSAL, OPTIONS, pick

# The options only one engine reads (SGLang's), from each engine's registry entry, in its order.
ENGINE_OPTIONS = tuple(option for e in ENGINES.values() for option in e.options)


def _engine(name: str, given: dict[str, Any], kv_cache_dtype: str) -> tuple[Any, Any]:
    """The engine of --engine and the release whose defaults it names (None: today's), with
    each engine-owned option given checked against it."""
    from ..engines.registry import owner, parse

    chosen, version = parse(name)
    for option, value in given.items():
        own = owner(option) if value is not None else None
        if own is not None and own is not chosen:
            flag = "--" + option.replace("_", "-")
            raise FlopcalcError(f"{flag} is {own.title.split(' (')[0]}'s option: add --engine "
                                f"{own.name} (vLLM's are --gpu-memory-utilization, "
                                "--block-size, --max-num-batched-tokens, --max-num-seqs, "
                                "--max-model-len, --kv-cache-dtype)")
    if kv_cache_dtype == "int8":
        raise FlopcalcError("--kv-cache-dtype int8: vLLM and SGLang keep no int8 KV cache; "
                            "choose fp8 (or size an int8 cache with flopcalc infer)")
    return chosen, version


def _implemented(engine: str, version: str, loaded: Any, config: Any) -> None:
    """Refuse a model whose architecture the named release cannot load (its config.json's
    `architectures`, or a preset's `checkpoint.architectures`; unchecked where none is
    stated): `engines.architectures`."""
    from ..engines.architectures import check

    if config is not None:
        from ..models.files import read_mapping

        archs = read_mapping(config, "config.json").get("architectures")
    else:
        stored = loaded.raw.get("checkpoint")
        archs = stored.get("architectures") if isinstance(stored, dict) else None
    check(engine, version, archs)


def run(model, *, accelerator, count, tp, pp, dp, ep, max_model_len, gpu_memory_utilization,
        block_size, kv_cache_dtype, max_num_batched_tokens, max_num_seqs, async_scheduling,
        prefix_caching, hybrid_kv_cache_manager, mamba_cache_dtype, mamba_ssm_cache_dtype,
        gdn_prefill_backend, mxfp4_backend, max_loras, max_lora_rank, max_cpu_loras,
        kv_memory, kv_blocks, weights_dtype, experts_dtype, language_model_only, shared_prefix,
        draft, draft_tokens, acceptance, prompt, gen, batch, network, efficiency, compute_dtype,
        compute_efficiency, memory_efficiency, peak, bandwidth, attention, engine, concurrency,
        request_rate, requests, random_state, range_ratio, pareto, price, board_watts,
        prefill_devices, mem_fraction_static, page_size, chunked_prefill_size, max_running_requests,
        context_length, max_total_tokens, set):  # noqa: A002
    values = dict(locals())  # serve's parsed options, for an engine's own capacity
    chosen, version = _engine(engine, values, kv_cache_dtype)
    asked = engine.partition("==")[2].strip() if isinstance(engine, str) else ""  # as given
    engine = chosen.name
    values["release"] = None  # an engine's own release (--engine sglang==0.4.9)
    if version is not None and chosen.name != "vllm":
        values["release"], version = version, None

    from ..numbers import parse_bytes
    from ..predict.latency import Network
    from ..reports.serve import SHAPE_FACTOR, Draft, build_serve_report
    from ..reports.serve_weights import lora_options

    dp = data_parallel(count, dp, tp, pp)
    loaded = load(model, set)
    left_out = None
    if language_model_only:
        loaded, left_out = _language_model_only(model, set, loaded, chosen, version)
    config = config_json(loaded.origin)
    if asked:  # a release named: it must implement the model
        _implemented(engine, asked, loaded, config)
    ssm_from = None  # the config.json keys vLLM's per-family defaults read
    if mamba_ssm_cache_dtype == "auto" and config is not None:  # as vLLM: the config's word
        from ..models.files import read_mapping

        ssm_from = read_mapping(config, "config.json")
    elif mamba_ssm_cache_dtype == "auto" and isinstance(loaded.raw.get("checkpoint"), dict):
        from ..models.config import Checkpoint  # a preset: its published checkpoint's config

        ssm_from = Checkpoint(**loaded.raw["checkpoint"]).as_config()
    if ssm_from is not None:
        from ..reports.serve import config_ssm_dtype

        mamba_ssm_cache_dtype = config_ssm_dtype(ssm_from) or "auto"
    found = platform(accelerator, compute_dtype, None, peak, bandwidth, network=network,
                     efficiency=efficiency, timed=accelerator is not None or peak is not None)
    hw = found.hw
    defaults = _defaults(version, loaded, hw, max_model_len, gpu_memory_utilization,
                         max_num_batched_tokens, max_num_seqs,
                         bool(draft) or any(x is not None for x in
                                            (max_loras, max_lora_rank, max_cpu_loras)))
    gpu_memory_utilization, max_num_batched_tokens, max_num_seqs = defaults[:3]
    values.update(gpu_memory_utilization=gpu_memory_utilization,
                  max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
    memories = None
    if kv_memory is not None:
        memories = [parse_bytes(x.strip(), "--kv-memory") for x in str(kv_memory).split(",")]
    net, eff_source, eff = Network("", None), "", None
    ce, me = compute_efficiency, memory_efficiency
    if hw is not None:
        eff = found.efficiency
        net = Network(found.network.name, found.network.spec)
        share = eff.spec.matmul_share(compute_dtype)
        if ce is None:
            if share is None:
                raise FlopcalcError(f"the efficiency file {eff.name} has no matmul share for "
                                    f"{compute_dtype}; give --compute-efficiency")
            ce = Fraction(share).limit_denominator(10**6) * SHAPE_FACTOR
        if me is None:
            me = Fraction(eff.spec.memory.at("typical")).limit_denominator(10**6)
        eff_source = (f"efficiency/{eff.name}: matmul {share} of peak x {float(SHAPE_FACTOR):g} "
                      "for real shapes, memory typical" if compute_efficiency is None else
                      "--compute-efficiency")
    spec_draft = None
    if draft is not None:
        if acceptance is None:
            raise FlopcalcError("--draft needs --acceptance A: the probability that the target "
                                "accepts a draft token (0.7 or 70%)")
        if draft.lower() == "mtp":
            spec_draft = Draft("mtp", "the model's MTP modules", None, draft_tokens, acceptance)
        else:
            from ..counting.storage import resolve_plan

            d = load(draft, ())  # its weights as its checkpoint stores them, or the flags
            spec_draft = Draft("draft", d.name, d.spec, draft_tokens, acceptance,
                               resolve_plan(d, weights_dtype, experts_dtype))
    elif acceptance is not None:
        raise FlopcalcError("--acceptance applies to speculative decoding: give --draft MODEL "
                            "(or --draft mtp) too")
    load_opts = _load_options(hw, eff, compute_dtype, engine, concurrency, request_rate,
                              requests, random_state, pareto, price, board_watts, range_ratio)
    if prefill_devices is not None:
        if load_opts is None or pareto:
            raise FlopcalcError("--prefill-devices splits a closed loop's devices: give "
                                "--concurrency N too (not --pareto)")
        load_opts.prefill_devices = prefill_devices
    common = dict(
        hw=hw, max_model_len=max_model_len, pp=pp,
        gpu_memory_utilization=Fraction(gpu_memory_utilization), block_size=block_size,
        kv_dtype=kv_cache_dtype, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, async_scheduling=async_scheduling,
        prefix_caching=prefix_caching, hybrid_kv_cache_manager=hybrid_kv_cache_manager,
        mamba_cache_dtype=mamba_cache_dtype, mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
        gdn_prefill_backend=gdn_prefill_backend, mxfp4_backend=mxfp4_backend,
        lora=lora_options(max_loras, max_lora_rank, max_cpu_loras),
        kv_memory=memories, kv_blocks=kv_blocks,
        weights_dtype=weights_dtype, experts_dtype=experts_dtype, shared_prefix=shared_prefix,
        draft=spec_draft, prompt=prompt, gen=gen, batch=batch, network=net,
        compute_efficiency=ce, memory_efficiency=me, efficiency_source=eff_source,
        vllm_release=version.version if version is not None else None)
    if pareto:
        report = _pareto(loaded, common, load_opts, count or dp * tp * pp, pp)
        report.warnings.extend(found.warnings)
        _versioned(report, version, defaults[3], async_scheduling, prefix_caching)
        return report
    report = build_serve_report(loaded, tp=tp, dp=dp, ep=ep, attention=attention,
                                load=load_opts, **common)
    report.warnings.extend(found.warnings)
    _versioned(report, version, defaults[3], async_scheduling, prefix_caching)
    if left_out is not None:
        report.conventions.append(left_out)
    if ssm_from is None and mamba_ssm_cache_dtype == "auto" and \
            report.settings.mamba_cache_mode is not None:
        report.warnings.append(
            "recurrent states sized in the model dtype (--mamba-ssm-cache-dtype auto); vLLM "
            "takes some models' from their config.json (Nemotron-H: fp32, Qwen3.5: "
            "mamba_ssm_dtype), which a model file does not carry: give the config.json or "
            "--mamba-ssm-cache-dtype")
    if chosen.capacity is not None:  # the engine's own capacity beside vLLM's
        import importlib

        module, function = chosen.capacity
        path = module if "." in module else f"{__package__.rsplit('.', 1)[0]}.reports.{module}"
        values["kv_memory"] = memories
        getattr(importlib.import_module(path), function)(report, loaded, hw, values)
    return report


def _language_model_only(model: str, overrides, loaded, chosen, version) -> tuple[Any, str]:
    """The model without its vision towers, as vLLM loads it with --language-model-only (0.33;
    0.10 and 0.11 skip Qwen2-VL's to Qwen3-VL's towers when --limit-mm-per-prompt allows no
    image and no video: `model_executor/models/qwen2_5_vl.py`, `qwen3_vl.py`; 0.33's
    `_mark_tower_model` for every model that marks its towers), and the line saying so. vLLM
    0.6 and 0.8 build the tower whatever the limits, and SGLang (0.5.5's Qwen3-VL) too."""
    if chosen.name != "vllm" or (version is not None and version.version in ("0.6", "0.8")):
        which = (f"vLLM {version.version}" if chosen.name == "vllm" else chosen.name)
        raise FlopcalcError(f"--language-model-only: {which} loads the vision tower whatever "
                            "the image limits; leave the flag out (vLLM 0.10 and later skip it)")
    if not loaded.spec.towers:
        raise FlopcalcError(f"--language-model-only: {loaded.name} has no vision tower that "
                            "flopcalc counts; leave the flag out")
    from ..counting.model import tower_params

    n = sum(p.value for p in tower_params(loaded.spec))
    names = ", ".join(t.label() for t in loaded.spec.towers)
    return load(model, (*(overrides or ()), "vision=")), (
        f"--language-model-only: the {names} ({n:,} params) is not loaded, as vLLM's "
        "--language-model-only (or --limit-mm-per-prompt with image and video 0) leaves it out")


def _versioned(report, version, line: str, async_scheduling: bool,
               prefix_caching: bool) -> None:
    """Say which release's defaults the report took (--engine vllm==X.Y), and which of its
    defaults the on/off flags (today's, on) do not follow."""
    if version is None:
        return
    report.settings.engine += f" (defaults of vLLM {version.version})"
    report.conventions.append(line)
    off = [flag for flag, on, old in (
        ("--no-async-scheduling", async_scheduling, version.version != "0.33"),
        ("--no-prefix-caching", prefix_caching, version.engine == "V0")) if on and old]
    if off:
        report.warnings.append(f"vLLM {version.version} ran without "
                               + " and ".join(f.removeprefix("--no-").replace("-", " ")
                                              for f in off)
                               + f" by default; give {' '.join(off)} to match it")


def _defaults(version, loaded, hw, max_model_len, utilization, batched, seqs,
              lora_or_draft) -> tuple[Any, int, int, str]:
    """gpu_memory_utilization, max_num_batched_tokens and max_num_seqs as given, else as the
    engine version's `vllm serve` chose them (vLLM 0.33 when no version is named), and a line
    saying which release's defaults were taken and why."""
    from ..engines import vllm as E
    from ..engines.registry import CURRENT, VLLM_DEFAULTS

    d = version or VLLM_DEFAULTS[CURRENT]
    if version is None:  # today's defaults, as they have always been
        return (utilization if utilization is not None else Fraction(92, 100),
                batched if batched is not None else E.DEFAULT_MAX_NUM_BATCHED_TOKENS,
                seqs if seqs is not None else E.DEFAULT_MAX_NUM_SEQS, "")
    length = max_model_len if max_model_len is not None else loaded.spec.max_seq_len or 0
    layouts = {c.layout for _, cs in E.model_caches(loaded.spec, 1) for c in cs}
    chunked = d.chunked_prefill(length, bool(layouts & {"sliding", "chunked"}),
                                "state" in layouts, lora_or_draft)
    device = (hw.name, hw.memory_bytes or 0) if hw is not None else None
    tokens, sequences, why = d.batch(device, length, chunked)
    line = (f"defaults of vLLM {d.version} ({d.engine} engine) where an option is not given: "
            f"gpu_memory_utilization {d.gpu_memory_utilization}, chunked prefill "
            f"{'on' if chunked else 'off'}, block size 16, {why}"
            + ("" if hw is not None else "; no accelerator named: vLLM's row for other GPUs")
            + f" ({d.source}); the cache arithmetic is vLLM {E.VLLM_VERSION}'s")
    return (utilization if utilization is not None else Fraction(d.gpu_memory_utilization),
            batched if batched is not None else tokens,
            seqs if seqs is not None else sequences, line)


def _load_options(hw, eff, dtype, engine, concurrency, request_rate, requests, random_state,
                  pareto, price, board_watts=None, range_ratio=None) -> Any:
    """What `serve` under load takes (None: capacity and idle latency only)."""
    if range_ratio is not None and range_ratio >= 1:
        raise FlopcalcError(f"--range-ratio {float(range_ratio):g} must be below 1 (as vllm bench "
                            "serve's --random-range-ratio): lengths are drawn from "
                            "[L(1-R), L(1+R)]")
    if concurrency is None and request_rate is None and not pareto:
        for given, flag in ((price, "--price prices"), (board_watts, "--board-watts weighs"),
                            (range_ratio, "--range-ratio draws the lengths of")):
            if given is not None:
                raise FlopcalcError(f"{flag} tokens under load: give --concurrency N, "
                                    "--request-rate R or --pareto too")
        return None
    from ..predict.engine_step import efficiencies
    from ..reports.serve_load import LoadOptions

    if hw is None or eff is None:
        raise FlopcalcError("--concurrency, --request-rate and --pareto time an engine on a "
                            "device: give --accelerator NAME")
    watts, source = ((float(board_watts), "--board-watts") if board_watts is not None else
                     (hw.board_watts, hw.board_watts_source))
    return LoadOptions(engine, concurrency, float(request_rate) if request_rate is not None
                       else None, requests or 0, random_state,
                       efficiencies(eff.spec, dtype, eff.name),
                       attention_peak=hw.bf16_peak_flops or hw.peak_flops,
                       price=float(price) if price is not None else None,
                       board_watts=float(watts) if watts is not None else None,
                       board_watts_source=source,
                       range_ratio=float(range_ratio) if range_ratio is not None else 0.0)
def _pareto(loaded, common: dict, opts: Any, devices: int, pp: int) -> Any:
    """Every layout of `devices` devices (tp x dp, and for a mixture of experts ep over all
    of them), each at concurrencies 1, 2, 4, ... : the front of tokens/s per device against
    tokens/s per user."""
    from ..reports.serve import build_serve_report
    from ..reports.serve_load import front

    if devices % pp:
        raise FlopcalcError(f"--count {devices} must be a multiple of --pp {pp}")
    moe = any(k.ep_units() for g in loaded.spec.groups("decoder") for _, k in g.layer.slots())
    points, layouts, skipped, first = [], [], [], None
    ways = devices // pp
    from ..predict.plans import divisors

    # tensor parallelism splits heads: no model has 512 of them to split further, so the
    # search is bounded whatever --count is
    for tp in divisors(ways, 512):
        dp = ways // tp
        for ep in ([1, tp * dp] if moe and tp * dp > 1 else [1]):
            name = f"tp{tp} dp{dp}" + (f" ep{ep}" if ep > 1 else "")
            try:
                r = build_serve_report(loaded, tp=tp, dp=dp, ep=ep, load=opts, pareto=True,
                                       **common)
            except FlopcalcError as exc:
                skipped.append(f"{name}: {exc}")
                continue
            if not r.capacity.fits or not r.pareto.points:
                skipped.append(f"{name}: the cache holds no request of this length")
                continue
            layouts.append(name)
            points += r.pareto.points
            first = first or r
    if first is None:
        raise FlopcalcError(f"no layout of {devices} devices holds this model and a request: "
                            + "; ".join(skipped[:3]))
    best = front(points)
    first.pareto.devices, first.pareto.layouts, first.pareto.skipped = devices, layouts, skipped
    first.pareto.points, first.pareto.searched = best, len(points)
    first.pareto.model = ("steady state of a closed loop (predict.scheduler.steady_state) at "
                          "concurrencies 1, 2, 4, ... up to what each layout's cache and "
                          "max_num_seqs hold; estimates; a point is on the front when no other "
                          "has more tokens/s per device at as many tokens/s per user")
    first.timing = None
    return first


COMMAND = Command(
    "serve", "Serving capacity as vLLM 0.33.0 computes it (paged KV blocks, cache groups, "
    "hybrid state pages, max concurrency and the logged KV cache size), prefix caching, "
    "speculative decoding, and with --prompt the time a user sees (TTFT, TPOT).",
    (*pick("accelerator", "count", "tp", "pp", "dp", "ep", "max_model_len",
           "gpu_memory_utilization", "block_size", "kv_cache_dtype", "max_num_batched_tokens",
           "max_num_seqs", "async_scheduling", "prefix_caching", "hybrid_kv_cache_manager",
           "mamba_cache_dtype", "mamba_ssm_cache_dtype", "gdn_prefill_backend",
           "mxfp4_backend", "max_loras", "max_lora_rank", "max_cpu_loras", "kv_memory",
           "kv_blocks", "weights_dtype", "experts_dtype", "language_model_only",
           "shared_prefix", "draft",
           "draft_tokens", "acceptance", "prompt", "gen", "batch", "network", "efficiency",
           "compute_dtype", "compute_efficiency", "memory_efficiency", "peak", "bandwidth"),
     OPTIONS["attention"].but(default="causal", why=CAUSAL),
     *pick("engine", "concurrency", "request_rate", "requests", "random_state", "range_ratio",
           "pareto",
           "price", "board_watts", "prefill_devices", *ENGINE_OPTIONS, "set")),
    run, presentation=("format", "brief", "plot"), plotted="the Pareto front (with --pareto)",
    report=("serve", "ServeReport"),
    render=Render("serve", "serve_csv", "serve_tables", "serve_brief", "plot_serve"))
