"""Training memory for what plans need, on top of `counting.memory`: context parallelism, LoRA
and QLoRA, fp8 training, optimizer offload, ZeRO-3's gathered-layer buffer and an fp32
gradient-accumulation buffer. `counting.memory` calls these only when one of them is in use
(`Setup.extended`), so every figure without them is the one it always was.

- **Context parallelism** (`cp`, Megatron-LM's ring attention; Liu et al. 2023): each of the cp
  devices holds seq/cp tokens of every sequence, so every activation (and the logits) is that
  of seq/cp tokens; ring attention runs a flash kernel on each block (no s² tensor is kept).
  The weights are replicated over the cp devices, and ZeRO shards over the dp·cp devices of the
  data- and context-parallel group, as Megatron's distributed optimizer does.
- **LoRA** (Hu et al. 2021), rank r on every matrix of the layers (PEFT's `all-linear`: the
  attention and MLP projections and the routed experts; routers, embeddings and the LM head
  are not adapted): an (n_in × n_out) matrix gains A (n_in × r) and B (r × n_out), r·(n_in +
  n_out) parameters. Only the adapters have gradients and optimizer state (bytes of
  `--precision` and `--optimizer`); the frozen base keeps its 16-bit weights only. Each adapted
  matrix also keeps its r-wide intermediate x·A (2·s·b·r bytes) for B's gradient.
- **QLoRA** (Dettmers et al. 2023, §3 "Double Quantization"): the base matrices in 4-bit
  NormalFloat with one 8-bit absmax constant per block of 64 and one fp32 constant per 256 of
  those: 4 + 8/64 + 32/(64·256) = 4.127 bits per parameter, i.e. n·(1/2 + 1/64 + 1/4096)
  bytes; embeddings, norms and the LM head stay 16-bit.
- **fp8** (Transformer Engine's fp8 recipes, Micikevicius et al. 2022): each matrix of the
  layers keeps an fp8 copy (1 byte per parameter) besides its 16-bit weight, and each
  sublayer's input (the norm output its first projections read) is saved for backward in 8
  bits instead of 16; every other tensor stays 16-bit (Transformer Engine also caches a
  transposed fp8 weight on some versions: not counted).
- **Optimizer offload** (ZeRO-Offload, Ren et al. 2021): the optimizer state (master copy and
  moments) lives in host memory; `host_bytes` gives it.
- **ZeRO-3's gathered layer** (DeepSpeed's `estimate_zero3_model_states_mem_needs`, docs
  `memory.rst`: "largest_layer_memory = 4*largest_layer_params ... 2 bytes fp16 params are
  gathered and 2 bytes fp16 grads are computed"): the largest single module's weights and
  gradients, whole, on every device (its tensor-parallel share).
- **fp32 gradient accumulation** (Megatron-LM's `main_grad`, forced for bf16 by
  `megatron/training/arguments.py`): 4 bytes per parameter of gradients instead of 2.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from math import prod
from typing import Callable, Optional

from ..kinds.base import COLUMN, EXPERT, LAST, LAYERS, ROW, SPREAD, Part, ceil_fraction, merged
from ..models.spec import ModelSpec
from .layers import layer_params
from .model import trained_params

BYTES = "bytes"
ADAPTED = (COLUMN, ROW, EXPERT)  # the roles of a projection's matrix
NF4 = Fraction(1, 2) + Fraction(1, 64) + Fraction(1, 4096)  # bytes per parameter, QLoRA


def _plain(setup):  # type: ignore[no-untyped-def]
    """The same setup without the extended options (for the parts they leave unchanged)."""
    return replace(setup, cp=1, lora_rank=0, qlora=False, fp8=False, offload_optimizer=False,
                   zero3_buffer=False, grad_fp32=False)


def is_matrix(p: Part) -> bool:
    """A projection's weight matrix inside the layers (what LoRA adapts and fp8 runs): a
    `matmul` weight of the layers, split by tensor or expert parallelism."""
    return p.family == LAYERS and p.matmul and len(p.shape) >= 2 and p.role in ADAPTED


def matrices(p: Part) -> int:
    """How many (n_in × n_out) matrices a stacked parameter part holds (layers × experts)."""
    return p.value // prod(p.shape[-2:])


# `counting.memory` passes its own `share` (a tensor's tensor- and expert-parallel fraction)
# and `stage_layers` (⌈L/p⌉) to these, so the two modules count splits the same way.
Share = Callable[..., Fraction]
Stage = Callable[..., int]


def _device_share(spec: ModelSpec, setup, share: Share,  # type: ignore[no-untyped-def]
                  stage_layers: Stage) -> list[tuple[Part, Fraction]]:
    """Every parameter part with the fraction of it the first stage's device holds (as
    `counting.memory.device_params`)."""
    layers = spec.n_layers()
    stage = Fraction(stage_layers(spec, setup), layers)
    out = []
    for p in trained_params(spec):
        if p.stage == LAST and setup.pp > 1:
            continue
        out.append((p, share(p, setup) * (stage * setup.stage_copies if p.stage == SPREAD
                                          else 1)))
    return out


def adapter_params(spec: ModelSpec, setup, share: Share,  # type: ignore[no-untyped-def]
                   stage_layers: Stage) -> Fraction:
    """LoRA parameters on the device: r·(n_in + n_out) per adapted matrix, the matrix's
    tensor- and expert-parallel share."""
    r = setup.lora_rank
    return sum((Fraction(matrices(p) * r * sum(p.shape[-2:])) * f
                for p, f in _device_share(spec, setup, share, stage_layers) if is_matrix(p)),
               Fraction(0))


def extended_state_parts(spec: ModelSpec, setup, share: Share,  # type: ignore
                         stage_layers: Stage) -> list[Part]:
    w, g, o = setup.bytes_per_param
    split = {"weights": 3, "gradients": 2, "optimizer": 1}
    held = _device_share(spec, setup, share, stage_layers)

    def zero(name: str, dense: Fraction, expert: Fraction = Fraction(0)) -> Fraction:
        if setup.zero < split[name]:
            return dense + expert
        return dense / setup.shards + expert / setup.expert_shards

    def total(expert: bool, matrix: bool = False) -> Fraction:
        return Fraction(sum(p.value * f for p, f in held
                            if (p.role == EXPERT) == expert and (is_matrix(p) or not matrix)))

    everything = (total(False), total(True))
    matrix = (total(False, True), total(True, True))
    if setup.lora_rank:  # adapters train in the dense group: their share of experts is small
        trainable = (adapter_params(spec, setup, share, stage_layers), Fraction(0))
        if setup.qlora:
            base = tuple(m * NF4 + (e - m) * w for m, e in zip(matrix, everything))
        else:
            base = tuple(e * w for e in everything)
        weights = zero("weights", base[0] + trainable[0] * w, base[1])
    else:
        trainable = everything
        weights = zero("weights", everything[0] * w, everything[1] * w)
    gradients = zero("gradients", trainable[0] * g, trainable[1] * g)
    optimizer = (Fraction(0) if setup.offload_optimizer
                 else zero("optimizer", trainable[0] * o, trainable[1] * o))
    parts = [Part("memory.weights", ceil_fraction(weights), BYTES),
             Part("memory.gradients", ceil_fraction(gradients), BYTES),
             Part("memory.optimizer", ceil_fraction(optimizer), BYTES)]
    if setup.fp8:
        parts.append(Part("memory.fp8_weights", ceil_fraction(zero("weights", *matrix)),
                          BYTES))
    if setup.zero3_buffer and setup.zero == 3:
        parts.append(Part("memory.zero3_gathered_layer",
                          ceil_fraction(largest_module(spec, setup, share) * (w + g)), BYTES))
    return parts


def host_bytes(spec: ModelSpec, setup, share: Share,  # type: ignore[no-untyped-def]
               stage_layers: Stage) -> int:
    """Optimizer state kept in host memory per device with --offload-optimizer (0 without)."""
    if not setup.offload_optimizer:
        return 0
    _, _, o = setup.bytes_per_param
    held = _device_share(spec, setup, share, stage_layers)
    if setup.lora_rank:
        value = adapter_params(spec, setup, share, stage_layers) * o / (
            setup.shards if setup.zero >= 1 else 1)
    else:
        value = sum((p.value * f * o / (setup.zero_shards(p) if setup.zero >= 1 else 1)
                     for p, f in held), Fraction(0))
    return ceil_fraction(value)


def largest_module(spec: ModelSpec, setup, share: Share) -> Fraction:  # type: ignore
    """Parameters of the largest single module on the device (a weight with its bias), its
    tensor- and expert-parallel share: DeepSpeed's `largest_layer_params` (the most
    parameters any one module holds directly: the tensors of one `Part.module`, each layer's
    its own; a tensor without one is alone in its module)."""
    modules: dict[tuple[object, ...], Fraction] = {}
    alone: list[Fraction] = []

    def add(scope: tuple[object, ...], p: Part) -> None:
        value = p.value * share(p, setup)
        if p.module is None:
            alone.append(value)
        else:
            key = scope + (p.module,)
            modules[key] = modules.get(key, Fraction(0)) + value

    for g in spec.groups():
        for p in layer_params(g.layer, spec.d_model):
            add((g.stack, g.first), p)
    for p in trained_params(spec):
        if p.stage == SPREAD or (p.stage == LAST and setup.pp > 1):
            continue
        add((), p)
    return max([*modules.values(), *alone], default=Fraction(0))


def extended_activation_parts(spec: ModelSpec, setup,  # type: ignore[no-untyped-def]
                              activation_parts: Callable[..., list[Part]],
                              stage_layers: Stage) -> list[Part]:
    plain = replace(_plain(setup), seq=setup.seq // setup.cp)
    parts = activation_parts(spec, plain)
    if setup.fp8:  # the share a projection reads is kept in 8 bits, not 16
        parts = [replace(p, value=ceil_fraction(p.value - p.value * p.gemm_input / 2))
                 if p.gemm_input else p for p in parts]
    if setup.lora_rank and setup.recompute != "full":
        layers = spec.n_layers()
        tokens = plain.seq * setup.batch
        extra = Fraction(0)
        for g in spec.groups():
            per_layer = sum(matrices(p) for p in layer_params(g.layer, spec.d_model)
                            if is_matrix(p))
            fraction = Fraction(g.count, layers) * stage_layers(spec, setup) * setup.in_flight
            extra += 2 * tokens * setup.lora_rank * per_layer * fraction
        parts.append(Part("layers.lora.intermediates", ceil_fraction(extra), BYTES))
    return merged(parts)


def check_extended(setup) -> Optional[str]:  # type: ignore[no-untyped-def]
    """What the extended options (context parallelism, QLoRA) refuse, whatever the model."""
    if setup.cp > 1:
        if setup.seq % setup.cp:
            return f"--cp {setup.cp} must divide --seq {setup.seq:,} (each device holds " \
                   "seq/cp tokens)"
        if not setup.flash:
            return ("--cp > 1 runs ring attention, a flash kernel per block: drop --no-flash "
                    "(or use --cp 1)")
    if setup.qlora and not setup.lora_rank:
        return "--qlora trains LoRA adapters on a 4-bit base: give --lora-rank R too"
    return None
