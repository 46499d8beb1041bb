"""One layer: its parameters, forward FLOPs, element-wise work, decode steps and saved
activations, slot by slot through the kinds' own answers.

A layer is token mixers, cross-attention (decoders of encoder-decoder models) and a
feed-forward sublayer (MLP or mixture of experts), each with its norms: one before it (`pre`),
one after it (`post`: Vaswani et al.'s post-LN, and OLMo 2's norm of the sublayer output, cost
the same), or both (`sandwich`, Gemma 2/3). A parallel block (GPT-J, GPT-NeoX, PaLM) feeds the
mixer and the MLP one input through one shared norm or two. Parts are named relative to the
layer (`attn.q.weight`, `mlp.up`); the model prefixes the stack.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from ..kinds.base import ELEMENTWISE, Keeping, Part, prefixed, scaled
from ..models.spec import Layer
from .recompute import OP, by_module, freed, modules_of, op_reruns
from .workload import Workload


def layer_params(layer: Layer, d: int, active: bool = False) -> list[Part]:
    """Parameters of one layer, by tensor, with shapes and roles. `active`: of a mixture of
    experts only the top-k routed experts a token uses."""
    parts: list[Part] = []
    for sub, slots in layer.sublayers():
        before, after = layer.norms_around(sub)
        for name in before:
            parts += layer.norm.params(d, name)
        for name, kind in slots:
            parts += prefixed(name, kind.params(d, active))
        for name in after:
            parts += layer.norm.params(d, name)
    if layer.tied:  # one weight set for every layer of this tag (ALBERT's shared layers)
        parts = [p if p.tied else replace(p, tied=f"{layer.tied}.{p.name}") for p in parts]
    return parts


def layer_flops(layer: Layer, d: int, w: Workload, elementwise: bool = False,
                layers: int = 1, prefix: str = "") -> list[Part]:
    """Forward FLOPs of one layer of its stack for workload `w` (batch included); of `layers`
    such layers, named under `prefix`, when given (one renaming pass: a sweep makes many)."""
    parts: list[Part] = []
    for name, kind in layer.slots():
        parts += scaled(kind.forward(d, w.span(layer.stack, name)), layers,
                        f"{prefix}.{name}" if prefix else name)
    if elementwise:
        parts += scaled(layer_elementwise(layer, d, w), layers, prefix)
    return parts


def layer_elementwise(layer: Layer, d: int, w: Workload) -> list[Part]:
    """Element-wise FLOPs of one layer: each sublayer's norms (per element of the d-wide
    input) and residual add (one per output added), then each slot's own."""
    tokens = w.batch * w.length(layer.stack)
    per_norm = layer.norm.per_element
    parts = []
    for sub, slots in layer.sublayers():
        count = sum(len(side) for side in layer.norms_around(sub))
        if count and per_norm:
            parts.append(Part(f"{sub}.elementwise.norm", count * per_norm * tokens * d,
                              ELEMENTWISE))
        parts.append(Part(f"{sub}.elementwise.residual", len(slots) * tokens * d, ELEMENTWISE))
    for name, kind in layer.slots():
        parts += prefixed(name, kind.elementwise(d, w.span(layer.stack, name)))
    return parts


def layer_decode(layer: Layer, d: int, batch: int, first: int, last: int) -> list[Part]:
    """FLOPs of the decode steps at positions first..last of one decoder layer, `batch`
    sequences, one new token each per step."""
    parts: list[Part] = []
    for name, kind in layer.slots():
        parts += prefixed(name, kind.decode(d, batch, first, last))
    return parts


def layer_activations(layer: Layer, d: int, k: Keeping) -> list[Part]:
    """Bytes autograd keeps for one layer and one micro-batch, after Korthikanti et al. 2022:
    each norm's input, each sublayer's input (a parallel block's MLP shares its mixer's), the
    slots' own tensors, and with dropout the masks after each sublayer (see counting.memory)."""
    from ..kinds.base import ceil_fraction

    s, b, t = k.seq, k.batch, k.tp
    sp = Fraction(1, t) if k.sequence_parallel else Fraction(1)
    sbh = s * b * d
    if k.recompute == "full":
        return [Part("layer_input", ceil_fraction(2 * sbh * sp), "bytes")]
    if k.recompute == OP:
        return _op_kept(layer, d, k)
    mods = modules_of(k.recompute)
    if by_module(k.recompute):  # the kinds know selective (core_attn) or none
        k = replace(k, recompute="selective" if "core_attn" in mods else "none")  # type: ignore
        # (k is counting.memory's Setup, a dataclass)
    norms = sum(layer.norm_count().values()) if layer.norm.present else 0
    # (name, bytes, the share of them a projection reads as its input: a sublayer's input all,
    # a kind's tensors what it says, by a third element)
    none, whole = Fraction(0), Fraction(1)
    parts: list[tuple[str, Fraction, Fraction]] = [("norm_inputs", 2 * sbh * norms * sp, none)]
    for sub, slots in layer.sublayers():
        if not layer.shares_input(sub):
            parts.append((f"{sub}.input", 2 * sbh * sp, whole))
        for name, kind in slots:
            for entry in kind.activations(d, k):
                tensor, value, *read = entry
                parts.append((f"{name}.{tensor}", value, Fraction(read[0]) if read else none))
        if k.dropout:
            parts.append((f"{sub}.dropout_mask", sbh * sp, none))
    return [Part(name, ceil_fraction(value), "bytes", gemm_input=gemm_input)
            for name, value, gemm_input in freed(layer, mods, parts)]


def _op_kept(layer: Layer, d: int, k: Keeping) -> list[Part]:
    """Bytes torchtitan's per-op checkpointing (`recompute.op_reruns`) keeps of one layer: the
    block's input (the checkpoint's), the 16-bit output of each matmul it saves, per device
    (column-parallel n_out/t wide; row-parallel the n_out-wide partial sum each rank holds
    before its reduction, and under sequence parallelism the reduce-scatter's s/t rows too, a
    saved op), and each attention core's output (s·b·v_width, 2 bytes) with its fp32
    log-sum-exp (s·b·heads, 4 bytes; FlashAttention's and PyTorch's SDPA backward read both).
    fp8's saved amax are scalars: not counted. Everything else is recomputed."""
    from ..kinds.base import ceil_fraction, COLUMN, ROW, WEIGHTS

    s, b, t = k.seq, k.batch, k.tp
    sp = Fraction(1, t) if k.sequence_parallel else Fraction(1)
    tokens = s * b
    parts = [Part("layer_input", ceil_fraction(2 * tokens * d * sp), "bytes")]
    weights = [p for p in layer_flops(layer, d, Workload(s, s, b, "causal"))
               if p.family == WEIGHTS]
    ffn = layer.ffn
    again = op_reruns((p.role for p in weights), ffn is not None and bool(ffn.routed))
    for p, rerun in zip(weights, again):
        if rerun or len(p.weight_shape) != 2:
            continue
        n_out = p.weight_shape[-1]
        width = Fraction(n_out, t) if p.role == COLUMN else Fraction(n_out)
        parts.append(Part(f"{p.name}.output", ceil_fraction(2 * tokens * width), "bytes"))
        if p.role == ROW and k.sequence_parallel:  # (T×n)/t rows after the reduce-scatter
            parts.append(Part(f"{p.name}.reduce_scatter",
                              ceil_fraction(2 * tokens * n_out * sp), "bytes"))
    for name, kind in layer.slots():
        if not kind.pair_terms():
            continue
        pub = kind.published(d)
        if pub.heads:
            parts.append(Part(f"{name}.attention_output",
                              ceil_fraction(Fraction(2 * tokens * pub.v_width, t)), "bytes"))
            parts.append(Part(f"{name}.logsumexp",
                              ceil_fraction(Fraction(4 * tokens * pub.heads, t)), "bytes"))
    return parts
