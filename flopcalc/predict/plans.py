"""Training plans: the machine a step runs on, whether a layout fits in memory, the step time
of a layout over the inputs a user did not give, and the search over layouts (`flopcalc plan`).

Inputs a user does not give (micro-batch, virtual stages, recomputation, dropout) are
unknowns: the estimate takes the frameworks' defaults (micro-batch 1, no interleaving, no
dropout) and the least recomputation that fits, and the interval's low end takes the most
favourable allowed value of each, its high end the least favourable (every value that fits in
memory).

An unknown micro-batch ranges over those that leave at least p micro-batches per pipeline
(fewer would leave stages idle for most of the step: no schedule runs that way by choice).

The search (`search`) tries every tensor-parallel size that divides the heads and fits a fast
domain, every pipeline depth up to the layers, context-parallel sizes that divide the sequence
(with flash attention), expert-parallel sizes that divide the experts and the tp·cp·dp ranks of
a stage they are drawn from (gcd: only 1 for a dense model, so the search is bounded by the
model's heads, layers and experts, never by the device count), with ep > 1 each token
dispatcher (alltoall, allgather, flex), ZeRO stages 0-3, micro-batches that
divide each replica's batch, virtual stages that divide each stage's layers, sequence
parallelism whenever tp > 1 (it never costs time here and saves memory), and the least
recomputation that fits; it keeps the layouts that fit and ranks them by the estimate.
Compute per (tp, cp, ep, micro-batch, recomputation) is worked out once and reused across the
rest.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Iterable, Optional

from ..records import dataclass
from ..errors import FlopcalcError
from ..kinds import base as kb
from ..models.accelerators import Hardware
from ..models.hardware import Platform
from ..models.spec import ModelSpec
from ..tables import RECOMPUTE
from .collectives import DISPATCHERS, Net
from ..counting.memory import (Setup, activation_parts, check_setup, default_etp, state_parts,
                     vp_problem)
from ..counting.memory_layouts import FastMemory
from .steptime import (EFFICIENCY_END, ENDS, NVFP4_BYTES, Layout, Machine, Profile, StepTime,
                       exposed_floor, pipeline_bubble, stage_compute, step_time)

UNKNOWABLE = ("micro_batch", "vp", "recompute", "dropout")


@dataclass(frozen=True)
class Resolved:
    """The machine, with where each figure came from (for the report's conventions)."""

    machine: Machine
    network: str
    network_title: str
    network_source: str
    efficiency: str
    efficiency_source: str
    warnings: tuple[str, ...]


def machine_for(platform: Platform) -> Resolved:
    """The Machine of a timed platform (`models.hardware.resolve(..., timed=True)`): the
    device's peaks and bandwidth, its network and its efficiency file's shares."""
    hw, net, eff = platform.hw, platform.network, platform.efficiency
    assert hw is not None and net is not None and eff is not None, "resolve(..., timed=True)"
    spec = eff.spec
    dtype = hw.dtype
    share = spec.matmul_share(dtype)
    if share is None:
        raise FlopcalcError(f"the efficiency file {eff.name} has no matmul share for {dtype} "
                            f"(it lists {', '.join(spec.matmul)}); choose one of those dtypes")
    if hw.bandwidth is None:
        raise FlopcalcError("the step time needs the memory bandwidth: give --accelerator")
    attention_peak = hw.peak_flops
    if dtype in ("fp8", "int8", "fp4") and hw.bf16_peak_flops is not None:
        attention_peak = hw.bf16_peak_flops  # attention and scans run in 16 bits
    machine = Machine(
        matmul_peak=float(hw.peak_flops),
        attention_peak=float(attention_peak), hbm=float(hw.bandwidth), matmul_share=share,
        sms=spec.sms,
        attention_forward={e: spec.attention_forward.at(EFFICIENCY_END[e]) for e in ENDS},
        attention_backward={e: spec.attention_backward.at(EFFICIENCY_END[e]) for e in ENDS},
        memory_share={e: spec.memory.at(EFFICIENCY_END[e]) for e in ENDS},
        net=Net.of(net.spec),
        matmul_bytes=NVFP4_BYTES if dtype == "fp4" else 1 if dtype in ("fp8", "int8") else 2)
    return Resolved(machine, net.name, net.spec.title, net.spec.source, eff.name,
                    spec.source, platform.warnings)


# ---------------------------------------------------------------------------------- memory


def setup_of(seq: int, lay: Layout, precision: str = "mixed",
             optimizer: str = "adamw", fp8: bool = False, qlora: bool = False) -> Setup:
    """The memory Setup of a layout (ZeRO-3 counts its gathered layer)."""
    return Setup(seq=seq, batch=lay.micro_batch, dp=lay.dp, tp=lay.tp, pp=lay.pp, ep=lay.ep,
                 etp=lay.etp, vp=lay.vp, schedule=lay.schedule,
                 zero=lay.zero, recompute=lay.recompute,
                 sequence_parallel=lay.sequence_parallel, dropout=lay.dropout,
                 flash=lay.flash, precision=precision, optimizer=optimizer, cp=lay.cp,
                 fp8=fp8, zero3_buffer=lay.zero == 3, grad_fp32=lay.grad_fp32,
                 lora_rank=lay.lora_rank, qlora=qlora)


_FAST: dict[int, tuple[ModelSpec, FastMemory]] = {}


def memory_bytes(spec: ModelSpec, setup: Setup) -> Optional[int]:
    """Bytes per device of the first pipeline stage (counting.memory's figure, computed by
    `FastMemory`), or None when the layout is invalid."""
    if setup.lora_rank:  # adapters: counting.memory's own sums (FastMemory has none)
        return memory_bytes_slow(spec, setup)
    held = _FAST.get(id(spec))
    if held is None or held[0] is not spec:
        if len(_FAST) > 16:
            _FAST.clear()
        held = _FAST[id(spec)] = (spec, FastMemory(spec))
    return held[1].total(setup)


def memory_bytes_slow(spec: ModelSpec, setup: Setup) -> Optional[int]:
    """The same from counting.memory itself (the reference `FastMemory` is tested against)."""
    if check_setup(spec, setup):
        return None
    return kb.total(state_parts(spec, setup)) + kb.total(activation_parts(spec, setup))


# --------------------------------------------------------------------- one layout, unknowns


@dataclass
class Outcome:
    """A layout's step: the estimate, the interval's ends, and the layouts that gave them."""

    estimate: StepTime
    low: StepTime
    high: StepTime
    layout: Layout  # the estimate's
    low_layout: Layout
    high_layout: Layout
    memory: Optional[int]  # bytes per device of the estimate's layout
    fits: Optional[bool]
    considered: int  # combinations of the unknowns that fit


def least_recompute(spec: ModelSpec, seq: int, lay: Layout, capacity: Optional[int],
                    **mem: object) -> Optional[str]:
    """The least recomputation with which the layout fits (None: none fits)."""
    for policy in RECOMPUTE:
        setup = setup_of(seq, replace(lay, recompute=policy), **mem)  # type: ignore[arg-type]
        used = memory_bytes(spec, setup)
        if used is not None and (capacity is None or used <= capacity):
            return policy
    return None


def valid_vp(prof: Profile, lay: Layout, vp: int) -> Optional[str]:
    """Why `vp` virtual stages do not work with this layout (None: they do)."""
    from .communication import stage_layers

    if vp == 1:
        if lay.schedule == "interleaved":
            return "--schedule interleaved needs --vp > 1 (virtual stages per device)"
        return None
    if lay.schedule not in ("1f1b", "interleaved") and lay.pp > 1:
        return (f"--vp {vp} interleaves the 1F1B schedule; --schedule {lay.schedule} runs one "
                "stage (DualPipeV two half-stages) per device: give --vp 1")
    problem = vp_problem(vp, lay.pp, stage_layers(prof, lay.pp))
    if problem:
        return problem
    if lay.micro_batches % lay.pp:
        return (f"--vp > 1 (the interleaved schedule) needs the micro-batches per pipeline "
                f"({lay.micro_batches}) to be a multiple of --pp {lay.pp}")
    return None


def divisors(n: int, cap: int = 1 << 30) -> list[int]:
    """The divisors of n up to `cap`, ascending: trial division up to min(√n, cap), so a
    device count of 10^12 costs 10^6 steps at most, not 10^12."""
    small, large = [], []
    k = 1
    while k * k <= n and k <= cap:
        if n % k == 0:
            small.append(k)
            if k != n // k and n // k <= cap:
                large.append(n // k)
        k += 1
    return small + large[::-1]


def ep_sizes(experts: list[int], ranks: int) -> list[int]:
    """Expert-parallel sizes: 1, and for a mixture of experts those that divide every MoE
    layer's routed experts and the `ranks` of a stage they are drawn from (tp·cp·dp, as
    Megatron-Core lays them out: gcd(ranks, experts...)); a dense model has nothing to split,
    so only 1. Bounded by the experts, whatever the device count."""
    if not experts:
        return [1]
    return divisors(math.gcd(ranks, *experts))


def evaluate(spec: ModelSpec, prof: Profile, lay: Layout, mc: Machine,
             capacity: Optional[int], unknown: Iterable[str], **mem: object) -> Outcome:
    """The estimate at `lay` and the interval over the unknowns (names in UNKNOWABLE)."""
    unknown = set(unknown)
    replica = lay.global_batch // lay.dp

    def choices(name: str, base: Layout) -> list:
        if name == "vp":  # those the layout allows (a micro-batch size may rule the given out)
            offered = divisors(64) if name in unknown else [base.vp]
            return [v for v in offered if valid_vp(prof, base, v) is None]
        if name not in unknown:
            return [getattr(base, name)]
        if name == "micro_batch":  # those that fill the pipeline: m >= p micro-batches
            return [mb for mb in divisors(replica, 64) if replica // mb >= base.pp]
        if name == "dropout":
            return [False, True]
        return list(RECOMPUTE)

    estimate = step_time(prof, lay, mc, "estimate")
    low, high = step_time(prof, lay, mc, "low"), step_time(prof, lay, mc, "high")
    low_lay = high_lay = lay
    considered = 1
    if unknown:
        considered = 0
        for mb in choices("micro_batch", lay):  # each divides the replica's batch
            base = replace(lay, micro_batch=mb)
            for drop in choices("dropout", base):
                for rec in choices("recompute", base):
                    cand = replace(base, dropout=drop, recompute=rec)
                    setup = setup_of(prof.seq, cand, **mem)  # type: ignore[arg-type]
                    used = memory_bytes(spec, setup)
                    if used is None or (capacity is not None and used > capacity):
                        continue
                    for vp in choices("vp", cand):
                        c2 = replace(cand, vp=vp)
                        considered += 1
                        lo = step_time(prof, c2, mc, "low")
                        hi = step_time(prof, c2, mc, "high")
                        if considered == 1 or lo.total < low.total:
                            low, low_lay = lo, c2
                        if considered == 1 or hi.total > high.total:
                            high, high_lay = hi, c2
        if considered == 0:  # no combination fits: the estimate's layout alone
            low, high, low_lay, high_lay = (step_time(prof, lay, mc, "low"),
                                            step_time(prof, lay, mc, "high"), lay, lay)
    est_mem = memory_bytes(spec, setup_of(prof.seq, lay, **mem))  # type: ignore
    fits = None if capacity is None or est_mem is None else est_mem <= capacity
    return Outcome(estimate, low, high, lay, low_lay, high_lay, est_mem, fits, considered)


# ------------------------------------------------------------------------------ the search


@dataclass
class Candidate:
    layout: Layout
    time: StepTime  # the estimate
    memory: int


def tp_sizes(spec: ModelSpec, domain: int) -> list[int]:
    kinds = [kind for g in spec.groups() for _, kind in g.layer.slots()]
    units = {u for k in kinds if (u := k.tp_units())}
    return [t for t in (1, 2, 4, 8, 16, 32, 64, 72) if t <= domain
            and all(u % t == 0 for u in units)]


def search(spec: ModelSpec, prof: Profile, mc: Machine, devices: int, global_batch: int,
           capacity: int, flash: bool, grad_fp32: bool, tp_overlap: bool,
           dropout: bool = False, top: int = 5, recompute: Optional[str] = None,
           **mem: object) -> tuple[list[Candidate], int]:
    """Every layout that fits, ranked by the estimate: the best `top`, and how many fit;
    `recompute` given (Megatron-Core's module list): every layout recomputes that, instead of
    the least recomputation that fits."""
    seq = prof.seq
    layers = prof.n_layers
    experts = sorted({k.ep_units() for g in spec.groups() for _, k in g.layer.slots()
                      if k.ep_units()})
    fitting: list[tuple[float, int, Layout, int, str]] = []  # bound, order, layout, memory,
    # dispatcher
    for tp in tp_sizes(spec, mc.net.domain):
        for cp in (1, 2, 4, 8, 16, 32):
            if cp > 1 and (not flash or seq % cp or seq // cp < 1024):
                continue
            if devices % (tp * cp):
                continue
            rest = devices // (tp * cp)
            for pp in divisors(rest, layers):
                dp = rest // pp
                if global_batch % dp:
                    continue
                replica = global_batch // dp
                eps = ep_sizes(experts, tp * cp * dp)
                # ZeRO shards over the dp·cp ranks: with one there is nothing to shard
                zeros = (0, 1, 2, 3) if dp * cp > 1 else (0,)
                for ep, zero in itertools.product(eps, zeros):
                    for mb in divisors(replica, 16):
                        lay = Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep,
                                     etp=default_etp(tp, ep) if experts else 1, zero=zero,
                                     sequence_parallel=tp > 1, micro_batch=mb,
                                     global_batch=global_batch, dropout=dropout, flash=flash,
                                     grad_fp32=grad_fp32, tp_overlap=tp_overlap)
                        rec = recompute or least_recompute(spec, seq, lay, capacity, **mem)
                        if rec is None:
                            continue
                        lay = replace(lay, recompute=rec)
                        for vp in ([1] + [v for v in (2, 3, 4, 6, 8)
                                          if valid_vp(prof, lay, v) is None]):
                            cand = replace(lay, vp=vp)
                            # interleaving holds p + (p-1)/v micro-batches: size each
                            used = memory_bytes(spec, setup_of(seq, cand, **mem))  # type: ignore
                            if used is None or used > capacity:
                                continue
                            # the token dispatcher changes the time, not the memory: each
                            # layout is made only if it is timed (`_best`)
                            for disp in (DISPATCHERS if ep > 1 else (cand.dispatcher,)):
                                fitting.append((lower_bound(prof, cand, mc, disp),
                                                len(fitting), cand, used, disp))
    return _best(prof, mc, fitting, top), len(fitting)


_FLOORS: dict[tuple, tuple] = {}


def lower_bound(prof: Profile, lay: Layout, mc: Machine, dispatcher: str = "") -> float:
    """A time the estimate of `lay` cannot beat: the last stage's compute and never-hidden
    communication (`exposed_floor`) of every micro-batch and the bubble they alone make,
    without the rest of the communication or the optimizer (the step adds them and takes the
    slowest stage; the bubble grows with the stage's time). `dispatcher`: the layout's with
    this token dispatcher instead."""
    dispatcher = dispatcher or lay.dispatcher
    comp = stage_compute(prof, lay, mc, "estimate", last=True)
    # the same for every ZeRO stage and virtual-stage count of a layout: remembered
    key = (id(prof), id(mc), lay.tp, lay.cp, lay.dp, lay.ep, lay.etp, lay.pp, lay.micro_batch,
           lay.global_batch, lay.recompute, lay.sequence_parallel, dispatcher,
           lay.tp_overlap, lay.moe_overlap, lay.schedule, lay.capacity)
    held = _FLOORS.get(key)
    if held is None or held[0] is not prof or held[1] is not mc:
        if len(_FLOORS) > 50_000:
            _FLOORS.clear()
        held = _FLOORS[key] = (prof, mc, exposed_floor(
            prof, lay if dispatcher == lay.dispatcher else replace(lay, dispatcher=dispatcher),
            mc))
    exposed = held[2]  # inside t_f + t_b: the bubble grows with it too
    t = comp.forward + comp.backward + exposed
    return (lay.micro_batches * t
            + pipeline_bubble(lay.schedule, lay.pp, lay.vp, comp.forward + exposed,
                              comp.backward, comp.gemm_w))


def _best(prof: Profile, mc: Machine, fitting: list[tuple[float, int, Layout, int, str]],
          top: int) -> list[Candidate]:
    """The `top` fastest estimates, found by timing layouts in the order of their lower
    bounds and stopping where the bound passes the top-th estimate so far: the same
    answer, ties in the order the search met them, as timing every one."""
    best: list[tuple[float, int, Candidate]] = []
    for bound, order, lay, used, disp in sorted(fitting, key=lambda f: (f[0], f[1])):
        if len(best) >= top and bound > best[top - 1][0]:
            break
        if disp != lay.dispatcher:
            lay = replace(lay, dispatcher=disp)
        t = step_time(prof, lay, mc, "estimate")
        best.append((t.total, order, Candidate(lay, t, used)))
        best.sort(key=lambda b: (b[0], b[1]))
        del best[top:]
    return [c for _, _, c in best]
