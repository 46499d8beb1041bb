"""The scheduler: continuous batching with chunked prefill on one replica, simulated step by
step (`simulate`, with `simpy`), and the closed form of a closed loop's steady state
(`steady_state`).

Each step, as vLLM V1's scheduler builds it (`v1/core/sched/scheduler.py`): every running
sequence that has its first token decodes one token; what is left of the step's token budget
(`max_num_batched_tokens`) goes to prefills, first to those already begun, then to waiting
requests in arrival order, while fewer than `max_num_seqs` run and the cache holds one more
request. A prefill that finishes in a step yields the request's first token at the step's end
(its TTFT); its other gen − 1 tokens come one per step after. The cache holds
`slots` requests of the workload's length (the engine's block arithmetic,
`engines.vllm.concurrency_at`): a request waits until one finishes (reserving a request's
whole length on admission, as TensorRT-LLM's GUARANTEED_NO_EVICT policy does; vLLM allocates
block by block and preempts, which gives the same schedule while nothing is preempted).

Closed loop (`concurrency`: `vllm bench serve --max-concurrency`): that many users, each
sending a request when its last one finishes. Open loop (`rate`): Poisson arrivals drawn from
a fixed random state.

Lengths are fixed, or drawn per request as `vllm bench serve`'s random dataset draws them
(`range_ratio` r, its `--random-range-ratio`; vllm/benchmarks/datasets.py,
`_get_sampling_params`): prompts uniform over the integers [⌊P(1 − r)⌋, ⌈P(1 + r)⌉],
outputs over [max(1, ⌊G(1 − r)⌋), ⌈G(1 + r)⌉], from a random state of their own (the tokenizer's
special tokens, which vLLM takes off the prompt, are not). The cache then holds `slots`
requests of the mean length.
The simulation runs `requests` requests (at most `MAX_REQUESTS`, or twice the concurrency)
and reports over all of them, as benchmark clients do (ramp-up and drain included).
"""

from __future__ import annotations

import math
import random
from dataclasses import field
from typing import Optional

from ..records import dataclass
from ..errors import FlopcalcError
from .engine_step import Chunk, StepModel

MAX_REQUESTS = 2000
MAX_STEPS = 200_000  # a simulation's bound: ~a few seconds of Python
MAX_REQUESTED = 100_000  # --requests, per replica


@dataclass
class Workload:
    prompt: int
    gen: int
    max_num_seqs: int
    max_num_batched_tokens: int
    slots: int  # requests of this length the cache holds at once
    concurrency: Optional[int] = None  # closed loop
    rate: Optional[float] = None  # open loop, requests/s on this replica
    requests: int = 0  # 0: the default (10 x concurrency, or MAX_REQUESTS)
    random_state: int = 0
    range_ratio: float = 0.0  # lengths drawn per request (see the module docstring)


def length_bounds(length: int, ratio: float, least: int = 0) -> tuple[int, int]:
    """The integers a length is drawn from at a range ratio: [⌊L(1 − r)⌋, ⌈L(1 + r)⌉], the
    lower at least `least` (vLLM's outputs: 1)."""
    return max(least, math.floor(length * (1 - ratio))), math.ceil(length * (1 + ratio))


@dataclass
class Request:
    arrival: float
    prompt: int = 0
    gen: int = 0
    prefilled: int = 0
    admitted: bool = False
    first: Optional[float] = None
    finish: Optional[float] = None
    steps: tuple[int, int, int] = (0, 0, 0)  # steps done at arrival, first token, finish


@dataclass
class Run:
    """One simulation at one end of the step times: the requests' times and the steps."""

    requests: list[Request]
    steps: int
    duration: float
    step_times: list[tuple[float, float, float]] = field(default_factory=list)
    max_sequences: int = 0


def retime(run: Run, end: int) -> Run:
    """The same schedule with the step times of another end. Exact for a closed loop, whose
    steps do not depend on their times (a request arrives when another finishes, at a step's
    end); an open loop's arrivals do, so it is simulated at each end."""
    clock = [0.0]
    for t in run.step_times:
        clock.append(clock[-1] + t[end])
    out = [Request(clock[r.steps[0]], r.prompt, r.gen, first=clock[r.steps[1]],
                   finish=clock[r.steps[2]], steps=r.steps) for r in run.requests]
    start = min(r.arrival for r in out)
    return Run(out, run.steps, clock[-1] - start, run.step_times, run.max_sequences)


def request_count(w: Workload) -> int:
    if w.requests:
        if w.requests > MAX_REQUESTED:
            raise FlopcalcError(f"--requests {w.requests:,} is more than the simulation's "
                                f"bound of {MAX_REQUESTED:,} per replica")
        return w.requests
    if w.concurrency is not None and w.concurrency > MAX_REQUESTED // 2:
        raise FlopcalcError(f"--concurrency {w.concurrency:,} per replica is more than the "
                            f"simulation's bound of {MAX_REQUESTED // 2:,}")
    if w.concurrency is not None:
        return min(max(10 * w.concurrency, 100), max(MAX_REQUESTS, 2 * w.concurrency))
    return MAX_REQUESTS


def simulate(model: StepModel, w: Workload, end: int) -> Run:
    """Simulate `w` on one replica with step times at `end` (0 low, 1 estimate, 2 high)."""
    try:
        import simpy
    except ImportError:  # pragma: no cover - the extra is installed with the tests
        raise FlopcalcError("serving under load needs simpy: pip install 'flopcalc[predict]'") \
            from None
    env = simpy.Environment()
    n = request_count(w)
    rng = random.Random(w.random_state)
    waiting: list[Request] = []  # arrived, not admitted
    prefilling: list[Request] = []  # admitted, prompt not done
    done: list[Request] = []
    state = {"decoding": 0, "ctx_sum": 0, "sent": 0, "steps": 0, "max_sequences": 0}
    finishing: dict[int, list[Request]] = {}  # step index -> requests that end with it
    wake = [env.event()]
    times: list[tuple[float, float, float]] = []
    M = w.max_num_batched_tokens
    limit = min(w.max_num_seqs, w.slots)
    per_step = getattr(model, "spec_expect", 1.0)  # tokens a decode step yields
    draw = random.Random(f"{w.random_state}-lengths")  # lengths apart from arrivals
    prompts, gens = length_bounds(w.prompt, w.range_ratio), \
        length_bounds(w.gen, w.range_ratio, least=1)

    def decode_steps(gen: int) -> int:
        return math.ceil((gen - 1) / per_step - 1e-9) if gen > 1 else 0

    def spent(r: Request) -> float:  # a finished request's context
        return r.prompt + 1 + per_step * decode_steps(r.gen)

    def arrive() -> None:
        if state["sent"] >= n:
            return
        state["sent"] += 1
        if w.range_ratio:
            p, g = draw.randint(*prompts), draw.randint(*gens)
        else:
            p, g = w.prompt, w.gen
        waiting.append(Request(env.now, p, g, steps=(state["steps"], 0, 0)))
        if not wake[0].triggered:
            wake[0].succeed()

    def poisson():
        assert w.rate is not None
        while state["sent"] < n:
            yield env.timeout(rng.expovariate(w.rate))
            arrive()

    def engine():
        while len(done) < n:
            running = state["decoding"] + len(prefilling)
            if running == 0 and not waiting:
                wake[0] = env.event()
                yield wake[0]
                continue
            batch = state["decoding"]
            budget = M - batch * (1 + getattr(model, "spec_k", 0))
            chunks: list[Chunk] = []
            served: list[tuple[Request, int]] = []
            for r in prefilling:
                if budget <= 0:
                    break
                take = min(r.prompt - r.prefilled, budget)
                chunks.append(Chunk(r.prefilled, r.prefilled + take,
                                    r.prefilled + take == r.prompt))
                served.append((r, take))
                budget -= take
            while waiting and budget > 0 and running < limit:
                r = waiting.pop(0)
                r.admitted = True
                prefilling.append(r)
                running += 1
                take = min(r.prompt, budget)
                chunks.append(Chunk(0, take, take == r.prompt))
                served.append((r, take))
                budget -= take
            state["max_sequences"] = max(state["max_sequences"], batch + len(chunks))
            ts = model.time(batch, state["ctx_sum"], tuple(chunks))
            yield env.timeout(ts[end])
            times.append(ts)
            k = state["steps"]
            state["steps"] += 1
            if k >= MAX_STEPS:
                raise FlopcalcError(
                    f"the simulation passed {MAX_STEPS:,} engine steps with {len(done):,} of "
                    f"{n:,} requests done: give fewer --requests, a shorter --gen, or a larger "
                    "--max-num-batched-tokens")
            # decodes advance: each context grows by the tokens a step yields
            state["ctx_sum"] += batch * per_step
            for r in finishing.pop(k, ()):
                r.finish = env.now
                r.steps = (r.steps[0], r.steps[1], k + 1)
                state["decoding"] -= 1
                state["ctx_sum"] -= spent(r)
                done.append(r)
                if w.concurrency is not None:
                    arrive()
            for r, take in served:
                r.prefilled += take
                if r.prefilled == r.prompt:
                    prefilling.remove(r)
                    r.first = env.now
                    r.steps = (r.steps[0], k + 1, k + 1)
                    if r.gen == 1:
                        r.finish = env.now
                        done.append(r)
                        if w.concurrency is not None:
                            arrive()
                    else:
                        # its next token is decoded at context P + 1, its last at P + G − 1
                        state["decoding"] += 1
                        state["ctx_sum"] += r.prompt + 1
                        finishing.setdefault(k + decode_steps(r.gen), []).append(r)

    if w.concurrency is not None:
        for _ in range(min(w.concurrency, n)):
            arrive()
    else:
        env.process(poisson())
    proc = env.process(engine())
    env.run(until=proc)
    allr = done
    start = min(r.arrival for r in allr)
    return Run(allr, state["steps"], env.now - start, times, state["max_sequences"])


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile, linearly interpolated (numpy's default)."""
    v = sorted(values)
    if not v:
        return 0.0
    pos = (len(v) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def metrics(run: Run, request_s: float = 0.0) -> dict[str, dict[str, float]]:
    """Means and P50/P90/P99 of TTFT, TPOT and end-to-end latency, and the throughputs;
    `request_s` of the API server added to each request's TTFT and end-to-end latency. TPOT
    is over the requests of more than one output token, as benchmark clients take it."""
    rs = run.requests
    ttft = [r.first - r.arrival + request_s for r in rs]  # type: ignore[operator]
    e2e = [r.finish - r.arrival + request_s for r in rs]  # type: ignore[operator]
    tpot = [(r.finish - r.first) / (r.gen - 1) for r in rs if r.gen > 1] or [0.0]  # type: ignore
    out: dict[str, dict[str, float]] = {}
    for name, v in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
        out[name] = {"mean": sum(v) / len(v), "p50": percentile(v, 50), "p90": percentile(v, 90),
                     "p99": percentile(v, 99)}
    out["throughput"] = {"output_tokens_per_s": sum(r.gen for r in rs) / run.duration,
                         "requests_per_s": len(rs) / run.duration}
    return out


@dataclass
class Steady:
    """A closed loop's steady state with fixed lengths: the mean step."""

    batch: float  # decoding sequences per step
    prefill_tokens: float
    prefill_steps: float  # steps a request's prefill spans
    cycle_steps: float  # steps from a request's admission to its last token
    step_s: tuple[float, float, float]


def steady_state(model: StepModel, users: int, prompt: int, gen: int, budget: int) -> Steady:
    """The steady state of `users` users in a closed loop with fixed lengths, each request
    staggered: a request spans k prefill steps and gen − 1 decode steps (a cycle of
    L = k + gen − 1 steps), so a step holds users·(gen − 1)/L decodes and users·prompt/L
    prompt tokens, at mean context prompt + gen/2; k = ceil(prompt / budget) unless the
    token budget binds, when L = users·(prompt + gen − 1)/budget. Exact when users divide the
    cycle evenly; the simulation gives the ramp and the percentiles."""
    per_step = getattr(model, "spec_expect", 1.0)
    n_d = math.ceil((gen - 1) / per_step - 1e-9) if gen > 1 else 0  # decode steps
    q = 1 + getattr(model, "spec_k", 0)  # tokens a decode feeds
    k = max(1, math.ceil(prompt / budget))
    cycle = k + n_d
    if users * (prompt + q * n_d) / cycle > budget:
        cycle = users * (prompt + q * n_d) / budget
        k = max(1.0, cycle - n_d)
    batch = users * n_d / cycle
    pre = users / cycle  # prompts per step
    ctx = batch * (prompt + 1 + per_step * n_d / 2)
    p_attn = pre * model.prefill_attn(0, prompt)
    p_kv = pre * (prompt * model.token_bytes + 2 * model.state_bytes
                  + (k - 1) * (model.k0 + model.k1 * prompt / 2))
    # the steps that hold a prefill chunk: k per request, users·k of every cycle
    share = min(1.0, users * k / cycle)
    whole = int(round(batch * q + prompt))  # such a step's tokens, its decodes and a chunk
    eager = share if model.eager(min(whole, budget), 1) else 0.0
    t = model.time(batch, ctx, pre=(pre * prompt, pre, p_attn, p_kv), eager_share=eager)
    return Steady(batch, pre * prompt, k, cycle, t)
