"""Serving under load: throughput, TTFT, TPOT and end-to-end latency at a concurrency or a
request rate (`predict.scheduler` over `predict.engine_step`), and the Pareto front of
tokens/s per device against tokens/s per user over layouts and concurrencies.

Decisions where nothing forces one: every replica (--dp) gets an equal share of the users
(closed loop) or of the arrivals (open loop), so one replica is simulated and the throughputs
scaled by the replicas; tokens/s per user is 1 / TPOT (the decode speed a user sees, as
benchmark sites plot "interactivity"); the throughputs count generated tokens only.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any, Optional, Union

from ..records import dataclass
from ..engines import vllm as E
from ..predict.latency import DeviceCosts, Network
from ..errors import FlopcalcError
from ..models.spec import ModelSpec
from ..predict.engine_step import ENGINES, Efficiencies, StepModel
from ..predict.scheduler import MAX_REQUESTS, Workload, metrics, request_count, retime, \
    simulate, steady_state


@dataclass
class LoadOptions:
    engine: str  # vllm | sglang | trtllm
    concurrency: Union[int, str, None]  # N, "max", or None
    rate: Optional[float]  # requests/s, all replicas together
    requests: int  # 0: the default
    random_state: int
    eff: Efficiencies
    attention_peak: Optional[float] = None
    price: Optional[float] = None  # per device-hour
    prefill_devices: Union[int, str, None] = None  # disaggregated: the prefill pool, or auto
    # one device's board power limit (TDP) in W, and its source (the accelerator preset's
    # `board_watts`, or --board-watts): energy per output token; None: not reported
    board_watts: Optional[float] = None
    board_watts_source: str = ""
    range_ratio: float = 0.0  # lengths drawn per request (predict/scheduler.py); 0: fixed


@dataclass
class Interval:
    low: float
    estimate: float
    high: float


@dataclass
class Metric(Interval):
    """A mean as an interval, its percentiles beside (each an interval)."""

    p50: Interval = field(default_factory=lambda: Interval(0, 0, 0))
    p90: Interval = field(default_factory=lambda: Interval(0, 0, 0))
    p99: Interval = field(default_factory=lambda: Interval(0, 0, 0))


@dataclass
class Performance:
    engine: str
    loop: str  # closed, open, offline
    concurrency: Optional[int]  # users in all (closed loop)
    request_rate: Optional[float]  # requests/s in all (open loop)
    replicas: int
    devices: int
    slots_per_replica: int  # requests of this length the cache of one replica holds
    max_num_seqs: int
    requests_simulated: int  # per replica
    steps_simulated: int
    largest_step_sequences: int
    output_tokens_per_second: Interval
    output_tokens_per_second_per_gpu: Interval
    output_tokens_per_second_per_user: Interval
    requests_per_second: Interval
    ttft_seconds: Metric
    tpot_seconds: Metric
    e2e_seconds: Metric
    steady_step_seconds: Interval  # a closed loop's steady state (closed form)
    steady_batch: float
    binds: str
    dollars_per_million_output_tokens: Optional[Interval]
    model: list[str]
    joules_per_output_token: Optional[Interval] = None  # the accelerators' boards only


@dataclass
class Speculation:
    """Speculative decoding under load: k draft tokens, the expected tokens per step, and
    the draft model with its device costs (None: the model's MTP modules)."""

    tokens: int
    expected: float
    draft: Optional[ModelSpec]
    draft_costs: Optional[DeviceCosts]
    head_bytes: float  # the LM head on a device (an MTP draft runs it)


def step_model(spec: ModelSpec, costs: DeviceCosts, peak: float, bandwidth: float, net: Network,
               opts: LoadOptions, prompt: int, gen: int,
               speculation: Optional[Speculation] = None, max_num_seqs: int = 256,
               max_num_batched_tokens: int = 8192) -> StepModel:
    contexts = (prompt + 1, prompt + max(gen, 2))
    m = StepModel(spec, costs, peak, bandwidth, net, opts.eff, ENGINES[opts.engine], contexts,
                  opts.attention_peak)
    if speculation is not None:
        draft = None
        if speculation.draft is not None and speculation.draft_costs is not None:
            draft = StepModel(speculation.draft, speculation.draft_costs, peak, bandwidth, net,
                              opts.eff, ENGINES[opts.engine], contexts, opts.attention_peak)
        m.speculate(speculation.tokens, speculation.expected, draft, speculation.head_bytes)
    m.capture_limit(max_num_seqs, max_num_batched_tokens)
    return m


def slots(plan: E.Plan, length: int) -> int:
    return max(0, int(E.concurrency_at(plan, length)))


def resolve_users(opts: LoadOptions, max_num_seqs: int, room: int, dp: int) -> Optional[int]:
    """Users in all for a closed loop: the number given, or `max` (what the engines run)."""
    c = opts.concurrency
    if c is None:
        return None
    per = min(max_num_seqs, room)
    if c == "max":
        return per * dp
    assert isinstance(c, int)
    if c > max_num_seqs * dp:
        raise FlopcalcError(f"--concurrency {c:,} is more than --max-num-seqs {max_num_seqs:,} x "
                            f"{dp} replica(s): the engine's max_num_seqs wins and the rest wait "
                            "in its queue; raise --max-num-seqs or give --concurrency max")
    return c


def build_performance(spec: ModelSpec, costs: DeviceCosts, plan: E.Plan, *, peak: float,
                      bandwidth: float, net: Network, opts: LoadOptions, prompt: int, gen: int,
                      max_num_seqs: int, max_num_batched_tokens: int, dp: int,
                      devices: int, speculation: Optional[Speculation] = None) -> Performance:
    if opts.concurrency is not None and opts.rate is not None:
        raise FlopcalcError("give --concurrency N (a closed loop) or --request-rate R (Poisson "
                            "arrivals), not both")
    if opts.rate is not None and opts.rate <= 0:
        raise FlopcalcError(f"--request-rate {opts.rate:g} must be more than 0 requests/s")
    room = slots(plan, prompt + gen)
    if room < 1:
        raise FlopcalcError(f"the cache holds no request of {prompt + gen:,} tokens; shorten "
                            "--prompt/--gen or add memory")
    users = resolve_users(opts, max_num_seqs, room, dp)
    model = step_model(spec, costs, peak, bandwidth, net, opts, prompt, gen, speculation,
                       max_num_seqs, max_num_batched_tokens)
    per_users = math.ceil(users / dp) if users is not None else None
    rate = opts.rate / dp if opts.rate is not None else None
    w = Workload(prompt, gen, max_num_seqs, max_num_batched_tokens, room,
                 concurrency=per_users, rate=rate, requests=opts.requests,
                 random_state=opts.random_state, range_ratio=opts.range_ratio)
    if rate is None:  # a closed loop: one schedule, timed at each end
        base = simulate(model, w, 1)
        runs = [retime(base, 0), base, retime(base, 2)]
    else:
        runs = [simulate(model, w, i) for i in range(3)]
    eng = ENGINES[opts.engine]
    ms = [metrics(r, eng.request_s[i]) for i, r in enumerate(runs)]
    # a closed loop of users not divisible by dp: replicas hold ceil or floor; scale by share
    scale = dp if users is None else dp * users / (per_users * dp)

    def interval(get, invert: bool = False) -> Interval:
        v = [get(m) for m in ms]
        lo, est, hi = (v[2], v[1], v[0]) if invert else (v[0], v[1], v[2])
        return Interval(lo, est, hi)

    def metric(name: str) -> Metric:
        m = Metric(*(ms[i][name]["mean"] for i in range(3)))
        for q in ("p50", "p90", "p99"):
            setattr(m, q, Interval(*(ms[i][name][q] for i in range(3))))
        return m

    tput = interval(lambda m: m["throughput"]["output_tokens_per_s"] * scale, True)
    tpot = metric("tpot")
    per_user = Interval(*(1 / x if x else 0.0 for x in (tpot.high, tpot.estimate, tpot.low)))
    steady_users = per_users if per_users is not None else min(max_num_seqs, room)
    st = steady_state(model, steady_users, prompt, gen, max_num_batched_tokens)
    price = None
    if opts.price is not None:  # $ per device-hour x devices / (tokens per hour) x 1e6
        price = Interval(*(opts.price * devices / (t * 3600) * 1e6 if t else 0.0
                           for t in (tput.high, tput.estimate, tput.low)))
    energy, energy_lines = None, []
    if opts.board_watts is not None:
        if opts.board_watts <= 0:
            raise FlopcalcError(f"board power {opts.board_watts:g} W must be more than 0")
        from ..predict.energy import POWER_SHARE, joules_per_token

        energy = Interval(*joules_per_token(opts.board_watts, devices,
                                            (tput.low, tput.estimate, tput.high)))
        energy_lines = [
            f"energy: {devices} x {opts.board_watts:g} W ({opts.board_watts_source or 'given'})"
            f" x {POWER_SHARE[1]:g} ({POWER_SHARE[0]:g}-{POWER_SHARE[2]:g}) of it while "
            "serving ('Energy Use of AI Inference: Efficiency Pathways and Test-Time Compute', "
            "2025) / output tokens/s; boards only (no host, network or PUE)"]
    loop = "open" if rate is not None else ("offline" if opts.concurrency == "max" else "closed")
    return Performance(
        engine=eng.title, loop=loop, concurrency=users, request_rate=opts.rate, replicas=dp,
        devices=devices, slots_per_replica=room, max_num_seqs=max_num_seqs,
        requests_simulated=request_count(w), steps_simulated=runs[1].steps,
        largest_step_sequences=runs[1].max_sequences,
        output_tokens_per_second=tput,
        output_tokens_per_second_per_gpu=Interval(tput.low / devices, tput.estimate / devices,
                                                  tput.high / devices),
        output_tokens_per_second_per_user=per_user,
        requests_per_second=interval(lambda m: m["throughput"]["requests_per_s"] * scale, True),
        ttft_seconds=metric("ttft"), tpot_seconds=tpot, e2e_seconds=metric("e2e"),
        steady_step_seconds=Interval(*st.step_s), steady_batch=st.batch,
        binds=model.binds(st.batch, st.batch * (prompt + gen / 2)),
        dollars_per_million_output_tokens=price, joules_per_output_token=energy,
        model=_model_lines(eng, opts, w) + energy_lines + ([
            f"speculative decoding: {speculation.tokens} draft tokens verified per decode "
            f"step (the target over k + 1 tokens, the cache read once), {speculation.expected:.4g} "
            "tokens a step expected; draft: "
            + ("its own decode step" if speculation.draft is not None else
               "one decoder layer of the target's step + the LM head (MTP)")]
            if speculation is not None else []))


EAGER_OPS_NOTE = ("each operator at 5/15/30 µs (PyTorch's dispatch and launch), operators per "
                  "layer counted per slot (attention 16, latent attention 35, MLP 8, MoE 40)")
OVERLAP_NOTE = ("the kernels hide the host's time fully at the low end, half at the estimate, "
                "not at all at the high end")


def _model_lines(eng: Any, opts: LoadOptions, w: Workload) -> list[str]:
    return [
        "step time = weight GEMMs max(FLOPs/(peak x matmul share), weight bytes/(bandwidth x "
        "memory share)) + attention max(FLOPs/(peak x attention share), cache bytes/(bandwidth "
        "x memory share)) + collectives (NCCL alpha-beta on the network preset x 0.7/1/1.5) + "
        "engine overhead per step and per layer; MoE reads only the experts the step's tokens "
        "touch (uniform routing)",
        f"efficiencies: {opts.eff.source}",
        f"engine overhead ({eng.name}): {eng.step_s[1] * 1e3:g} ms per step "
        f"({eng.step_s[0] * 1e3:g}-{eng.step_s[2] * 1e3:g}) + {eng.layer_s[1] * 1e6:g} µs per "
        f"layer ({eng.layer_s[0] * 1e6:g}-{eng.layer_s[2] * 1e6:g}): {eng.source}; "
        f"{eng.request_s[1] * 1e3:g} ms per request in the API server "
        f"({eng.request_s[0] * 1e3:g}-{eng.request_s[2] * 1e3:g}) added to TTFT and end to end",
        "GEMM rows padded to tiles of 64 (dense: the step's tokens; experts: the tokens routed "
        "to each expert touched); a GEMM's rate x (K/(K+718)) / (8192/(8192+718)) at its depth "
        "K on a device, at most 1 (fitted through DeepGEMM's published H800 rates)",
        "prefill attention in the forward's form (latent attention decompressed per head, as "
        "the engines' prefill runs it); expert parallelism inside the tensor-parallel group "
        "all-reduces the MoE output, wider expert parallelism dispatches by all-to-alls",
        f"CUDA graphs: {eng.graph_source}; a step no graph captures runs eagerly: the host "
        f"issues {EAGER_OPS_NOTE}; {OVERLAP_NOTE}",
        "latent-attention and MoE layers: + 0.49 µs (0.245-0.735) per prefill token and layer, "
        "fitted on TensorRT-LLM issue 5929's DeepSeek-R1 TTFT slope on H200 and B200 (the "
        "development half of tests/serving_runs.py), attributed to no kernel",
        "scheduler: continuous batching, chunked prefill (decodes first, then prefills in "
        "arrival order within max_num_batched_tokens), at most max_num_seqs running and what "
        "the cache holds at the workload's length; "
        + (f"lengths drawn per request uniformly within ±{w.range_ratio:g} of --prompt and "
           f"--gen (vllm bench serve's --random-range-ratio; the cache holds requests of the "
           f"mean length), random state {w.random_state}; " if w.range_ratio else "")
        + (f"closed loop of {w.concurrency} users per replica" if w.concurrency is not None
           else f"Poisson arrivals at {w.rate:g}/s per replica, random state "
           f"{w.random_state}")
        + f"; {request_count(w):,} requests simulated per replica (at most "
        f"max({MAX_REQUESTS:,}, 2 x concurrency)), reported over all of them",
        "low / high: every efficiency and overhead at its best / worst end; percentiles of "
        "the simulated requests at each end",
    ]


# ------------------------------------------------------------------------------------ Pareto


@dataclass
class ParetoPoint:
    layout: str  # tp4 dp2 ep8
    tp: int
    dp: int
    ep: int
    concurrency: int  # users in all
    output_tokens_per_second_per_gpu: float  # estimates
    output_tokens_per_second_per_user: float
    tpot_seconds: float
    ttft_seconds: float
    on_front: bool


@dataclass
class Pareto:
    devices: int
    engine: str
    prompt: int
    gen: int
    searched: int  # points evaluated
    layouts: list[str]
    skipped: list[str]  # layouts that do not fit, and why
    points: list[ParetoPoint]  # the front, by tokens/s per user
    model: str


def pareto_points(spec: ModelSpec, costs: DeviceCosts, plan: E.Plan, *, peak: float,
                  bandwidth: float, net: Network, opts: LoadOptions, prompt: int, gen: int,
                  max_num_seqs: int, max_num_batched_tokens: int, tp: int, dp: int,
                  ep: int, speculation: Optional[Speculation] = None) -> list[ParetoPoint]:
    """Steady states of one layout at concurrencies 1, 2, 4, ... up to what it holds."""
    room = min(max_num_seqs, slots(plan, prompt + gen))
    if room < 1:
        return []
    model = step_model(spec, costs, peak, bandwidth, net, opts, prompt, gen, speculation,
                       max_num_seqs, max_num_batched_tokens)
    out = []
    users = 1
    devices = tp * dp
    while True:
        u = min(users, room)
        st = steady_state(model, u, prompt, gen, max_num_batched_tokens)
        t = st.step_s[1]
        tput = u * gen / (st.cycle_steps * t) * dp
        out.append(ParetoPoint(f"tp{tp} dp{dp}" + (f" ep{ep}" if ep > 1 else ""), tp, dp, ep,
                               u * dp, tput / devices, 1 / t, t, st.prefill_steps * t, False))
        if u == room:
            break
        users *= 2
    return out


def front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """The points no other beats on both tokens/s per device and tokens/s per user."""
    best = []
    for p in sorted(points, key=lambda p: (-p.output_tokens_per_second_per_user,
                                           -p.output_tokens_per_second_per_gpu)):
        if not best or p.output_tokens_per_second_per_gpu > \
                best[-1].output_tokens_per_second_per_gpu:
            p.on_front = True
            best.append(p)
    return best


# ----------------------------------------------------------------------------- disaggregated


@dataclass
class Disaggregated:
    """Prefill and decode on separate pools (xPyD): what each pool sustains, the KV transfer
    per request, and what a closed loop of users sees."""

    prefill_devices: int
    decode_devices: int
    prefill_replicas: int
    decode_replicas: int
    users: int
    prompts_per_prefill_step: float
    kv_transfer_bytes: int  # one request's cache, all devices of a replica
    kv_transfer_seconds: Interval
    prefill_step_seconds: Interval
    decode_batch: float  # sequences per decode replica
    decode_step_seconds: Interval
    prefill_requests_per_second: Interval  # the pool's capacity
    decode_requests_per_second: Interval
    bottleneck: str
    output_tokens_per_second: Interval
    output_tokens_per_second_per_gpu: Interval
    output_tokens_per_second_per_user: Interval
    ttft_seconds: Interval
    tpot_seconds: Interval
    model: list[str]
    splits: list[str] = field(default_factory=list)  # with --prefill-devices auto: each tried


def best_split(spec: ModelSpec, costs: DeviceCosts, plan: E.Plan, *, replica_devices: int,
               devices: int, **kw: Any) -> Disaggregated:
    """Every split of the devices into whole replicas (at least one each): the one with the
    most output tokens/s (estimate)."""
    tried, best = [], None
    for n in range(replica_devices, devices, replica_devices):
        d = build_disaggregated(spec, costs, plan, replica_devices=replica_devices,
                                devices=devices, prefill_devices=n, **kw)
        tried.append(f"{n}P{devices - n}D: {d.output_tokens_per_second.estimate:,.0f} tokens/s "
                     f"({d.bottleneck})")
        if best is None or d.output_tokens_per_second.estimate > \
                best.output_tokens_per_second.estimate:
            best = d
    if best is None:
        raise FlopcalcError(f"--prefill-devices auto needs at least two replicas of "
                            f"{replica_devices} devices in --count {devices}")
    best.splits = tried
    return best


def build_disaggregated(spec: ModelSpec, costs: DeviceCosts, plan: E.Plan, *, peak: float,
                        bandwidth: float, net: Network, opts: LoadOptions, prompt: int, gen: int,
                        max_num_seqs: int, max_num_batched_tokens: int, replica_devices: int,
                        devices: int, prefill_devices: int,
                        speculation: Optional[Speculation] = None) -> Disaggregated:
    """A closed loop of users over a prefill pool and a decode pool, in steady state (closed
    form): a prefill replica runs whole prompts, max_num_batched_tokens a step; a request's
    cache then crosses the scale-out network (each device sends its share over its NIC); a
    decode replica runs its share of the users' decodes. Throughput is the least of what the
    users ask, the prefill pool and the decode pool give."""
    if prefill_devices >= devices:
        raise FlopcalcError(f"--prefill-devices {prefill_devices} of --count {devices} leaves no "
                            "decode pool: give fewer prefill devices")
    if prefill_devices % replica_devices or (devices - prefill_devices) % replica_devices:
        raise FlopcalcError(f"--prefill-devices {prefill_devices} and the "
                            f"{devices - prefill_devices} decode devices must each be whole "
                            f"replicas of {replica_devices} devices (tp x pp)")
    if opts.concurrency is None or opts.concurrency == "max":
        raise FlopcalcError("--prefill-devices times a closed loop: give --concurrency N")
    model = step_model(spec, costs, peak, bandwidth, net, opts, prompt, gen, speculation,
                       max_num_seqs, max_num_batched_tokens)
    dp_p, dp_d = prefill_devices // replica_devices, (devices - prefill_devices) // replica_devices
    users = int(opts.concurrency)
    room = min(max_num_seqs, slots(plan, prompt + gen))
    batch = min(users / dp_d, room)
    n_d = math.ceil((gen - 1) / model.spec_expect - 1e-9) if gen > 1 else 0
    per_step = max(1.0, max_num_batched_tokens / prompt)  # prompts a prefill step holds
    p_attn = model.prefill_attn(0, prompt)
    p_kv = prompt * model.token_bytes + 2 * model.state_bytes
    n = min(per_step, users)
    steps_per_prompt = max(1, math.ceil(prompt / max_num_batched_tokens))
    t_p = model.time(0, 0, pre=(n * prompt / steps_per_prompt, n / steps_per_prompt,
                                n * p_attn / steps_per_prompt, n * p_kv / steps_per_prompt))
    t_p = tuple(t * steps_per_prompt for t in t_p)  # a batch of n prompts, every chunk
    t_d = model.time(batch, batch * (prompt + 1 + model.spec_expect * n_d / 2))
    kv_bytes = prompt * costs.token_bytes * replica_devices
    out_bw = float(net.spec.scale_out_bandwidth) if net.spec is not None else 0.0
    kv_s = prompt * costs.token_bytes / out_bw if out_bw else 0.0
    kv = Interval(kv_s * 0.8, kv_s, kv_s * 1.5)  # NIC share 0.8-1.5x, as the collectives
    ends = []
    for i in range(3):
        ttft = t_p[i] + (kv_s * (0.8, 1.0, 1.5)[i]) + ENGINES[opts.engine].request_s[i]
        cycle = ttft + n_d * t_d[i]
        pre_cap = dp_p * n / t_p[i]
        dec_cap = dp_d * batch / (n_d * t_d[i]) if n_d else float("inf")
        asked = users / cycle
        rps = min(asked, pre_cap, dec_cap)
        which = ("users" if rps == asked else "prefill pool" if rps == pre_cap
                 else "decode pool")
        ends.append((ttft, t_d[i] * n_d / max(gen - 1, 1), rps, pre_cap, dec_cap, which))
    # times at the low end give the high rates: rates run from the high-time end up
    lo, est, hi = ends
    tput = Interval(hi[2] * gen, est[2] * gen, lo[2] * gen)
    return Disaggregated(
        prefill_devices, devices - prefill_devices, dp_p, dp_d, users, n, kv_bytes, kv,
        Interval(*t_p), batch, Interval(*t_d), Interval(hi[3], est[3], lo[3]),
        Interval(hi[4], est[4], lo[4]), est[5], tput,
        Interval(tput.low / devices, tput.estimate / devices, tput.high / devices),
        Interval(*(1 / e[1] if e[1] else 0.0 for e in (hi, est, lo))),
        Interval(lo[0], est[0], hi[0]), Interval(lo[1], est[1], hi[1]),
        ["prefill pool: whole prompts, min(users, max_num_batched_tokens / prompt) a step; "
         "KV transfer: the prompt's cache, each device's share over its NIC (the network "
         "preset's scale-out bandwidth, 0.8-1.5x); decode pool: users / replicas sequences a "
         "step; throughput = min(users / (TTFT + decode time), prefill capacity, decode "
         "capacity); steady state, closed form (no queueing tail)"])
