"""What every kind of layer part answers, and the records its answers are made of.

A layer is a record of slots (token mixers, cross-attention, a channel mixer, norms); each slot
is filled by a *kind*: attention, latent attention, a Mamba mixer, an MLP, a mixture of
experts... A kind is one module that answers every question the tool asks of it (`Mixer` and
`ChannelMixer` below): its tensors with their roles, its forward FLOPs as named parts of declared
families, its element-wise work, its decode steps, what it keeps between steps, the tensors it
saves for backward, its crossover terms, its shape for the published conventions and how it was
counted. The counting code loops over kinds through these methods and never asks which kind it
holds.

Every count is a list of named `Part`s and a total is always the sum of its parts.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from math import ceil
from typing import Any, Iterable, Iterator, Literal, Optional, Protocol

from ..records import dataclass

Convention = Literal["full", "causal"]
CONVENTIONS: tuple[Convention, ...] = ("full", "causal")

# FLOP families: what kind of work a FLOP part is. `weights`: matmuls (and convolutions)
# against weights, linear in the sequence. `attention`: score and value matmuls against
# activations, quadratic in the sequence. `scan`: the matmuls and recurrences of a state-space or
# linear-attention core (against activations, linear in the sequence up to chunking).
# `elementwise`: bias adds, norms, activations, softmax, residual adds (opt-in).
WEIGHTS, ATTENTION, SCAN, ELEMENTWISE = "weights", "attention", "scan", "elementwise"
FAMILIES = (WEIGHTS, ATTENTION, SCAN, ELEMENTWISE)  # the order reports list them in

# Parameter kinds. `embedding` parts (token, position and token-type tables, an untied LM head)
# are what the non-embedding N of 6ND leaves out; `norms` are the norms outside layers.
EMBEDDING, LAYERS, NORMS, HEAD = "embedding", "layers", "norms", "head"

# How tensor parallelism splits a parameter tensor (Megatron-LM's layout): `column` (split
# along its outputs, biases too), `row` (split along its inputs; its bias is `replicated`),
# `vocab` (a table or head split by vocabulary), `expert` (a routed expert's: split over the
# expert-parallel group, and by tensor parallelism inside it), `replicated` (norms, routers,
# small vectors).
COLUMN, ROW, VOCAB, EXPERT, REPLICATED = "column", "row", "vocab", "expert", "replicated"
# Which pipeline stage holds it: the embeddings on the first, the final norm and head on the
# last, the layers spread over all.
FIRST, SPREAD, LAST = "first", "layers", "last"
ROLES = frozenset((COLUMN, ROW, VOCAB, EXPERT, REPLICATED))
STAGES = frozenset((FIRST, SPREAD, LAST))


@dataclass(frozen=True, slots=True)
class Part:
    """One named count: parameters of a tensor, FLOPs of an operation, or bytes.

    `family` is the FLOP family of an operation or the parameter family of a tensor. A tensor also
    carries its `shape`, its tensor-parallel `role`, its pipeline `stage`, and `lookup` when it
    is only ever read row by row (position tables, an untied input embedding), never in a
    matmul. `tied` names a tensor several layers share (ALBERT's one set of layer weights,
    Zamba2's shared attention block): the parts of one `tied` name are one tensor, counted
    once however many layers use it.

    What a part is, the counting reads from these fields, never from its name (which is for
    reports; tests/package/test_layout.py enforces it). On a tensor, `matmul` marks a weight its
    input is multiplied by in a matmul or a convolution (a linear layer's matrix, stacked experts'
    matrices, a convolution kernel: what LoRA adapts, fp8 copies and a scaled format
    quantises), not a bias, a norm's gain or a state-space parameter; `module` names the module
    that holds the tensor directly (a linear layer's weight and bias, a norm's gain and bias:
    what ZeRO-3 gathers at once), relative to the list the part is in, as its name is ("": the
    kind's own module, its slot once the layer prefixes it: Mamba's A_log and D), None for a
    tensor alone in its module. On a FLOP part of the `weights` family, `weight_shape` is the
    shape of the weight it multiplies by ((n_in, n_out); stacked experts (E, n_in, n_out)), with
    that weight's `role` (see `gemm`; empty where the time model is to take it as a matmul of
    unknown shape: convolutions, low-rank adapters, a mixture of attention heads' experts);
    `head` marks the output head's FLOPs (the LM head, a masked-LM transform, a pooler). On an
    activation, `gemm_input` is the share of its bytes that a projection reads as its input (a
    sublayer's input: 1; a gated MLP's hidden tensors: the third its second projection reads),
    which Transformer Engine's fp8 recipes keep in 8 bits."""

    name: str
    value: int
    family: str
    shape: tuple[int, ...] = ()
    role: str = REPLICATED
    stage: str = SPREAD
    lookup: bool = False
    tied: str = ""
    matmul: bool = False
    module: Optional[str] = None
    weight_shape: tuple[int, ...] = ()
    head: bool = False
    gemm_input: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        # memory, traffic and the step-time model compare these with the names above: any
        # other value would pass as replicated, or on no stage
        if self.role not in ROLES or self.stage not in STAGES:
            raise ValueError(f"{self.name}: role {self.role!r} or stage {self.stage!r} is not "
                             "one of kinds.base's")


def total(parts: Iterable[Part], family: str | None = None) -> int:
    """Sum of the parts (of one kind, if given)."""
    return sum(p.value for p in parts if family is None or p.family == family)


def families(parts: Iterable[Part]) -> dict[str, int]:
    """FLOPs by family, in `FAMILIES` order, for the families that occur."""
    sums: dict[str, int] = {}
    for p in parts:
        sums[p.family] = sums.get(p.family, 0) + p.value
    return {k: sums[k] for k in FAMILIES if k in sums} | {
        k: v for k, v in sums.items() if k not in FAMILIES}


def scaled(parts: Iterable[Part], factor: int, prefix: str = "") -> list[Part]:
    """The parts times `factor` (e.g. a layer's parts for `factor` identical layers), renamed
    `prefix.name`."""
    return [_updated(p, name=f"{prefix}.{p.name}" if prefix else p.name,
                     value=factor * p.value, module=_within(prefix, p.module)) for p in parts]


def merged(parts: Iterable[Part]) -> list[Part]:
    """Parts of the same name summed into one, in order of first appearance (the groups of a
    stack each add their layers' `attn.q.weight` to the stack's one); FLOPs against weights of
    different shapes keep no `weight_shape`. Tensors of one name but another shape (MiMo-V2-
    Flash's k and v, wider in its window layers) stay apart, the later shape named with it
    (`attn.k.weight [4096x1536]`), so that a part is always whole matrices of its shape."""
    out: dict[tuple[str, tuple[int, ...]], Part] = {}
    first: dict[str, tuple[int, ...]] = {}
    for p in parts:
        shape = first.setdefault(p.name, p.shape)
        key = (p.name, p.shape if p.shape != shape else shape)
        seen = out.get(key)
        if seen is None:
            out[key] = p if p.shape == shape else _updated(
                p, name=f"{p.name} [{'x'.join(map(str, p.shape))}]")
        elif seen.weight_shape == p.weight_shape:
            out[key] = _updated(seen, value=seen.value + p.value)
        else:
            out[key] = _updated(seen, value=seen.value + p.value, weight_shape=())
    return list(out.values())


def prefixed(prefix: str, parts: Iterable[Part]) -> list[Part]:
    """The parts renamed `prefix.name` (their modules `prefix.module`)."""
    return [_updated(p, name=f"{prefix}.{p.name}", module=_within(prefix, p.module))
            for p in parts]


def _updated(p: Part, **changes: Any) -> Part:
    """`dataclasses.replace` for the hot paths (a sweep renames and scales tens of thousands of
    parts): a copy of `p` with `changes`, set field by field as the generated __init__ would,
    without its per-call introspection. Part.__post_init__ checks the role and the stage only,
    so a copy that keeps them needs no check; one that changes them is built the checked way."""
    if "role" in changes or "stage" in changes:
        import dataclasses

        return dataclasses.replace(p, **changes)
    q = _new_part(Part)
    for name, get in _PART_FIELDS:
        _set(q, name, changes[name] if name in changes else get(p))
    return q


_new_part, _set = object.__new__, object.__setattr__
_PART_FIELDS = tuple((name, getattr(Part, name).__get__) for name in Part.__slots__)


def _within(prefix: str, module: Optional[str]) -> Optional[str]:
    """A module's name inside `prefix` ("": the module `prefix` itself; a tensor alone in its
    module stays so)."""
    if module is None or not prefix:
        return module
    return f"{prefix}.{module}" if module else prefix


def ceil_fraction(x: Fraction) -> int:
    return ceil(x)


def cdiv(a: int, b: int) -> int:
    """⌈a / b⌉ of integers, exactly."""
    return -(a // -b)


def round_fraction(x: Fraction) -> int:
    """Nearest integer, halves away from zero (counts here are never negative)."""
    return (2 * x.numerator + x.denominator) // (2 * x.denominator)


# How a chunked scan's core is counted (`Span.scan`, --scan): `chunked`, as the Hugging Face
# PyTorch path computes it (chunk-padded: what FlopCounterMode counts), or `recurrent`, the
# token-by-token recurrence (the arithmetic of the kind's decode step, summed over the tokens).
Scan = Literal["chunked", "recurrent"]
SCANS: tuple[Scan, ...] = ("chunked", "recurrent")


@dataclass(frozen=True, slots=True)
class Span:
    """What one sublayer processes in a forward pass: `batch` sequences of `n` query tokens
    each, attending to `source` tokens per sequence (`n`, except cross-attention, whose keys
    are the encoder's), with attention counted under `convention` (`full`: every pair;
    `causal`: the pairs each layer's mask lets through) and a chunked scan's core under `scan`
    (`SCANS`; kinds without a chunked core ignore it)."""

    batch: int
    n: int
    source: int
    convention: Convention = "full"
    scan: Scan = "chunked"
    # Packed samples (Workload.packed): each sequence is these samples one after another, and a
    # query attends only to keys of its own sample. Empty: one sample of n tokens.
    packed: tuple[int, ...] = ()

    @property
    def tokens(self) -> int:
        return self.batch * self.n

    def pairs(self, mask: Any) -> int:
        """(query, key) pairs one head scores over the batch under `mask` (a `kinds.masks.Mask`):
        per sequence mask.pairs(n, source), or with packed samples of lengths Lᵢ the sum over
        the samples, Σ mask.pairs(Lᵢ, Lᵢ): Σ Lᵢ² under `full`, Σ Lᵢ(Lᵢ+1)/2 under a causal
        mask (a window's or a chunk's inside each sample): the block-diagonal mask that
        variable-length attention kernels (FlashAttention's cu_seqlens) compute."""
        if self.packed:
            return self.batch * sum(mask.pairs(n, n, self.convention) for n in self.packed)
        return self.batch * mask.pairs(self.n, self.source, self.convention)

    @property
    def source_tokens(self) -> int:
        return self.batch * self.source


@dataclass(frozen=True, slots=True)
class State:
    """A fixed-size tensor a mixer keeps per sequence whatever the length: a convolution window
    or a recurrent state, of `values` values, stored in the cache's dtype (`dtype="cache"`, as
    the K/V are: --kv-cache-dtype) or the state dtype (`"state"`: --state-dtype, fp32 by
    default, as Hugging Face keeps recurrent states)."""

    name: str
    values: int
    dtype: str = "state"


@dataclass(frozen=True, slots=True)
class Cache:
    """What a mixer keeps between decode steps, per sequence: `per_token` values for each token
    it holds (K and V, or a latent), at most `window` of them (None: every token), and fixed
    `states` whatever the length."""

    per_token: int = 0
    window: Optional[int] = None
    per_token_uncompressed: int = 0  # one key and value per query head (MHA; MLA decompressed)
    label: str = ""  # the kind of cache, for reports: "full", "window_4096", "mamba2", ...
    states: tuple[State, ...] = ()

    def tokens_held(self, tokens: int) -> int:
        return tokens if self.window is None else min(tokens, self.window)

    def state_bytes(self, cache_bytes: int | Fraction, state_bytes: int | Fraction) -> Fraction:
        """Bytes of the fixed states, given the bytes per value of each dtype."""
        return sum((Fraction(s.values) * (cache_bytes if s.dtype == "cache" else state_bytes)
                    for s in self.states), Fraction(0))


@dataclass(frozen=True, slots=True)
class EngineState:
    """A fixed-size state tensor a recurrent mixer keeps per sequence in a paged serving engine,
    on one tensor-parallel rank: `values` values, and `per_draft` more for each speculative
    token (a conv window of k − 1 rows holds k − 1 + s under speculative decoding). `dtype` is
    the engine's dtype class: `conv` (vLLM's mamba_cache_dtype: the model dtype unless set) or
    `state` (mamba_ssm_cache_dtype: the conv dtype unless set)."""

    name: str
    values: int
    dtype: str = "state"  # "conv" | "state"
    per_draft: int = 0


@dataclass(frozen=True, slots=True)
class EngineCache:
    """What one layer asks a paged serving engine to allocate, on one tensor-parallel rank of
    `tp`: vLLM 0.33's `KVCacheSpec` of the layer (`v1/kv_cache_interface.py`), which
    `engines.vllm` pages, groups and counts exactly as vLLM does. `layout` is one of

    - `full`, `sliding` (a window of `window` keys), `chunked` (blocks of `chunk`): softmax
      attention keeping K and V of `heads` KV heads on this rank (KV heads split by tensor
      parallelism, or one replicated per rank when there are fewer than `tp`), `k_dim` + `v_dim`
      values per token and head, in the KV dtype;
    - `mla`: one latent of `k_dim` values per token (r_kv + d_rope, `rope_dim` of them rotary),
      never split by tensor parallelism;
    - `indexer`: a sparse-attention indexer's keys (DeepSeek-V3.2): `k_dim` fp8 values per token
      and one fp32 scale per 128 of them, whatever the KV dtype, never split;
    - `state`: fixed `states` per sequence (Mamba, linear attention), one page per sequence
      (more under prefix caching's `align` mode: `checkpoint_blocks` more for a prefill
      checkpoint, Mamba-2's 1; `checkpoint_alignment`: the block multiple those checkpoints
      need, else 1; `checkpoint_kernel`: the prefill kernel they belong to when only one
      keeps them, `flashinfer` for Gated DeltaNet, whose FlashInfer prefill, vLLM's choice on
      H100/H200, keeps 1 on blocks a multiple of 64 and whose Triton prefill keeps none)."""

    layout: str
    heads: int = 1
    k_dim: int = 0
    v_dim: int = 0
    window: Optional[int] = None
    chunk: Optional[int] = None
    rope_dim: int = 0
    states: tuple[EngineState, ...] = ()
    checkpoint_blocks: int = 0
    checkpoint_alignment: int = 1
    checkpoint_kernel: str = ""


class Keeping(Protocol):
    """How a training step keeps activations (counting.memory's Setup)."""

    seq: int
    batch: int
    tp: int
    sequence_parallel: bool
    recompute: str  # none, selective or full
    dropout: bool
    flash: bool


@dataclass(frozen=True, slots=True)
class Published:
    """A sublayer in the symbols of the published formulas and of the listings: for attention
    its heads (h query, h_kv key/value heads of width d_qk, values d_v), the widths over every
    head (h·d_qk, h·d_v, h_kv·d_qk) and its kind of KV (mha, gqa, mqa, latent); for a
    feed-forward block its kind (plain, gated, moe) and widths; and where it departs from the
    multi-head attention and dense MLP the formulas were written for."""

    heads: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    qk_width: int = 0
    v_width: int = 0
    kv_width: int = 0
    kv_kind: str = ""
    ffn: str = ""
    ffn_widths: tuple[int, ...] = ()  # a dense MLP's d_ff (the formulas assume 4d)
    experts: int = 0
    top_k: int = 0
    expert_width: int = 0
    departures: tuple[str, ...] = ()


class Kind:
    """What every kind answers, with the answers of a kind that has nothing to say on a
    question (no cache, no s² term, ...). A kind subclasses it as a frozen dataclass and
    overrides what applies; part names are relative to its slot (`q.weight`, `scores`), which
    the layer prefixes (`attn.q.weight`).

    - `slot`: its sublayer's name (`attn`, `mamba`, `mlp`, ...);
    - `params(d, active)`: its tensors, with shapes and roles (`active`: only the weights one
      token uses, for a mixture of experts);
    - `forward(d, x)`: forward FLOPs over a `Span`, as named parts of declared families;
    - `elementwise(d, x)`: the element-wise work of that pass (counted on request);
    - `decode(d, batch, first, last)`: FLOPs of the decode steps at positions first..last
      together, one new token per sequence each, in closed form;
    - `cache()` and `cache_reads(first, last)`: what it keeps between steps, and the cached
      values those steps read;
    - `engine_cache(tp)`: what a paged serving engine allocates for it on one of `tp`
      tensor-parallel ranks (`EngineCache` records, one per cache the layer keeps: latent
      attention with a sparse indexer gives two; none for a layer without a cache);
    - `activations(d, k)`: bytes it keeps for backward besides its input, under `Keeping`, as
      (name, bytes) or (name, bytes, the share of them a projection reads as its input);
    - `pair_terms()`: (FLOPs per scored pair, mask) of its s² terms, for the crossover;
    - `breakpoints(lo, hi)`: where its decode cost changes affine form; `period()`: their
      period when they recur (a chunked mask's block); `count_period()`: the block of lengths
      on which its forward count is one polynomial (a chunked scan's chunk);
    - `tp_units()`, `ep_units()`: what tensor and expert parallelism must divide (0: no
      constraint);
    - `reads(d, tokens)`: the routed experts a forward reads (None: every weight);
    - `published(d)`: its symbols in the published formulas; `formula(name, d, s, local)`:
      its term in a published codebase's FLOP formula (Megatron-LM's, MaxText's), and
      `formula_notes(name, d, s, local)`: where that term departs from the kind;
    - `chunked_scan`: its forward's core is a chunked scan, which `Span.scan` = `recurrent`
      counts as the token-by-token recurrence of its decode step instead;
    - `describe()`, `notes()`, `decode_notes()`: its name in tables and its "how this was
      counted" lines (for serving too).
    """

    slot = "mixer"
    routed = False  # a mixture of experts: a token uses some of its weights
    bidirectional = False  # every query sees every key (an encoder's attention)
    chunked_scan = False  # a chunked scan's core (Mamba-2 SSD, delta rules): see `Span.scan`

    def params(self, d: int, active: bool = False) -> list[Part]:
        return []

    def forward(self, d: int, x: Span) -> list[Part]:
        return []

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return []

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return []

    def cache(self) -> Cache:
        return Cache()

    def cache_reads(self, first: int, last: int) -> int:
        return 0

    def engine_cache(self, tp: int = 1) -> tuple[EngineCache, ...]:
        """Its caches in a paged serving engine on one of `tp` tensor-parallel ranks (see
        `EngineCache`); none by default. A recurrent mixer answers `EngineCache("state",
        states=(EngineState("conv", rows·channels/tp, "conv", channels/tp), EngineState(
        "ssm", values/tp, "state")))`, the shapes vLLM's `get_mamba_state_shape_from_config`
        gives for it."""
        return ()

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        return []

    def pair_terms(self) -> list[tuple[int, object]]:
        return []

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        return iter(())

    def period(self) -> Optional[int]:
        """When its breakpoints recur every n positions (a chunked mask's blocks), n; its other
        breakpoints are finitely many (a window's w)."""
        return None

    def count_period(self) -> Optional[int]:
        """c when its forward FLOPs are one polynomial in the sequence length on each block of
        lengths (k·c, (k+1)·c] but not across blocks: a chunked scan that pads the sequence to
        a multiple of its chunk, or runs it block by block. None: no such blocks (its masks'
        windows and chunks are read from `pair_terms`). `counting.polynomial` relies on it."""
        return None

    def tp_units(self) -> int:
        return 0  # no constraint

    def ep_units(self) -> int:
        return 0

    def reads(self, d: int, tokens: int) -> Optional[object]:
        return None

    def published(self, d: int) -> Published:
        return Published()

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token of this sublayer at sequence length s under a published
        codebase's formula, as that code counts it (its training total divided by its 3
        passes and its tokens): `megatron_lm`, Megatron-LM's num_floating_point_operations on
        the GPT path (`transformer_flops`); `megatron_lm_hybrid`, the same function's path for
        models with a hybrid_layer_pattern (`hybrid_flops`, which a model with Mamba layers
        takes); `maxtext`, MaxText's calculate_tflops_training_per_device. `local`: the
        codebase's path counts sliding windows and chunks by the keys they keep (MaxText's
        decoder blocks that mix local and global layers) rather than as causal attention over
        the whole sequence. None when that formula has no term for this kind (the codebase
        cannot build it)."""
        return None

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        """Where `formula(name, d, s, local)` departs from this kind as it is (what the
        codebase's term leaves out or sizes differently), one line each."""
        return []

    def describe(self) -> str:
        return type(self).__name__

    def notes(self) -> list[str]:
        return []

    def decode_notes(self) -> list[str]:
        return []


def linear(name: str, n_in: int, n_out: int, bias: bool, role: str = COLUMN) -> list[Part]:
    """A linear layer's weight (n_in x n_out) and, if it has one, its bias (n_out), one module
    `name`. A column-parallel layer's bias is split with it; a row-parallel layer's is
    replicated."""
    parts = [Part(f"{name}.weight", n_in * n_out, LAYERS, (n_in, n_out), role, matmul=True,
                  module=name)]
    if bias:
        parts.append(Part(f"{name}.bias", n_out, LAYERS, (n_out,),
                          COLUMN if role == COLUMN else REPLICATED, module=name))
    return parts


def gemm(name: str, tokens: int, n_in: int, n_out: int, role: str = COLUMN,
         lead: tuple[int, ...] = ()) -> Part:
    """The FLOPs of `tokens` rows times a weight, (T×n_in)·(n_in×n_out) → 2·T·n_in·n_out, with
    the weight's shape (`lead` + (n_in, n_out): (E,) for stacked experts, whose T counts every
    routed token) and tensor-parallel `role`."""
    return Part(name, 2 * tokens * n_in * n_out, WEIGHTS, role=role,
                weight_shape=lead + (n_in, n_out))
