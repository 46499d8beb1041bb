"""Training memory per device: the model state (weights, gradients, optimizer) after
Rajbhandari et al. 2020 (ZeRO), and the activations autograd keeps, tensor by tensor, after
Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models").

State. Mixed precision keeps 16-bit weights and gradients (2 + 2 bytes per parameter) and, for
AdamW, an fp32 master copy, momentum and variance (K = 12 bytes): 16Ψ in all. ZeRO-1 splits the
optimizer over the data-parallel devices, ZeRO-2 the gradients too, ZeRO-3 the weights too.
Tensor parallelism (t) splits every matrix and the biases of column-parallel projections
(q, k, v, gate, up) t ways, and the embedding and LM head by vocabulary; norms and
row-parallel biases (o, down) are replicated. Pipeline parallelism (p) gives each stage L/p
layers; the first stage also holds the embeddings, the last the final norm and LM head.
Expert parallelism (e) gives each device E/e of the routed experts of every MoE layer, and
expert tensor parallelism (t_e, Megatron-Core's ETP) splits each of them t_e ways; the e·t_e
devices of an expert group are drawn from the t·c·n ranks of a pipeline stage, as Megatron-Core
lays them out, and ZeRO shards the experts' state over the expert-data-parallel group of
t·c·n / (e·t_e) devices (the dense state over the n·c data- and context-parallel devices).

Activations (bytes, 16-bit, one micro-batch of b sequences of s tokens; h = d_model, a heads),
per layer, named as in the paper's §4.1: norm inputs 2sbh each; the attention input 2sbh; Q and
K 2sb(d_q + d_k); the softmax output 2as²b, its dropout mask as²b and the dropout output 2as²b;
V 2sb·d_v; the output projection's input 2sb·d_o; the attention dropout mask sbh; the MLP input
2sbh, its hidden tensors (plain: activation input and output, 2sbf each; gated: the fused
activation's gate-and-up input, 4sbf, and its output, 2sbf, as Megatron-Core's fused SwiGLU
keeps them) and dropout mask sbh. Cross-attention keeps its input,
its Q, K and V, its output projection's input and dropout mask, and its heads join a in the s²
tensors; a parallel block with one norm keeps one input for attention and MLP. With d_q = d_k =
d_v = h, f = 4h and dropout this is the paper's 34sbh + 5as²b. Tensor parallelism splits every
tensor inside attention and MLP t ways (the norm inputs, the attention and MLP inputs and the
dropout masks stay whole, 10sbh), sequence parallelism splits those too; selective recomputation
drops the s² tensors; full recomputation keeps each layer's input only (2sbh, split by t with
sequence parallelism). Without dropout the masks and the dropout output are not kept;
FlashAttention keeps no s² tensor but a row log-sum-exp (4 bytes per query row and head).

The first pipeline stage holds the most: p micro-batches in flight of its L/p layers (L layers'
worth), and the embedding's dropout masks (sbh per micro-batch in flight); with one stage it
also keeps the final norm's input 2sbh, the LM head's input 2sbh (split by t with sequence
parallelism, as §4.3 assumes; whole without it, like the layers' norm inputs) and fp32 logits
4sbV (split by t, by vocabulary): §4.3.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Optional

from ..records import dataclass
from ..kinds.base import (COLUMN, EXPERT, LAST, REPLICATED, ROW, SPREAD, Part, ceil_fraction,
                          merged)
from ..models.spec import ModelSpec
from ..tables import OPTIMIZERS, PRECISIONS
from .layers import layer_activations, layer_params
from .model import trained_params

BYTES = "bytes"


@dataclass(frozen=True)
class Setup:
    """How the model is trained: parallelism, ZeRO stage, precision, optimizer, recomputation."""

    seq: int
    batch: int  # micro-batch per device
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0
    recompute: str = "none"  # none, selective or full
    sequence_parallel: bool = False
    dropout: bool = False
    flash: bool = False
    precision: str = "mixed"
    optimizer: str = "adamw"
    # What training plans need (counting.memory_techniques; every default keeps the figures above):
    cp: int = 1  # context-parallel devices: each holds seq/cp tokens of every sequence
    lora_rank: int = 0  # LoRA adapters of this rank on every matrix of the layers (0: none)
    qlora: bool = False  # the frozen base in 4-bit NF4 (Dettmers et al. 2023), with LoRA
    fp8: bool = False  # fp8 GEMMs (Transformer Engine): fp8 weight copies and GEMM inputs
    offload_optimizer: bool = False  # optimizer state on the host
    zero3_buffer: bool = False  # ZeRO-3's gathered largest layer (DeepSpeed's estimator)
    grad_fp32: bool = False  # gradients accumulated in an fp32 buffer (Megatron's main_grad)
    etp: int = 1  # expert tensor parallelism: each routed expert split this many ways
    vp: int = 1  # virtual pipeline stages per device (the interleaved schedule)
    schedule: str = "1f1b"  # pipeline schedule: 1f1b, zero-bubble, dualpipe, dualpipev

    @property
    def bytes_per_param(self) -> tuple[int, int, int]:
        """(weights, gradients, optimizer) bytes per parameter: 2, 2, 12 for mixed AdamW."""
        weights, grads, master = PRECISIONS[self.precision]
        return weights, 4 if self.grad_fp32 else grads, master + OPTIMIZERS[self.optimizer]

    @property
    def extended(self) -> bool:
        """Whether any of the plan-related options is in use."""
        return (self.cp > 1 or self.lora_rank > 0 or self.qlora or self.fp8
                or self.offload_optimizer or self.zero3_buffer or self.grad_fp32)

    @property
    def shards(self) -> int:
        """Devices ZeRO splits over: the data-parallel ranks, times the context-parallel ones
        (Megatron-LM's distributed optimizer shards over the data- and context-parallel
        group)."""
        return self.dp * self.cp

    @property
    def expert_shards(self) -> int:
        """Devices ZeRO splits the routed experts' state over: the expert-data-parallel group,
        t·c·n / (e·t_e) (Megatron-Core's expert_data_parallel_size)."""
        return max(1, self.tp * self.cp * self.dp // (self.etp * self.ep))

    @property
    def in_flight(self) -> Fraction:
        """Micro-batches whose activations the first stage holds, in whole-stage units (its
        ⌈L/p⌉ layers): p for 1F1B (Narayanan et al. 2021) and ZB-H1 (Qi et al. 2023, "Zero
        Bubble Pipeline Parallelism": the same peak as 1F1B); p + (p − 1)/v interleaved
        (Megatron-Core's warm-up of 2(p − 1) + (v − 1)·p chunk forwards on the first rank, plus
        the one in steady state, each 1/v of the stage); DualPipe p + 1 (DeepSeek-V3 Technical
        Report, Table 2: PP + 1 chunks); DualPipeV 2p + 1 chunks of half a stage (the DualPipe
        repository's table)."""
        p = self.pp
        if self.schedule == "dualpipe":
            return Fraction(p + 1)
        if self.schedule == "dualpipev":
            return Fraction(2 * p + 1, 2)
        if self.vp > 1:
            return p + Fraction(p - 1, self.vp)
        return Fraction(p)

    @property
    def stage_copies(self) -> int:
        """Copies of a stage's parameters a device holds: 2 under DualPipe (each device holds
        a stage of each direction: the report's 2× parameters), else 1."""
        return 2 if self.schedule == "dualpipe" else 1

    def zero_shards(self, p: Part) -> int:
        """The devices ZeRO splits parameter `p`'s state over."""
        return self.expert_shards if p.role == EXPERT else self.shards


# ------------------------------------------------------------------------------------ state


def default_etp(tp: int, ep: int) -> int:
    """Expert tensor parallelism when not given: 1 once experts are spread over ep > 1
    devices (Megatron-Bridge's and the Megatron-MoE model zoo's recipes), else tp (Megatron-
    Core's default: experts split like every other matrix)."""
    return 1 if ep > 1 else tp


def share(p: Part, setup: Setup) -> Fraction:
    """The fraction of a parameter tensor one device holds under tensor and expert
    parallelism, from its role."""
    if p.role == EXPERT:
        return Fraction(1, setup.etp * setup.ep)
    return Fraction(1) if p.role == REPLICATED else Fraction(1, setup.tp)


def stage_layers(spec: ModelSpec, setup: Setup) -> int:
    """Layers of the first pipeline stage: ⌈L/p⌉."""
    return ceil(Fraction(spec.n_layers(), setup.pp))


def device_params(spec: ModelSpec, setup: Setup) -> Fraction:
    """Parameters the first pipeline stage's device holds (before ZeRO-3 splits them): ⌈L/p⌉ of
    the L layers (in proportion to each kind), the embeddings, and with one stage the final
    norms, the head and any multi-token-prediction modules; each tensor's tensor- and
    expert-parallel share."""
    return sum(device_params_split(spec, setup))


def device_params_split(spec: ModelSpec, setup: Setup) -> tuple[Fraction, Fraction]:
    """`device_params` as (dense, routed experts): ZeRO shards the two over different
    groups."""
    layers = spec.n_layers()
    stage = Fraction(stage_layers(spec, setup), layers)  # ⌈L/p⌉ of the L layers
    dense = expert = Fraction(0)
    for p in trained_params(spec):
        if p.stage == LAST and setup.pp > 1:
            continue
        value = p.value * share(p, setup) * (stage * setup.stage_copies if p.stage == SPREAD
                                             else 1)
        if p.role == EXPERT:
            expert += value
        else:
            dense += value
    return dense, expert


def state_parts(spec: ModelSpec, setup: Setup) -> list[Part]:
    """Bytes of weights, gradients and optimizer state one device holds."""
    if setup.extended:
        from .memory_techniques import extended_state_parts

        return extended_state_parts(spec, setup, share, stage_layers)
    dense, expert = device_params_split(spec, setup)
    w, g, o = setup.bytes_per_param
    split = {"weights": 3, "gradients": 2, "optimizer": 1}  # the ZeRO stage that splits each
    parts = []
    for name, nbytes in (("weights", w), ("gradients", g), ("optimizer", o)):
        sharded = setup.zero >= split[name]
        value = (dense * nbytes / (setup.dp if sharded else 1)
                 + expert * nbytes / (setup.expert_shards if sharded else 1))
        parts.append(Part(f"memory.{name}", ceil_fraction(value), BYTES))
    return parts


# ------------------------------------------------------------------------------ activations


def activation_parts(spec: ModelSpec, setup: Setup) -> list[Part]:
    """Activation bytes of the first pipeline stage's device: its layers with p micro-batches
    in flight (L layers' worth, or all layers with one stage), the embedding's dropout masks,
    and with one stage the final norm, LM head input and fp32 logits."""
    if setup.extended:
        from .memory_techniques import extended_activation_parts

        return extended_activation_parts(spec, setup, activation_parts, stage_layers)
    s, b, t, d = setup.seq, setup.batch, setup.tp, spec.d_model
    layers = spec.n_layers()
    in_flight = setup.in_flight
    parts = []
    for g in spec.groups():
        fraction = Fraction(g.count, layers) * stage_layers(spec, setup) * in_flight
        for p in layer_activations(g.layer, d, setup):
            parts.append(Part(f"layers.{p.name}", ceil_fraction(p.value * fraction), BYTES,
                              gemm_input=p.gemm_input))
    sp = Fraction(1, t) if setup.sequence_parallel else Fraction(1)
    if setup.dropout:
        parts.append(Part("embedding.dropout_mask", ceil_fraction(s * b * d * in_flight * sp),
                          BYTES))
    if setup.pp == 1:
        parts += output_activation_parts(spec, setup)
    return merged(parts)


def output_activation_parts(spec: ModelSpec, setup: Setup) -> list[Part]:
    """What the last stage keeps past its layers: the final norm's input, the LM head's input
    and fp32 logits; and per multi-token-prediction module (DeepSeek-V3 Technical Report,
    §2.2: RMSNorm of the hidden state and of the next token's embedding, their concatenation
    projected 2d → d, one layer, the shared head) the two norms' inputs, the 2d-wide
    projection input, its layer's activations, its head norm's and head's inputs and its own
    fp32 logits. 16-bit tensors, split by sequence parallelism where the layers' are."""
    s, b, t, d = setup.seq, setup.batch, setup.tp, spec.d_model
    sp = Fraction(1, t) if setup.sequence_parallel else Fraction(1)
    logits = ceil_fraction(Fraction(4 * s * b * spec.vocab_size, t))
    parts = []
    if spec.final_norm and spec.norm.present:
        parts.append(Part("output.final_norm_input", ceil_fraction(2 * s * b * d * sp), BYTES))
    if spec.head != "none":
        parts.append(Part("output.lm_head_input", ceil_fraction(2 * s * b * d * sp), BYTES))
        parts.append(Part("output.logits_fp32", logits, BYTES))
    if spec.mtp_layers:
        n = spec.mtp_layers
        if spec.norm.present:  # the hidden state's, the embedding's and the head norm's
            parts.append(Part("mtp.norm_inputs", n * ceil_fraction(3 * 2 * s * b * d * sp),
                              BYTES))
        parts.append(Part("mtp.eh_proj_input", n * ceil_fraction(2 * s * b * 2 * d * sp),
                          BYTES))
        for p in layer_activations(spec.mtp_layer, d, setup):
            parts.append(Part(f"mtp.layer.{p.name}", n * ceil_fraction(p.value), BYTES))
        parts.append(Part("mtp.lm_head_input", n * ceil_fraction(2 * s * b * d * sp), BYTES))
        parts.append(Part("mtp.logits_fp32", n * logits, BYTES))
    return parts


def vp_problem(vp: int, pp: int, layers: int) -> Optional[str]:
    """Why `vp` virtual stages per device cannot split stages of `layers` layers over `pp`
    stages (Megatron-Core's pipeline layout places layers unevenly, but every virtual stage
    needs one), or None."""
    if vp == 1:
        return None
    if pp == 1:
        return "--vp needs --pp > 1 (interleaving splits each pipeline stage)"
    if vp > layers:
        return (f"--vp {vp} is more than the {layers} layers of a pipeline stage; a virtual "
                "stage needs a layer")
    return None


def check_setup(spec: ModelSpec, setup: Setup) -> Optional[str]:
    """Why this parallel layout cannot hold the model, or None."""
    kinds = [kind for g in spec.groups() for _, kind in g.layer.slots()]
    units = sorted({u for k in kinds if (u := k.tp_units()) and u % setup.tp})
    if units:
        return (f"--tp {setup.tp} must divide the {units[0]} attention heads (each device "
                "holds whole heads)")
    layers = spec.n_layers()
    if setup.pp > layers:
        return f"--pp {setup.pp} is more than the {layers} layers; a stage needs a layer"
    experts = {k.ep_units() for k in kinds if k.ep_units()}
    if setup.ep > 1 and not experts:
        return "--ep applies to mixtures of experts; this model is dense"
    if any(e % setup.ep for e in experts):
        return f"--ep {setup.ep} must divide the {min(experts)} routed experts"
    if setup.tp % setup.etp:
        return (f"--etp {setup.etp} must divide --tp {setup.tp}: an expert's tensor-parallel "
                "group lies inside the attention's")
    ranks = setup.tp * setup.cp * setup.dp
    if ranks % (setup.ep * setup.etp):
        return (f"--ep {setup.ep} x --etp {setup.etp} = {setup.ep * setup.etp} must divide the "
                f"tp x cp x dp = {ranks} devices of a pipeline stage (Megatron-Core draws the "
                "expert-parallel groups from them)")
    if setup.sequence_parallel and setup.tp == 1:
        return "--sequence-parallel splits along the tensor-parallel group: give --tp > 1"
    if setup.schedule in ("zero-bubble", "dualpipe", "dualpipev") and setup.pp == 1:
        return f"--schedule {setup.schedule} is a pipeline schedule: give --pp > 1"
    if setup.schedule == "dualpipe" and setup.pp % 2:
        return (f"--schedule dualpipe pairs the stages of two directions: --pp {setup.pp} must "
                "be even (or use dualpipev)")
    problem = vp_problem(setup.vp, setup.pp, stage_layers(spec, setup))
    if problem:
        return problem
    if setup.lora_rank:
        widths = [min(p.shape[-2:]) for g in spec.groups() for p in layer_params(g.layer, spec.d_model)
                  if p.matmul and p.role in (COLUMN, ROW, EXPERT) and len(p.shape) >= 2]
        if widths and setup.lora_rank > max(widths):
            return (f"--lora-rank {setup.lora_rank} is more than every adapted matrix's width "
                    f"(at most {max(widths)}): a rank above a matrix's width adds nothing")
    if setup.extended:
        from .memory_techniques import check_extended

        return check_extended(setup)
    return None
