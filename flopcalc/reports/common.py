"""What every command's report shares: the schema version, the model's description, the
conventions lines, the context warning, defaults, and the number helpers.

A report is a plain dataclass (pydantic stays off the start-up path); `flopcalc schema
COMMAND` derives its JSON Schema from the same class, so the two cannot drift.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional, Sequence, Union

from ..records import dataclass
from ..kinds.base import Published
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..numbers import counted

SCHEMA_VERSION = 2  # 2: crossover.seq may be null; params.active; every CSV starts with `model`
TOKENS_PER_PARAM_DEFAULT = 20  # Hoffmann et al. 2022 (Chinchilla): ~20 tokens per parameter
FALLBACK_SEQ = 2048  # a model with neither default_seq nor max_seq_len

Number = Union[int, float]


class Report:
    """Base of every command's report: `to_dict()` is the JSON document."""

    def to_dict(self) -> dict[str, Any]:
        return plain(self)

    def document(self) -> Any:
        """What `--format json` writes: the report itself, which the JSON writer walks as
        `to_dict` would (a 10,000-row sweep is then never copied into dicts first), or
        `to_dict()` where a report reshapes it."""
        return self if type(self).to_dict is Report.to_dict else self.to_dict()


_ATOMS = frozenset((int, float, str, bool, type(None)))
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, looked up once


def plain(obj: Any) -> Any:
    """What `dataclasses.asdict` makes of a report (dataclasses as dicts of their fields, in
    order, lists and dicts copied, tuples kept), without its per-object introspection and deep
    copies of ints and strings: a 10,000-row sweep spent longer here than counting. Anything
    else is deep-copied, as asdict does."""
    cls = obj.__class__
    if cls in _ATOMS:
        return obj
    names = _FIELDS.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__"):
        from dataclasses import fields

        names = _FIELDS[cls] = tuple(f.name for f in fields(obj))
    if names is not None:
        return {name: value if (value := getattr(obj, name)).__class__ in _ATOMS
                else plain(value) for name in names}
    if cls is list:
        return [x if x.__class__ in _ATOMS else plain(x) for x in obj]
    if cls is dict:
        return {plain(k): v if v.__class__ in _ATOMS else plain(v) for k, v in obj.items()}
    return _rare(obj)


def _rare(obj: Any) -> Any:
    """asdict's rules for the containers a report does not use: named tuples, subclasses of
    list, tuple and dict; anything else deep-copied."""
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[plain(x) for x in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(plain(x) for x in obj)
    if isinstance(obj, dict):
        if hasattr(type(obj), "default_factory"):
            out = type(obj)(getattr(obj, "default_factory"))
            for k, v in obj.items():
                out[plain(k)] = plain(v)
            return out
        return type(obj)((plain(k), plain(v)) for k, v in obj.items())
    import copy

    return copy.deepcopy(obj)


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class ModelInfo:
    name: str
    title: str
    source: str
    origin: str  # "preset", or the path that was read
    architecture: str
    notes: str


def as_argument(loaded: LoadedModel) -> str:
    """How a command line names this model, for the commands a report suggests: a preset by
    its name, a file by the path it was read from (quoted for a shell where it must be)."""
    if loaded.origin == "preset":
        return loaded.name
    import shlex

    return shlex.quote(loaded.origin)


def model_info(loaded: LoadedModel) -> ModelInfo:
    s = loaded.spec
    return ModelInfo(loaded.name, s.title or loaded.name, s.source, loaded.origin,
                     s.architecture, s.notes)


def pct(part: Number | Fraction, whole: Number | Fraction) -> float:
    return float(100 * Fraction(part) / Fraction(whole)) if whole else 0.0


def exact_number(x: Fraction) -> Number:
    """An int when `x` is whole; otherwise the nearest float (marked as rounded by the caller)."""
    return x.numerator if x.denominator == 1 else float(x)


def default_seq(spec: ModelSpec) -> int:
    """--seq when not given: the preset's declared default (the pre-training length, e.g. 8,192
    for Llama 3.1), else its context, else 2,048."""
    return spec.default_seq or spec.max_seq_len or FALLBACK_SEQ


def default_tokens(spec: ModelSpec, total_params: int) -> tuple[int, str]:
    """D when --tokens is not given: the published figure, else 20 tokens per parameter."""
    if spec.training_tokens:
        return spec.training_tokens, f"published: {spec.training_tokens_source or spec.source}"
    return (TOKENS_PER_PARAM_DEFAULT * total_params,
            f"default: {TOKENS_PER_PARAM_DEFAULT} tokens per parameter (Chinchilla rule of thumb)")


def context_warning(name: str, label: str, length: int, context: Optional[int]) -> list[str]:
    """The one warning for a length beyond the model's context (empty when within it)."""
    if context and length > context:
        return [f"{label} {length:,} exceeds {name}'s context of {context:,} tokens; the counts "
                "are given for the longer sequence anyway"]
    return []


def attention_line(convention: str) -> str:
    if convention == "full":
        return ("attention full: every (query, key) pair counted, 4·b·s²·d_q per self-attention "
                "layer, windowed or not (what PyTorch's FlopCounterMode counts: a mask does not "
                "shrink the matmuls)")
    return ("attention causal: each layer counts the pairs its own mask lets through: s(s+1)/2 "
            "causal, Σ min(i, w) for a window of w keys, block by block when chunked; encoder "
            "and cross-attention stay full")


def kernel_line(flash: bool) -> str:
    """Which attention kernel a report with activations assumed (--flash), in a line."""
    if flash:
        return ("attention kernel: flash (--flash): no s² scores kept for backward, masked "
                "blocks skipped")
    return ("attention kernel: eager (no --flash): the s² scores (and softmax) kept for "
            "backward, every (query, key) pair computed")


def eager_hint(spec: ModelSpec, setup: Any) -> list[str]:
    """A hint when the eager kernel's s² tensors are most of the activations of `setup` (a
    counting.memory Setup), where --flash would drop them; empty otherwise."""
    if setup.flash:
        return []
    from dataclasses import replace

    from ..counting.memory import activation_parts

    eager = sum(x.value for x in activation_parts(spec, setup))
    flash = sum(x.value for x in activation_parts(spec, replace(setup, flash=True)))
    if 2 * (eager - flash) <= eager:
        return []
    return [f"activations assume the eager kernel (s² scores saved: {(eager - flash) / 1e9:,.1f} "
            f"of {eager / 1e9:,.1f} GB per device, --no-flash); drop --no-flash for flash "
            "attention, as every framework runs it"]


def chunked_scans(spec: ModelSpec) -> bool:
    """Whether some layer of `spec` has a chunked scan, whose core --scan decides
    (`Kind.chunked_scan`)."""
    return any(kind.chunked_scan for g in spec.groups() for _, kind in g.layer.slots())


def scan_lines(scan: str, scanned: bool) -> list[str]:
    """How chunked scans were counted (--scan), for a run whose model(s) have a chunked-scan
    layer (`scanned`); for one without, a line only when --scan recurrent was asked for, to say
    it changed nothing."""
    if not scanned:
        if scan == "chunked":
            return []
        return ["scan recurrent (--scan) changes nothing here: no layer has a chunked scan "
                "(Mamba-2, gated DeltaNet, Kimi delta or lightning attention)"]
    if scan == "chunked":
        return ["scan chunked (the default): chunked scans as the Hugging Face PyTorch path "
                "computes them, the sequence padded to a multiple of the chunk (what "
                "FlopCounterMode counts); --scan recurrent counts the token-by-token recurrence"]
    return ["scan recurrent (--scan): each chunked scan's core counted token by token as its "
            "decode step computes it (the state's decay, update and read-out) on every real "
            "token, no padding, in place of the chunked matmuls; projections and conv as in the "
            "forward (not what FlopCounterMode counts of the Hugging Face path)"]


def conventions(spec: Optional[ModelSpec], attention: str, elementwise: bool = False,
                n: Optional[int] = None, scan: str = "chunked",
                scanned: Optional[bool] = None) -> list[str]:
    """How a run counted, one line each. Without a model (`compare`), the model-independent
    lines only, and N is each model's own; `scanned` then says whether some model has a
    chunked scan (with a model, its own layers say)."""
    lines = ["2 FLOPs per multiply-add: a matmul (T x in)·(in x out) costs 2·T·in·out",
             attention_line(attention)]
    tied = spec is not None and spec.tie_embeddings
    if spec is not None and spec.head == "none":
        lines.append("no LM head: the model ends at its last hidden states (head: none)")
    else:
        lines.append("LM head counted: 2·T·d·V on every output token"
                     + (" (tied to the embedding)" if tied else ", tied or not"))
    if elementwise:
        lines.append("element-wise ops counted as *.elementwise.* parts (docs/conventions.md: "
                     "Element-wise costs); forward = weights + attention + elementwise")
    else:
        lines.append("not counted: bias adds, norms, activations, softmax, residual adds, "
                     "embedding lookups, routing")
    moe = spec is not None and spec.is_moe
    which = f" = {n:,}" if n is not None else " of each model"
    if moe:
        lines.append(f"6ND uses N = active non-embedding params{which}: a token's k routed "
                     "experts, not all E (total minus embeddings, an untied LM head and the "
                     "unused experts)")
    else:
        lines.append(f"6ND uses N = non-embedding params{which} (total minus token and position "
                     "embeddings and an untied LM head)")
    if spec is not None:
        lines += kind_notes(spec, "notes")
    if scanned is None:
        scanned = spec is not None and chunked_scans(spec)
    lines += scan_lines(scan, scanned)
    lines.append("training = 3 x forward (backward = 2 x forward)")
    if spec is not None and spec.mtp_layers:
        lines.append(f"{counted(spec.mtp_layers, 'multi-token-prediction module')}: trained, "
                     "not served: outside params.total and the forward pass, their 3 x forward "
                     "in training.exact as training.mtp (and in training memory)")
    if spec is not None and spec.is_encoder_decoder:
        lines.append("encoder-decoder: tokens D are target (decoder) tokens; crossover taken "
                     "with target length = source length")
    return lines


def kind_notes(spec: ModelSpec, which: str = "notes") -> list[str]:
    """The "how this was counted" lines of the model's kinds (`notes`, or `decode_notes` for
    serving), each once, in the order the kinds first appear."""
    lines: dict[str, None] = {}
    for kind in spec.frontend + spec.towers:  # input front ends and vision towers first
        lines.update(dict.fromkeys(getattr(kind, which)()))
    for g in spec.groups():
        for _, kind in g.layer.slots():
            lines.update(dict.fromkeys(getattr(kind, which)()))
    return list(lines)


def first_attention(spec: ModelSpec, stack: Optional[str] = None) -> Published:
    """The symbols of the first token mixer with heads (empty when no layer has attention)."""
    return next((pub for g in spec.groups(stack) for m in g.layer.mixers
                 if (pub := m.published(spec.d_model)).heads), Published())


def first_ffn(spec: ModelSpec, stack: Optional[str] = None) -> Published:
    """The first mixture of experts' symbols, else the first dense MLP's (empty: none)."""
    ffns = [g.layer.ffn.published(spec.d_model) for g in spec.groups(stack)
            if g.layer.ffn is not None]
    return next((f for f in ffns if f.experts), ffns[0] if ffns else Published())


SAMPLES = 240  # points along a curve, besides its ends and breakpoints


def samples(first: int, last: int, keep: Sequence[int] = ()) -> list[int]:
    """Integers from first to last: both ends, `keep`, and about SAMPLES evenly spaced."""
    span = last - first
    points = {first + span * i // SAMPLES for i in range(SAMPLES + 1)}
    return sorted(points | {first, last} | {k for k in keep if first <= k <= last})


def memory_basis_line(hw: Any) -> str:
    """How a device's memory was sized (a `Hardware`): the usable capacity and its source, the
    share and reserve taken off it, and the nominal size beside it."""
    usable, room = hw.usable_memory_bytes, hw.memory_bytes
    cut = ""
    if hw.memory_fraction != 1:
        cut += f" x {float(hw.memory_fraction):g} (--memory-fraction)"
    if hw.reserve_bytes:
        cut += f" - {hw.reserve_bytes:,} (--reserve)"
    return (f"device memory: {usable:,} bytes usable ({hw.memory_basis}; nominal "
            f"{hw.nominal_memory_bytes:,})" + (f"{cut} = {room:,} a run may fill" if cut else
                                               "; a run may fill all of it"))
