"""Inference and hardware arithmetic: prefill and decode FLOPs with the KV context, KV-cache and
weight bytes, roofline lower bounds on time, and training wall-clock. Pure: ints and Fractions in
and out, no I/O.

Conventions (README "Inference and hardware"):
- Prefill is the forward pass over the prompt, counted by `counting.model_flops`, so it equals
  `flopcalc model M --seq P` under the same attention convention (LM head on every prompt token).
- Decode step i = 1..G feeds one new token per sequence; it attends over c = P + i keys (the P
  prompt tokens, the i − 1 tokens generated before it, and itself). Its FLOPs are the weight
  matmuls at one token (2 × matmul weights, LM head included) plus 4·c·d_q per layer. A causal
  mask removes nothing here: the single query may see every cached key.
- KV cache: K and V of width h_kv·d_h in every layer, 2·L·h_kv·d_h·bytes per cached token.
- Bytes moved by a decode step: every weight once + the K/V of the c − 1 cached tokens and the
  new one read by attention + the new token's K/V written. Activations are not counted.
- Roofline: a step takes at least max(FLOPs / peak, bytes / bandwidth); with `count` devices peak
  and bandwidth are multiplied by `count` (perfect scaling). These are lower bounds on time.

Only decoder-only models are supported: an encoder-decoder's "prompt" (source or target prefix?)
and its fixed cross-attention cache are a different accounting (`check_decoder_only`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from . import counting as c
from .arch import Arch
from .errors import FlopcalcError
from .report import exact_number

if TYPE_CHECKING:
    from .accelerators import Hardware
    from .registry import LoadedModel

SCHEMA_VERSION = 1
# Storage bytes per element. The scale factors of fp8/int8 formats (a few bytes per tensor or
# channel) are not counted.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
SECONDS_PER_DAY, SECONDS_PER_HOUR = 86_400, 3_600
BYTES = "bytes"  # kind of the byte-count parts

Number = Union[int, float]


def check_decoder_only(cfg: Arch, name: str) -> None:
    if cfg.is_encoder_decoder:
        raise FlopcalcError(
            f"infer supports decoder-only models; {name} is encoder-decoder (flopcalc model "
            f"{name} --seq N --tgt-seq M counts its forward pass, flopcalc train its training)")


def dtype_bytes(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise FlopcalcError(
            f"unknown dtype '{dtype}'; use one of {', '.join(DTYPE_BYTES)}") from None


# --------------------------------------------------------------------------------------------
# FLOPs
# --------------------------------------------------------------------------------------------

def prefill_parts(cfg: Arch, prompt: int, batch: int,
                  attention: c.Attention) -> list[c.Part]:
    """Forward FLOPs over `batch` prompts of `prompt` tokens: exactly `counting.model_flops`,
    LM head on every prompt token included (as `flopcalc model --seq` and HF's forward count it)."""
    return c.model_flops(cfg, c.workload(cfg, prompt, None, batch, attention))


def cache_attention_parts(cfg: Arch, keys: int, batch: int) -> list[c.Part]:
    """Scores and AV of one new query per sequence against `keys` keys, over all layers.

    Per query head, QKᵀ is (1×d_h)·(d_h×c) and AV (1×c)·(c×d_h): 2·d_h FLOPs per (query head,
    key) pair each, 4·c·d_q per layer together. GQA shares K/V between heads but every query
    head still scores every key. `keys` may be a sum of contexts (Σ c over steps): both parts
    are linear in it.
    """
    pairs = batch * cfg.n_heads * c.attention_pairs(1, keys, causal=False)
    per_layer = 2 * pairs * cfg.d_head
    return [c.Part("decoder.attn.scores", cfg.n_layers * per_layer, c.ATTENTION),
            c.Part("decoder.attn.av", cfg.n_layers * per_layer, c.ATTENTION)]


def _with_cache_attention(cfg: Arch, keys: int, batch: int, steps: int) -> list[c.Part]:
    """`steps` one-token forwards whose attention covers `keys` (query, key) pairs per head in
    total: the core's one-token weight parts × steps, its attention parts replaced."""
    one_token = c.model_flops(cfg, c.workload(cfg, 1, None, batch, "full"))
    attention = {p.name: p for p in cache_attention_parts(cfg, keys, batch)}
    assert {p.name for p in one_token if p.kind == c.ATTENTION} == set(attention)
    return [attention[p.name] if p.kind == c.ATTENTION else
            c.Part(p.name, steps * p.value, p.kind) for p in one_token]


def decode_step_parts(cfg: Arch, context: int, batch: int) -> list[c.Part]:
    """FLOPs of one decode step: `batch` sequences each feed one token that attends over
    `context` keys (itself included). Weight matmuls at one token: q, k, v, o and the MLP in every
    layer and the LM head, i.e. 2 × matmul weights; plus 4·c·d_q per layer of attention.
    Not counted: norms, activations, softmax, RoPE, bias adds (as in `counting`)."""
    return _with_cache_attention(cfg, context, batch, steps=1)


def context_sum(prompt: int, gen: int) -> int:
    """Σ_{i=1..G} (P + i) = G·P + G(G+1)/2: the keys all G decode steps attend over."""
    return gen * prompt + gen * (gen + 1) // 2


def decode_parts(cfg: Arch, prompt: int, gen: int, batch: int) -> list[c.Part]:
    """FLOPs of all G decode steps (contexts P+1 .. P+G): every part is the sum of that part over
    the steps, since weight parts are constant per step and attention parts linear in c."""
    return _with_cache_attention(cfg, context_sum(prompt, gen), batch, steps=gen)


# --------------------------------------------------------------------------------------------
# Bytes
# --------------------------------------------------------------------------------------------

def kv_bytes_per_token(cfg: Arch, kv_heads: int, nbytes: int) -> int:
    """K and V, each kv_heads·d_h wide, in every layer: 2·L·h_kv·d_h·bytes per cached token."""
    return 2 * cfg.n_layers * kv_heads * cfg.d_head * nbytes


def weight_params(cfg: Arch) -> int:
    """Every stored parameter (embeddings, norms, biases, an untied LM head; tied counts once)."""
    return c.total(c.model_params(cfg))


def params_read(cfg: Arch, tokens: int) -> int:
    """Parameters a forward over `tokens` new tokens must read: every matrix, norm and bias in
    full, but of a lookup table (an untied token embedding, a learned position table) only the
    rows those tokens look up, at most one each. A tied token table is read in full anyway, by
    the LM head. For Llama 3.1 8B's decode step that leaves out 525M of the 8.03B parameters."""
    read = 0
    for p in c.model_params(cfg):
        lookup = p.name == "embed.positions" or (p.name == "embed.tokens"
                                                 and not cfg.tie_embeddings)
        read += min(tokens, p.shape[0]) * p.shape[1] if lookup else p.value
    return read


def _bytes_parts(weights_bytes: int, kv_per_token: int, keys: int, batch: int,
                 steps: int) -> list[c.Part]:
    """Bytes `steps` decode steps move whose attention reads `keys` cached tokens' K/V per
    sequence in total: each step reads every weight once, reads the K/V of its c keys (the new
    token's included) and writes the new token's K/V."""
    return [c.Part("weights.read", steps * weights_bytes, BYTES),
            c.Part("kv_cache.read", batch * keys * kv_per_token, BYTES),
            c.Part("kv_cache.write", steps * batch * kv_per_token, BYTES)]


def step_bytes_parts(weights_bytes: int, kv_per_token: int, context: int,
                     batch: int) -> list[c.Part]:
    """Bytes one decode step at context c moves (see `_bytes_parts`)."""
    return _bytes_parts(weights_bytes, kv_per_token, context, batch, steps=1)


def decode_bytes_parts(weights_bytes: int, kv_per_token: int, prompt: int, gen: int,
                       batch: int) -> list[c.Part]:
    """Bytes all G decode steps move: each part summed over the steps (linear in c)."""
    return _bytes_parts(weights_bytes, kv_per_token, context_sum(prompt, gen), batch, steps=gen)


def prefill_bytes_parts(weights_bytes: int, kv_per_token: int, prompt: int,
                        batch: int) -> list[c.Part]:
    """Bytes the prefill must move at least: all weights once and the prompt's K/V written."""
    return [c.Part("weights.read", weights_bytes, BYTES),
            c.Part("kv_cache.write", batch * prompt * kv_per_token, BYTES)]


# --------------------------------------------------------------------------------------------
# Roofline
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bound:
    """Lower bounds on a step's time from compute and from memory traffic."""

    compute_s: Fraction
    memory_s: Fraction

    @property
    def seconds(self) -> Fraction:
        return max(self.compute_s, self.memory_s)

    @property
    def binds(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def bound(flops: int, nbytes: int, peak: int, bandwidth: int) -> Bound:
    """time ≥ max(FLOPs / peak FLOP/s, bytes / bandwidth bytes/s)."""
    return Bound(Fraction(flops, peak), Fraction(nbytes, bandwidth))


def sum_affine(f: Callable[[int], Fraction], lo: int, hi: int) -> Fraction:
    """Σ_{c=lo..hi} f(c) for f affine in c: (number of terms) × (f(lo) + f(hi)) / 2."""
    if hi < lo:
        return Fraction(0)
    return (hi - lo + 1) * (f(lo) + f(hi)) / 2


@dataclass(frozen=True)
class DecodeTime:
    seconds: Fraction  # Σ over steps of max(compute, memory)
    compute_bound_steps: int
    memory_bound_steps: int


def decode_time(compute_s: Callable[[int], Fraction], memory_s: Callable[[int], Fraction],
                lo: int, hi: int) -> DecodeTime:
    """Σ_{c=lo..hi} max(compute_s(c), memory_s(c)) for two functions affine in the context c.

    Their difference is affine too, so the compute-bound contexts (compute ≥ memory) form one
    run at one end of [lo, hi]: find where the run ends, then sum each side as a series.
    """
    def gap(x: int) -> Fraction:
        return compute_s(x) - memory_s(x)

    g_lo, g_hi = gap(lo), gap(hi)
    if g_lo >= 0 and g_hi >= 0:
        compute, memory = (lo, hi), (hi + 1, hi)
    elif g_lo < 0 and g_hi < 0:
        compute, memory = (lo, lo - 1), (lo, hi)  # no compute-bound step
    else:
        root = lo - g_lo * (hi - lo) / (g_hi - g_lo)  # gap(root) = 0, lo <= root <= hi
        if g_lo >= 0:  # gap falling: compute-bound up to floor(root)
            split = root.numerator // root.denominator
            compute, memory = (lo, split), (split + 1, hi)
        else:  # gap rising: compute-bound from ceil(root)
            split = -(-root.numerator // root.denominator)
            compute, memory = (split, hi), (lo, split - 1)
    seconds = sum_affine(compute_s, *compute) + sum_affine(memory_s, *memory)
    return DecodeTime(seconds, max(0, compute[1] - compute[0] + 1),
                      max(0, memory[1] - memory[0] + 1))


# --------------------------------------------------------------------------------------------
# Reports (plain data, rendered by render_inference)
# --------------------------------------------------------------------------------------------

@dataclass
class ModelInfo:
    name: str
    title: str
    architecture: str


@dataclass
class InferSettings:
    prompt: int
    gen: int
    batch: int
    attention: str
    kv_dtype: str
    kv_bytes_per_element: int
    weights_dtype: str
    weights_bytes_per_element: int
    context: Optional[int]


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
    arithmetic_intensity_first: float  # FLOPs per byte moved
    arithmetic_intensity_last: float
    arithmetic_intensity: float  # over all steps: decode.flops / decode.bytes
    components: dict[str, int]
    bytes_components: dict[str, int]


@dataclass
class KvCache:
    tokens: int
    n_kv_heads: int
    n_heads: int
    bytes_per_token: int
    bytes: int
    mha_bytes_per_token: int
    mha_bytes: int
    gqa_saving_bytes: int
    gqa_factor: float  # mha_bytes / bytes = n_heads / n_kv_heads


@dataclass
class Weights:
    params: int
    dtype: str
    bytes: int


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
    memory_bytes: Optional[int]
    total_memory_bytes: Optional[int]
    peak_overridden: bool
    bandwidth_overridden: bool
    perfect_scaling: bool = True


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
    binds: str  # compute, memory, or "memory, then compute" / "compute, then memory"
    tokens_per_s: float  # upper bound over the whole decode: B·G / seconds
    tokens_per_s_first: float
    tokens_per_s_last: float
    seconds_per_token: float  # mean step time (each step yields one token per sequence)


@dataclass
class Memory:
    required_bytes: int  # weights + full KV cache
    available_bytes: int
    fits: bool


@dataclass
class Roofline:
    prefill: Phase
    decode: DecodeRoofline
    total_seconds: float
    memory: Optional[Memory]


@dataclass
class InferReport:
    schema_version: int
    command: str
    model: ModelInfo
    settings: InferSettings
    conventions: list[str]
    prefill: Prefill
    decode: Decode
    kv_cache: KvCache
    weights: Weights
    memory_bytes: int  # weights + KV cache: what the devices must hold
    total_flops: int
    accelerator: Optional[AcceleratorInfo]
    roofline: Optional[Roofline]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _phase(b: Bound) -> Phase:
    return Phase(float(b.seconds), float(b.compute_s), float(b.memory_s), b.binds)


def accelerator_info(hw: Hardware) -> AcceleratorInfo:
    return AcceleratorInfo(
        name=hw.name, title=hw.title, source=hw.source, dtype=hw.dtype, count=hw.count,
        peak_flops=hw.peak_flops, total_peak_flops=hw.total_peak_flops, bandwidth=hw.bandwidth,
        total_bandwidth=hw.total_bandwidth, memory_bytes=hw.memory_bytes,
        total_memory_bytes=hw.total_memory_bytes, peak_overridden=hw.peak_overridden,
        bandwidth_overridden=hw.bandwidth_overridden)


def _devices(count: int) -> str:
    if count == 1:
        return "on 1 device"
    return f"x {count:,} devices (perfect scaling assumed)"


def infer_conventions(s: InferSettings, hw: Optional[Hardware]) -> list[str]:
    lines = ["2 FLOPs per multiply-add; not counted: norms, activations, softmax, RoPE, bias "
             "adds, embedding lookups (what FlopCounterMode counts)"]
    if s.attention == "causal":
        lines.append("prefill attention causal: the P(P+1)/2 unmasked (query, key) pairs; equals "
                     "flopcalc model --seq P --attention causal")
    else:
        lines.append("prefill attention full: all P² (query, key) pairs, as FlopCounterMode "
                     "counts; equals flopcalc model --seq P")
    lines += [
        "prefill LM head on every prompt token (a server keeping only the last logits saves "
        "2·(P−1)·d·V per sequence)",
        "decode step i = 1..G: one token per sequence attending over c = P + i keys (prompt, "
        "earlier generated tokens, itself): 2 x matmul weights incl. LM head + 4·c·d_q per layer",
        f"KV cache: 2·L·h_kv·d_h·bytes per token, {s.kv_dtype} ({s.kv_bytes_per_element} B), "
        "for batch x (P + G) tokens; MHA: the same with h_kv = h",
        f"weights: every parameter once, {s.weights_dtype} ({s.weights_bytes_per_element} B)",
        "bytes per decode step: every weight read once (of an untied embedding or a position "
        "table only the B rows looked up) + K/V of the c keys read + the new K/V written; "
        "prefill: the weights + the prompt's K/V written; activations not counted",
    ]
    if hw is not None:
        lines.append(f"roofline lower bounds: time >= max(FLOPs / peak, bytes / bandwidth) per "
                     f"step; dense {hw.dtype} peak and memory bandwidth {_devices(hw.count)}")
    return lines


def _decode_binds(t: DecodeTime, first: Bound, last: Bound) -> str:
    if t.compute_bound_steps and t.memory_bound_steps:
        return f"{first.binds}, then {last.binds}"
    return "compute" if t.compute_bound_steps else "memory"


def build_infer_report(loaded: LoadedModel, prompt: int, gen: int, batch: int = 1,
                       attention: c.Attention = "causal", kv_dtype: str = "bf16",
                       weights_dtype: str = "bf16", hw: Optional[Hardware] = None) -> InferReport:
    """Prefill, decode, KV cache and weights of `batch` sequences of `prompt` + `gen` tokens,
    and the roofline on `hw` when given."""
    cfg = loaded.config
    check_decoder_only(cfg, loaded.name)
    kv_b, w_b = dtype_bytes(kv_dtype), dtype_bytes(weights_dtype)
    settings = InferSettings(prompt, gen, batch, attention, kv_dtype, kv_b, weights_dtype, w_b,
                             cfg.max_seq_len)
    params = weight_params(cfg)
    weights_bytes = params * w_b
    step_read_bytes = params_read(cfg, batch) * w_b  # one decode step: B new tokens
    kv_pt = kv_bytes_per_token(cfg, cfg.kv_heads, kv_b)
    mha_pt = kv_bytes_per_token(cfg, cfg.n_heads, kv_b)
    cached = batch * (prompt + gen)

    def step_flops(ctx: int) -> int:
        return c.total(decode_step_parts(cfg, ctx, batch))

    def step_bytes(ctx: int) -> int:
        return c.total(step_bytes_parts(step_read_bytes, kv_pt, ctx, batch))

    pre = prefill_parts(cfg, prompt, batch, attention)
    dec = decode_parts(cfg, prompt, gen, batch)
    dec_bytes_parts = decode_bytes_parts(step_read_bytes, kv_pt, prompt, gen, batch)
    dec_bytes = c.total(dec_bytes_parts)
    first, last = prompt + 1, prompt + gen
    report = InferReport(
        schema_version=SCHEMA_VERSION, command="infer",
        model=ModelInfo(loaded.name, cfg.title or loaded.name, cfg.architecture),
        settings=settings, conventions=infer_conventions(settings, hw),
        prefill=Prefill(
            tokens=batch * prompt, flops=c.total(pre), weights=c.total(pre, c.WEIGHTS),
            attention=c.total(pre, c.ATTENTION),
            flops_per_token=exact_number(Fraction(c.total(pre), batch * prompt)),
            bytes=c.total(prefill_bytes_parts(params_read(cfg, batch * prompt) * w_b, kv_pt,
                                              prompt, batch)),
            components={p.name: p.value for p in pre}),
        decode=Decode(
            steps=gen, tokens=batch * gen, context_first=first, context_last=last,
            flops_first=step_flops(first), flops_last=step_flops(last), flops=c.total(dec),
            weights=c.total(dec, c.WEIGHTS), attention=c.total(dec, c.ATTENTION),
            flops_per_token=exact_number(Fraction(c.total(dec), batch * gen)),
            flops_per_token_first=exact_number(Fraction(step_flops(first), batch)),
            flops_per_token_last=exact_number(Fraction(step_flops(last), batch)),
            bytes_first=step_bytes(first), bytes_last=step_bytes(last), bytes=dec_bytes,
            arithmetic_intensity_first=step_flops(first) / step_bytes(first),
            arithmetic_intensity_last=step_flops(last) / step_bytes(last),
            arithmetic_intensity=c.total(dec) / dec_bytes,
            components={p.name: p.value for p in dec},
            bytes_components={p.name: p.value for p in dec_bytes_parts}),
        kv_cache=KvCache(
            tokens=cached, n_kv_heads=cfg.kv_heads, n_heads=cfg.n_heads, bytes_per_token=kv_pt,
            bytes=cached * kv_pt, mha_bytes_per_token=mha_pt, mha_bytes=cached * mha_pt,
            gqa_saving_bytes=cached * (mha_pt - kv_pt), gqa_factor=mha_pt / kv_pt),
        weights=Weights(params, weights_dtype, weights_bytes),
        memory_bytes=weights_bytes + cached * kv_pt,
        total_flops=c.total(pre) + c.total(dec),
        accelerator=None, roofline=None,
    )
    if cfg.max_seq_len and prompt + gen > cfg.max_seq_len:
        report.warnings.append(
            f"prompt + gen = {prompt + gen:,} tokens exceeds {loaded.name}'s context of "
            f"{cfg.max_seq_len:,}; the counts are given for the longer sequence anyway")
    if hw is not None:
        report.accelerator = accelerator_info(hw)
        report.roofline = _roofline(report, hw, step_flops, step_bytes)
        memory = report.roofline.memory
        if memory is not None and not memory.fits:
            report.warnings.append(
                f"weights + KV cache need {memory.required_bytes:,} bytes but {hw.count} x "
                f"{hw.name} has {memory.available_bytes:,}; the times assume they fit")
    return report


def _roofline(r: InferReport, hw: Hardware, step_flops: Callable[[int], int],
              step_bytes: Callable[[int], int]) -> Roofline:
    if hw.total_bandwidth is None:
        raise FlopcalcError("the roofline needs a memory bandwidth: give --bandwidth BYTES/s")
    peak, bw, d = hw.total_peak_flops, hw.total_bandwidth, r.decode
    first = bound(d.flops_first, d.bytes_first, peak, bw)
    last = bound(d.flops_last, d.bytes_last, peak, bw)
    t = decode_time(lambda x: Fraction(step_flops(x), peak), lambda x: Fraction(step_bytes(x), bw),
                    d.context_first, d.context_last)
    prefill = bound(r.prefill.flops, r.prefill.bytes, peak, bw)
    memory = None
    if hw.total_memory_bytes is not None:
        memory = Memory(r.memory_bytes, hw.total_memory_bytes,
                        r.memory_bytes <= hw.total_memory_bytes)
    batch = r.settings.batch
    return Roofline(
        prefill=_phase(prefill),
        decode=DecodeRoofline(
            first=_phase(first), last=_phase(last), seconds=float(t.seconds),
            compute_bound_steps=t.compute_bound_steps, memory_bound_steps=t.memory_bound_steps,
            binds=_decode_binds(t, first, last),
            tokens_per_s=float(d.tokens / t.seconds),
            tokens_per_s_first=float(batch / first.seconds),
            tokens_per_s_last=float(batch / last.seconds),
            seconds_per_token=float(t.seconds / d.steps)),
        total_seconds=float(prefill.seconds + t.seconds),
        memory=memory)


# --------------------------------------------------------------------------------------------
# Training time
# --------------------------------------------------------------------------------------------

def training_seconds(flops: int, total_peak_flops: int, mfu: Fraction) -> Fraction:
    """Wall-clock seconds at a sustained `mfu` share of the (perfectly scaled) peak."""
    return Fraction(flops) / (total_peak_flops * mfu)


@dataclass
class TrainSettings:
    seq: int
    tokens: int
    tokens_source: str
    attention: str
    dtype: str
    count: int
    mfu: float


@dataclass
class TrainFlops:
    tokens: int
    n: int
    six_nd: int
    exact: int
    six_nd_below_exact_pct: float
    rounded: bool


@dataclass
class PerEstimate:
    exact: float
    six_nd: float


@dataclass
class TrainReport:
    schema_version: int
    command: str
    model: ModelInfo
    settings: TrainSettings
    conventions: list[str]
    training: TrainFlops
    accelerator: AcceleratorInfo
    achieved_flops: float  # count × peak × MFU, FLOP/s
    seconds: PerEstimate
    days: PerEstimate
    accelerator_hours: PerEstimate
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_train_report(model_report: Any, hw: Hardware, mfu: Fraction) -> TrainReport:
    """Time to train from a `report.Report` (its `training.exact` and `training.six_nd`)."""
    rep, t = model_report, model_report.training
    achieved = hw.total_peak_flops * mfu

    def per(scale: Fraction) -> PerEstimate:
        return PerEstimate(float(training_seconds(t.exact, hw.total_peak_flops, mfu) / scale),
                           float(training_seconds(t.six_nd, hw.total_peak_flops, mfu) / scale))

    s = rep.settings
    conventions = [
        "training = 3 x forward FLOPs per token x D (exact: LM head and attention included); "
        f"6ND with N = non-embedding params = {t.n:,}",
        f"attention {s.attention} at seq {s.seq:,} (as flopcalc model)",
        f"time = FLOPs / (count x dense {hw.dtype} peak x MFU); MFU {float(mfu):.4g} is the "
        "sustained share of peak (model FLOPs only, no recomputation)",
        f"peak {_devices(hw.count)}; accelerator-hours = wall-clock hours x count",
    ]
    return TrainReport(
        schema_version=SCHEMA_VERSION, command="train",
        model=ModelInfo(rep.model.name, rep.model.title, rep.model.architecture),
        settings=TrainSettings(s.seq, s.tokens, s.tokens_source, s.attention, hw.dtype,
                               hw.count, float(mfu)),
        conventions=conventions,
        training=TrainFlops(t.tokens, t.n, t.six_nd, t.exact, t.six_nd_below_exact_pct,
                            t.rounded),
        accelerator=accelerator_info(hw),
        achieved_flops=float(achieved),
        seconds=per(Fraction(1)),
        days=per(Fraction(SECONDS_PER_DAY)),
        accelerator_hours=per(Fraction(SECONDS_PER_HOUR, hw.count)),
        warnings=list(rep.warnings),
    )
