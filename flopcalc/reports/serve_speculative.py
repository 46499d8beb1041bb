"""`serve --draft`: speculative decoding, by the model's own multi-token-prediction modules or
by a draft model: the tokens a step yields on average, what verifying and drafting cost per
step, and the speed-up over plain decoding."""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..counting.layers import layer_decode
from ..counting.model import decode_flops
from ..counting.storage import stored
from ..engines import vllm as E
from ..errors import FlopcalcError
from ..kinds import base as p
from ..kinds.base import EXPERT
from ..models.quantization import Plan, plan_from_flags
from ..models.spec import ModelSpec
from ..predict.latency import Collective, DeviceCosts, Layout, Network, Speeds, Step, share
from .serve_latency import StepTime, head_flops, step_time

CONVENTION = ("speculative decoding: a step verifies k + 1 tokens per sequence (the target's "
              "decode over them) after k draft steps; expected tokens per step "
              "(1 − a^(k+1)) / (1 − a) (Leviathan et al. 2023)")


@dataclass(frozen=True)
class Draft:
    """A speculative drafter: the model's own MTP modules, or another model."""

    method: str  # mtp | draft
    name: str
    spec: Optional[ModelSpec]  # a draft model
    tokens: int
    acceptance: Fraction
    storage: Optional[Plan] = None  # how a draft model's weights are stored (None: bf16)


def draft_storage(draft: Draft) -> Plan:
    """How the drafter's weights are stored: its checkpoint's formats or the flags, else bf16."""
    return draft.storage or plan_from_flags("bf16", None)


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
             + n * head_flops(spec, batch))  # (B×d)·(d×V) per step
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
        tok = sum(E.token_bytes(x, costs.engine, False) for x in caches if x.layout != "state")
        if kind.cache().per_token:
            kv += kind.cache_reads(c, last) * Fraction(tok, kind.cache().per_token)
        token += tok
    comms: tuple[Collective, ...] = ()
    if layout.tp > 1:
        comms = (Collective("allreduce", batch * d * 2, layout.tp,
                            n * len(spec.mtp_layer.sublayers())),)
    step = Step(Fraction(flops, layout.tp), n * weights + batch * (kv + n * token), comms)
    return flops, step


def speculation(spec: ModelSpec, draft: Draft, costs: DeviceCosts, speeds: Optional[Speeds],
                net: Network, engine: E.Engine, layout: Layout, storage: Plan, c: int,
                batch: int) -> Speculation:
    """One speculative step at context c for `batch` sequences: the target verifying k + 1
    tokens, the drafter's k steps, and (on a device) their times against a plain decode
    step's."""
    k, a = draft.tokens, draft.acceptance
    expect = expected_tokens(k, a)
    verify = costs.decode(c, c + k, batch)
    verify_flops = p.total(decode_flops(spec, c, c + k, batch))
    draft_flops, draft_step = 0, Step(Fraction(0), Fraction(0))
    if draft.method == "mtp":
        draft_flops, draft_step = _mtp_step(spec, costs, c, batch, layout, storage, c + k - 1)
        draft_layers = spec.mtp_layers
        tok = sum(E.token_bytes(x, engine, False) for _, kind in spec.mtp_layer.slots()
                  for x in kind.engine_cache(layout.tp) if x.layout != "state") * draft_layers
    else:
        assert draft.spec is not None
        dcosts = DeviceCosts(draft.spec, Layout(layout.tp), engine, draft_storage(draft))
        draft_step = dcosts.decode_steps(c, c + k - 1, batch)
        draft_flops = p.total(decode_flops(draft.spec, c, c + k - 1, batch))
        draft_layers = draft.spec.n_layers("decoder")
        tok = dcosts.token_bytes
    vt = dt = None
    sb = se = tb = te = ub = ue = None
    if speeds is not None:
        vt, dt = step_time(verify, speeds, net), step_time(draft_step, speeds, net)
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
