"""The whole model: embeddings, every layer group of every stack, final norms and the head.

A model's layers come in groups of identical layers (`ModelSpec.groups`); each group is counted
once and multiplied by its size, and parts of the same name are summed over the groups of a
stack, so `decoder.attn.scores` is every decoder layer's score matmul, windowed or not.

Parameters: `embed.tokens` (V x d, shared by an encoder-decoder's two stacks unless
`share_encoder_embeddings` is false), learned position tables, BERT's token-type table and
embedding norm, T5's relative position bias (buckets x heads, first layer of each stack), each
stack's layers and final norm, and the head: an untied `lm_head` (a tied one reuses the token
table and adds nothing), or BERT's masked-LM head (a dense d x d, a norm, the vocabulary
projection and its bias). Forward FLOPs: every layer, then the head on every output token
(the LM head 2·T·d·V, tied or not).
"""

from __future__ import annotations

from dataclasses import replace

from ..kinds.base import (COLUMN, ELEMENTWISE, EMBEDDING, FIRST, HEAD, LAST, LAYERS, NORMS,
                          REPLICATED, ROW, VOCAB, WEIGHTS, Convention, Part, merged, scaled,
                          total)
from ..kinds.mlp import ACTIVATION_FLOPS
from ..models.spec import ModelSpec
from .layers import layer_decode, layer_flops, layer_params
from .workload import Workload

TANH = 1  # as in the GELU count


def workload(spec: ModelSpec, seq: int, tgt_seq: int | None = None, batch: int = 1,
             attention: Convention = "full") -> Workload:
    """A Workload for `spec`; only an encoder-decoder model has a separate target length."""
    if not spec.is_encoder_decoder or tgt_seq is None:
        tgt_seq = seq
    return Workload(seq=seq, tgt_seq=tgt_seq, batch=batch, attention=attention)


def output_tokens(spec: ModelSpec, w: Workload) -> int:
    """Tokens that reach the head: the ones a training token count D refers to."""
    return w.batch * w.length(spec.output_stack)


# ------------------------------------------------------------------------------ parameters


def _embeddings(spec: ModelSpec) -> list[Part]:
    """Token tables, split by vocabulary under tensor parallelism (an untied one is only ever
    looked up: the LM head reads a tied one in full), and BERT's token-type table."""
    d, vocab = spec.d_model, spec.vocab_size
    untied = not spec.tie_embeddings
    parts = []
    if spec.is_encoder_decoder and not spec.share_encoder_embeddings:
        parts.append(Part("encoder.embed.tokens", vocab * d, EMBEDDING, (vocab, d), VOCAB,
                          FIRST, lookup=untied))
    parts.append(Part("embed.tokens", vocab * d, EMBEDDING, (vocab, d), VOCAB, FIRST,
                      lookup=untied))
    if spec.token_types:
        parts.append(Part("embed.token_types", spec.token_types * d, EMBEDDING,
                          (spec.token_types, d), REPLICATED, FIRST, lookup=True))
    return parts


def _stack_inputs(spec: ModelSpec, stack: str) -> list[Part]:
    """A stack's position table (replicated, as Megatron-LM keeps it) or relative position
    bias (split by head), and an embedding norm."""
    d, parts = spec.d_model, []
    if spec.positions == "learned":
        assert spec.max_seq_len is not None  # the spec's invariants guarantee it
        name = "encoder.embed.positions" if spec.is_encoder_decoder and stack == "encoder" \
            else "embed.positions"
        parts.append(Part(name, spec.max_seq_len * d, EMBEDDING, (spec.max_seq_len, d),
                          REPLICATED, FIRST, lookup=True))
    if spec.relative_buckets is not None:
        heads = spec.relative_heads
        parts.append(Part(f"{stack}.relative_bias", spec.relative_buckets * heads, EMBEDDING,
                          (spec.relative_buckets, heads), COLUMN, FIRST, lookup=True))
    if spec.embedding_norm:
        parts += spec.norm.params(d, "embed.norm", NORMS, FIRST)
    return parts


def _head_params(spec: ModelSpec) -> list[Part]:
    d, vocab = spec.d_model, spec.vocab_size
    parts = []
    if spec.head == "masked-lm":
        parts += [Part("head.transform.weight", d * d, HEAD, (d, d), COLUMN, LAST),
                  Part("head.transform.bias", d, HEAD, (d,), REPLICATED, LAST)]
        parts += spec.norm.params(d, "head.norm", HEAD, LAST)
    if not spec.tie_embeddings:
        parts.append(Part("lm_head.weight", d * vocab, EMBEDDING, (d, vocab), VOCAB, LAST))
    if spec.head == "masked-lm":
        parts.append(Part("lm_head.bias", vocab, EMBEDDING, (vocab,), VOCAB, LAST))
    if spec.pooler:
        parts += [Part("pooler.weight", d * d, HEAD, (d, d), COLUMN, LAST),
                  Part("pooler.bias", d, HEAD, (d,), REPLICATED, LAST)]
    return parts


def stack_params(spec: ModelSpec, stack: str, active: bool = False) -> list[Part]:
    """Every layer of `stack`, each tensor summed over the layers (`decoder.attn.q.weight`); a
    tensor layers share (`Part.tied`) counts once."""
    parts: list[Part] = []
    shared: dict[str, Part] = {}
    for g in spec.groups(stack):
        for p in layer_params(g.layer, spec.d_model, active):
            if p.tied:
                shared.setdefault(p.tied, replace(p, name=f"{stack}.{p.name}"))
            else:
                parts += scaled([p], g.count, stack)
    return merged(parts + list(shared.values()))


def model_params(spec: ModelSpec, active: bool = False) -> list[Part]:
    """Whole-model parameters, by tensor. `active`: of each mixture of experts only the top-k
    routed experts a token uses (what `params.active` counts)."""
    parts = _embeddings(spec)
    for stack in spec.stacks:
        parts += _stack_inputs(spec, stack)
        parts += stack_params(spec, stack, active)
        if spec.final_norm:
            parts += spec.norm.params(spec.d_model, f"{stack}.final_norm", NORMS, LAST)
    return parts + _head_params(spec)


def non_embedding(parts: list[Part]) -> int:
    """N of 6ND: all parameters but token, position and token-type tables and an untied LM
    head (with its bias)."""
    return total(parts) - total(parts, EMBEDDING)


def mtp_params(spec: ModelSpec) -> list[Part]:
    """DeepSeek-V3's multi-token-prediction modules (outside the model's totals): per module
    two RMSNorms (of the hidden state and of the next token's embedding), a 2d → d projection,
    one layer of the last layer's kind and the norm before the shared output head. The
    embedding and output head are shared with the model."""
    d = spec.d_model
    one = (spec.norm.params(d, "enorm") + spec.norm.params(d, "hnorm")
           + [Part("eh_proj.weight", 2 * d * d, LAYERS, (2 * d, d), ROW)]
           + layer_params(spec.mtp_layer, d) + spec.norm.params(d, "head_norm"))
    return scaled(one, spec.mtp_layers, "mtp") if spec.mtp_layers else []


# -------------------------------------------------------------------------- forward FLOPs


def stack_flops(spec: ModelSpec, stack: str, w: Workload, elementwise: bool) -> list[Part]:
    parts: list[Part] = []
    for g in spec.groups(stack):
        parts += scaled(layer_flops(g.layer, spec.d_model, w, elementwise), g.count, stack)
    return merged(parts)


def head_flops(spec: ModelSpec, w: Workload) -> list[Part]:
    """The head on every output token: (T×d)·(d×V), tied or not; BERT's masked-LM head adds its
    dense d x d first; a pooler reads each sequence's first token."""
    d, tokens = spec.d_model, output_tokens(spec, w)
    parts = []
    if spec.head == "masked-lm":
        parts.append(Part("head.transform", 2 * tokens * d * d, WEIGHTS))
    if spec.head != "none":
        parts.append(Part("lm_head", 2 * tokens * d * spec.vocab_size, WEIGHTS))
    if spec.pooler:
        parts.append(Part("pooler", 2 * w.batch * d * d, WEIGHTS))
    return parts


def model_flops(spec: ModelSpec, w: Workload, elementwise: bool = False) -> list[Part]:
    """Whole-model forward FLOPs: every layer (summed over its stack), then the head."""
    parts: list[Part] = []
    per_norm = spec.norm.per_element
    for stack in spec.stacks:
        tokens = w.batch * w.length(stack)
        if elementwise and spec.embedding_norm and per_norm:
            parts.append(Part("embed.norm.elementwise", per_norm * tokens * spec.d_model,
                              ELEMENTWISE))
        parts += stack_flops(spec, stack, w, elementwise)
        if elementwise and spec.final_norm and per_norm:
            parts.append(Part(f"{stack}.final_norm.elementwise",
                              per_norm * tokens * spec.d_model, ELEMENTWISE))
    parts += head_flops(spec, w)
    if elementwise:
        parts += head_elementwise(spec, output_tokens(spec, w), w.batch)
    return parts


def mtp_flops(spec: ModelSpec, w: Workload) -> list[Part]:
    """Forward FLOPs of the multi-token-prediction modules: per module the 2d → d projection,
    its layer and the shared output head, on every token."""
    if not spec.mtp_layers:
        return []
    d, tokens = spec.d_model, output_tokens(spec, w)
    one = ([Part("eh_proj", 2 * tokens * 2 * d * d, WEIGHTS)]  # (T×2d)·(2d×d)
           + layer_flops(spec.mtp_layer, d, w)
           + [Part("lm_head", 2 * tokens * d * spec.vocab_size, WEIGHTS)])
    return scaled(one, spec.mtp_layers, "mtp")


def head_elementwise(spec: ModelSpec, tokens: int, sequences: int) -> list[Part]:
    """BERT's masked-LM head on `tokens` output tokens: the transform's bias, activation and
    norm, then the output bias over the vocabulary; its pooler on each sequence's first token:
    bias and tanh."""
    d, parts = spec.d_model, []
    if spec.head == "masked-lm":
        act = ACTIVATION_FLOPS[spec.head_activation]
        parts += [Part("head.elementwise.bias", tokens * d, ELEMENTWISE),
                  Part("head.elementwise.activation", tokens * d * act, ELEMENTWISE),
                  Part("head.elementwise.norm", tokens * d * spec.norm.per_element,
                       ELEMENTWISE),
                  Part("lm_head.elementwise.bias", tokens * spec.vocab_size, ELEMENTWISE)]
    if spec.pooler:
        parts += [Part("pooler.elementwise.bias", sequences * d, ELEMENTWISE),
                  Part("pooler.elementwise.activation", sequences * d * TANH, ELEMENTWISE)]
    return parts


def decode_flops(spec: ModelSpec, first: int, last: int, batch: int) -> list[Part]:
    """FLOPs of the decode steps at positions first..last (one step each), `batch` sequences:
    every decoder layer, then the LM head on every generated token, (B×d)·(d×V) per step. A
    single step at context c is decode_flops(spec, c, c, batch)."""
    steps = last - first + 1
    parts: list[Part] = []
    for g in spec.groups("decoder"):
        parts += scaled(layer_decode(g.layer, spec.d_model, batch, first, last), g.count,
                        "decoder")
    return merged(parts) + [Part("lm_head", 2 * batch * steps * spec.d_model * spec.vocab_size,
                                 WEIGHTS)]
