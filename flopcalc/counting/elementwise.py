"""Element-wise operations, counted only on request (`--elementwise`): norms, bias adds,
activations, softmax, residual adds and routing. FlopCounterMode counts none of them.

One FLOP per add, multiply, divide, compare, exp or tanh; per-row square roots and reciprocals
are O(T), not O(T·d), and are left out. README "Element-wise costs" cites each figure.
"""

from __future__ import annotations

from ..models.spec import Attention, Layer, Mlp, ModelSpec, Moe, Norm
from .masks import pairs
from .mlp import mlp_matrices
from .parts import ELEMENTWISE, Part, Workload

# LayerNorm per element: mean (1 add), subtract (1), square (1), variance sum (1), normalise
# (1 multiply by the reciprocal std), gain (1), bias (1) → 7, or 6 without the bias; RMSNorm
# drops the mean, subtract and bias → 4.
_ACTIVATION_PER_ELEMENT = {"relu": 1, "gelu": 9, "silu": 4}
# ReLU a compare (1); GELU in its tanh form 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): 9;
# SiLU x·sigmoid(x) = x / (1 + exp(−x)): negate, exp, add, divide (4). A gated MLP adds the gate
# product (1).
_SOFTMAX_PER_SCORE = 5  # max-subtract, exp, sum, divide, and the 1/√d_h scale
_ROUTER_PER_LOGIT = 4  # softmax over the experts (max-subtract, exp, sum, divide)
_SIGMOID = 4  # negate, exp, add, divide
_TANH = 1  # as in the GELU count


def norm_per_element(norm: Norm) -> int:
    if norm.kind == "layernorm":
        return 7 if norm.bias else 6
    return 4 if norm.kind == "rmsnorm" else 0


def _activation(mlp: Mlp, tokens: int) -> int:
    return (_ACTIVATION_PER_ELEMENT[mlp.activation] + (1 if mlp.gated else 0)) * tokens * mlp.d_ff


def _mlp_bias(mlp: Mlp, d: int, tokens: int) -> int:
    return tokens * sum(n_out for _, _, n_out in mlp_matrices(mlp, d)) if mlp.bias else 0


def _attention_bias(att: Attention, d: int, t_q: int, t_k: int) -> int:
    if att.latent is not None:
        lat = att.latent
        qkv = (t_q * (lat.q_rank or 0) + t_k * (lat.kv_rank + lat.rope_dim)) if att.qkv_bias \
            else 0
    else:
        qkv = t_q * att.d_q + t_k * (att.d_k + att.d_v) if att.qkv_bias else 0
    return qkv + (t_q * d if att.out_bias else 0)


def _softmax(att: Attention, scores: int, rows: int) -> int:
    """Per score, plus one sink logit per query row and head when the layer has sinks."""
    return _SOFTMAX_PER_SCORE * (scores + (att.heads * rows if att.sinks else 0))


def layer_elementwise(layer: Layer, d: int, w: Workload, norms: dict[str, int]) -> list[Part]:
    """Element-wise FLOPs of one layer; `norms` says how many d-wide norms each sublayer has."""
    n = w.length(layer.stack)
    tokens = w.batch * n
    per_norm = norm_per_element(layer.norm)
    parts = []
    for sub, count in norms.items():
        if count and per_norm:
            parts.append(Part(f"{sub}.elementwise.norm", count * per_norm * tokens * d,
                              ELEMENTWISE))
        parts.append(Part(f"{sub}.elementwise.residual", tokens * d, ELEMENTWISE))
    att = layer.attention
    bias = _attention_bias(att, d, tokens, tokens)
    if layer.cross is not None:
        bias += _attention_bias(layer.cross, d, w.batch * w.tgt_seq, w.batch * w.seq)
    if bias:
        parts.append(Part("attn.elementwise.bias", bias, ELEMENTWISE))
    extra = _attention_extras(att, layer.norm, tokens, tokens)
    if layer.cross is not None:  # queries from the target, keys from the source
        extra += _attention_extras(layer.cross, layer.norm, w.batch * w.tgt_seq,
                                   w.batch * w.seq)
    if extra:
        parts.append(Part("attn.elementwise.qk_norm", extra, ELEMENTWISE))
    parts += _ffn_elementwise(layer.mlp, d, tokens)
    scores = w.batch * att.heads * pairs(att.mask, n, n, w.attention)
    parts.append(Part("attn.elementwise.softmax", _softmax(att, scores, tokens), ELEMENTWISE))
    if layer.cross is not None:
        cross = w.batch * layer.cross.heads * w.tgt_seq * w.seq
        parts.append(Part("cross_attn.elementwise.softmax",
                          _softmax(layer.cross, cross, w.batch * w.tgt_seq), ELEMENTWISE))
    return parts


def _attention_extras(att: Attention, norm: Norm, t_q: int, t_k: int) -> int:
    """Norms inside attention: QK-norm over every query (`t_q` tokens) and key (`t_k` tokens)
    element, and MLA's RMSNorms of the query and key/value latents."""
    cost = 0
    if att.qk_norm != "none":
        cost += norm_per_element(norm) * (t_q * att.d_q + t_k * att.d_k)
    if att.latent is not None:
        cost += 4 * (t_q * (att.latent.q_rank or 0) + t_k * att.latent.kv_rank)
    return cost


def _ffn_elementwise(mlp: Mlp | Moe, d: int, tokens: int) -> list[Part]:
    if isinstance(mlp, Mlp):
        parts = []
        if mlp.bias:
            parts.append(Part("mlp.elementwise.bias", _mlp_bias(mlp, d, tokens), ELEMENTWISE))
        parts.append(Part("mlp.elementwise.activation", _activation(mlp, tokens), ELEMENTWISE))
        return parts
    routed = tokens * mlp.top_k
    activation = _activation(mlp.expert, routed)
    bias = _mlp_bias(mlp.expert, d, routed) + (tokens * mlp.experts if mlp.router_bias else 0)
    # Softmax over the E router logits, then each of the k expert outputs scaled and summed.
    routing = tokens * (_ROUTER_PER_LOGIT * mlp.experts + 2 * mlp.top_k * d)
    if mlp.shared is not None:
        activation += _activation(mlp.shared, tokens)
        bias += _mlp_bias(mlp.shared, d, tokens)
        routing += tokens * d  # the shared output added
        if mlp.shared_gate:
            routing += tokens * (_SIGMOID + d)  # sigmoid(gate), times the shared output
    parts = [Part("mlp.elementwise.bias", bias, ELEMENTWISE)] if bias else []
    return parts + [Part("mlp.elementwise.activation", activation, ELEMENTWISE),
                    Part("mlp.elementwise.routing", routing, ELEMENTWISE)]


def head_elementwise(spec: ModelSpec, tokens: int, sequences: int) -> list[Part]:
    """BERT's masked-LM head on `tokens` output tokens: the transform's bias, activation and
    norm, then the output bias over the vocabulary; its pooler on each sequence's first token:
    bias and tanh."""
    d, parts = spec.d_model, []
    if spec.head == "masked-lm":
        mlp = spec.first_layer().mlp
        assert isinstance(mlp, Mlp)  # mixtures of experts are decoder-only
        act = _ACTIVATION_PER_ELEMENT[mlp.activation]
        parts += [Part("head.elementwise.bias", tokens * d, ELEMENTWISE),
                  Part("head.elementwise.activation", tokens * d * act, ELEMENTWISE),
                  Part("head.elementwise.norm", tokens * d * norm_per_element(spec.norm),
                       ELEMENTWISE),
                  Part("lm_head.elementwise.bias", tokens * spec.vocab_size, ELEMENTWISE)]
    if spec.pooler:
        parts += [Part("pooler.elementwise.bias", sequences * d, ELEMENTWISE),
                  Part("pooler.elementwise.activation", sequences * d * _TANH, ELEMENTWISE)]
    return parts
