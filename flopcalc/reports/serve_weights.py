"""`serve`'s weights: their bytes in the formats they are stored in (`counting.storage`), and
what one device of each pipeline stage holds (its tensor- and expert-parallel share, a
drafter's on the last stage)."""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..counting.model import model_params
from ..counting.storage import StorageRow, resolve_plan, storage_rows, stored, summary, total
from ..engines import vllm as E
from ..kinds import base as p
from ..kinds.base import FIRST, LAST, SPREAD
from ..models.quantization import Plan
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..predict.latency import DeviceCosts, Layout, share
from .serve_speculative import Draft, draft_storage


@dataclass(frozen=True)
class WeightFormats:
    """--weights-dtype and --experts-dtype (None: the checkpoint's formats, else bf16)."""

    weights_dtype: Optional[str] = None
    experts_dtype: Optional[str] = None

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


def stage_bounds(spec: ModelSpec, pp: int) -> list[tuple[int, int]]:
    out, start = [], 0
    for n in E.pp_partition(spec.n_layers("decoder"), pp):
        out.append((start, start + n))
        start += n
    return out


def stage_weights(spec: ModelSpec, layout: Layout, plan: Plan,
                  extra_last: Fraction = Fraction(0)) -> list[Fraction]:
    """Weight bytes one device of each pipeline stage holds: its layers (each tensor's
    tensor-/expert-parallel share), the embeddings on the first stage, the final norm and head
    on the last (and `extra_last`: a drafter's)."""
    entries = stored(spec, plan)
    per_layer: dict[int, Fraction] = {}
    outside: list[tuple[p.Part, Fraction]] = []
    layers = spec.n_layers("decoder")
    tied = any(s.part.tied for s in entries)
    for s in entries:
        b = s.bytes * share(s.part, layout)
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


def build_weights(spec: ModelSpec, layout: Layout, storage: Plan,
                  extra_last: Fraction) -> tuple[Weights, list[Fraction]]:
    """The whole model's weights, and the exact bytes one device of each stage holds."""
    stage_w = stage_weights(spec, layout, storage, extra_last)
    entries = stored(spec, storage)
    weights_name, experts = summary(entries)
    return Weights(p.total(model_params(spec)), weights_name, experts,
                   p.ceil_fraction(total(entries)), [p.ceil_fraction(w) for w in stage_w],
                   storage.source, storage_rows(entries, storage),
                   storage.flags is None), stage_w


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
    ]
