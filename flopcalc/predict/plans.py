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
model's heads, layers and experts, never by the device count), expert tensor parallelism
dividing tp (Megatron-Core's default first), with ep > 1 each token dispatcher (alltoall,
allgather, flex), ZeRO stages 0-3, micro-batches that divide each replica's batch, the pipeline
schedules the layout runs (`pipeline_schedules`: 1F1B, interleaved over virtual stages that
divide each stage's layers, ZB-H1, DualPipe and DualPipeV), with fp8 matmuls each recipe the
device runs (`fp8_recipes`), sequence parallelism whenever tp > 1 (it never costs time here
and saves memory), and the least recomputation that fits; it keeps the layouts that fit and
ranks them by the estimate. Layouts that differ only in the ZeRO stage, dispatcher and recipe
form a `Group`; the groups that share a compute (tp, cp, pp, ep, etp, micro-batch and
recomputation, and whether the schedule overlaps the dispatch) a unit with one lower bound.
`_best` takes units, groups and layouts out of a heap in the order of their bounds, tightening
each a level at a time, and times a layout only when nothing left bounds lower: the same
answer as timing every one, ties in the order of the loops (tested against the exhaustive
ranking and a brute-force enumeration). Memory is worked out once per ZeRO stage (the weights'
split, shared across cp) and once per micro-batch, recomputation and schedule (the
activations', shared across ep and etp); compute per unit once.
"""

from __future__ import annotations

import math
from dataclasses import replace
from heapq import heapify, heappop, heappush, heappushpop
from itertools import count
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
from .communication import stage_layers, stage_params
from .collectives import collective
from .steptime import (ACT_BYTES, BUCKET_MIN, BUCKET_PER_DP, EFFICIENCY_END, ENDS, FP8_RECIPES,
                       NVFP4_BYTES, OPT_PER_GRAD, OPT_UPDATED, Compute, Layout, Machine,
                       Profile, StepTime, exposed_floor, pipeline_bubble, placement,
                       stage_compute, step_time)

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


def machine_for(platform: Platform, attention_kernel: Optional[str] = None) -> Resolved:
    """The Machine of a timed platform (`models.hardware.resolve(..., timed=True)`): the
    device's peaks and bandwidth, its network and its efficiency file's shares (attention:
    those of `attention_kernel`, None for the file's default kernel)."""
    hw, net, eff = platform.hw, platform.network, platform.efficiency
    assert hw is not None and net is not None and eff is not None, "resolve(..., timed=True)"
    spec = eff.spec
    kernel, kernel_title, forward, backward = spec.attention(attention_kernel)
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
        attention_forward={e: forward.at(EFFICIENCY_END[e]) for e in ENDS},
        attention_backward={e: backward.at(EFFICIENCY_END[e]) for e in ENDS},
        memory_share={e: spec.memory.at(EFFICIENCY_END[e]) for e in ENDS},
        net=Net.of(net.spec),
        matmul_bytes=NVFP4_BYTES if dtype == "fp4" else 1 if dtype in ("fp8", "int8") else 2,
        attention_kernel=kernel, attention_title=kernel_title)
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


def memory_bytes(spec: ModelSpec, setup: Setup) -> Optional[int]:
    """Bytes per device of the first pipeline stage (counting.memory's figure, computed by
    `FastMemory`), or None when the layout is invalid."""
    if setup.lora_rank:  # adapters: counting.memory's own sums (FastMemory has none)
        return memory_bytes_slow(spec, setup)
    return _fast(spec).total(setup)


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


# DualPipe and DualPipeV need at least two micro-batches per stage: the DualPipe repository
# (deepseek-ai/DualPipe at 030ce43, dualpipe.py and dualpipev.py) asserts `num_chunks >=
# num_ranks * 2`, and DualPipe `num_ranks % 2 == 0` (its two directions pair the stages).
DUAL_MIN_MICRO_BATCHES = 2


def pipeline_schedules(pp: int, layers: int, micro_batches: int) -> list[tuple[str, int]]:
    """(schedule, virtual stages) the search tries on `pp` stages of `layers` layers each with
    `micro_batches` per pipeline: 1F1B; interleaved over 2-8 virtual stages (each needs a layer;
    the micro-batches a multiple of the stages); ZB-H1; DualPipe with an even number of stages
    and DualPipeV, each with at least two micro-batches a stage. One stage: 1F1B alone."""
    if pp == 1:
        return [("1f1b", 1)]
    out = [("1f1b", 1)]
    if micro_batches % pp == 0:
        out += [("interleaved", v) for v in (2, 3, 4, 6, 8) if vp_problem(v, pp, layers) is None]
    out.append(("zero-bubble", 1))
    if micro_batches >= DUAL_MIN_MICRO_BATCHES * pp:
        if pp % 2 == 0:
            out.append(("dualpipe", 1))
        out.append(("dualpipev", 1))
    return out


def fp8_recipes(hw: Hardware, dtype: str) -> tuple[str, ...]:
    """The fp8 recipes `plan` tries with --dtype fp8 (none otherwise): every one, MXFP8 only on
    a device with microscaling formats (`models.accelerators.MICROSCALING`)."""
    from ..models.accelerators import MICROSCALING

    if dtype != "fp8":
        return ()
    return tuple(r for r in FP8_RECIPES if r != "mxfp8" or hw.architecture in MICROSCALING)


def _copy(lay, **changes):  # type: ignore[no-untyped-def]
    """`replace(lay, **changes)` of a Layout (or a Setup) for the search's own fields, without
    the frozen dataclass's field-by-field __init__ (most of the search's time went to it)."""
    new = object.__new__(type(lay))
    new.__dict__.update(lay.__dict__)
    new.__dict__.update(changes)
    return new


@dataclass(frozen=True)
class Group:
    """Layouts that share everything the lower bound reads: one per ZeRO stage that fits (with
    its memory), token dispatcher and fp8 recipe. `order`: where the search met the first
    (`Group.members` continue it), so that ties rank as the enumeration met them."""

    order: tuple[int, ...]
    layout: Layout  # the first member
    zeros: tuple[tuple[int, int, int], ...]  # (index, ZeRO stage, memory bytes)
    dispatchers: tuple[str, ...]
    recipes: tuple[str, ...]

    def members(self) -> Iterable[tuple[tuple[int, ...], Layout, int]]:
        head = self.order[:5]
        tail = self.order[6:8]
        for zi, zero, used in self.zeros:
            for di, disp in enumerate(self.dispatchers):
                for ri, recipe in enumerate(self.recipes):
                    lay = _copy(self.layout, zero=zero, dispatcher=disp, fp8_recipe=recipe)
                    yield head + (zi,) + tail + (di, ri), lay, used


def groups(spec: ModelSpec, prof: Profile, mc: Machine, devices: int, global_batch: int,
           capacity: int, flash: bool, grad_fp32: bool, tp_overlap: bool,
           dropout: bool = False, recipes: tuple[str, ...] = (),
           recompute: Optional[str] = None, **mem: object) -> Iterable[Group]:
    """Every layout that fits, gathered into `Group`s, in the search's order (`_raw_groups`)."""
    recipes = recipes or ("",)
    for raw in _raw_groups(spec, prof, mc, devices, global_batch, capacity, flash, grad_fp32,
                           tp_overlap, dropout, recipes, recompute, **mem):
        yield _group(raw, recipes)


def _raw_groups(spec: ModelSpec, prof: Profile, mc: Machine, devices: int, global_batch: int,
                capacity: int, flash: bool, grad_fp32: bool, tp_overlap: bool,
                dropout: bool, recipes: tuple[str, ...], recompute: Optional[str] = None,
                **mem: object) -> Iterable[tuple]:
    """Every layout that fits, gathered into groups, in the search's order (the module
    docstring's loops: tp, cp, pp, ep, etp, ZeRO, micro-batch, schedule and virtual stages,
    dispatcher, recipe), as (order, the (tp, cp, pp, ep, etp) layout, micro-batch, schedule,
    vp, recomputation, ZeRO stages that fit, dispatchers): `_outers`' groups one by one."""
    for head, outer, mbs, scheds, dispatchers, policies, units, (held, zeros, acts) in _outers(
            spec, prof, mc, devices, global_batch, capacity, flash, grad_fp32, tp_overlap,
            dropout, recompute, mem):
        rows = [(mi, si, zis[0], ri, zis) for (mi, ri), unit in units.items()
                for si, zis in unit]
        rows.sort(key=lambda r: r[:3])  # the loops' order: micro-batch, schedule, ZeRO
        for mi, si, _, ri, zis in rows:
            sched, vp = scheds[mi][si]
            yield (head + (zis[0], mi, si, 0, 0), outer, mbs[mi], sched, vp, policies[ri],
                   _memory(held, zeros, acts[mi][si], ri, sched, zis), dispatchers)


def _outers(spec: ModelSpec, prof: Profile, mc: Machine, devices: int, global_batch: int,
            capacity: int, flash: bool, grad_fp32: bool, tp_overlap: bool, dropout: bool,
            recompute: Optional[str], mem: dict) -> Iterable[tuple]:
    """The layouts that fit, one (tp, cp, pp, ep, etp) at a time: (its indices in the loops,
    its layout, micro-batches, schedules per micro-batch, dispatchers, recomputations, and
    {(micro-batch index, schedule index, recomputation index): [(ZeRO index, ZeRO stage,
    bytes)]} in the order the loops meet them). Memory is worked out once per (ZeRO stage and
    what the weights' split reads) and once per (micro-batch, recomputation, schedule and what
    the activations' split reads): the two add up to `memory_bytes`. `recompute` given
    (Megatron-Core's module list): every layout recomputes that, instead of the least
    recomputation that fits."""
    policies = (recompute,) if recompute else RECOMPUTE
    seq = prof.seq
    layers = prof.n_layers
    experts = sorted({k.ep_units() for g in spec.groups() for _, k in g.layer.slots()
                      if k.ep_units()})
    fast = _fast(spec)
    weights: dict[tuple, list[int]] = {}  # `_states`' across context-parallel sizes
    for ti, tp in enumerate(tp_sizes(spec, mc.net.domain)):
        cps = [cp for cp in (1, 2, 4, 8, 16, 32)
               if cp == 1 or (flash and not seq % cp and seq // cp >= 1024)]
        for ci, cp in enumerate(cps):
            if devices % (tp * cp):
                continue
            rest = devices // (tp * cp)
            for pi, pp in enumerate(divisors(rest, layers)):
                dp = rest // pp
                if global_batch % dp:
                    continue
                replica = global_batch // dp
                stage = stage_layers(prof, pp)
                mbs = divisors(replica, 16)
                scheds = [pipeline_schedules(pp, stage, replica // mb) for mb in mbs]
                base = Layout(tp=tp, pp=pp, dp=dp, cp=cp, sequence_parallel=tp > 1,
                              global_batch=global_batch, dropout=dropout, flash=flash,
                              grad_fp32=grad_fp32, tp_overlap=tp_overlap)
                # by micro-batch, schedule and recomputation, filled as the fits need them
                acts = [[[None] * len(policies) for _ in sc] for sc in scheds]

                def activations(mi: int, si: int, ri: int) -> int:
                    """The activations of micro-batch mbs[mi], schedule scheds[mi][si] and
                    recomputation RECOMPUTE[ri]: FastMemory.activations reads neither ep,
                    etp, dp nor the ZeRO stage (ZeRO-3's gathered layer marks the Setup
                    extended, which changes nothing there: the sequence split by cp 1, no
                    fp8 or adapters), so once per (tp, cp, pp)."""
                    sched, vp = scheds[mi][si]
                    lay = _copy(base, micro_batch=mbs[mi], recompute=policies[ri],
                                schedule=sched, vp=vp)
                    setup = setup_of(seq, lay, **mem)  # type: ignore[arg-type]
                    got = acts[mi][si][ri] = fast.activations(setup)
                    return got

                # ZeRO shards over the dp·cp ranks: with one there is nothing to shard
                zeros = (0, 1, 2, 3) if dp * cp > 1 else (0,)
                duals = (False, True) if any(sched == "dualpipe" for sc in scheds
                                             for sched, _ in sc) else (False,)
                for ei, ep in enumerate(ep_sizes(experts, tp * cp * dp)):
                    etps = [default_etp(tp, ep)] if experts else [1]
                    if experts:
                        etps += [e for e in divisors(tp) if e != etps[0]
                                 and (tp * cp * dp) % (ep * e) == 0]
                    for xi, etp in enumerate(etps):
                        outer = _copy(base, ep=ep, etp=etp)
                        dispatchers = DISPATCHERS if ep > 1 else (outer.dispatcher,)
                        held = {dual: _states(fast, seq, outer, zeros, dual, mem, weights)
                                for dual in duals}
                        yield ((ti, ci, pi, ei, xi), outer, mbs, scheds, dispatchers, policies,
                               _fits(held, zeros, scheds, capacity, acts, activations),
                               (held, zeros, acts))


def _states(fast: FastMemory, seq: int, outer: Layout, zeros: tuple[int, ...], dual: bool,
            mem: dict, weights: dict[tuple, list[int]]) -> list[Optional[int]]:
    """The weights' split of `outer` per ZeRO stage (None: the layout cannot run). It reads
    the schedule only for DualPipe's two stages a device (`Setup.stage_copies`):
    `pipeline_schedules` offers only schedules the layout runs. One Setup, copied per stage:
    counting.memory's checks (`FastMemory.problem`) do not read the ZeRO stage. The split
    reads dp and cp only as the dp·cp ranks ZeRO shards over (`FastMemory.state`'s key), so
    `weights` keeps it across context-parallel sizes."""
    lay = _copy(outer, zero=0, schedule="dualpipe" if dual else "1f1b")
    setup = setup_of(seq, lay, **mem)  # type: ignore[arg-type]
    if fast.problem(setup):
        return [None] * len(zeros)
    key = (outer.tp, outer.pp, outer.ep, outer.etp, outer.dp * outer.cp, dual)
    got = weights.get(key)
    if got is None:  # setup_of's fields for each stage: ZeRO-3 counts its gathered layer
        got = weights[key] = [fast.state(_copy(setup, zero=zero, zero3_buffer=zero == 3))
                              for zero in zeros]
    return got  # type: ignore[return-value]


def _fits(held: dict[bool, list[Optional[int]]], zeros: tuple[int, ...],
          scheds: list[list[tuple[str, int]]], capacity: int,
          table: list[list[list[Optional[int]]]], activations  # type: ignore[no-untyped-def]
          ) -> dict[tuple[int, int], list[tuple[int, list[int]]]]:
    """The groups of one (tp, cp, pp, ep, etp) by the compute they share: {(micro-batch
    index, recomputation index): [(schedule index, [indices of the ZeRO stages that fit])]},
    the least recomputation that fits each ZeRO stage, micro-batch and schedule (the
    interleaved ones take 1F1B's, as a framework keeps its recomputation when it
    interleaves, and are dropped where they then do not fit; ZB-H1 holds what 1F1B holds).
    `held`: the weights' split per ZeRO stage, with DualPipe's two stages a device (True) or
    not, all None where the layout cannot run; `table`: the activations by micro-batch,
    schedule and recomputation, `activations(mi, si, ri)` fills its gaps. A group's bytes
    are its weights' and activations' (`_memory`)."""
    units: dict[tuple[int, int], list[tuple[int, list[int]]]] = {}
    plain = held[False]
    stages = range(len(zeros))
    for mi, sc in enumerate(scheds):
        row = table[mi]
        least: list[Optional[int]] = [None] * len(zeros)  # 1F1B's, per ZeRO stage
        for si, (sched, _) in enumerate(sc):
            hs = held[True] if sched == "dualpipe" else plain
            if hs[0] is None:
                continue
            acts = row[si]
            last = len(acts)
            found: dict[int, list[int]] = {}  # by recomputation
            if si == 0 or sched == "dualpipe" or sched == "dualpipev":
                for zi in stages:  # the least recomputation that fits
                    room = capacity - hs[zi]  # type: ignore[operator]
                    ri = 0
                    while ri < last:
                        a = acts[ri]
                        if a is None:
                            a = activations(mi, si, ri)
                        if a <= room:
                            break
                        ri += 1
                    if si == 0:
                        least[zi] = ri
                    if ri < last:
                        if ri in found:
                            found[ri].append(zi)
                        else:
                            found[ri] = [zi]
            else:  # 1F1B's
                for zi in stages:
                    ri = least[zi]  # type: ignore[assignment]
                    if ri is None or ri == last:
                        continue
                    a = acts[ri]
                    if a is None:
                        a = activations(mi, si, ri)
                    if a <= capacity - hs[zi]:  # type: ignore[operator]
                        if ri in found:
                            found[ri].append(zi)
                        else:
                            found[ri] = [zi]
            for ri, zis in found.items():
                unit = units.get((mi, ri))
                if unit is None:
                    units[(mi, ri)] = [(si, zis)]
                else:
                    unit.append((si, zis))
    return units


def _memory(held: dict[bool, list[Optional[int]]], zeros: tuple[int, ...],
            acts: list[Optional[int]], ri: int, sched: str,
            zis: list[int]) -> tuple[tuple[int, int, int], ...]:
    """(ZeRO index, ZeRO stage, bytes) of the stages `zis` of one of `_fits`' groups."""
    hs = held[sched == "dualpipe"]
    a = acts[ri]
    return tuple((zi, zeros[zi], hs[zi] + a) for zi in zis)  # type: ignore[operator]


def _group(raw: tuple, recipes: tuple[str, ...]) -> Group:
    """The `Group` of one of `_raw_groups`' tuples."""
    order, outer, mb, sched, vp, rec, fits, dispatchers = raw
    lay = _copy(outer, zero=fits[0][1], micro_batch=mb, schedule=sched, vp=vp, recompute=rec,
                dispatcher=dispatchers[0], fp8_recipe=recipes[0])
    return Group(order, lay, fits, dispatchers, recipes)


def candidates(*args: object, **kwargs: object) -> list[tuple[Layout, int]]:
    """Every layout the search ranks, with its memory, in the order the search meets them
    (`groups`' arguments): what `search` would time if it timed them all."""
    every = [m for g in groups(*args, **kwargs) for m in g.members()]  # type: ignore[arg-type]
    every.sort(key=lambda m: m[0])
    return [(lay, used) for _, lay, used in every]


DUAL = ("dualpipe", "dualpipev")  # the schedules that overlap the dispatch (`exposed_floor`)


def search(spec: ModelSpec, prof: Profile, mc: Machine, devices: int, global_batch: int,
           capacity: int, flash: bool, grad_fp32: bool, tp_overlap: bool,
           dropout: bool = False, top: int = 5, recipes: tuple[str, ...] = (),
           recompute: Optional[str] = None, **mem: object) -> tuple[list[Candidate], int]:
    """Every layout that fits, ranked by the estimate: the best `top`, and how many fit;
    `recompute` given (Megatron-Core's module list): every layout recomputes that.

    The groups that share a compute (a (tp, cp, pp, ep, etp), micro-batch and
    recomputation) enter a heap together with a first lower bound: the last stage's compute
    of every micro-batch and the optimizer's least over their ZeRO stages; `_best` takes them
    out in the order of their bounds, tightens each in turn and times a layout only when no
    other's bound is below its own."""
    recipes = recipes or ("",)
    per = len(recipes)
    heap: list[tuple] = []
    fitting = 0
    shave = 1 - ROUNDING
    for head, outer, mbs, scheds, dispatchers, policies, units, memory in _outers(
            spec, prof, mc, devices, global_batch, capacity, flash, grad_fp32, tp_overlap,
            dropout, recompute, mem):
        each = per * len(dispatchers)
        zeros = memory[1]
        optimizers: dict[int, float] = {}  # the largest ZeRO stage of a unit -> its floor
        pp = outer.pp
        for (mi, ri), rows in units.items():
            lay = _copy(outer, micro_batch=mbs[mi], recompute=policies[ri])
            # the fp8 recipe's casts only add: without them
            comp = stage_compute(prof, lay, mc, "estimate", last=True)
            f, b, w = comp.forward, comp.backward, comp.gemm_w
            steady = lay.micro_batches * (f + b)
            sc = scheds[mi]
            # the schedules that overlap the dispatch apart from those that do not: their
            # never-hidden communication differs
            kinds: dict[bool, list] = {}  # -> [largest ZeRO index, first, least bubble, rows]
            for row in rows:
                si, zis = row
                fitting += len(zis) * each
                sched, vp = sc[si]
                bubble = pipeline_bubble(sched, pp, vp, f, b, w)
                first = (zis[0], si)  # where the loops met the group first
                kind = kinds.get(sched in DUAL)
                if kind is None:
                    kinds[sched in DUAL] = [zis[-1], first, bubble, [row]]
                    continue
                if zis[-1] > kind[0]:
                    kind[0] = zis[-1]
                if first < kind[1]:
                    kind[1] = first
                if bubble < kind[2]:
                    kind[2] = bubble
                kind[3].append(row)
            for dual, (zi, first, bubble, part) in kinds.items():
                # the optimizer's time, least with the largest ZeRO stage (it shards most)
                zero = zeros[zi]
                opt = optimizers.get(zero)
                if opt is None:
                    opt = optimizers[zero] = _optimizer_floor(prof, _copy(outer, zero=zero),
                                                              mc)
                heap.append(((steady + bubble + opt) * shave,
                             head + (first[0], mi, first[1], 0, 0), 0, len(heap),
                             (lay, outer, sc, part, dispatchers, comp, opt, dual, memory, ri)))
    return _best(prof, mc, heap, recipes, top), fitting


_FAST: dict[int, tuple[ModelSpec, FastMemory]] = {}


def _fast(spec: ModelSpec) -> FastMemory:
    held = _FAST.get(id(spec))
    if held is None or held[0] is not spec:
        if len(_FAST) > 16:
            _FAST.clear()
        held = _FAST[id(spec)] = (spec, FastMemory(spec))
    return held[1]


_FLOORS: dict[tuple, tuple] = {}


def lower_bound(prof: Profile, lay: Layout, mc: Machine, dispatcher: str = "") -> float:
    """A time the estimate of `lay` cannot beat: the last stage's compute and never-hidden
    communication (`exposed_floor`) of every micro-batch and the bubble they alone make,
    without the rest of the communication or the optimizer (the step adds them and takes the
    slowest stage; the bubble grows with the stage's time). `dispatcher`: the layout's with
    this token dispatcher instead."""
    comp = stage_compute(prof, lay, mc, "estimate", last=True)
    exposed = _floor(prof, lay, mc, dispatcher or lay.dispatcher)
    return _bound(lay, comp, exposed)


def _floor(prof: Profile, lay: Layout, mc: Machine, dispatcher: str) -> float:
    """`exposed_floor` with this dispatcher, remembered: the same for every ZeRO stage,
    data-parallel size (but for whether it leaves one micro-batch, or, with a schedule that
    overlaps the dispatch, how many), virtual-stage count and fp8 recipe of a layout."""
    overlapped = lay.moe_overlap or lay.schedule in ("dualpipe", "dualpipev")
    key = (id(prof), id(mc), lay.tp, lay.cp, lay.ep, lay.etp, lay.pp, lay.micro_batch,
           lay.recompute, lay.sequence_parallel, dispatcher, lay.tp_overlap, lay.moe_overlap,
           overlapped, lay.micro_batches if overlapped else lay.micro_batches > 1,
           lay.capacity)
    held = _FLOORS.get(key)
    if held is None or held[0] is not prof or held[1] is not mc:
        if len(_FLOORS) > 50_000:
            _FLOORS.clear()
        held = _FLOORS[key] = (prof, mc, exposed_floor(
            prof, lay if dispatcher == lay.dispatcher else _copy(lay, dispatcher=dispatcher),
            mc))
    return held[2]


def _bound(lay: Layout, comp: Compute, exposed: float) -> float:
    # the exposed time lies inside t_f + t_b: the bubble grows with it too
    t = comp.forward + comp.backward + exposed
    return (lay.micro_batches * t
            + pipeline_bubble(lay.schedule, lay.pp, lay.vp, comp.forward + exposed,
                              comp.backward, comp.gemm_w))


# A bound worked out in another order of operations than the step's own sum may pass it by a
# rounding: shaved by this share, so that no layout is pruned by a rounding error.
ROUNDING = 1e-9


def _best(prof: Profile, mc: Machine, heap: list[tuple], recipes: tuple[str, ...],
          top: int) -> list[Candidate]:
    """The `top` fastest estimates, ties in the order the search met them: the same answer
    as timing every layout. `heap` holds `search`'s units (the groups that share a compute)
    as (lower bound, order, level 0, sequence, unit); each taken out is bounded more tightly
    and put back with the tighter bound, level by level: 1, with the communication the
    estimate never hides (`exposed_floor`), the least over the unit's dispatchers and
    schedules; 2, a group each (schedule and virtual stages) with its bubble, its own
    exposed time and the optimizer and data-parallel buckets least over its ZeRO stages (all
    without the fp8 recipe's casts, which only add); 3, a member each (ZeRO stage,
    dispatcher, recipe) bounded with its own; 4, the member's estimate itself. A bound never
    passes the estimate it bounds, and an entry's order never passes those of the layouts it
    holds, so a member's estimate taken out of the heap is below (or ties, later in the
    order) every other layout's: the best come out first, and the rest are never timed."""
    heapify(heap)
    best: list[Candidate] = []
    shave = 1 - ROUNDING
    seq = count(len(heap))
    floors: dict[tuple, float] = {}  # the least exposed time over a unit's dispatchers
    extras: dict[tuple, float] = {}  # the optimizer and data-parallel floors per ZeRO stage
    entry = heappop(heap) if heap else None
    while entry is not None and len(best) < top:
        key, order, level, _, item = entry
        if level == 4:  # an estimate: nothing left can beat it
            best.append(item)
            entry = heappop(heap) if heap else None
            continue
        if level == 3:  # a member: its estimate
            lay, zero, disp, recipe, used = item
            member = _copy(lay, zero=zero, dispatcher=disp, fp8_recipe=recipe)
            t = step_time(prof, member, mc, "estimate")
            entry = heappushpop(heap, (t.total, order, 4, next(seq),
                                       Candidate(member, t, used)))
            continue
        if level == 0:  # a unit: the communication never hidden, and the least bubble
            lay, outer, scheds, rows, dispatchers, comp, opt, dual, _, _ = item
            exposed = _exposed(prof, mc, floors, outer, lay, dual, dispatchers)
            f, b, w = comp.forward + exposed, comp.backward, comp.gemm_w
            pp = lay.pp
            bubble = min(pipeline_bubble(scheds[si][0], pp, scheds[si][1], f, b, w)
                         for si, _ in rows)
            bound = (lay.micro_batches * (f + b) + bubble + opt) * shave
            entry = heappushpop(heap, (bound if bound > key else key, order, 1, next(seq),
                                       item))
            continue
        if level == 1:  # a unit's groups, each with its bubble, exposed time and buckets
            lay, outer, scheds, rows, dispatchers, comp, _, dual, (held, zeros, acts), ri = item
            head, mi = order[:5], order[6]
            own = {}  # the optimizer's and buckets' floors by ZeRO stage
            for si, zis in rows:
                sched, vp = scheds[si]
                fits = _memory(held, zeros, acts[mi][si], ri, sched, zis)
                for _, zero, _ in fits:
                    if zero not in own:
                        own[zero] = _extra(prof, mc, extras, outer, lay, zero)
                group = _copy(lay, zero=fits[0][1], schedule=sched, vp=vp,
                              dispatcher=dispatchers[0])
                exposed = _exposed(prof, mc, floors, outer, lay, dual, dispatchers)
                bound = (_bound(group, comp, exposed)
                         + min(own[zero] for _, zero, _ in fits)) * shave
                heappush(heap, (bound if bound > key else key,
                                head + (fits[0][0], mi, si, 0, 0), 2, next(seq),
                                (group, fits, dispatchers, comp, own)))
            entry = heappop(heap) if heap else None
            continue
        # level 2: the group's members, each with its ZeRO stage, dispatcher and recipe
        lay, fits, dispatchers, comp, own = item
        head, tail = order[:5], order[6:8]
        owns = [comp if not recipe else stage_compute(
            prof, _copy(lay, fp8_recipe=recipe), mc, "estimate", last=True)
            for recipe in recipes]
        bounds = [[_bound(lay, c, exposed) for c in owns]
                  for exposed in (_floor(prof, lay, mc, d) for d in dispatchers)]
        for zi, zero, used in fits:
            extra = own[zero]
            for di, disp in enumerate(dispatchers):
                for ri, recipe in enumerate(recipes):
                    bound = (bounds[di][ri] + extra) * shave
                    heappush(heap, (bound if bound > key else key,
                                    head + (zi,) + tail + (di, ri), 3, next(seq),
                                    (lay, zero, disp, recipe, used)))
        entry = heappop(heap) if heap else None
    return best


def _exposed(prof: Profile, mc: Machine, floors: dict[tuple, float], outer: Layout,
             lay: Layout, dual: bool, dispatchers: tuple[str, ...]) -> float:
    """The least `exposed_floor` over the dispatchers of `lay` (one of `outer`'s micro-batch
    and recomputation) with a schedule that overlaps the dispatch (`dual`) or not,
    remembered: it reads neither the ZeRO stage, the virtual stages nor the recipe."""
    at = (id(outer), lay.micro_batch, lay.recompute, dual)
    got = floors.get(at)
    if got is None:
        probe = _copy(lay, schedule="dualpipev" if dual else "1f1b", vp=1)
        got = floors[at] = min(_floor(prof, probe, mc, d) for d in dispatchers)
    return got


def _extra(prof: Profile, mc: Machine, extras: dict[tuple, float], outer: Layout,
           lay: Layout, zero: int) -> float:
    """The optimizer's and the data-parallel buckets' floors of `lay` (one of `outer`'s)
    with this ZeRO stage, remembered: they read neither the schedule, the recomputation, the
    dispatcher nor the recipe."""
    at = (id(outer), lay.micro_batch, zero)
    got = extras.get(at)
    if got is None:
        z = _copy(lay, zero=zero)
        got = extras[at] = _optimizer_floor(prof, z, mc) + _dp_floor(prof, z, mc)
    return got


_PARAMS: dict[tuple, tuple] = {}


def _last_params(prof: Profile, lay: Layout) -> tuple[float, float]:
    """(dense, expert) parameters of a device of the last stage (`stage_params`), remembered."""
    which = "only" if lay.pp == 1 else "last"
    key = (id(prof), lay.pp, lay.tp, lay.ep, lay.etp, which)
    held = _PARAMS.get(key)
    if held is None or held[0] is not prof:
        if len(_PARAMS) > 50_000:
            _PARAMS.clear()
        held = _PARAMS[key] = (prof, tuple(map(float, stage_params(prof, lay, which))))
    return held[1]


def _optimizer_floor(prof: Profile, lay: Layout, mc: Machine) -> float:
    """The last stage's optimizer time of the step (`steptime._schedule`'s, without the fp8
    weights' casts): 36 bytes per updated and 8 per local gradient, memory-bound."""
    dense, expert = _last_params(prof, lay)
    local = dense + expert
    sharded = dense / (lay.dp * lay.cp) + expert / lay.expert_dp
    updated = sharded if lay.zero >= 1 else local
    grads = sharded if lay.zero >= 2 else local
    return (OPT_UPDATED * updated + OPT_PER_GRAD * grads) / (mc.hbm * mc.memory_share["estimate"])


_DP: dict[tuple, tuple] = {}


def _dp_floor(prof: Profile, lay: Layout, mc: Machine) -> float:
    """The last stage's data-parallel time the estimate never hides (`steptime._schedule`'s
    rules): ZeRO 0-2, one bucket of each reduction (every micro-batch's with ZeRO-2) and of
    the ZeRO-1/2 gather; ZeRO-3, each micro-batch's first gather and its reduce-scatter of a
    layer, which lie inside the micro-batch's time. Remembered per layout but for the
    schedule, the dispatcher and the recipe."""
    key = (id(prof), id(mc), lay.tp, lay.cp, lay.pp, lay.dp, lay.ep, lay.etp, lay.zero,
           lay.micro_batches, lay.grad_fp32)
    held = _DP.get(key)
    if held is not None and held[0] is prof and held[1] is mc:
        return held[2]
    if len(_DP) > 50_000:
        _DP.clear()
    net = mc.net
    where = placement(lay, net)
    dense, expert = _last_params(prof, lay)
    g_bytes = 4 if lay.grad_fp32 else 2
    layers = stage_layers(prof, lay.pp)
    m = lay.micro_batches
    floor = 0.0
    for params, n, per in ((dense, lay.dp * lay.cp, where["dp"]),
                           (expert, lay.expert_dp, where["edp"])):
        if lay.zero == 3:
            ag = collective("allgather", params * ACT_BYTES / layers, n, per, net)
            rs = collective("reducescatter", params * g_bytes / layers, n, per, net)
            floor += m * (ag + rs)
            continue
        bucket = min(params, max(BUCKET_MIN, BUCKET_PER_DP * n))
        if lay.zero == 0:
            floor += collective("allreduce", bucket * g_bytes, n, per, net)
        else:
            floor += ((m if lay.zero == 2 else 1)
                      * collective("reducescatter", bucket * g_bytes, n, per, net)
                      + collective("allgather", bucket * ACT_BYTES, n, per, net))
    _DP[key] = (prof, mc, floor)
    return floor
