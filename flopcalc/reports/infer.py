"""The `infer` report: serving a decoder-only model: the prefill, the decode steps over the KV
cache, the cache and the weights, and with an accelerator the roofline bounds on time.

The arithmetic is in `counting.inference` (FLOPs), `counting.traffic` (bytes) and
`predict.roofline` (time); this module assembles it. Byte counts that depend on how a mixture
of experts routes are the expectation under uniform routing, rounded to whole bytes (and flagged
`rounded`), with the least and most beside them.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Callable, ClassVar, Optional, Union

from ..records import dataclass
from ..kinds import base as p
from ..predict.roofline import Bound, bound, decode_time
from ..counting.inference import DecodeSteps, affine_segments
from ..counting.traffic import (DTYPE_BITS, kv_bytes_per_token, kv_cache_parts,
                                state_bytes_per_sequence, storage_bytes, weight_params,
                                weight_reads)
from ..counting import quant
from ..counting.quant import bits_per_value
from ..counting.storage import StorageRow, resolve_plan, storage_rows, stored, summary, total
from ..models.quantization import Plan
from ..errors import FlopcalcError
from ..tables import SCALED_FORMATS
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from .images import ImagesInfo, image_lines, prefill_flops, tower_bytes
from .common import (SCHEMA_VERSION, ModelInfo, Report, as_argument, attention_line,
                     chunked_scans, context_warning, exact_number, first_attention, kind_notes,
                     memory_basis_line, model_info, samples, scan_lines)

Number = Union[int, float]


def check_decoder_only(loaded: LoadedModel, command: str = "infer") -> None:
    if loaded.spec.architecture != "decoder-only":
        model = as_argument(loaded)
        raise FlopcalcError(
            f"{command} supports decoder-only models; {loaded.name} is "
            f"{loaded.spec.architecture} (flopcalc model {model} counts its forward pass, "
            f"flopcalc train {model} its training)")


@dataclass
class InferSettings:
    prompt: int
    gen: int
    batch: int
    attention: str
    scan: str  # how the prefill's chunked scans count their core (--scan)
    kv_dtype: str
    kv_bytes_per_element: int
    state_dtype: str  # recurrent states (conv windows follow kv_dtype)
    state_bytes_per_element: int
    weights_dtype: str
    weights_bits_per_element: int
    compute_dtype: str
    context: Optional[int]
    # images per sequence through the vision towers (--images); `prompt` counts their tokens
    images: list[ImagesInfo] = field(default_factory=list)


@dataclass
class Prefill:
    tokens: int
    flops: int
    weights: int
    attention: int
    flops_per_token: Number
    bytes: int
    components: dict[str, int]


@dataclass
class Routing:
    """Routed experts a decode step reads per MoE layer, for B tokens."""

    experts: int
    top_k: int
    least: int  # every token picks the same k
    expected: float  # uniform routing: E·(1 − (1 − k/E)^B)
    most: int  # every token picks different ones: min(E, B·k)
    weight_bytes_least: int  # weights one step reads
    weight_bytes_expected: int
    weight_bytes_most: int


@dataclass
class Decode:
    steps: int
    tokens: int
    context_first: int
    context_last: int
    flops_first: int
    flops_last: int
    flops: int
    weights: int
    attention: int
    flops_per_token: Number  # mean over all generated tokens
    flops_per_token_first: Number
    flops_per_token_last: Number
    bytes_first: int
    bytes_last: int
    bytes: int
    bytes_rounded: bool  # True when routing made a byte count an expectation (rounded)
    arithmetic_intensity_first: float  # FLOPs per byte moved
    arithmetic_intensity_last: float
    arithmetic_intensity: float  # over all steps: decode.flops / decode.bytes
    components: dict[str, int]
    bytes_components: dict[str, int]
    routing: Optional[Routing]


@dataclass
class KvCache:
    """What the mixers keep for `tokens` tokens: the K/V (or latents) of attention layers, per
    token and layer for the tokens each layer's mask still needs, and the fixed states of
    recurrent layers, per sequence whatever its length."""

    tokens: int  # batch x (prompt + gen): tokens the sequences hold
    kind: str  # mha, gqa, mqa or latent (of the first attention layer; "" without attention)
    n_kv_heads: int
    n_heads: int
    bytes_per_token: int  # every attention layer's K/V (or latent) for one token
    bytes_per_token_by_kind: dict[str, int]  # the same by kind of layer (full, window_4096)
    effective_bytes_per_token: float  # kv_bytes / tokens: what a token costs at this context
    bytes: int  # kv_bytes + state_bytes: what the cache holds after the last step
    kv_bytes: int  # K/V of the tokens held (a window layer keeps its last w)
    state_bytes: int  # fixed states, batch x state_bytes_per_sequence
    state_bytes_per_sequence: int
    mha_bytes_per_token: int  # one key and one value per query head (MHA; MLA decompressed)
    mha_bytes: int
    saving_bytes: int
    factor: float  # mha_bytes / bytes
    layers: dict[str, int]  # bytes by kind of layer (decoder.full, decoder.window_4096, ...)


@dataclass
class Weights:
    params: int
    dtype: str
    bits_per_element: int
    bytes: int
    source: str = ""  # where the formats came from: a flag, config.json, a preset
    storage: list[StorageRow] = field(default_factory=list)  # per module: format and bytes


@dataclass
class AcceleratorInfo:
    name: str
    title: str
    source: str
    dtype: str
    count: int
    peak_flops: int  # per device, dense, for `dtype`
    total_peak_flops: int
    bandwidth: Optional[int]  # per device, bytes/s
    total_bandwidth: Optional[int]
    memory_bytes: Optional[int]  # per device, what the run may fill (usable x fraction - reserve)
    total_memory_bytes: Optional[int]
    peak_overridden: bool
    bandwidth_overridden: bool
    perfect_scaling: bool = True
    nominal_memory_bytes: Optional[int] = None  # the vendor's size
    usable_memory_bytes: Optional[int] = None  # what the driver reports (else the nominal)
    memory_basis: str = ""
    memory_fraction: float = 1.0
    reserve_bytes: int = 0


@dataclass
class Phase:
    seconds: float
    compute_s: float
    memory_s: float
    binds: str


@dataclass
class DecodeRoofline:
    first: Phase
    last: Phase
    seconds: float  # all steps
    compute_bound_steps: int
    memory_bound_steps: int
    binds: str  # compute, memory, "compute, then memory" / "memory, then compute", or "both"
    # (steps of each kind between a first and a last step of the same kind)
    tokens_per_s: float  # aggregate upper bound over the whole decode: B·G / seconds
    tokens_per_s_first: float
    tokens_per_s_last: float
    seconds_per_token: float  # mean step time (each step yields one token per sequence)
    tokens_per_s_aggregate: float  # B·G / seconds: every sequence together (= tokens_per_s)
    tokens_per_s_per_sequence: float  # G / seconds: what one user sees
    seconds_per_step: float  # mean step time (= seconds_per_token: one token per sequence)


@dataclass
class Memory:
    required_bytes: int  # weights + full KV cache
    available_bytes: int
    fits: bool
    max_batch: int  # the largest batch whose weights + KV cache fit (0: not even one)


@dataclass
class Roofline:
    prefill: Phase
    decode: Optional[DecodeRoofline]
    total_seconds: float
    memory: Optional[Memory]
    # The FLOPs the bounds are taken on: `prefill.flops`, counted as --attention and --scan say
    # (one convention for the counts and the times).
    prefill_flops: int = 0
    attention: str = "causal"


@dataclass
class CurvePoint:
    """One decode step along the generation, for pictures: its FLOPs by family, the bytes it
    moves (rounded to whole bytes) and its FLOPs per byte."""

    context: int
    flops: dict[str, int]
    bytes: dict[str, int]
    intensity: float


@dataclass
class InferReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: InferSettings
    conventions: list[str]
    prefill: Prefill
    decode: Optional[Decode]  # None with --gen 0
    kv_cache: KvCache
    weights: Weights
    memory_bytes: int  # weights + KV cache: what the devices must hold
    total_flops: int
    accelerator: Optional[AcceleratorInfo]
    roofline: Optional[Roofline]
    warnings: list[str] = field(default_factory=list)
    # Decode steps sampled along the way, for pictures (on request; not in the JSON document).
    curve: ClassVar[Optional[list[CurvePoint]]] = None


def decode_curve(st: DecodeSteps, first: int, last: int) -> list[CurvePoint]:
    """Decode steps from `first` to `last`, sampled, the ends of every affine piece included."""
    ends = affine_segments(st.spec, first, last).ends()
    out = []
    for c in samples(first, last, ends):
        flops, moved = st.flops(c, c), st.byte_parts(c, c)
        out.append(CurvePoint(c, p.families(flops), {k: _round(v) for k, v in moved.items()},
                              float(p.total(flops) / sum(moved.values()))))
    return out


def accelerator_info(hw: Hardware) -> AcceleratorInfo:
    return AcceleratorInfo(
        name=hw.name, title=hw.title, source=hw.source, dtype=hw.dtype, count=hw.count,
        peak_flops=hw.peak_flops, total_peak_flops=hw.total_peak_flops, bandwidth=hw.bandwidth,
        total_bandwidth=hw.total_bandwidth, memory_bytes=hw.memory_bytes,
        total_memory_bytes=hw.total_memory_bytes, peak_overridden=hw.peak_overridden,
        bandwidth_overridden=hw.bandwidth_overridden, nominal_memory_bytes=hw.nominal_memory_bytes,
        usable_memory_bytes=hw.usable_memory_bytes, memory_basis=hw.memory_basis,
        memory_fraction=float(hw.memory_fraction), reserve_bytes=hw.reserve_bytes)


def devices(count: int) -> str:
    return "on 1 device" if count == 1 else f"x {count:,} devices (perfect scaling assumed)"


def infer_conventions(spec: ModelSpec, s: InferSettings, hw: Optional[Hardware],
                      checkpoint: str = "") -> list[str]:
    """The counting conventions; `checkpoint`: where the weights' formats came from when a
    checkpoint (not a flag) said."""
    lines = ["2 FLOPs per multiply-add; not counted: norms, activations, softmax, RoPE, bias "
             "adds, embedding lookups, routing (what FlopCounterMode counts)",
             "prefill: " + attention_line(s.attention) + "; equals flopcalc model --seq P "
             f"--attention {s.attention}",
             *("prefill: " + line for line in scan_lines(s.scan, chunked_scans(spec))),
             "prefill LM head on every prompt token (a server keeping only the last logits "
             "saves 2·(P−1)·d·V per sequence)",
             "decode step at position c = P + i: one token per sequence through every weight "
             "(LM head included) and, per layer, 2·h·(d_qk + d_v) FLOPs per key it sees: c keys, "
             "min(c, w) in a window of w, its own block's keys when chunked"
             + ("" if s.attention == "causal" else " (the keys each layer caches: a decode "
                "step's count is the masked one under --attention full too)")]
    lines += kind_notes(spec, "decode_notes")
    lines += [
        f"KV cache {s.kv_dtype} ({s.kv_bytes_per_element} B): per layer and token the K/V of "
        "its KV heads, for batch x (P + G) tokens (a window layer the last w); MHA: one K and V "
        "per query head",
        (f"weights: every parameter once, as the checkpoint stores them ({checkpoint}): each "
         "module's format with its scales, zero points and indices (weights.storage)"
         if checkpoint else
         f"weights: every parameter once, {s.weights_dtype} ({s.weights_bits_per_element} bits"
         + ("; a scaled format's scales counted, embeddings, head, norms and routers in bf16)"
            if s.weights_dtype in SCALED_FORMATS else
            "; scale factors of quantised formats not counted)")),
        "bytes per decode step: every weight read once (of an untied embedding or a position "
        "table only the B rows looked up) + K/V of the keys attended + the new K/V written; "
        "prefill: the weights + the prompt's K/V written; activations not counted",
    ]
    if hw is not None:
        lines.append(f"roofline lower bounds: time >= max(FLOPs / peak, bytes / bandwidth) per "
                     f"step; dense {hw.dtype} peak and memory bandwidth {devices(hw.count)}; the "
                     f"prefill's bound on the FLOPs above (attention {s.attention}"
                     + ("; causal, the default, is what flash kernels compute" if s.attention
                        == "causal" else "; every pair, as an eager kernel computes them")
                     + ")")
    if hw is not None and hw.usable_memory_bytes is not None:
        lines.append(memory_basis_line(hw))
    return lines


def stored_bytes(spec: ModelSpec, params: int, dtype: Any) -> Fraction:
    """Bytes of every weight: `params` at a dtype's width, or a scaled format with its scales
    (`counting.quant`), or as a storage plan says (`counting.storage`)."""
    if isinstance(dtype, Plan):
        return total(stored(spec, dtype))
    if dtype in SCALED_FORMATS:
        return quant.model_weight_bytes(spec, dtype)
    return storage_bytes(params, dtype)


def read_bytes(spec: ModelSpec, tokens: int, dtype: Any, params: int | Fraction,
               which: str = "expected") -> Fraction:
    """Weight bytes a forward over `tokens` reads (`params` of them at a dtype's width; a scaled
    format's or a storage plan's from its tensors, the `which` routing)."""
    if isinstance(dtype, Plan):
        from ..counting.storage import read_bytes as plan_reads

        return getattr(plan_reads(spec, tokens, dtype), which)
    if dtype in SCALED_FORMATS:
        return getattr(quant.read_bytes(spec, tokens, dtype), which)
    return storage_bytes(params, dtype)


def weights_storage(loaded: LoadedModel, weights_dtype: Optional[str]
                    ) -> tuple[Plan, str, int, list[StorageRow]]:
    """The storage plan (`--weights-dtype`, else the checkpoint's), its name, the bits per
    value of its largest format and its rows per module."""
    plan = resolve_plan(loaded, weights_dtype, None)
    if plan.flags:
        return plan, plan.flags[0], bits_per_value(plan.flags[0]), storage_rows(
            stored(loaded.spec, plan), plan)
    entries = stored(loaded.spec, plan)
    largest: dict[int, Fraction] = {}
    for s in entries:
        largest[s.bits] = largest.get(s.bits, Fraction(0)) + s.bytes
    return (plan, summary(entries)[0] if len(set(summary(entries))) == 1 else
            " / experts ".join(summary(entries)), max(largest, key=lambda b: largest[b]),
            storage_rows(entries, plan))


def _round(x: Fraction) -> int:
    return p.round_fraction(x)


def _decode(spec: ModelSpec, st: DecodeSteps, prompt: int, gen: int,
            weights_dtype: Any) -> Decode:
    batch = st.batch
    first, last = prompt + 1, prompt + gen
    dec = st.flops(first, last)
    step_first, step_last = p.total(st.flops(first, first)), p.total(st.flops(last, last))
    bytes_first, bytes_last, total_bytes = (st.bytes(first, first), st.bytes(last, last),
                                            st.bytes(first, last))
    routing = None
    r = next((reads for g in spec.groups() for _, kind in g.layer.slots()
              if (reads := kind.reads(spec.d_model, batch)) is not None), None)
    if r is not None:
        routing = Routing(r.experts, r.top_k, r.least, float(r.expected), r.most,
                          _round(read_bytes(spec, batch, weights_dtype, st.reads.least, "least")),
                          _round(st.step_weight_bytes),
                          _round(read_bytes(spec, batch, weights_dtype, st.reads.most, "most")))
    rounded = any(x.denominator != 1 for x in (bytes_first, bytes_last, total_bytes))
    return Decode(
        steps=gen, tokens=batch * gen, context_first=first, context_last=last,
        flops_first=step_first, flops_last=step_last, flops=p.total(dec),
        weights=p.total(dec, p.WEIGHTS), attention=p.total(dec, p.ATTENTION),
        flops_per_token=exact_number(Fraction(p.total(dec), batch * gen)),
        flops_per_token_first=exact_number(Fraction(step_first, batch)),
        flops_per_token_last=exact_number(Fraction(step_last, batch)),
        bytes_first=_round(bytes_first), bytes_last=_round(bytes_last),
        bytes=_round(total_bytes), bytes_rounded=rounded,
        arithmetic_intensity_first=float(step_first / bytes_first),
        arithmetic_intensity_last=float(step_last / bytes_last),
        arithmetic_intensity=float(p.total(dec) / total_bytes),
        components={x.name: x.value for x in dec},
        bytes_components={k: _round(v) for k, v in st.byte_parts(first, last).items()},
        routing=routing)


def _kv_cache(spec: ModelSpec, tokens_per_seq: int, batch: int, kv_b: int,
              state_b: int) -> KvCache:
    att = first_attention(spec, "decoder")
    parts = kv_cache_parts(spec, tokens_per_seq, batch, kv_b, state_nbytes=state_b)
    mha = kv_cache_parts(spec, tokens_per_seq, batch, kv_b, True, state_b)
    held, mha_held = p.total(parts), p.total(mha)
    state = batch * state_bytes_per_sequence(spec, kv_b, state_b)
    by_kind = {x.name.removeprefix("decoder."): x.value
               for x in kv_cache_parts(spec, 1, 1, kv_b, states=False) if x.value}
    return KvCache(
        tokens=batch * tokens_per_seq, kind=att.kv_kind, n_kv_heads=att.kv_heads,
        n_heads=att.heads, bytes_per_token=kv_bytes_per_token(spec, kv_b),
        bytes_per_token_by_kind=by_kind,
        effective_bytes_per_token=(held - state) / (batch * tokens_per_seq),
        bytes=held, kv_bytes=held - state, state_bytes=state,
        state_bytes_per_sequence=state // batch,
        mha_bytes_per_token=kv_bytes_per_token(spec, kv_b, decompressed=True),
        mha_bytes=mha_held, saving_bytes=mha_held - held,
        factor=mha_held / held if held else 1.0, layers={x.name: x.value for x in parts})


def build_infer_report(loaded: LoadedModel, prompt: int, gen: int, batch: int = 1,
                       attention: p.Convention = "causal", kv_dtype: str = "bf16",
                       weights_dtype: Optional[str] = None, compute_dtype: str = "bf16",
                       hw: Optional[Hardware] = None, curve: bool = False,
                       state_dtype: str = "fp32", images: Optional[list[ImagesInfo]] = None,
                       scan: p.Scan = "chunked") -> InferReport:
    """Prefill, decode, KV cache and weights of `batch` sequences of `prompt` + `gen` tokens,
    and the roofline on `hw` when given; with `curve`, decode steps sampled for a picture.
    `images` (`reports.images.place`): the images whose tokens `prompt` already counts, run
    through the vision towers in the prefill."""
    spec = loaded.spec
    check_decoder_only(loaded)
    kv_b, state_b = DTYPE_BITS[kv_dtype] // 8, DTYPE_BITS[state_dtype] // 8
    plan, name, bits, rows = weights_storage(loaded, weights_dtype)
    weights_dtype = plan.flags[0] if plan.flags else plan  # type: ignore[assignment]
    settings = InferSettings(prompt, gen, batch, attention, scan, kv_dtype, kv_b, state_dtype,
                             state_b, name, bits, compute_dtype, spec.max_seq_len,
                             list(images or ()))
    params = weight_params(spec)
    weights_bytes = p.ceil_fraction(stored_bytes(spec, params, weights_dtype))
    st = DecodeSteps(spec, batch, kv_b, weights_dtype, state_b)
    pre = prefill_flops(spec, prompt, batch, attention, settings.images, scan)
    prefill_reads = weight_reads(spec, batch * prompt).expected
    prefill_bytes = read_bytes(spec, batch * prompt, weights_dtype, prefill_reads) + p.total(
        kv_cache_parts(spec, prompt, batch, kv_b, state_nbytes=state_b))
    if settings.images:  # the towers' weights, read once for the images
        prefill_bytes += tower_bytes(spec, weights_dtype)
    kv = _kv_cache(spec, prompt + gen, batch, kv_b, state_b)
    decode = _decode(spec, st, prompt, gen, weights_dtype) if gen else None
    report = InferReport(
        schema_version=SCHEMA_VERSION, command="infer", model=model_info(loaded),
        settings=settings, conventions=infer_conventions(
            spec, settings, hw, "" if plan.flags else plan.source)
        + image_lines(spec, settings.images),
        prefill=Prefill(
            tokens=batch * prompt, flops=p.total(pre), weights=p.total(pre, p.WEIGHTS),
            attention=p.total(pre, p.ATTENTION),
            flops_per_token=exact_number(Fraction(p.total(pre), batch * prompt)),
            bytes=_round(prefill_bytes), components={x.name: x.value for x in pre}),
        decode=decode, kv_cache=kv,
        weights=Weights(params, name, bits, weights_bytes, plan.source, rows),
        memory_bytes=weights_bytes + kv.bytes,
        total_flops=p.total(pre) + (decode.flops if decode else 0),
        accelerator=None, roofline=None,
        warnings=context_warning(loaded.name, "prompt + gen =", prompt + gen, spec.max_seq_len),
    )
    if curve and decode is not None:
        report.curve = decode_curve(st, decode.context_first, decode.context_last)
    if hw is not None:
        report.accelerator = accelerator_info(hw)
        # one convention: the bound is on the prefill FLOPs the report counts
        report.roofline = _roofline(report, hw, st, prefill_bytes, p.total(pre))
        report.roofline.attention = attention
        memory = report.roofline.memory
        if memory is not None and not memory.fits:
            report.warnings.append(
                f"weights + KV cache need {memory.required_bytes:,} bytes but {hw.count} x "
                f"{hw.name} has {memory.available_bytes:,}; the times assume they fit")
    return report


def _phase(b: Bound) -> Phase:
    return Phase(float(b.seconds), float(b.compute_s), float(b.memory_s), b.binds)


def max_batch(spec: ModelSpec, tokens_per_seq: int, kv_b: int, weights_bytes: int,
              memory: int, state_b: int = 4) -> int:
    """The largest batch whose weights and KV cache fit in `memory` bytes (0: none)."""
    per_sequence = p.total(kv_cache_parts(spec, tokens_per_seq, 1, kv_b, state_nbytes=state_b))
    return max(0, (memory - weights_bytes) // per_sequence) if per_sequence else 0


def largest_batch(loaded: LoadedModel, hw: Optional[Hardware], options: dict) -> int:
    """The largest batch whose weights and KV cache fit the devices (`infer --max-batch`)."""
    if hw is None or hw.total_memory_bytes is None:
        raise FlopcalcError("--max-batch needs an accelerator with a memory size: give "
                            "--accelerator NAME")
    spec = loaded.spec
    check_decoder_only(loaded)
    plan = weights_storage(loaded, options["weights_dtype"])[0]
    weights = p.ceil_fraction(stored_bytes(spec, weight_params(spec),
                                           plan.flags[0] if plan.flags else plan))
    batch = max_batch(spec, options["prompt"] + options["gen"],
                      DTYPE_BITS[options["kv_dtype"]] // 8, weights, hw.total_memory_bytes,
                      DTYPE_BITS[options["state_dtype"]] // 8)
    if batch == 0:
        raise FlopcalcError(f"not even one sequence fits: the weights alone need {weights:,} "
                            f"bytes of {hw.total_memory_bytes:,}; add devices (--count)")
    return batch


def _roofline(r: InferReport, hw: Hardware, st: DecodeSteps, prefill_bytes: Fraction,
              prefill_flops: int) -> Roofline:
    if hw.total_bandwidth is None:
        raise FlopcalcError("the roofline needs a memory bandwidth: give --bandwidth BYTES/s")
    peak, bw = hw.total_peak_flops, hw.total_bandwidth
    prefill = bound(prefill_flops, prefill_bytes, peak, bw)
    decode = None
    seconds = prefill.seconds
    d = r.decode
    if d is not None:
        decode, t_seconds = _decode_roofline(r, st, peak, bw)
        seconds += t_seconds
    memory = None
    if hw.total_memory_bytes is not None:
        s = r.settings
        memory = Memory(r.memory_bytes, hw.total_memory_bytes,
                        r.memory_bytes <= hw.total_memory_bytes,
                        max_batch(st.spec, s.prompt + s.gen, s.kv_bytes_per_element,
                                  r.weights.bytes, hw.total_memory_bytes,
                                  s.state_bytes_per_element))
    return Roofline(prefill=_phase(prefill), decode=decode, total_seconds=float(seconds),
                    memory=memory, prefill_flops=prefill_flops)


def _decode_roofline(r: InferReport, st: DecodeSteps, peak: int, bw: int
                     ) -> tuple[DecodeRoofline, Fraction]:
    d = r.decode
    assert d is not None
    compute: Callable[[int], Fraction] = lambda c: Fraction(p.total(st.flops(c, c)), peak)
    memory: Callable[[int], Fraction] = lambda c: st.bytes(c, c) / bw
    first = bound(d.flops_first, st.bytes(d.context_first, d.context_first), peak, bw)
    last = bound(d.flops_last, st.bytes(d.context_last, d.context_last), peak, bw)
    t = decode_time(compute, memory, affine_segments(st.spec, d.context_first, d.context_last))
    if t.compute_bound_steps and t.memory_bound_steps:
        binds = f"{first.binds}, then {last.binds}" if first.binds != last.binds else "both"
    else:
        binds = "compute" if t.compute_bound_steps else "memory"
    batch = r.settings.batch
    return DecodeRoofline(
        first=_phase(first), last=_phase(last), seconds=float(t.seconds),
        compute_bound_steps=t.compute_bound_steps, memory_bound_steps=t.memory_bound_steps,
        binds=binds, tokens_per_s=float(d.tokens / t.seconds),
        tokens_per_s_first=float(batch / first.seconds),
        tokens_per_s_last=float(batch / last.seconds),
        seconds_per_token=float(t.seconds / d.steps),
        tokens_per_s_aggregate=float(d.tokens / t.seconds),
        tokens_per_s_per_sequence=float(d.steps / t.seconds),
        seconds_per_step=float(t.seconds / d.steps)), t.seconds
