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
Expert parallelism (e) gives each device E/e of the routed experts of every MoE layer.

Activations (bytes, 16-bit, one micro-batch of b sequences of s tokens; h = d_model, a heads),
per layer, named as in the paper's §4.1: norm inputs 2sbh each; the attention input 2sbh; Q and
K 2sb(d_q + d_k); the softmax output 2as²b, its dropout mask as²b and the dropout output 2as²b;
V 2sb·d_v; the output projection's input 2sb·d_o; the attention dropout mask sbh; the MLP input
2sbh, its hidden tensors (plain: activation input and output, 2sbf each; gated: gate, up,
activation output and product, 2sbf each) and dropout mask sbh. Cross-attention keeps its input,
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

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from ..models.spec import Layer, ModelSpec, Moe
from .layers import norm_count
from .model import model_params
from .parts import EMBEDDING, Part

BYTES = "bytes"
PRECISIONS = {  # weights, gradients, and optimizer bytes per parameter besides its moments
    "mixed": (2, 2, 4),  # 16-bit weights and gradients, an fp32 master copy
    "bf16": (2, 2, 0),  # pure 16-bit training, no master copy
    "fp32": (4, 4, 0),
}
OPTIMIZERS = {"adamw": 8, "sgd": 4, "adamw-8bit": 2}  # bytes per parameter of moments (fp32 m, v)
COLUMN_PARALLEL = ("q", "k", "v", "gate", "up", "q_a", "q_b", "kv_a", "kv_b")


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

    @property
    def bytes_per_param(self) -> tuple[int, int, int]:
        """(weights, gradients, optimizer) bytes per parameter: 2, 2, 12 for mixed AdamW."""
        weights, grads, master = PRECISIONS[self.precision]
        return weights, grads, master + OPTIMIZERS[self.optimizer]


# ------------------------------------------------------------------------------------ state


def _share(p: Part, setup: Setup) -> Fraction:
    """The fraction of a parameter tensor one device holds under tensor and expert
    parallelism."""
    name = p.name.split(".")
    if ".experts." in p.name:
        return Fraction(1, setup.tp * setup.ep)
    if p.kind == EMBEDDING:  # by vocabulary (token table, LM head) or by head (relative
        # bias); position and token-type tables are replicated, as Megatron-LM keeps them
        replicated = name[-1] in ("positions", "token_types")
        return Fraction(1) if replicated else Fraction(1, setup.tp)
    if len(p.shape) >= 2:
        return Fraction(1, setup.tp) if "router" not in p.name else Fraction(1)
    if name[-1] == "bias" and len(name) >= 2 and name[-2] in COLUMN_PARALLEL:
        return Fraction(1, setup.tp)
    return Fraction(1)


def _placement(p: Part) -> str:
    """Where a parameter lives in a pipeline: `layers` (spread over the stages), `first` (the
    embeddings, on the first stage) or `last` (the final norms and the head)."""
    top = p.name.split(".")[0]
    if "final_norm" in p.name or top in ("lm_head", "head", "pooler"):
        return "last"
    if top in ("encoder", "decoder") and ".embed." not in p.name \
            and "relative_bias" not in p.name:
        return "layers"
    return "first"


def device_params(spec: ModelSpec, setup: Setup) -> Fraction:
    """Parameters the first pipeline stage's device holds (before ZeRO-3 splits them): ⌈L/p⌉ of
    the L layers (in proportion to each kind), the embeddings, and with one stage the final
    norms and the head; each tensor's tensor- and expert-parallel share."""
    layers = spec.n_layers()
    stage = Fraction(-(-layers // setup.pp), layers)  # ⌈L/p⌉ of the L layers
    total = Fraction(0)
    for p in model_params(spec):
        where = _placement(p)
        if where == "last" and setup.pp > 1:
            continue
        total += p.value * _share(p, setup) * (stage if where == "layers" else 1)
    return total


def state_parts(spec: ModelSpec, setup: Setup) -> list[Part]:
    """Bytes of weights, gradients and optimizer state one device holds."""
    params = device_params(spec, setup)
    w, g, o = setup.bytes_per_param
    dp = setup.dp
    split = {"weights": 3, "gradients": 2, "optimizer": 1}  # the ZeRO stage that splits each
    parts = []
    for name, nbytes in (("weights", w), ("gradients", g), ("optimizer", o)):
        value = params * nbytes / (dp if setup.zero >= split[name] else 1)
        parts.append(Part(f"memory.{name}", _ceil(value), BYTES))
    return parts


def _ceil(x: Fraction) -> int:
    return -(-x.numerator // x.denominator)


# ------------------------------------------------------------------------------ activations


def layer_activations(layer: Layer, d: int, setup: Setup) -> list[Part]:
    """Bytes autograd keeps for one layer and one micro-batch (see the module docstring)."""
    s, b, t = setup.seq, setup.batch, setup.tp
    sp = Fraction(1, t) if setup.sequence_parallel else Fraction(1)
    split = Fraction(1, t)
    sbh = s * b * d
    if setup.recompute == "full":
        return [Part("layer_input", _ceil(2 * sbh * sp), BYTES)]
    att = layer.attention
    parts: list[tuple[str, Fraction]] = []
    norms = sum(norm_count(layer).values()) if layer.norm.present else 0
    parts.append(("norm_inputs", 2 * sbh * norms * sp))
    parts.append(("attn.input", 2 * sbh * sp))
    parts.append(("attn.qk", 2 * s * b * (att.d_q + att.d_k) * split))
    if att.latent is not None:
        lat = att.latent
        low_rank = (lat.q_rank or 0) * 2 + lat.kv_rank * 2 + lat.rope_dim
        parts.append(("attn.latents", 2 * s * b * low_rank * split))
    if att.qk_norm != "none":
        parts.append(("attn.qk_norm_inputs", 2 * s * b * (att.d_q + att.d_k) * split))
    if layer.cross is not None:
        parts.append(("cross_attn.input", 2 * sbh * sp))
        parts.append(("cross_attn.qkv", 2 * s * b * (layer.cross.d_q + layer.cross.d_k
                                                    + layer.cross.d_v) * split))
        parts.append(("cross_attn.o_input", 2 * s * b * layer.cross.d_o * split))
    heads = att.heads + (layer.cross.heads if layer.cross is not None else 0)
    if setup.flash:
        parts.append(("attn.logsumexp", 4 * heads * s * b * split))
    elif setup.recompute != "selective":
        parts.append(("attn.softmax", 2 * heads * s * s * b * split))
        if setup.dropout:
            parts.append(("attn.softmax_dropout_mask", heads * s * s * b * split))
            parts.append(("attn.softmax_dropout", 2 * heads * s * s * b * split))
    parts.append(("attn.v", 2 * s * b * att.d_v * split))
    parts.append(("attn.o_input", 2 * s * b * att.d_o * split))
    if setup.dropout:
        parts.append(("attn.dropout_mask", sbh * sp))
        if layer.cross is not None:
            parts.append(("cross_attn.dropout_mask", sbh * sp))
    if not (layer.parallel and (layer.parallel_norms == 1 or not layer.norm.present)):
        parts.append(("mlp.input", 2 * sbh * sp))  # a parallel block's MLP shares attn.input
    parts += _mlp_activations(layer, s, b, d, split)
    if setup.dropout:
        parts.append(("mlp.dropout_mask", sbh * sp))
    return [Part(name, _ceil(value), BYTES) for name, value in parts]


def _mlp_activations(layer: Layer, s: int, b: int, d: int,
                     split: Fraction) -> list[tuple[str, Fraction]]:
    """The MLP's hidden tensors: 2 per plain MLP (activation input and output), 4 per gated
    one (gate, up, activation output, product), of 2·tokens·f bytes; a mixture of experts
    keeps them for each token's k experts (plus its k copies of the input and the router's
    logits in fp32), and for the shared experts. Expert parallelism does not shrink them: the
    ep devices are data-parallel ranks with their own micro-batches, and the all-to-all brings
    each about as many routed copies as it sends."""
    mlp = layer.mlp
    if not isinstance(mlp, Moe):
        tensors = 4 if mlp.gated else 2
        return [("mlp.hidden", 2 * s * b * mlp.d_ff * tensors * split)]
    expert = mlp.expert
    routed = s * b * mlp.top_k
    out = [("mlp.router_logits", Fraction(4 * s * b * mlp.experts)),
           ("mlp.expert_inputs", Fraction(2 * routed * d)),
           ("mlp.experts.hidden", 2 * routed * expert.d_ff * (4 if expert.gated else 2) * split)]
    if mlp.shared is not None:
        out.append(("mlp.shared.hidden",
                    2 * s * b * mlp.shared.d_ff * (4 if mlp.shared.gated else 2) * split))
    return out


def activation_parts(spec: ModelSpec, setup: Setup) -> list[Part]:
    """Activation bytes of the first pipeline stage's device: its layers with p micro-batches
    in flight (L layers' worth, or all layers with one stage), the embedding's dropout masks,
    and with one stage the final norm, LM head input and fp32 logits."""
    s, b, t, d = setup.seq, setup.batch, setup.tp, spec.d_model
    layers = spec.n_layers()
    in_flight = setup.pp
    stage_layers = -(-layers // setup.pp)
    parts = []
    for g in spec.groups():
        share = Fraction(g.count, layers) * stage_layers * in_flight
        for p in layer_activations(g.layer, d, setup):
            parts.append(Part(f"layers.{p.name}", _ceil(p.value * share), BYTES))
    sp = Fraction(1, t) if setup.sequence_parallel else Fraction(1)
    if setup.dropout:
        parts.append(Part("embedding.dropout_mask", _ceil(s * b * d * in_flight * sp), BYTES))
    if setup.pp == 1 and spec.final_norm and spec.norm.present:
        parts.append(Part("output.final_norm_input", _ceil(2 * s * b * d * sp), BYTES))
    if setup.pp == 1 and spec.head != "none":
        parts.append(Part("output.lm_head_input", _ceil(2 * s * b * d * sp), BYTES))
        parts.append(Part("output.logits_fp32", _ceil(Fraction(4 * s * b * spec.vocab_size,
                                                               t)), BYTES))
    return _merge(parts)


def _merge(parts: list[Part]) -> list[Part]:
    out: dict[str, int] = {}
    for p in parts:
        out[p.name] = out.get(p.name, 0) + p.value
    return [Part(name, value, BYTES) for name, value in out.items()]


def check_setup(spec: ModelSpec, setup: Setup) -> Optional[str]:
    """Why this parallel layout cannot hold the model, or None."""
    heads = {g.layer.attention.heads for g in spec.groups()}
    if any(h % setup.tp for h in heads):
        return (f"--tp {setup.tp} must divide the {min(heads)} attention heads (each device "
                "holds whole heads)")
    layers = spec.n_layers()
    if setup.pp > layers:
        return f"--pp {setup.pp} is more than the {layers} layers; a stage needs a layer"
    experts = {g.layer.mlp.experts for g in spec.groups() if isinstance(g.layer.mlp, Moe)}
    if setup.ep > 1 and not experts:
        return "--ep applies to mixtures of experts; this model is dense"
    if any(e % setup.ep for e in experts):
        return f"--ep {setup.ep} must divide the {min(experts)} routed experts"
    if setup.dp % setup.ep:
        return (f"--ep {setup.ep} must divide --dp {setup.dp}: the expert-parallel group is made "
                "of data-parallel ranks")
    if setup.sequence_parallel and setup.tp == 1:
        return "--sequence-parallel splits along the tensor-parallel group: give --tp > 1"
    return None

