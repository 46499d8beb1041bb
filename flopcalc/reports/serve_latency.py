"""`serve`'s time a user sees on an idle engine (`predict.latency`): time to the first token,
prefill chunk by chunk, and time per output token, decode step by decode step; the request and
the machine it is timed on, as records."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from ..counting.inference import affine_segments
from ..counting.model import model_flops, workload
from ..engines import vllm as E
from ..errors import FlopcalcError
from ..kinds import base as p
from ..models.accelerators import Hardware
from ..models.spec import ModelSpec
from ..predict.latency import DeviceCosts, Network, Speeds, Step
from ..predict.roofline import decode_time

MAX_CHUNKS = 100_000  # prefill steps timed one by one


@dataclass(frozen=True)
class Request:
    """What one request asks for (--prompt, --gen, --batch, --shared-prefix) and how its
    prefill's attention is counted (--attention)."""

    prompt: Optional[int] = None
    gen: int = 0
    batch: int = 1
    shared_prefix: Optional[int] = None
    attention: str = "causal"

    @property
    def tokens(self) -> Optional[int]:
        """prompt + gen: what the request holds at its end (None without --prompt)."""
        return self.prompt + self.gen if self.prompt is not None else None


@dataclass(frozen=True)
class Machine:
    """The device a request is timed on, the network between devices and the efficiencies of
    the estimate (the bound runs at peak)."""

    hw: Optional[Hardware] = None
    network: Network = Network("", None)
    compute_efficiency: Optional[Fraction] = None
    memory_efficiency: Optional[Fraction] = None
    efficiency_source: str = ""

    def speeds(self) -> Optional[Speeds]:
        """Peak and bandwidth with the efficiencies (1 when not given); None without a
        device's bandwidth."""
        hw = self.hw
        if hw is None or hw.bandwidth is None:
            return None
        return Speeds(hw.peak_flops, hw.bandwidth, self.compute_efficiency or Fraction(1),
                      self.memory_efficiency or Fraction(1))


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


def body_flops(spec: ModelSpec, n: int, attention: str = "causal") -> int:
    """Prefill FLOPs of one sequence of n tokens without the LM head (engines compute the
    logits of the last token only); causal by default: engines skip masked key blocks."""
    if n == 0:
        return 0
    parts = model_flops(spec, workload(spec, n, None, 1, attention))  # type: ignore[arg-type]
    return p.total(parts) - sum(x.value for x in parts if x.head)


def head_flops(spec: ModelSpec, tokens: int) -> int:
    # (T×d)·(d×V) → 2·T·d·V
    return 2 * tokens * spec.d_model * spec.vocab_size if spec.head != "none" else 0


def step_time(step: Step, speeds: Speeds, net: Network) -> StepTime:
    return StepTime(p.ceil_fraction(step.flops), p.ceil_fraction(step.bytes),
                    p.ceil_fraction(step.comm_bytes), step.collectives,
                    float(step.seconds(speeds, net, False)), float(step.seconds(speeds, net, True)),
                    step.binds(speeds))


def timing(spec: ModelSpec, costs: DeviceCosts, speeds: Speeds, net: Network, engine: E.Engine,
           request: Request, dp: int, prefix: int, efficiency_source: str) -> Timing:
    """TTFT of one request on an idle engine (its prompt past the `prefix` tokens the prefix
    cache serves, in chunks of max_num_batched_tokens) and TPOT at `request.batch` sequences
    on each of `dp` replicas."""
    prompt, gen, batch, attention = request.prompt, request.gen, request.batch, request.attention
    assert prompt is not None
    chunk = engine.max_num_batched_tokens
    start = prefix  # tokens served from the prefix cache
    if E.cdiv(prompt - start, chunk) > MAX_CHUNKS:
        raise FlopcalcError(f"--prompt {prompt:,} in chunks of --max-num-batched-tokens "
                            f"{chunk:,} is more than {MAX_CHUNKS:,} engine steps; give a larger "
                            "--max-num-batched-tokens")
    bound = est = Fraction(0)
    chunks, a = 0, start
    body_a = body_flops(spec, a, attention)
    prefill = 0
    while a < prompt:
        b = min(prompt, a + chunk)
        body_b = body_flops(spec, b, attention)
        flops = body_b - body_a + (head_flops(spec, 1) if b == prompt else 0)
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
        network=network_info(net),
        speeds={"peak_flops": speeds.peak, "bandwidth": speeds.bandwidth,
                "compute_efficiency": float(speeds.compute_efficiency),
                "memory_efficiency": float(speeds.memory_efficiency),
                "source": efficiency_source},
        ttft_bound_s=float(bound), ttft_estimate_s=float(est), prefill_flops=prefill,
        first_step=step_time(first, speeds, net), last_step=step_time(last, speeds, net),
        tpot_bound_s=float(tpot_b), tpot_estimate_s=float(tpot_e),
        tokens_per_s_per_sequence_bound=float(1 / tpot_b),
        tokens_per_s_per_sequence_estimate=float(1 / tpot_e),
        tokens_per_s_aggregate_bound=float(batch * dp / tpot_b),
        tokens_per_s_aggregate_estimate=float(batch * dp / tpot_e),
        request_bound_s=float(bound + decode_bound), request_estimate_s=float(est + decode_est))


def network_info(net: Network) -> dict[str, Any]:
    n = net.spec
    if n is None:
        return {"name": None}
    return {"name": net.name, "title": n.title, "domain_size": n.domain_size,
            "scale_up_bandwidth": n.scale_up_bandwidth,
            "scale_out_bandwidth": n.scale_out_bandwidth,
            "scale_up_efficiency": n.scale_up_efficiency,
            "scale_out_efficiency": n.scale_out_efficiency, "latency_base_ns": n.latency_base_ns,
            "latency_scale_up_ns": n.latency_scale_up_ns}


def conventions(t: Timing, attention: str, net: Network) -> list[str]:
    """How the times were modelled, one line each."""
    where = (f"on {net.name}" if net.spec is not None else "not timed (no network)")
    return [
        "time per step on one device: bound max(FLOPs / peak, bytes / bandwidth) + "
        "collective bytes / raw link bandwidth; estimate with compute at "
        f"{t.speeds['compute_efficiency']:.4g} of peak, memory at "
        f"{t.speeds['memory_efficiency']:.4g} of bandwidth "
        f"({t.speeds['source']}), collectives by NCCL's alpha-beta model {where}",
        "FLOPs / tp per device; bytes: each tensor's share, experts expected under uniform "
        "routing, the KV the device holds for the keys attended, states read and written",
        "prefill: chunks of max_num_batched_tokens, "
        + ("causal attention (the default: masked blocks skipped)" if attention == "causal"
           else "full attention (--attention full: every pair, chunk after chunk)")
        + ", the LM head on the last token only; TTFT for one request on an idle "
        "engine; TPOT the mean over the generated tokens at --batch sequences; decode "
        "steps over the keys each layer caches",
        "collectives: tensor parallelism all-reduces T x d (bf16) after each sublayer (2 per "
        "layer); expert parallelism dispatches and combines T·k·d by all-to-all; pipeline "
        "stages run one after another (no micro-batch pipelining)",
    ]
