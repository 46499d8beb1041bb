"""The `memory` report: training memory per device (state and activations), and whether it
fits an accelerator (`counting.memory` holds the arithmetic and its sources)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Optional

from ..kinds import base as p
from ..counting.layers import layer_activations
from ..counting.memory import Setup, activation_parts, check_setup, device_params, state_parts
from ..counting.model import model_params
from ..errors import FlopcalcError
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from .common import (SCHEMA_VERSION, ModelInfo, Report, context_warning, default_seq, model_info,
                     samples)



@dataclass
class MemorySettings:
    seq: int
    batch: int  # micro-batch per device
    dp: int
    tp: int
    pp: int
    ep: int
    devices: int  # dp x tp x pp
    zero: int
    recompute: str
    sequence_parallel: bool
    dropout: bool
    flash: bool
    precision: str
    optimizer: str
    bytes_per_param: list[int]  # weights, gradients, optimizer

    def setup(self) -> Setup:
        """The counting Setup these settings describe (for redrawing at other batches)."""
        return Setup(self.seq, self.batch, self.dp, self.tp, self.pp, self.ep, self.zero,
                     self.recompute, self.sequence_parallel, self.dropout, self.flash,
                     self.precision, self.optimizer)


@dataclass
class MemoryParts:
    weights: int
    gradients: int
    optimizer: int
    activations: int
    total: int  # bytes per device


@dataclass
class LayerActivations:
    kind: str
    n_layers: int
    bytes: int  # one layer, one micro-batch
    tensors: dict[str, int]


@dataclass
class Activations:
    per_layer: int  # the largest kind of layer, one micro-batch
    per_sample: int  # all activations of the device for a micro-batch of 1
    layers: list[LayerActivations]
    components: dict[str, int]


@dataclass
class DeviceInfo:
    name: str
    title: str
    memory_bytes: int
    count: int


@dataclass
class BatchPoint:
    """Memory per device at one micro-batch, for pictures."""

    batch: int
    state: dict[str, int]  # weights, gradients, optimizer (the same at every batch)
    activations: int


@dataclass
class MemoryReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: MemorySettings
    conventions: list[str]
    params: dict[str, int]  # total, and on the device before ZeRO-3
    memory: MemoryParts
    activations: Activations
    accelerator: Optional[DeviceInfo]
    fits: Optional[bool]  # null without an accelerator
    headroom_bytes: Optional[int]  # device memory minus memory.total
    max_micro_batch: Optional[int]  # the largest --batch that fits (0: not even one)
    warnings: list[str] = field(default_factory=list)
    # Memory against the micro-batch, for pictures (on request; not in the JSON document).
    curve: ClassVar[Optional[list[BatchPoint]]] = None



def _conventions(setup: Setup) -> list[str]:
    w, g, o = setup.bytes_per_param
    zero = {0: "no ZeRO: every data-parallel device holds the whole state",
            1: "ZeRO-1: optimizer state split over the dp devices",
            2: "ZeRO-2: optimizer state and gradients split over the dp devices",
            3: "ZeRO-3: optimizer state, gradients and weights split over the dp devices"}
    lines = [
        f"state after Rajbhandari et al. 2020 (ZeRO): {w} B weights + {g} B gradients + {o} B "
        f"optimizer per parameter ({setup.precision} precision, {setup.optimizer}); "
        + zero[setup.zero],
        "tensor parallelism splits matrices and column-parallel biases t ways, the embedding and "
        "LM head by vocabulary; norms and row-parallel biases are replicated; expert parallelism "
        "splits the routed experts e ways",
        "activations after Korthikanti et al. 2022, tensor by tensor: 16-bit tensors, 1-byte "
        "dropout masks; MHA, GELU, d_ff = 4d and dropout give their sbh(34 + 5as/h) per layer",
        f"the first pipeline stage: {setup.pp} micro-batch(es) in flight of its layers, plus "
        "the embedding's dropout masks" + ("; with one stage the final norm, LM head input "
                                           "and fp32 logits" if setup.pp == 1 else ""),
        f"recompute {setup.recompute}; dropout {'on' if setup.dropout else 'off'}; "
        f"{'FlashAttention (no s² tensor kept)' if setup.flash else 'attention keeps its s² softmax'}",
        "not counted: temporary buffers, communication buckets, allocator fragmentation, the "
        "CUDA context (often 1-3 GB in practice)",
    ]
    return lines


def _total(spec: ModelSpec, setup: Setup) -> tuple[list[p.Part], list[p.Part]]:
    return state_parts(spec, setup), activation_parts(spec, setup)


def max_micro_batch(spec: ModelSpec, setup: Setup, memory: int) -> int:
    """The largest micro-batch whose state and activations fit in `memory` bytes (0: none)."""
    def need(b: int) -> int:
        state, acts = _total(spec, replace(setup, batch=b))
        return p.total(state) + p.total(acts)

    if need(1) > memory:
        return 0
    per_sample = need(2) - need(1)
    b = max(1, (memory - need(1)) // max(1, per_sample) + 1)
    while b > 1 and need(b) > memory:
        b -= 1
    while need(b + 1) <= memory:
        b += 1
    return b


def build_memory_report(loaded: LoadedModel, setup: Setup, hw: Optional[Hardware] = None,
                        curve: bool = False) -> MemoryReport:
    spec = loaded.spec
    problem = check_setup(spec, setup)
    if problem:
        raise FlopcalcError(problem)
    state, acts = _total(spec, setup)
    parts = {x.name.removeprefix("memory."): x.value for x in state}
    activations = p.total(acts)
    total = sum(parts.values()) + activations
    groups = [LayerActivations(g.layer.describe(), g.count,
                               p.total(layer_activations(g.layer, spec.d_model, setup)),
                               {x.name: x.value for x in layer_activations(g.layer,
                                                                           spec.d_model,
                                                                           setup)})
              for g in spec.groups()]

    one = p.total(activation_parts(spec, replace(setup, batch=1)))
    devices = setup.dp * setup.tp * setup.pp
    report = MemoryReport(
        schema_version=SCHEMA_VERSION, command="memory", model=model_info(loaded),
        settings=MemorySettings(setup.seq, setup.batch, setup.dp, setup.tp, setup.pp, setup.ep,
                                devices, setup.zero, setup.recompute, setup.sequence_parallel,
                                setup.dropout, setup.flash, setup.precision, setup.optimizer,
                                list(setup.bytes_per_param)),
        conventions=_conventions(setup),
        params={"total": p.total(model_params(spec)),
                "device": p.ceil_fraction(device_params(spec, setup))},
        memory=MemoryParts(parts["weights"], parts["gradients"], parts["optimizer"],
                           activations, total),
        activations=Activations(max(g.bytes for g in groups), one, groups,
                                {x.name: x.value for x in acts}),
        accelerator=None, fits=None, headroom_bytes=None, max_micro_batch=None,
        warnings=context_warning(loaded.name, "--seq", setup.seq, spec.max_seq_len))
    if hw is not None and hw.memory_bytes is not None:
        report.accelerator = DeviceInfo(hw.name, hw.title, hw.memory_bytes, devices)
        report.fits = total <= hw.memory_bytes
        report.headroom_bytes = hw.memory_bytes - total
        report.max_micro_batch = max_micro_batch(spec, setup, hw.memory_bytes)
    if curve:
        fit = report.max_micro_batch or 0
        batches = samples(1, max(4, 2 * setup.batch, 2 * fit), [setup.batch, fit or 1])
        report.curve = [BatchPoint(b, parts, p.total(activation_parts(spec, replace(setup,
                                                                                    batch=b))))
                        for b in batches]
    return report


def setup_for(spec: ModelSpec, seq: Optional[int], **options: object) -> Setup:
    """A Setup with the model's default length when --seq is not given."""
    return Setup(seq=seq or default_seq(spec), **options)  # type: ignore[arg-type]

