"""Bytes of every stored tensor under a storage plan (`models.quantization.Plan`): each layer's
tensors one by one, with the module (`unit`) and layer a checkpoint's patterns name, and the
format the plan gives them.

A format's matrix (n_in × n_out) takes n_in·n_out·bits/8 bytes of values plus its scales:
- a tile of (t_out × t_in) values per scale (fp8 128×128 blocks): ⌈n_in/t_in⌉·⌈n_out/t_out⌉
  scales;
- `group` values along the input per scale (AWQ, GPTQ, mxfp4, nvfp4): n_out·n_in/group scales,
  each with its zero point; -1: one per output row (per channel);
- `flat` blocks of the flattened matrix (bitsandbytes): ⌈n_in·n_out/group⌉ scales, and with
  double quantisation one fp32 per `nested` of them;
plus `tensor_bytes` per matrix and `index_bytes` per input row (GPTQ's g_idx). Everything
else (norms, biases, routers, what a pattern keeps) is stored in the plan's dtype.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from ..errors import FlopcalcError
from ..kinds.base import EMBEDDING, EXPERT, LAYERS, REPLICATED, ROW, VOCAB, Part, cdiv
from ..models.quantization import (UNIT_TITLES, Format, Plan, leaf_names, matches,
                                   module_names)
from ..models.spec import ModelSpec
from ..tables import DTYPE_BITS, SCALED_FORMATS
from .model import token_params, tower_params
from .quant import UNQUANTISED, bits_per_value, part_bytes, quantised


@dataclass(frozen=True)
class Stored:
    """One stored tensor (of one layer), where it sits and its bytes."""

    part: Part
    layer: Optional[int]  # its stack's layer index (MTP modules follow the decoder's); None
    unit: str  # the module a checkpoint names (models.quantization.UNITS), or vectors
    kind: Any  # the layer part's kind (its expert reads), None outside the layers
    fmt: str  # the format's or dtype's name
    bytes: Fraction
    bits: int  # per value


def matrix_bytes(n_in: int, n_out: int, fmt: Format, unit: str = "attn") -> Fraction:
    """Bytes of one (n_in × n_out) matrix stored in `fmt`, scales included."""
    values = Fraction(n_in * n_out * fmt.bits, 8)
    per_scale = fmt.scale_bits + fmt.zero_bits
    if fmt.tile != (0, 0):
        t_out, t_in = fmt.tile
        scales = Fraction(cdiv(n_in, t_in) * cdiv(n_out, t_out) * per_scale, 8)
    elif fmt.flat:
        blocks = cdiv(n_in * n_out, fmt.group)  # (n_in·n_out / group) absmax
        scales = Fraction(blocks * per_scale, 8) + (4 * cdiv(blocks, fmt.nested)
                                                    if fmt.nested else 0)
    elif fmt.group == -1:
        scales = Fraction(n_out * per_scale, 8)
    elif fmt.group:
        if fmt.exact_groups and n_in % fmt.group:
            raise FlopcalcError(
                f"{fmt.name}: group size {fmt.group} does not divide the input width {n_in:,} "
                f"of the {UNIT_TITLES.get(unit, unit)}' matrices; check quantization_config's "
                "group_size, or give --weights-dtype FORMAT")
        scales = Fraction(n_out * cdiv(n_in, fmt.group) * per_scale, 8)
    else:
        scales = Fraction(0)
    return values + scales + fmt.tensor_bytes + fmt.index_bytes * n_in


def tensor_bytes(p: Part, unit: str, layer: Optional[int], plan: Plan,
                 formats: Optional[dict] = None) -> tuple[str, int, Fraction]:
    """(format name, bits per value, bytes) of one tensor under `plan` (`formats`: the plan's
    answers so far, by unit and layer)."""
    if plan.flags is not None:
        weights, experts = plan.flags
        name = experts if (experts and p.role == EXPERT) else weights
        if name in SCALED_FORMATS and not quantised(p):
            name = UNQUANTISED
        return name, bits_per_value(name), part_bytes(p, weights, experts)
    fmt = None
    if quantised(p) or (unit == "head" and plan.head):
        if formats is None:
            fmt = plan.format_for(unit, layer)
        else:
            if (unit, layer) not in formats:
                formats[(unit, layer)] = plan.format_for(unit, layer)
            fmt = formats[(unit, layer)]
    if fmt is None:
        return plan.dtype, DTYPE_BITS[plan.dtype], Fraction(p.value * DTYPE_BITS[plan.dtype], 8)
    n_in, n_out = p.shape[-2:]
    matrices = p.value // (n_in * n_out)  # a stack's matrices: a whole number
    return fmt.name, fmt.bits, matrices * matrix_bytes(n_in, n_out, fmt, unit)


def _layer_units(layer: Any, d: int) -> list[tuple[Part, str, Any]]:
    """One layer's tensors (as `counting.layers.layer_params` lists them) with their units."""
    out: list[tuple[Part, str, Any]] = []
    for sub, slots in layer.sublayers():
        before, after = layer.norms_around(sub)
        for name in before + after:
            out += [(q, "norm", None) for q in layer.norm.params(d, name)]
        for name, kind in slots:
            params = kind.params(d)
            moe = any(q.role == EXPERT for q in params)
            for q in params:
                q = replace(q, name=f"{name}.{q.name}")
                if kind is layer.ffn:
                    unit = ("experts" if q.role == EXPERT else
                            "router" if q.role == REPLICATED and q.matmul else
                            "shared" if moe else "mlp")
                else:
                    unit = "cross" if kind is layer.cross else "attn"
                out.append((q, unit, kind))
    if layer.tied:
        out = [(q if q.tied else replace(q, tied=f"{layer.tied}.{q.name}"), u, k)
               for q, u, k in out]
    return out


def _outside(p: Part) -> str:
    if p.family == EMBEDDING and p.lookup:
        return "embed"
    return "head" if p.role == VOCAB else "other"


_MEMO: dict[tuple[int, Plan, bool], tuple[ModelSpec, list[Stored]]] = {}


def stored(spec: ModelSpec, plan: Plan, mtp: bool = False) -> list[Stored]:
    """Every tensor the model stores, one entry per layer's tensor (a tensor layers share, once),
    under `plan`; with `mtp`, DeepSeek's multi-token-prediction modules instead. (Remembered
    for the last few models: a report asks several times.)"""
    key = (id(spec), plan, mtp)
    if key in _MEMO and _MEMO[key][0] is spec:
        return _MEMO[key][1]
    if len(_MEMO) > 8:
        _MEMO.clear()
    out = _stored(spec, plan, mtp)
    _MEMO[key] = (spec, out)
    return out


def _stored(spec: ModelSpec, plan: Plan, mtp: bool) -> list[Stored]:
    d = spec.d_model
    entries: list[tuple[Part, Optional[int], str, Any]] = []
    if mtp:
        first = spec.n_layers("decoder")
        for j in range(spec.mtp_layers):
            entries += [(q, first + j, "norm", None)
                        for q in spec.norm.params(d, "enorm") + spec.norm.params(d, "hnorm")]
            entries.append((Part("eh_proj.weight", 2 * d * d, LAYERS, (2 * d, d), ROW,
                                 matmul=True), first + j, "mtp_proj", None))
            entries += [(q, first + j, u, k) for q, u, k in _layer_units(spec.mtp_layer, d)]
            entries += [(q, first + j, "norm", None)
                        for q in spec.norm.params(d, "shared_head.norm")]
    else:
        entries += [(q, None, _outside(q), None) for q in token_params(spec)
                    if q.family != LAYERS]
        entries += [(q, None, "tower", None) for q in tower_params(spec)]
        index: dict[str, int] = {}
        seen: set[str] = set()
        for x in spec.layers:
            i = index[x.stack] = index.get(x.stack, -1) + 1
            for q, u, k in _layer_units(x, d):
                if q.tied:
                    if q.tied in seen:
                        continue
                    seen.add(q.tied)
                entries.append((q, i if x.stack == "decoder" else None, u, k))
    out = []
    formats: dict = {}
    for q, i, u, k in entries:
        if not q.matmul and u not in ("embed", "head", "tower"):
            u = "vectors"  # norms, biases, sinks: never quantised, whichever module holds them
        fmt, bits, b = tensor_bytes(q, u, i, plan, formats)
        out.append(Stored(q, i, u, k, fmt, b, bits))
    return out


def check_plan(spec: ModelSpec, plan: Plan, model: str) -> list[str]:
    """Every pattern of the plan names a module of the model: one that names nothing is an
    error (a typo, or a config for another model); one naming single projections of a module
    (`in_proj_ba`) is a warning returned, as formats are planned per module."""
    if not plan.patterns():
        return []
    units = {(s.unit, s.layer) for s in stored(spec, Plan(plan.dtype))}
    if spec.mtp_layers:
        units |= {(s.unit, s.layer) for s in stored(spec, Plan(plan.dtype), mtp=True)}
    names = [module_names(u, i) for u, i in units]
    leaves = [leaf_names(u, i) for u, i in units]
    where = plan.source.split(";")[0]
    partial: dict[str, list[str]] = {}
    for key, pattern in plan.patterns():
        if any(matches(pattern, n) for n in names):
            continue
        if any(matches(pattern, n) for n in leaves):
            partial.setdefault(key, []).append(pattern)
            continue
        raise FlopcalcError(
            f"{where}: {key} pattern '{pattern[:80]}' matches no module of "
            f"{model} (its modules are named like model.layers.0.self_attn, "
            "model.layers.0.mlp, model.layers.0.mlp.experts, model.embed_tokens, lm_head); "
            "is the config.json for this model?")
    return [f"{where}: {len(p)} {key} pattern{'s' if len(p) > 1 else ''} ('{p[0][:80]}'"
            f"{', ...' if len(p) > 1 else ''}) name{'s' if len(p) == 1 else ''} single projections; "
            "flopcalc plans formats "
            "per module (self_attn, mlp, mlp.experts, mlp.gate, lm_head), so they are counted "
            "in their module's format" for key, p in partial.items()]


def total(entries: list[Stored]) -> Fraction:
    return sum((s.bytes for s in entries), Fraction(0))


def by_unit(entries: list[Stored]) -> dict[tuple[str, str], Fraction]:
    """Bytes per (unit, format), in order of first appearance."""
    out: dict[tuple[str, str], Fraction] = {}
    for s in entries:
        out[(s.unit, s.fmt)] = out.get((s.unit, s.fmt), Fraction(0)) + s.bytes
    return out


def resolve_plan(loaded: Any, weights: Optional[str], experts: Optional[str]) -> Plan:
    """How the weights are stored: the flags when given (they override), else what the
    model's config.json or preset says, else bf16."""
    from ..models.quantization import checkpoint_plan, plan_from_flags

    if weights is not None or experts is not None:
        return plan_from_flags(weights or "bf16", experts)
    plan = checkpoint_plan(loaded)
    if plan is None:
        return Plan("bf16", source="bf16: no checkpoint format known (--weights-dtype sets one)",
                    flags=("bf16", None))
    from ..models.registry import note

    for line in check_plan(loaded.spec, plan, loaded.name):
        note(line)
    return plan


def summary(entries: list[Stored]) -> tuple[str, str]:
    """(weights, experts): the format of the layers' matrices (`a + b` where modules differ)
    and of the routed experts' (the weights' when there are none)."""
    formats: dict[str, None] = {}
    experts: dict[str, None] = {}
    for s in entries:
        if s.unit in ("attn", "cross", "mlp", "shared") and s.part.matmul:
            formats[s.fmt] = None
        elif s.unit == "experts" and s.part.matmul:
            experts[s.fmt] = None
    w = " + ".join(formats) or next(iter(experts), "bf16")
    return w, " + ".join(experts) or w


@dataclass(frozen=True)
class StorageRow:
    """One module's storage in a report: its format, bytes and where the format came from."""

    module: str
    format: str
    bytes: int
    source: str


def storage_rows(entries: list[Stored], plan: Plan) -> list[StorageRow]:
    from ..kinds.base import ceil_fraction
    from ..models.quantization import LINEAR

    rows = []
    for (unit, fmt), b in by_unit(entries).items():
        source = plan.source
        if plan.flags is None and unit in LINEAR and fmt == plan.dtype and plan.rules:
            source += f"; left in {plan.dtype} by its {plan.keep_key}" if plan.keep else \
                f"; {plan.method} leaves it in {plan.dtype}"
        rows.append(StorageRow(UNIT_TITLES.get(unit, unit), fmt, ceil_fraction(b), source))
    return rows


def read_bytes(spec: ModelSpec, tokens: int, plan: Plan) -> Any:
    """`counting.quant.read_bytes` under a plan: weight bytes a forward over `tokens` tokens
    reads (lookup tables' used rows, of a mixture of experts the experts routed to)."""
    from .quant import ReadBytes

    fixed = Fraction(0)
    moe: dict[tuple[int, Fraction], list[Any]] = {}
    for s in stored(spec, plan):
        p = s.part
        if s.unit == "tower":
            continue
        if p.lookup:
            fixed += s.bytes * min(tokens, p.shape[0]) / p.shape[0]
        elif p.role == EXPERT and s.layer is not None:
            moe.setdefault((id(s.kind), s.layer), [s.kind, Fraction(0)])[1] += s.bytes
        else:
            fixed += s.bytes
    least = expected = most = fixed
    for kind, b in moe.values():
        r = kind.reads(spec.d_model, tokens)
        per_expert = b / r.experts
        least += r.least * per_expert
        expected += Fraction(r.expected) * per_expert
        most += r.most * per_expert
    return ReadBytes(least, expected, most)
