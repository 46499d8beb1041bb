"""One layer: its parameters and its forward FLOPs, sublayer by sublayer.

A layer is self-attention, cross-attention (decoders of encoder-decoder models) and a
feed-forward sublayer (MLP or mixture of experts), each with its norms: one before it (`pre`),
one after it (`post`: Vaswani et al.'s post-LN, and OLMo 2's norm of the sublayer output, cost
the same), or both (`sandwich`, Gemma 2/3). A parallel block (GPT-J, GPT-NeoX, PaLM) feeds
attention and MLP one input through one shared norm or two. Parts are named relative to the
layer (`attn.q.weight`, `mlp.up`); the model prefixes the stack.
"""

from __future__ import annotations

from ..models.spec import Layer
from .attention import attention_flops, attention_params, norm_params
from .elementwise import layer_elementwise
from .masks import pairs
from .mlp import ffn_flops, ffn_params
from .parts import Part, Workload


def sublayers(layer: Layer) -> list[str]:
    """The residual sublayers of a layer, in forward order."""
    return ["attn", *(["cross_attn"] if layer.cross is not None else []), "mlp"]


def norms_around(layer: Layer, sub: str) -> tuple[list[str], list[str]]:
    """Names of the norms listed before and after sublayer `sub`'s own parameters."""
    if layer.parallel:
        if layer.parallel_norms == 1:
            return (["norm"] if sub == "attn" else []), []
        return [f"{sub}_norm"], []
    if layer.placement == "sandwich":
        return [f"{sub}_norm"], [f"{sub}_post_norm"]
    return [f"{sub}_norm"], []


def norm_count(layer: Layer) -> dict[str, int]:
    """How many d-wide norms each sublayer has (a parallel block's shared norm is attn's)."""
    return {sub: sum(len(side) for side in norms_around(layer, sub)) for sub in sublayers(layer)}


def layer_params(layer: Layer, d: int, active: bool = False) -> list[Part]:
    """Parameters of one layer, by tensor, with shapes. `active`: of a mixture of experts only
    the top-k routed experts a token uses."""
    parts: list[Part] = []
    for sub in sublayers(layer):
        before, after = norms_around(layer, sub)
        for name in before:
            parts += norm_params(layer.norm, d, name)
        if sub == "mlp":
            parts += ffn_params(layer.mlp, d, active)
        else:
            att = layer.attention if sub == "attn" else layer.cross
            assert att is not None
            parts += attention_params(att, d, layer.norm, sub)
        for name in after:
            parts += norm_params(layer.norm, d, name)
    return parts


def layer_flops(layer: Layer, d: int, w: Workload, elementwise: bool = False) -> list[Part]:
    """Forward FLOPs of one layer of its stack for workload `w` (batch included)."""
    n = w.length(layer.stack)
    tokens = w.batch * n
    self_pairs = w.batch * pairs(layer.attention.mask, n, n, w.attention)
    parts = attention_flops(layer.attention, d, tokens, tokens, self_pairs, "attn")
    if layer.cross is not None:
        # Queries from the decoder's tgt_seq tokens; keys and values from the encoder's seq.
        parts += attention_flops(layer.cross, d, w.batch * w.tgt_seq, w.batch * w.seq,
                                 w.batch * w.tgt_seq * w.seq, "cross_attn")
    parts += ffn_flops(layer.mlp, d, tokens)
    if elementwise:
        parts += layer_elementwise(layer, d, w, norm_count(layer))
    return parts
