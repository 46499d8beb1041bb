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
from typing import Any

from ..kinds.base import (ATTENTION, COLUMN, ELEMENTWISE, EMBEDDING, FIRST, HEAD, LAST, LAYERS,
                          NORMS, REPLICATED, ROW, VOCAB, WEIGHTS, Convention, Part, Scan, merged,
                          prefixed, scaled, total)
from ..kinds.mlp import ACTIVATION_FLOPS
from ..models.spec import ModelSpec
from .layers import layer_decode, layer_flops, layer_params
from .recompute import OP, by_module, modules_of, op_reruns, reruns
from .workload import Workload

TANH = 1  # as in the GELU count


def workload(spec: ModelSpec, seq: int, tgt_seq: int | None = None, batch: int = 1,
             attention: Convention = "full", scan: Scan = "chunked",
             packed: tuple[int, ...] = ()) -> Workload:
    """A Workload for `spec`; only an encoder-decoder model has a separate target length.
    `packed`: sample lengths packed into each sequence (`Workload.packed`)."""
    if not spec.is_encoder_decoder or tgt_seq is None:
        tgt_seq = seq
    return Workload(seq=seq, tgt_seq=tgt_seq, batch=batch, attention=attention, scan=scan,
                    packed=packed)


def output_tokens(spec: ModelSpec, w: Workload) -> int:
    """Tokens that reach the head: the ones a training token count D refers to."""
    return w.batch * w.length(spec.output_stack)


# ------------------------------------------------------------------------------ parameters


def _embeddings(spec: ModelSpec) -> list[Part]:
    """Token tables, split by vocabulary under tensor parallelism (an untied one is only ever
    looked up: the LM head reads a tied one in full), and BERT's token-type table. The token
    table is `embed_dim` wide where the model has one (OPT's word_embed_proj_dim), then
    projected to d (`embed.project_in`, e x d without bias)."""
    d, vocab = spec.d_model, spec.vocab_size
    e = spec.embed_dim or d
    untied = not spec.tie_embeddings
    parts = []
    if spec.is_encoder_decoder and not spec.share_encoder_embeddings:
        rows = spec.encoder_vocab_size or vocab  # Marian's own source vocabulary
        parts.append(Part("encoder.embed.tokens", rows * d, EMBEDDING, (rows, d), VOCAB,
                          FIRST, lookup=untied))
    if spec.unused_token_tables:  # held, never read: an untied BART's `shared`
        k = spec.unused_token_tables
        parts.append(Part("embed.unused_tokens", k * vocab * d, EMBEDDING, (k, vocab, d),
                          VOCAB, FIRST, lookup=True))
    rows = vocab + spec.extra_token_rows  # Molmo 2's input-only rows past the head's vocabulary
    parts.append(Part("embed.tokens", rows * e, EMBEDDING, (rows, e), VOCAB, FIRST,
                      lookup=untied))
    if spec.embed_dim is not None:
        parts.append(Part("embed.project_in.weight", e * d, LAYERS, (e, d), REPLICATED, FIRST,
                          matmul=True, module="embed.project_in"))
        if spec.embed_proj_bias:
            parts.append(Part("embed.project_in.bias", d, LAYERS, (d,), REPLICATED, FIRST,
                              module="embed.project_in"))
    if spec.token_types:
        t = _table_width(spec)
        parts.append(Part("embed.token_types", spec.token_types * t, EMBEDDING,
                          (spec.token_types, t), REPLICATED, FIRST, lookup=True))
    return parts


def _factorised(spec: ModelSpec) -> bool:
    """An encoder's factorised embedding (ALBERT, ELECTRA, DeBERTa-v2): tables E wide, projected
    to d, and a masked-LM head back through E."""
    return spec.is_encoder_only and spec.embed_dim is not None


def _table_width(spec: ModelSpec) -> int:
    """The width of position and token-type tables and of the masked-LM head's transform: E in
    a factorised embedding, else d."""
    return spec.embed_dim if _factorised(spec) and spec.embed_dim else spec.d_model


def _projection_input(spec: ModelSpec, e: int) -> int:
    """The vocabulary projection's input width: RemBERT's head width, a bottleneck head's d
    (its linear2 returns to d), else the tables'."""
    if spec.head == "bottleneck":
        return spec.d_model
    return spec.head_width or e


def _head_width(spec: ModelSpec) -> int:
    """The masked-LM transform's width: `head_width` where given (RemBERT), else the tables'."""
    return spec.head_width or _table_width(spec)


def _embed_norm_width(spec: ModelSpec) -> int:
    return _table_width(spec) if spec.embed_norm_width == "embed" else spec.d_model


def _embed_norm_name(spec: ModelSpec, stack: str) -> str:
    return "encoder.embed.norm" if spec.is_encoder_decoder and stack == "encoder" \
        else "embed.norm"


def _stack_inputs(spec: ModelSpec, stack: str) -> list[Part]:
    """A stack's position table (replicated, as Megatron-LM keeps it) or relative position
    bias (split by head), and an embedding norm."""
    d, parts = spec.d_model, []
    if stack == "encoder":
        for kind in _inputs(spec):  # Whisper's convolutions, before the positions are added
            parts += prefixed(f"encoder.{kind.slot}", kind.params(d))
    if spec.positions == "learned":
        assert spec.max_seq_len is not None  # the spec's invariants guarantee it
        encoder = spec.is_encoder_decoder and stack == "encoder"
        name = "encoder.embed.positions" if encoder else "embed.positions"
        # OPT's table has 2 rows more; Whisper's encoder has its own length
        rows = (spec.encoder_max_seq_len if encoder and spec.encoder_max_seq_len
                else spec.max_seq_len) + spec.position_offset
        width = _table_width(spec)
        parts.append(Part(name, rows * width, EMBEDDING, (rows, width), REPLICATED, FIRST,
                          lookup=True))
    if spec.relative_buckets is not None:
        heads = spec.relative_heads
        # T5: in the first layer of each stack; UMT5: in every self-attention layer
        tables = spec.n_layers(stack) if spec.relative_bias_per_layer else 1
        shape = ((tables,) if tables > 1 else ()) + (spec.relative_buckets, heads)
        parts.append(Part(f"{stack}.relative_bias", tables * spec.relative_buckets * heads,
                          EMBEDDING, shape, COLUMN, FIRST, lookup=True))
    if spec.embedding_norm:
        parts += spec.norm.params(_embed_norm_width(spec), _embed_norm_name(spec, stack), NORMS,
                                  FIRST)
    return parts


def _head_params(spec: ModelSpec) -> list[Part]:
    """The head: BERT's masked-LM transform and norm, an untied vocabulary projection (e x V,
    after `embed.project_out` d x e where the embedding is e wide), its bias vectors, the
    pooler."""
    d, vocab = spec.d_model, spec.vocab_size
    e = spec.embed_dim or d
    parts = []
    if spec.embed_dim is not None and not _factorised(spec):
        parts.append(Part("embed.project_out.weight", d * e, LAYERS, (d, e), REPLICATED, LAST,
                          matmul=True))
    if spec.head == "masked-lm":
        t = _head_width(spec)  # ALBERT's transform is d x E
        parts.append(Part("head.transform.weight", d * t, HEAD, (d, t), COLUMN, LAST,
                          matmul=True, module="head.transform"))
        if spec.head_bias:
            parts.append(Part("head.transform.bias", t, HEAD, (t,), REPLICATED, LAST,
                              module="head.transform"))
        parts += spec.norm.params(t, "head.norm", HEAD, LAST)
    if spec.head == "bottleneck":  # UltraBERT: linear1 d x p, linear2 p x d, both bias-free
        p = spec.head_width or d
        parts += [Part("head.linear1.weight", d * p, HEAD, (d, p), COLUMN, LAST, matmul=True,
                       module="head.linear1"),
                  Part("head.linear2.weight", p * d, HEAD, (p, d), ROW, LAST, matmul=True,
                       module="head.linear2")]
    if not spec.tie_embeddings:
        h = _projection_input(spec, e)  # RemBERT's decoder reads the head's own width
        parts.append(Part("lm_head.weight", h * vocab, EMBEDDING, (h, vocab), VOCAB, LAST,
                          matmul=True, module="lm_head"))
    if spec.lm_head_bias:
        parts.append(Part("lm_head.bias", vocab, EMBEDDING, (vocab,), VOCAB, LAST,
                          module="lm_head"))
    if spec.lm_head_bias > 1:  # untied BERT: transformers keeps an unused second copy
        extra = spec.lm_head_bias - 1
        parts.append(Part("lm_head.extra_bias", extra * vocab, EMBEDDING, (extra, vocab), VOCAB,
                          LAST))
    if spec.pooler:
        parts += [Part("pooler.weight", d * d, HEAD, (d, d), COLUMN, LAST, matmul=True,
                       module="pooler"),
                  Part("pooler.bias", d, HEAD, (d,), REPLICATED, LAST, module="pooler")]
    return parts


def stack_params(spec: ModelSpec, stack: str, active: bool) -> list[Part]:
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
    """Whole-model parameters, by tensor, towers included. `active`: what a text token uses
    (`params.active`, and N of 6ND): of each mixture of experts only the top-k routed experts,
    and no tower (a text token never reads an image encoder's weights)."""
    return _params(spec, active, towers=not active)


def _params(spec: ModelSpec, active: bool, towers: bool) -> list[Part]:
    parts = _embeddings(spec)
    for stack in spec.stacks:
        parts += _stack_inputs(spec, stack)
        parts += stack_params(spec, stack, active)
        if spec.final_norm:
            parts += spec.final().params(spec.d_model, f"{stack}.final_norm", NORMS, LAST)
    for kind in _outputs(spec):
        parts += prefixed(kind.slot, kind.params(spec.d_model))
    return parts + (tower_params(spec) if towers else []) + _head_params(spec)


def _inputs(spec: ModelSpec) -> list[Any]:
    """The model-level kinds before the encoder's layers (`frontend`, but for `_outputs`)."""
    return [k for k in spec.frontend if not getattr(k, "before_head", False)]


def _outputs(spec: ModelSpec) -> list[Any]:
    """The model-level kinds that run on the output stack's last hidden states before the
    final norm and the head (`before_head`: DeepSeek-V4's hyper-head, which collapses its
    residual streams into one)."""
    return [k for k in spec.frontend if getattr(k, "before_head", False)]


def tower_params(spec: ModelSpec) -> list[Part]:
    """The towers' tensors (image encoders and their projectors): held with the model, read
    only by a forward over images, never by a text token's."""
    parts: list[Part] = []
    for kind in spec.towers:
        parts += prefixed(kind.slot, kind.params(spec.d_model))
    return parts


def token_params(spec: ModelSpec) -> list[Part]:
    """The tensors a forward over text tokens reads: the model's without the towers'."""
    return _params(spec, active=False, towers=False)


def non_embedding(parts: list[Part]) -> int:
    """N of 6ND: all parameters but token, position and token-type tables and an untied LM
    head (with its bias)."""
    return total(parts) - total(parts, EMBEDDING)


def mtp_params(spec: ModelSpec) -> list[Part]:
    """DeepSeek-V3's multi-token-prediction modules (outside the model's totals): per module
    two RMSNorms (of the hidden state and of the next token's embedding), a 2d → d projection,
    one layer of the last layer's kind and the norm before the shared output head, under the
    names of DeepSeek-V3's checkpoint (`shared_head.norm`; transformers' `post_norm`). The
    embedding and output head are shared with the model."""
    d = spec.d_model
    one = (spec.norm.params(d, "enorm") + spec.norm.params(d, "hnorm")
           + [Part("eh_proj.weight", 2 * d * d, LAYERS, (2 * d, d), ROW, matmul=True)]
           + layer_params(spec.mtp_layer, d) + spec.norm.params(d, "shared_head.norm"))
    return scaled(one, spec.mtp_layers, "mtp") if spec.mtp_layers else []


def trained_params(spec: ModelSpec) -> list[Part]:
    """Every parameter training updates: the model's, and its multi-token-prediction modules',
    which sit with the output head they share on the last pipeline stage (DeepSeek-AI 2024,
    "DeepSeek-V3 Technical Report", §3.2.1: DualPipe deploys the MTP modules and the main
    model's output head on the same stage)."""
    return model_params(spec) + [replace(p, stage=LAST) for p in mtp_params(spec)]


# -------------------------------------------------------------------------- forward FLOPs


def stack_flops(spec: ModelSpec, stack: str, w: Workload, elementwise: bool) -> list[Part]:
    parts: list[Part] = []
    for g in spec.groups(stack):
        parts += layer_flops(g.layer, spec.d_model, w, elementwise, g.count, stack)
    return merged(parts)


def head_flops(spec: ModelSpec, w: Workload) -> list[Part]:
    """The head on every output token: (T×d)·(d×V), tied or not; BERT's masked-LM head adds its
    dense d x d first; a pooler reads each sequence's first token."""
    d, tokens = spec.d_model, output_tokens(spec, w)
    e = spec.embed_dim or d
    parts = []
    if spec.head == "masked-lm":  # (T×d)·(d×d), or (T×d)·(d×E) in a factorised embedding
        parts.append(Part("head.transform",
                          2 * tokens * d * _head_width(spec), WEIGHTS, head=True))
    if spec.embed_dim is not None and not _factorised(spec):
        parts.append(Part("embed.project_out", 2 * tokens * d * e, WEIGHTS))  # (T×d)·(d×e)
    if spec.head == "bottleneck":  # (T×d)·(d×p) then (T×p)·(p×d)
        p = spec.head_width or d
        parts += [Part("head.linear1", 2 * tokens * d * p, WEIGHTS, head=True),
                  Part("head.linear2", 2 * tokens * p * d, WEIGHTS, head=True)]
    if spec.head != "none":
        h = _projection_input(spec, e)
        parts.append(Part("lm_head", 2 * tokens * h * spec.vocab_size, WEIGHTS,
                          head=True))  # (T×e)·(e×V)
    if spec.pooler:
        parts.append(Part("pooler", 2 * w.batch * d * d, WEIGHTS, head=True))
    return parts


def model_flops(spec: ModelSpec, w: Workload, elementwise: bool = False) -> list[Part]:
    """Whole-model forward FLOPs: every layer (summed over its stack), then the head."""
    parts: list[Part] = []
    per_norm = spec.norm.per_element
    if w.images:  # the vision towers on every image of the pass, before the text model
        for kind in spec.towers:
            parts += prefixed(kind.slot, kind.images_forward(spec.d_model, w.batch * w.images,
                                                             *w.image_size))
    if spec.embed_dim is not None:  # (T×e)·(e×d)
        parts.append(Part("embed.project_in", 2 * output_tokens(spec, w) * spec.embed_dim
                          * spec.d_model, WEIGHTS))
        if elementwise and spec.embed_proj_bias:
            parts.append(Part("embed.project_in.elementwise.bias",
                              output_tokens(spec, w) * spec.d_model, ELEMENTWISE))
    for stack in spec.stacks:
        tokens = w.batch * w.length(stack)
        if stack == "encoder":
            for kind in _inputs(spec):
                span = w.span("encoder", kind.slot)
                parts += prefixed(f"encoder.{kind.slot}", kind.forward(spec.d_model, span))
                if elementwise:
                    parts += prefixed(f"encoder.{kind.slot}",
                                      kind.elementwise(spec.d_model, span))
        if elementwise and spec.embedding_norm and per_norm:
            parts.append(Part(f"{_embed_norm_name(spec, stack)}.elementwise",
                              per_norm * tokens * _embed_norm_width(spec), ELEMENTWISE))
        if elementwise and "embedding" in spec.multipliers:  # a scalar times each embedding
            parts.append(Part("embed.elementwise.multiplier", tokens * spec.d_model,
                              ELEMENTWISE))
        parts += stack_flops(spec, stack, w, elementwise)
        if stack == spec.output_stack:
            span = w.span(stack, "hc_head")
            for kind in _outputs(spec):
                parts += prefixed(kind.slot, kind.forward(spec.d_model, span))
                if elementwise:
                    parts += prefixed(kind.slot, kind.elementwise(spec.d_model, span))
        if elementwise and spec.final_norm and per_norm:
            parts.append(Part(f"{stack}.final_norm.elementwise",
                              spec.final().per_element * tokens * spec.d_model, ELEMENTWISE))
    parts += head_flops(spec, w)
    if elementwise:
        parts += head_elementwise(spec, output_tokens(spec, w), w.batch)
    return parts


def recomputed_flops(spec: ModelSpec, w: Workload, recompute: str) -> int:
    """The forward matmul FLOPs Megatron-Core's recompute modules (`counting.recompute`) run
    again in the backward pass over workload `w`: each layer's parts that its modules re-run
    (core_attn: the attention family's scores and AV), layer by layer since a module applies to
    some layers only (mlp to dense layers, moe to routed ones); `op` (torchtitan's per-op
    checkpointing): the matmuls `recompute.op_reruns` names. 0 for none/selective/full."""
    if recompute == OP:
        extra = 0
        for g in spec.groups():
            parts = [p for p in layer_flops(g.layer, spec.d_model, w) if p.family == WEIGHTS]
            ffn = g.layer.ffn
            again = op_reruns((p.role for p in parts), ffn is not None and bool(ffn.routed))
            extra += g.count * sum(p.value for p, rerun in zip(parts, again) if rerun)
        return extra
    if not by_module(recompute):
        return 0
    mods = modules_of(recompute)
    extra = 0
    for g in spec.groups():
        rerun = reruns(g.layer, mods)
        for p in layer_flops(g.layer, spec.d_model, w):
            if rerun(p.name) or ("core_attn" in mods and p.family == ATTENTION):
                extra += g.count * p.value
    return extra


def mtp_flops(spec: ModelSpec, w: Workload) -> list[Part]:
    """Forward FLOPs of the multi-token-prediction modules: per module the 2d → d projection,
    its layer and the shared output head, on every token."""
    if not spec.mtp_layers:
        return []
    d, tokens = spec.d_model, output_tokens(spec, w)
    one = ([Part("eh_proj", 2 * tokens * 2 * d * d, WEIGHTS)]  # (T×2d)·(2d×d)
           + layer_flops(spec.mtp_layer, d, w)
           + [Part("lm_head", 2 * tokens * d * spec.vocab_size, WEIGHTS, head=True)])
    return scaled(one, spec.mtp_layers, "mtp")


def head_elementwise(spec: ModelSpec, tokens: int, sequences: int) -> list[Part]:
    """BERT's masked-LM head on `tokens` output tokens: the transform's bias, activation and
    norm, then the output bias over the vocabulary; its pooler on each sequence's first token:
    bias and tanh."""
    d, parts = spec.d_model, []
    if spec.head == "masked-lm":
        act = ACTIVATION_FLOPS[spec.head_activation]
        t = _head_width(spec)  # the transform is E wide in a factorised embedding
        if spec.head_bias:
            parts.append(Part("head.elementwise.bias", tokens * t, ELEMENTWISE))
        parts += [Part("head.elementwise.activation", tokens * t * act, ELEMENTWISE),
                  Part("head.elementwise.norm", tokens * t * spec.norm.per_element,
                       ELEMENTWISE)]
        if spec.lm_head_bias:
            parts.append(Part("lm_head.elementwise.bias", tokens * spec.vocab_size,
                              ELEMENTWISE))
    elif spec.head == "bottleneck":  # GELU after linear1 (p wide) and after linear2 (d)
        p = spec.head_width or d
        parts.append(Part("head.elementwise.activation",
                          tokens * (p + d) * ACTIVATION_FLOPS["gelu"], ELEMENTWISE))
    if spec.head != "masked-lm" and spec.lm_head_bias:
        parts.append(Part("lm_head.elementwise.bias", tokens * spec.vocab_size, ELEMENTWISE))
    if "logits" in spec.multipliers:  # the logits times (or over) a scalar
        parts.append(Part("lm_head.elementwise.multiplier", tokens * spec.vocab_size,
                          ELEMENTWISE))
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
    for kind in _outputs(spec):
        parts += prefixed(kind.slot, kind.decode(spec.d_model, batch, first, last))
    t, d = batch * steps, spec.d_model
    e = spec.embed_dim or d
    if spec.embed_dim is not None:  # (B×e)·(e×d) in, (B×d)·(d×e) out, per step
        parts = [Part("embed.project_in", 2 * t * e * d, WEIGHTS)] + merged(parts) + [
            Part("embed.project_out", 2 * t * d * e, WEIGHTS)]
        return parts + [Part("lm_head", 2 * t * e * spec.vocab_size, WEIGHTS, head=True)]
    return merged(parts) + [Part("lm_head", 2 * t * d * spec.vocab_size, WEIGHTS, head=True)]
