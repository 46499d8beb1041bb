"""The `memory` report: training memory per device (state and activations), and whether it
fits an accelerator (`counting.memory` holds the arithmetic and its sources)."""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any, ClassVar, Optional

from ..records import dataclass
from ..counting.recompute import describe as describe_recompute
from ..kinds import base as p
from ..counting.layers import layer_activations
from ..counting.memory import Setup, activation_parts, check_setup, device_params, state_parts
from ..counting.model import model_params, mtp_params
from ..errors import FlopcalcError
from ..models.accelerators import Hardware
from ..models.registry import LoadedModel
from ..models.spec import ModelSpec
from ..numbers import counted
from .common import (SCHEMA_VERSION, ModelInfo, Report, context_warning, default_seq,
                     eager_hint, kernel_line, memory_basis_line, model_info, samples)



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
    memory_bytes: int  # what a run may fill per device: usable x fraction - reserve
    count: int
    nominal_memory_bytes: Optional[int] = None  # the vendor's size
    usable_memory_bytes: Optional[int] = None  # what the driver reports (else the nominal)
    memory_basis: str = ""
    memory_fraction: float = 1.0
    reserve_bytes: int = 0


@dataclass
class BatchPoint:
    """Memory per device at one micro-batch, for pictures."""

    batch: int
    state: dict[str, int]  # weights, gradients, optimizer (the same at every batch)
    activations: int


@dataclass
class MemoryExtras:
    """The plan-related options in use (only in the JSON document when one is): context
    parallelism, LoRA/QLoRA, fp8, optimizer offload, ZeRO-3's gathered layer, an fp32
    gradient buffer (see counting.memory_techniques)."""

    cp: int
    devices: int  # dp x tp x pp x cp
    lora_rank: int
    qlora: bool
    fp8: bool
    offload_optimizer: bool
    zero3_buffer: bool
    grad_fp32: bool
    trainable_params: int  # on the device: the adapters with LoRA, else every parameter
    fp8_weights: int  # bytes of fp8 weight copies (0 without --fp8)
    zero3_gathered_layer: int  # bytes of the gathered largest module (0 unless asked)
    host_optimizer_bytes: int  # optimizer state in host memory (0 without offload)


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
    extras: Optional[MemoryExtras] = None  # present only when a plan-related option is used
    # Memory against the micro-batch, for pictures (on request; not in the JSON document).
    curve: ClassVar[Optional[list[BatchPoint]]] = None
    used: ClassVar[Optional[Setup]] = None  # the Setup counted (not in the JSON document)

    def to_dict(self) -> dict[str, Any]:
        doc = super().to_dict()
        if doc.get("extras") is None:
            doc.pop("extras", None)
        return doc



def _conventions(setup: Setup, spec: Optional[ModelSpec] = None) -> list[str]:
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
        "splits the routed experts e ways and expert tensor parallelism each expert etp ways"
        + (f"; ZeRO shards their state over the {setup.expert_shards} devices of the "
           "expert-data-parallel group (tp x cp x dp / (ep x etp))"
           if setup.ep * setup.etp > 1 and setup.zero else ""),
        "activations after Korthikanti et al. 2022, tensor by tensor: 16-bit tensors, 1-byte "
        "dropout masks; MHA, GELU, d_ff = 4d and dropout give their sbh(34 + 5as/h) per layer",
        f"the first pipeline stage: {counted(setup.pp, 'micro-batch', 'micro-batches')} in flight "
        "of its layers, plus the embedding's dropout masks" + (
            "; with one stage the final norm, LM head input and fp32 logits" if setup.pp == 1
            else ""),
        f"recompute {setup.recompute}; dropout {'on' if setup.dropout else 'off'}",
        *describe_recompute(setup.recompute),
        kernel_line(setup.flash),
        "not counted: temporary buffers, communication buckets, allocator fragmentation, the "
        "CUDA context (often 1-3 GB in practice)",
    ]
    if spec is not None and spec.mtp_layers:
        where = ("with one stage it is on this device: weights, gradients, optimizer state and "
                 "activations (mtp.*)" if setup.pp == 1 else
                 "it sits with the head on the last stage, not on this device")
        lines.append(f"multi-token prediction ({counted(spec.mtp_layers, 'module')}, "
                     f"params.mtp) trains with the model: {where}")
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
        conventions=_conventions(setup, spec),
        params={"total": p.total(model_params(spec)), "mtp": p.total(mtp_params(spec)),
                "device": p.ceil_fraction(device_params(spec, setup))},
        memory=MemoryParts(parts["weights"], parts["gradients"], parts["optimizer"],
                           activations, total),
        activations=Activations(max(g.bytes for g in groups), one, groups,
                                {x.name: x.value for x in acts}),
        accelerator=None, fits=None, headroom_bytes=None, max_micro_batch=None,
        warnings=context_warning(loaded.name, "--seq", setup.seq, spec.max_seq_len)
        + eager_hint(spec, setup))
    report.used = setup
    if setup.extended:
        from ..counting.memory import share, stage_layers
        from ..counting.memory_techniques import adapter_params, host_bytes

        devices *= setup.cp
        named = {x.name: x.value for x in state}
        report.extras = MemoryExtras(
            setup.cp, devices, setup.lora_rank, setup.qlora, setup.fp8,
            setup.offload_optimizer, setup.zero3_buffer, setup.grad_fp32,
            p.ceil_fraction(adapter_params(spec, setup, share, stage_layers))
            if setup.lora_rank else report.params["device"],
            named.get("memory.fp8_weights", 0), named.get("memory.zero3_gathered_layer", 0),
            host_bytes(spec, setup, share, stage_layers))
        report.conventions += extended_conventions(setup)
    if hw is not None and hw.memory_bytes is not None:
        report.accelerator = DeviceInfo(hw.name, hw.title, hw.memory_bytes, devices,
                                        hw.nominal_memory_bytes, hw.usable_memory_bytes,
                                        hw.memory_basis, float(hw.memory_fraction),
                                        hw.reserve_bytes)
        report.conventions.append(memory_basis_line(hw))
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


def extended_conventions(setup: Setup) -> list[str]:
    """The lines the plan-related options add (see counting.memory_techniques)."""
    lines = []
    if setup.cp > 1:
        lines.append(f"context parallelism {setup.cp}: each device holds seq/{setup.cp} tokens of "
                     "every sequence (ring attention, flash kernel); ZeRO shards over dp x cp")
    if setup.lora_rank:
        base = ("4-bit NF4 with double-quantised constants, 4.127 bits per parameter "
                "(Dettmers et al. 2023)" if setup.qlora else "16-bit")
        lines.append(f"LoRA rank {setup.lora_rank} on every matrix of the layers (Hu et al. "
                     f"2021): only the adapters have gradients and optimizer state; the frozen "
                     f"base is {base}")
    if setup.fp8:
        lines.append("fp8 (Transformer Engine): an fp8 copy of every matrix of the layers, and "
                     "each sublayer's input saved in 8 bits")
    if setup.offload_optimizer:
        lines.append("optimizer state offloaded to host memory (ZeRO-Offload)")
    if setup.zero3_buffer and setup.zero == 3:
        lines.append("ZeRO-3 gathers the largest module whole: its 16-bit weights and "
                     "gradients (DeepSpeed's largest_layer_memory = 4 x largest_layer_params)")
    if setup.grad_fp32:
        lines.append("gradients accumulated in fp32 (Megatron-LM's main_grad): 4 bytes per "
                     "parameter")
    return lines


def setup_for(spec: ModelSpec, seq: Optional[int], **options: object) -> Setup:
    """A Setup with the model's default length when --seq is not given."""
    return Setup(seq=seq or default_seq(spec), **options)  # type: ignore[arg-type]

