"""The `step` report: the time of one training step on a parallel layout, as an interval
[communication hidden where the layout can hide it, none hidden] with an estimate between
(its overlap model stated), where the time goes, the communication of every axis, the
pipeline bubble, MFU, tokens/s, days and cost for D tokens, and the memory per device
(`predict.steptime`, `predict.communication`, `predict.plans` hold the arithmetic and its
sources).
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from ..counting.recompute import OP, by_module, modules_of, op_reruns, reruns
from ..counting.recompute import describe as describe_recompute
from ..predict.communication import volumes
from ..predict.plans import UNKNOWABLE, Outcome, Resolved, evaluate
from ..predict.steptime import ADAPTED, ELEMENTWISE, SHAPE_FACTOR, Layout, StepTime, profile
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from .common import (SCHEMA_VERSION, ModelInfo, Report, attention_line, context_warning,
                     default_tokens, eager_hint, kernel_line, model_info)
from .packing import packed_line
from .published_mfu import against_published, published_mfu, where

SECONDS_PER_DAY = 86_400


@dataclass
class Ends:
    low: float
    estimate: float
    high: float


@dataclass
class AxisReport:
    bytes: int  # sent by one device per step
    seconds: float  # all of this axis's communication per step (estimate's efficiencies)
    exposed_seconds: float  # of it on the critical path in the estimate
    collectives: str


@dataclass
class Breakdown:
    """Where the seconds of one step go (one end of the interval or the estimate)."""

    total: float
    gemm: float
    attention: float
    memory_bound: float
    head: float
    recompute: float
    bubble: float
    exposed: dict[str, float]  # tp, cp, ep, pp, dp, embedding
    optimizer: float
    slowest_stage: str


@dataclass
class StepLayout:
    tp: int
    pp: int
    vp: int
    dp: int
    cp: int
    ep: int
    zero: int
    recompute: str
    sequence_parallel: bool
    micro_batch: int
    micro_batches: int  # per pipeline per step
    global_batch: int  # sequences per step
    dropout: bool
    flash: bool
    grad_fp32: bool
    tp_overlap: bool
    devices: int
    etp: int = 1  # expert tensor parallelism
    expert_dp: int = 1  # the expert-data-parallel size, tp·cp·dp / (ep·etp)
    dispatcher: str = "alltoall"
    moe_overlap: bool = False
    schedule: str = "1f1b"
    fp8_recipe: str = ""  # with fp8 matmuls, how they are scaled


@dataclass
class Unknown:
    option: str  # the option not given
    estimate: Any  # the value the estimate takes
    low: Any  # the value at the interval's low end
    high: Any  # at its high end


@dataclass
class StepMemory:
    weights: int
    gradients: int
    optimizer: int
    activations: int
    total: int  # bytes per device (the first pipeline stage)
    capacity: Optional[int]  # the accelerator's memory
    fits: Optional[bool]


@dataclass
class StepMachine:
    accelerator: str
    dtype: str
    peak_flops: int  # per device, of --dtype
    memory_bandwidth: int
    network: str
    network_title: str
    efficiency: str  # which efficiency file
    matmul_share: float  # MAMF / peak
    count: int


@dataclass
class TrainingDays:
    tokens: int
    tokens_source: str
    days: Ends
    device_hours: Ends
    cost: Optional[Ends]


@dataclass
class RunSettings:
    """How a step's FLOPs and activations were counted."""

    attention: str  # the convention of MFU and HFU (--attention): causal or full
    flash: bool  # the attention kernel assumed: flash (no s² scores kept) or eager
    kernel: str  # "flash" or "eager", in a word
    # sample lengths packed into each sequence (--packed); empty: one sample per sequence
    packed: list[int] = field(default_factory=list)


@dataclass
class PublishedRange:
    """A predicted MFU beside the MFU that comparable published runs measured
    (`reports.published_mfu`)."""

    low: float
    high: float
    mfu: float  # the prediction set beside it (the estimate)
    where: str  # below, inside or above the range
    runs: str
    source: str
    formula: str
    line: str


def published_range(mfu: float, model: str, accelerator: str) -> Optional[PublishedRange]:
    """`mfu` beside the published range for this model on this accelerator (None: none)."""
    ref = published_mfu(model, accelerator)
    if ref is None:
        return None
    return PublishedRange(ref.low, ref.high, mfu, where(mfu, ref), ref.runs, ref.source,
                          ref.formula, against_published(mfu, ref))


ASSUMED = {
    "vp": "--vp not given: the estimate takes 1 (no interleaving), the interval every value "
          "that works",
    "micro_batch": "--micro-batch not given: the estimate takes 1, the interval every divisor "
                   "that fits",
    "dropout": "--dropout not given: the estimate takes off, the interval both",
}


def assumed_lines(unknown: list[str], lay: Layout) -> list[str]:
    """What the estimate takes for each option the run did not state (shown by the headline)."""
    lines = [ASSUMED[name] for name in ("vp", "micro_batch", "dropout") if name in unknown]
    if "recompute" in unknown:
        lines.append(f"--recompute not given: the estimate takes {lay.recompute}, the least "
                     "recomputation that fits, the interval every one that fits")
    return lines


@dataclass
class StepReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    seq: int
    layout: StepLayout
    machine: StepMachine
    conventions: list[str]
    model_flops_per_step: int  # 3 x exact forward (settings.attention) x sequences per step
    time: dict[str, Any]  # step_seconds {low, estimate, high}; breakdown {low, estimate, high}
    throughput: dict[str, Ends]  # tokens_per_second, tokens_per_second_per_device
    mfu: Ends  # at the interval's ends: low = at the slowest step
    hfu: Ends  # hardware FLOPs (recomputation included) over peak
    communication: dict[str, AxisReport]
    bubble_fraction: float  # of the estimate's step
    memory: StepMemory
    fits: Optional[bool]
    training: TrainingDays
    unknowns: list[Unknown]
    warnings: list[str] = field(default_factory=list)
    settings: Optional[RunSettings] = None
    assumed: list[str] = field(default_factory=list)  # what the estimate took, not given
    published: Optional[PublishedRange] = None  # the MFU of comparable published runs


def breakdown(t: StepTime) -> Breakdown:
    c = t.compute
    return Breakdown(t.total, c["gemm"], c["attention"], c["memory_bound"], c["head"],
                     c["recompute"], t.bubble, dict(t.exposed), t.optimizer, t.stage)


def layout_info(lay: Layout) -> StepLayout:
    return StepLayout(lay.tp, lay.pp, lay.vp, lay.dp, lay.cp, lay.ep, lay.zero, lay.recompute,
                      lay.sequence_parallel, lay.micro_batch, lay.micro_batches,
                      lay.global_batch, lay.dropout, lay.flash, lay.grad_fp32, lay.tp_overlap,
                      lay.devices, lay.etp, lay.expert_dp, lay.dispatcher, lay.moe_overlap,
                      lay.schedule, lay.fp8_recipe)


def model_flops_per_sequence(prof: Any, attention: str, lora_rank: int = 0) -> int:
    """The model FLOPs of MFU for one sequence: 3 × the exact forward under `attention`
    (causal: the pairs each layer's mask lets through, what the kernels must compute). With
    LoRA adapters of rank r the frozen projections compute no weight gradient (one forward's
    worth of their FLOPs fewer) and each adapter runs 3 × 2·T·r·(n_in + n_out), as
    Megatron-Bridge counts its LoRA runs (2 × the base forward)."""
    total = 3 * (prof.forward_causal if attention == "causal" else prof.forward_full)
    if lora_rank:
        for lp in prof.layers:
            for g in lp.gemms:
                if g.role in ADAPTED:
                    total += lp.count * (3 * 2 * g.tokens * lora_rank * (g.n_in + g.n_out)
                                         - g.flops)
    return total


def hardware_flops_per_sequence(prof: Any, lay: Layout, attention: str = "causal") -> int:
    """The model FLOPs (`model_flops_per_sequence`, the same convention) + what recomputation
    runs again: full adds the layers' forward (not the head), selective the attention core.
    Never below the model FLOPs: HFU >= MFU."""
    forward = prof.forward_causal if attention == "causal" else prof.forward_full
    attention_flops = sum(lp.count * (lp.attention_causal if attention == "causal"
                                      else lp.attention_full) for lp in prof.layers)
    model = model_flops_per_sequence(prof, attention, lay.lora_rank)
    extra = 0
    if lay.recompute == "full":
        extra = forward - prof.head_flops
    elif lay.recompute == "selective":
        extra = attention_flops
    elif lay.recompute == OP:  # torchtitan's per-op checkpointing: the matmuls not saved
        for lp in prof.layers:
            again = op_reruns((g.role for g in lp.gemms), bool(lp.moe[0]))
            extra += lp.count * sum(g.flops for g, rerun in zip(lp.gemms, again) if rerun)
    elif by_module(lay.recompute):  # Megatron-Core's modules: the matmuls each runs again
        mods = modules_of(lay.recompute)
        extra = attention_flops if "core_attn" in mods else 0
        for lp in prof.layers:
            rerun = reruns(lp.layer, mods)
            extra += lp.count * sum(g.flops for g in lp.gemms if rerun(g.name))
    return model + extra


def machine_info(hw: Hardware, res: Resolved) -> StepMachine:
    assert hw.bandwidth is not None
    return StepMachine(hw.name, hw.dtype, hw.peak_flops, hw.bandwidth, res.network,
                   res.network_title, res.efficiency, res.machine.matmul_share, hw.count)


ROUTING_TEXT = {
    "uniform": "uniformly over the experts (--routing uniform)",
    "contiguous": "to k consecutive experts each (--routing contiguous: AutoModel's "
                  "fake_balanced_gate)"}


def step_conventions(res: Resolved, lay: Layout, outcome: Outcome,
                     attention: str = "causal") -> list[str]:
    mc = res.machine
    lines = [
        "step = (m + (p-1)/v) x (t_f + t_b) + exposed communication + optimizer; t_f, t_b: "
        "the slowest pipeline stage's forward and backward of one micro-batch, with the "
        "exposed tensor-, context- and expert-parallel and ZeRO-3 time inside; bubble (p-1)/v "
        "x (t_f + t_b) (Narayanan et al. 2021 §2.2)",
        f"matmuls from their exact FLOPs and shapes at {mc.matmul_share:.1%} of peak (the "
        f"best shape's MAMF, efficiency/{res.efficiency}.yaml) x a shape factor "
        f"{SHAPE_FACTOR['estimate']:.2f} ({SHAPE_FACTOR['low']:.2f} low, "
        f"{SHAPE_FACTOR['high']:.2f} high), wave quantisation on {mc.sms} SMs, and the memory "
        "roof of their operands",
        (f"attention: {mc.attention_kernel} ({mc.attention_title}) over the causal pairs, "
         "forward at "
         f"{mc.attention_forward['estimate']:.0%} of peak, backward 2.5 x its FLOPs at "
         f"{mc.attention_backward['estimate']:.0%}" if lay.flash else
         "attention: eager QK^T and AV over every pair as batched matmuls (no --flash)"),
        f"memory-bound kernels: 1.5 x the bytes kept for backward moved forward, 1.5 x that "
        f"backward (hand-worked for a GPT block) at "
        f"{mc.memory_share['low'] * ELEMENTWISE['estimate']:.0%} of the memory bandwidth (a "
        f"copy's {mc.memory_share['low']:.0%} x {ELEMENTWISE['estimate']}, Transformer "
        "Engine's measured element-wise kernels); LM head cross-entropy in fp32 (22 + 33 "
        "bytes per logit); fp8 casts and the optimizer (36 bytes per updated parameter and 8 "
        f"per local gradient) at {mc.memory_share['estimate']:.0%}",
        f"network {res.network}: a fast domain of {mc.net.domain} devices at "
        f"{mc.net.up / 1e9:,.0f} GB/s each way per device (achievable), "
        f"{mc.net.out / 1e9:,.0f} GB/s per device across domains; collectives as NCCL's "
        "alpha-beta model (ring, hierarchical or tree, the fastest; predict.collectives)",
        "interval: low = best published efficiencies, every communication hidden that the "
        "layout can hide (what nothing hides stays exposed: TP without --tp-overlap, EP "
        "without --moe-overlap, 1F1B's sends); high = none hidden, worst; estimate = "
        "typical efficiencies and Megatron-LM's / FSDP's overlap: "
        "TP exposed" + (" (hidden behind 1/4 of each layer's matmuls with --tp-overlap"
                        + ("; --async-tp: the forward's only, PyTorch's async TP reported as "
                           "a forward-pass speed-up" if lay.async_tp else "") + ")"
                        if lay.tp_overlap else "")
        + ", CP ring steps behind the attention blocks, EP exposed, pipeline sends exposed "
        "(only fill and drain when interleaved), gradient reduction behind the last "
        "micro-batch's backward, ZeRO-3 gathers prefetched layer by layer",
        f"MFU = 3 x exact forward FLOPs (attention {attention}) per step / (step x devices "
        "x the dense peak of --dtype), the figure flopcalc mfu gives for the same tokens/s; "
        "HFU adds what recomputation runs again, in the same count (never below MFU)",
        attention_line(attention),
        kernel_line(lay.flash),
    ]
    if not lay.compiled:
        lines.append("eager kernels (--no-compile): each element-wise op its own kernel; beyond "
                     "the fused traffic, per element forward RMSNorm 40 bytes against 4, "
                     "SiLU x gate 10 against 6, rotary 20 against 4 (hand-counted from "
                     "torchtitan's and PyTorch's code), 1.5 x that backward")
    if lay.cuda_graph:
        lines.append("host launches: none (--cuda-graph: the step replayed as one CUDA graph)")
    elif any("host" in t.exposed for t in (outcome.low, outcome.estimate, outcome.high)):
        lines.append(
            "host launches: each micro-batch's forward and backward take at least the host's "
            "time to issue their operators (per layer e.g. attention 16, a routed feed-forward 38 "
            "and its experts' GEMMs one per local expert, backward twice; 5/15/30 us each at "
            "low/estimate/high), the device waiting the difference (exposed host; "
            "--cuda-graph: none); at the high end a routed layer's forward issues in series "
            "with the device (its split sizes synchronise the host with it)")
    if lay.fp8_recipe:
        lines.append(
            f"fp8 matmuls scaled {lay.fp8_recipe}"
            + (" (the default of --dtype fp8: Transformer Engine's current scaling)"
               if lay.fp8_recipe == "tensorwise" else "")
            + ": each input and output gradient quantised per micro-batch and each weight once "
            "a step, the bytes torchao's float8 roofline counts for the recipe, at the memory "
            "share; attention runs at the bf16 peak; the scaled GEMM kernels themselves at the "
            "fp8 matmul share")
    if mc.matmul_bytes < 1:
        lines.append(
            "fp4 matmuls as NVFP4 (E2M1 with an E4M3 scale per 16: 4.5 bits an element): each "
            "operand quantised both ways, the weight gradient's operands Hadamard-transformed; "
            "attention and norms in 16 bits")
    if lay.ep > 1 or lay.etp > 1:
        lines.append(
            f"experts: groups of ep {lay.ep} drawn from the tp x cp x dp = "
            f"{lay.tp * lay.cp * lay.dp:,} devices of a stage, each expert split etp "
            f"{lay.etp} ways, expert data parallelism {lay.expert_dp:,} (Megatron-Core's "
            "layout); expert GEMMs at the grouped kernel's rate for their tokens per expert "
            "(DeepGEMM's measurements: 73% of the dense rate at 256 tokens, all of it from "
            "4,096), the unpermutation's traffic after them; each device dispatches the routed copies of the tokens it holds (1/t "
            f"under sequence parallelism) through the {lay.dispatcher} dispatcher"
            + (" (once to each rank and each other node its experts sit on, DeepEP's "
               "deduplication)" if lay.dispatcher == "flex" else "")
            + f", the copies routed {ROUTING_TEXT[lay.routing]}, "
            + ("hidden behind another micro-batch's compute (--moe-overlap), which loses the "
               "20 SMs its kernels hold meanwhile (DeepSeek-V3 Technical Report §3.2.2)"
               if lay.moe_overlap else "exposed (--moe-overlap hides it behind another "
               "micro-batch)"))
    if outcome.considered > 1:
        lines.append(f"unknowns (options not given) ranged over {outcome.considered:,} "
                     "combinations that fit in memory for the interval")
    return lines


def build_step_report(loaded: LoadedModel, hw: Hardware, res: Resolved, lay: Layout, seq: int,
                      unknown: list[str], capacity: Optional[int], mem: dict[str, Any],
                      tokens: Optional[int] = None, price: Optional[Fraction] = None,
                      extra_warnings: tuple[str, ...] = (),
                      attention: str = "causal", packed: tuple[int, ...] = ()) -> StepReport:
    spec = loaded.spec
    prof = profile(spec, seq, packed)
    out = evaluate(spec, prof, lay, res.machine, capacity, unknown, **mem)
    lay = out.layout
    ends = {"low": out.low, "estimate": out.estimate, "high": out.high}
    seconds = Ends(out.low.total, out.estimate.total, out.high.total)
    seq_tokens = lay.global_batch * seq
    tps = Ends(*(seq_tokens / x for x in (seconds.high, seconds.estimate, seconds.low)))
    # throughput and MFU: `low` is the slow end (the high step time)
    per_dev = Ends(tps.low / lay.devices, tps.estimate / lay.devices, tps.high / lay.devices)
    model_flops = model_flops_per_sequence(prof, attention, lay.lora_rank) * lay.global_batch
    peak_all = hw.peak_flops * lay.devices

    def util(flops: int, t: float) -> float:
        return flops / (t * peak_all)

    mfu = Ends(util(model_flops, seconds.high), util(model_flops, seconds.estimate),
               util(model_flops, seconds.low))
    hw_flops = {end: hardware_flops_per_sequence(prof, x, attention) * lay.global_batch
                for end, x in
                (("low", out.high_layout), ("estimate", lay), ("high", out.low_layout))}
    hfu = Ends(util(hw_flops["low"], seconds.high), util(hw_flops["estimate"], seconds.estimate),
               util(hw_flops["high"], seconds.low))
    vols = volumes(prof, lay, out.estimate.stage)
    comm = {axis: AxisReport(v.bytes, out.estimate.comm_all.get(axis, 0.0),
                             out.estimate.exposed.get(axis, 0.0)
                             + (out.estimate.exposed["embedding"] if axis == "dp" else 0.0),
                             v.collectives) for axis, v in vols.items()}
    from ..counting import memory as cm
    from ..predict.plans import setup_of

    setup = setup_of(seq, lay, **mem)
    state = {x.name.removeprefix("memory."): x.value for x in cm.state_parts(spec, setup)}
    acts = sum(x.value for x in cm.activation_parts(spec, setup))
    total = sum(state.values()) + acts
    fits = None if capacity is None else total <= capacity
    memory = StepMemory(state["weights"], state["gradients"], state["optimizer"], acts, total,
                        capacity, fits)
    if tokens is None:
        from ..counting.model import model_params
        from ..kinds.base import total as ptotal

        tokens, source = default_tokens(spec, ptotal(model_params(spec)))
    else:
        source = "--tokens"
    days = Ends(*(tokens / x / SECONDS_PER_DAY for x in (tps.high, tps.estimate, tps.low)))
    hours = Ends(days.low * 24 * lay.devices, days.estimate * 24 * lay.devices,
                 days.high * 24 * lay.devices)
    cost = None if price is None else Ends(hours.low * float(price),
                                           hours.estimate * float(price),
                                           hours.high * float(price))
    unknowns = []
    for name in UNKNOWABLE:
        if name in unknown:
            unknowns.append(Unknown(name, getattr(lay, name), getattr(out.low_layout, name),
                                    getattr(out.high_layout, name)))
    warnings = list(res.warnings) + list(extra_warnings)
    warnings += context_warning(loaded.name, "--seq", seq, spec.max_seq_len)
    warnings += eager_hint(spec, setup)
    if fits is False:
        warnings.append(f"this layout needs {total / 1e9:,.1f} GB per device, more than the "
                        f"{capacity / 1e9:,.0f} GB of {hw.name}: it does not fit (flopcalc "
                        "plan finds layouts that do)")
    return StepReport(
        schema_version=SCHEMA_VERSION, command="step", model=model_info(loaded), seq=seq,
        layout=layout_info(lay), machine=machine_info(hw, res),
        conventions=step_conventions(res, lay, out, attention) + describe_recompute(lay.recompute)
        + ([packed_line(packed) + ": a variable-length flash kernel's FLOPs and time; "
            "activation memory as one sample of --seq (flash keeps no s² tensor)"]
           if packed else []),
        model_flops_per_step=model_flops,
        time={"step_seconds": Ends(seconds.low, seconds.estimate, seconds.high),
              "breakdown": {end: breakdown(t) for end, t in ends.items()}},
        throughput={"tokens_per_second": tps, "tokens_per_second_per_device": per_dev},
        mfu=mfu, hfu=hfu, communication=comm,
        bubble_fraction=out.estimate.bubble / out.estimate.total if out.estimate.total else 0.0,
        memory=memory, fits=fits,
        training=TrainingDays(tokens, source, days, hours, cost), unknowns=unknowns,
        warnings=warnings,
        settings=RunSettings(attention, lay.flash, "flash" if lay.flash else "eager",
                             list(packed)),
        assumed=assumed_lines(unknown, lay),
        published=published_range(mfu.estimate, loaded.name, hw.name)
        if loaded.origin == "preset" else None)

