"""`serve`'s weights: their bytes in the formats they are stored in (`counting.storage`), and
what one device of each pipeline stage holds (its tensor- and expert-parallel share, a
drafter's on the last stage, as the engine lays them out: `engines.loading`); and with
--max-loras the LoRA adapter slots vLLM allocates with them (`engines.lora`), which come out
of the memory for the cache."""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..counting.model import model_params
from ..counting.storage import (Stored, StorageRow, resolve_plan, storage_rows, stored,
                                summary, total)
from ..engines import lora as L
from ..engines import vllm as E
from ..engines.loading import (Loading, mxfp4_expert_bytes, nvfp4_extra,
                               triton_scale_copies)
from ..kinds import base as p
from ..kinds.base import EXPERT, FIRST, LAST, SPREAD
from ..models.quantization import Plan
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..predict.latency import DeviceCosts, Layout, share
from .serve_speculative import Draft, draft_storage


@dataclass(frozen=True)
class WeightFormats:
    """--weights-dtype and --experts-dtype (None: the checkpoint's formats, else bf16), and
    --mxfp4-backend (the engine's MoE kernels, which decide how MXFP4 experts are padded)."""

    weights_dtype: Optional[str] = None
    experts_dtype: Optional[str] = None
    mxfp4_backend: str = "auto"

    def plan(self, loaded: LoadedModel) -> Plan:
        return resolve_plan(loaded, self.weights_dtype, self.experts_dtype)


@dataclass
class Weights:
    params: int
    dtype: str
    experts_dtype: str
    bytes: int  # the whole model, scales included
    device_bytes: list[int]  # what one device of each pipeline stage holds
    source: str = ""  # where the formats came from: a flag, config.json, a preset
    storage: list[StorageRow] = field(default_factory=list)  # per module: format and bytes
    from_checkpoint: bool = False  # the checkpoint's formats (no flag said)
    loading: str = ""  # whose loading layout device_bytes follow (engines.loading), and why
    layout: str = "checkpoint"  # in short: vLLM's MXFP4 backend (marlin, ...) or checkpoint


def stage_bounds(spec: ModelSpec, pp: int) -> list[tuple[int, int]]:
    out, start = [], 0
    for n in E.pp_partition(spec.n_layers("decoder"), pp):
        out.append((start, start + n))
        start += n
    return out


def device_bytes(entries: list[Stored], layout: Layout,
                 loading: Optional[Loading] = None) -> list[Fraction]:
    """Bytes one device holds of each entry: its tensor-/expert-parallel share of the stored
    bytes, or, under an engine's `loading` layout, what the engine allocates (MXFP4 experts
    padded for its MoE backend, biases included, in a layer whose experts are MXFP4)."""
    backend = loading.mxfp4_backend if loading is not None else None
    mx = {(s.layer, id(s.kind)) for s in entries
          if backend and s.fmt == "mxfp4" and s.part.role == EXPERT and len(s.part.shape) == 3}
    nv = loading.nvfp4 if loading is not None else "checkpoint"
    gated = {(s.layer, id(s.kind)) for s in entries if s.part.module == "experts.gate"}
    out = []
    copies_added: set[tuple] = set()
    for s in entries:
        b = None
        key = (s.layer, id(s.kind))
        if s.fmt == "nvfp4" and nv != "checkpoint":  # swizzled or Marlin-padded (engines.loading)
            b = s.bytes * share(s.part, layout) + nvfp4_extra(
                s.part, nv, layout.tp, layout.ep, loading.release, key in gated, loading.method)
        elif mx and key in mx:
            b = mxfp4_expert_bytes(s.part, backend, layout.tp, layout.ep)
            if backend == "triton" and b is not None and key not in copies_added:
                copies_added.add(key)  # the layer's swizzled scale copies, once
                b += triton_scale_copies([x.part for x in entries
                                          if (x.layer, id(x.kind)) == key and
                                          x.fmt == "mxfp4"], layout.tp, layout.ep)
        out.append(s.bytes * share(s.part, layout) if b is None else b)
    return out


def stage_weights(spec: ModelSpec, layout: Layout, plan: Plan,
                  extra_last: Fraction = Fraction(0),
                  loading: Optional[Loading] = None) -> list[Fraction]:
    """Weight bytes one device of each pipeline stage holds: its layers (each tensor's
    tensor-/expert-parallel share, or as the engine's `loading` layout allocates it), the
    embeddings on the first stage, the final norm and head on the last (and `extra_last`: a
    drafter's)."""
    entries = stored(spec, plan)
    per_layer: dict[int, Fraction] = {}
    outside: list[tuple[p.Part, Fraction]] = []
    layers = spec.n_layers("decoder")
    tied = any(s.part.tied for s in entries)
    for s, b in zip(entries, device_bytes(entries, layout, loading)):
        if s.layer is not None:
            per_layer[s.layer] = per_layer.get(s.layer, Fraction(0)) + b
        elif s.part.stage == SPREAD:  # towers, other stacks: spread with the layers
            per_layer[-1] = per_layer.get(-1, Fraction(0)) + b
        else:
            outside.append((s.part, b))
    spread = sum(per_layer.values(), Fraction(0))
    bounds = stage_bounds(spec, layout.pp)
    out = []
    for st, (a, b_) in enumerate(bounds):
        if tied or -1 in per_layer:  # tensors shared between layers: in proportion
            w = spread * Fraction(b_ - a, layers)
        else:
            w = sum((per_layer.get(i, Fraction(0)) for i in range(a, b_)), Fraction(0))
        for q, qb in outside:
            if (q.stage == FIRST and st == 0) or (q.stage == LAST and st == layout.pp - 1):
                w += qb
        if st == layout.pp - 1:
            w += extra_last
        out.append(w)
    return out


def draft_weight_bytes(spec: ModelSpec, draft: Optional[Draft], layout: Layout, storage: Plan,
                       engine: E.Engine) -> Fraction:
    """What a drafter adds to one device of the last stage: the MTP modules' share, or a draft
    model's weights at the target's tensor parallelism."""
    if draft is None:
        return Fraction(0)
    if draft.method == "mtp":
        return sum((s.bytes * share(s.part, layout) for s in stored(spec, storage, mtp=True)),
                   Fraction(0))
    if draft.spec is not None:
        return DeviceCosts(draft.spec, Layout(layout.tp), engine,
                           draft_storage(draft)).held_weight_bytes()
    return Fraction(0)


def build_weights(spec: ModelSpec, layout: Layout, storage: Plan, extra_last: Fraction,
                  loading: Optional[Loading] = None) -> tuple[Weights, list[Fraction]]:
    """The whole model's weights, and the exact bytes one device of each stage holds (as the
    engine's `loading` layout allocates them, when given)."""
    stage_w = stage_weights(spec, layout, storage, extra_last, loading)
    entries = stored(spec, storage)
    weights_name, experts = summary(entries)
    padded = loading is not None and any(s.fmt == "mxfp4" for s in entries)
    nvfp4 = loading is not None and any(s.fmt == "nvfp4" for s in entries)
    how = loading.describe() if padded else \
        "the checkpoint's bytes (no MXFP4 experts to pad; other repackings are not modelled)"
    if nvfp4:
        gated = {(s.layer, id(s.kind)) for s in entries if s.part.module == "experts.gate"}
        extra = sum((nvfp4_extra(s.part, loading.nvfp4, layout.tp, layout.ep, loading.release,
                                 (s.layer, id(s.kind)) in gated, loading.method)
                     for s in entries if s.fmt == "nvfp4"), Fraction(0))
        how += (f"; {loading.describe_nvfp4()}: {p.ceil_fraction(extra):,} bytes more than the "
                "checkpoint's values and scales" + (" over the stages" if layout.pp > 1 else
                                                    " on each device"))
    return Weights(p.total(model_params(spec)), weights_name, experts,
                   p.ceil_fraction(total(entries)), [p.ceil_fraction(w) for w in stage_w],
                   storage.source, storage_rows(entries, storage),
                   storage.flags is None, how,
                   loading.mxfp4_backend if padded else "checkpoint"), stage_w


def conventions(w: Weights) -> list[str]:
    """How the weights' bytes are counted."""
    return [
        f"weights {w.dtype}"
        + (f", routed experts {w.experts_dtype}" if w.experts_dtype != w.dtype else "")
        + f" ({w.source})"
        + (": each module's format with its scales, zero points and indices (weights.storage)"
           if w.from_checkpoint else
           ": scaled formats count their scales (nvfp4: an fp8 scale per 16 values and an fp32 "
           "per matrix; mxfp4: an e8m0 per 32; fp8-tensor: an fp32 per matrix; fp8-block: an "
           "fp32 per 128 x 128) and keep embeddings, head, norms and routers in bf16"),
        f"weights per device: {w.loading}",
    ]


@dataclass(frozen=True)
class LoraOptions:
    """--max-loras, --max-lora-rank, --max-cpu-loras, with vLLM's defaults filled in."""

    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int


def lora_options(max_loras: Optional[int], max_lora_rank: Optional[int],
                 max_cpu_loras: Optional[int]) -> Optional[LoraOptions]:
    """LoRA on when any of its options is given (vLLM's --enable-lora), else None."""
    got = L.check(max_loras, max_lora_rank, max_cpu_loras)
    return LoraOptions(*got) if got is not None else None


def _expert_how(experts: bool, release: Optional[str], fused: bool) -> str:
    """What the reservation says about routed experts, for a mixture of experts."""
    if not experts:
        return ""
    if release in L.NO_EXPERT_LORA:
        return (f"routed experts none (vLLM {release}: no fused-MoE LoRA, lora/models.py "
                "is_moe_model); ")
    if fused:
        return ("routed experts E·r·(2·H + 3·I/tp) per slot and layer, gate and up sharing "
                "one A (FusedMoE3DWithLoRA, lora/layers/fused_moe.py, vLLM 0.33); ")
    return ("routed experts E·r·(3·H + 3·I/tp) per slot and layer for gate, up and down "
            "(FusedMoEWithLoRA, lora/layers/fused_moe.py, vLLM 0.33; under expert "
            "parallelism E/ep experts of width I); ")


@dataclass
class LoraReservation:
    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int
    dtype: str  # lora_dtype auto: the model dtype
    device_bytes: list[int]  # per device of each pipeline stage
    how: str


def reserve(spec: ModelSpec, plan: Plan, layout: Layout, opts: LoraOptions,
            dtype: str, release: Optional[str] = None, name: str = "") -> LoraReservation:
    """The bytes of the adapter slots on one device of each pipeline stage: the decoder layers'
    linear tensors of that stage, and their routed experts where the vLLM release line
    (`release`, None: 0.33) puts adapters on them."""
    value_bytes = E.VALUE_BYTES[dtype]
    fused = L.fused_w13(name, spec.title)
    entries = [s for s in stored(spec, plan) if s.layer is not None]
    per_stage = []
    for a, b in stage_bounds(spec, layout.pp):
        parts = [s.part for s in entries if a <= s.layer < b]
        per_stage.append(L.reserved_bytes(parts, layout.tp, opts.max_loras,
                                          opts.max_lora_rank, value_bytes, layout.ep, release,
                                          fused))
    how = (f"LoRA: {opts.max_loras} adapter slot(s) of rank {opts.max_lora_rank} in {dtype} on "
           "every linear layer of the decoder, as vLLM allocates them at load "
           "(lora/layers/base_linear.py, create_lora_weights): column-parallel r·n_in + "
           "r·n_out/tp, row-parallel r·n_in/tp + r·n_out values per slot; "
           + _expert_how(any(e.part.role == EXPERT for e in entries), release, fused)
           + "they come out of the memory for the cache when it is estimated; "
           f"{opts.max_cpu_loras} adapter(s) in host memory (max_cpu_loras) take no GPU memory")
    return LoraReservation(opts.max_loras, opts.max_lora_rank, opts.max_cpu_loras, dtype,
                           per_stage, how)
