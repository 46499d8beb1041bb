"""The resolved model that counting reads: one `Layer` per layer, each a record of slots filled
by kinds (`flopcalc.kinds`).

A validated model config (`models.config`) becomes a `ModelSpec` through `build_spec`, which
derives each layer's kinds from the config's keys and checks what spans keys (a window needs
window layers, an encoder attends bidirectionally, ...). The kinds check their own invariants.

A model is a tuple of layers in forward order (encoder layers first). Most models repeat a few
kinds of layer; `ModelSpec.groups()` gathers identical layers so that counting works once per
kind of layer and multiplies by how many there are.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import field
from typing import Any, Optional

from ..records import dataclass
from ..kinds import attention_layers as attention
from ..kinds import mlp, registry
from ..kinds.multipliers import model_scales
from ..kinds.norm import Norm

STACKS = ("encoder", "decoder")
MAX_LAYERS = 100_000  # no model has more; more is a typo, and would cost time and memory
FFN_ONLY = ("mlp", "moe")  # layer_types entries of a layer with a feed-forward block only


@dataclass(frozen=True)
class Layer:
    """One layer: its token mixers (two or more run side by side on the same input, as
    Falcon-H1's attention and Mamba-2; none in a feed-forward-only layer), cross-attention
    (decoders of encoder-decoder models), a channel mixer (MLP or mixture of experts; none in a
    mixer-only layer) and its norms. `placement` is where the norms sit: `pre` (before each
    sublayer), `post` (after it) or `sandwich` (both); a `parallel` block feeds the mixer and
    the MLP the same input through `parallel_norms` norms (1 or 2). `tied` names the weight set
    the layer uses: layers with the same `tied` hold one set of tensors (ALBERT's shared
    layers), counted once, while each runs (`layer_weights`)."""

    stack: str
    mixers: tuple[Any, ...]
    ffn: Optional[Any]
    norm: Norm
    cross: Optional[Any] = None
    placement: str = "pre"
    parallel: bool = False
    parallel_norms: int = 1
    tied: str = ""

    def __post_init__(self) -> None:
        if not self.mixers and self.ffn is None:
            raise ValueError("a layer needs a token mixer or a feed-forward block")
        if self.parallel and (self.cross is not None or not self.mixers or self.ffn is None):
            raise ValueError("a parallel block runs a token mixer and an MLP side by side, "
                             "without cross-attention")
        if self.parallel and self.placement != "pre":
            raise ValueError("a parallel block normalises its input: norm_placement must be pre")
        if self.stack == "encoder" and not all(m.bidirectional for m in self.mixers):
            raise ValueError("encoder layers attend bidirectionally: a window or chunk applies "
                             "to decoder layers only")
        if self.stack == "decoder" and any(m.bidirectional for m in self.mixers):
            raise ValueError("decoder self-attention is causal")

    def slots(self) -> list[tuple[str, Any]]:
        """(name, kind) of every slot, in forward order: the mixers, cross-attention, the
        channel mixer."""
        out = [(m.slot, m) for m in self.mixers]
        if self.cross is not None:
            out.append(("cross_attn", self.cross))
        if self.ffn is not None:
            out.append((self.ffn.slot, self.ffn))
        return out

    def sublayers(self) -> list[tuple[str, list[tuple[str, Any]]]]:
        """The residual sublayers in forward order, each (name, its slots): parallel mixers
        share one input norm and one residual add."""
        out: list[tuple[str, list[tuple[str, Any]]]] = []
        if self.mixers:
            out.append((self.mixers[0].slot, [(m.slot, m) for m in self.mixers]))
        if self.cross is not None:
            out.append(("cross_attn", [("cross_attn", self.cross)]))
        if self.ffn is not None:
            out.append((self.ffn.slot, [(self.ffn.slot, self.ffn)]))
        return out

    def norms_around(self, sub: str) -> tuple[list[str], list[str]]:
        """Names of the norms before and after sublayer `sub`."""
        if self.parallel:
            if self.parallel_norms == 1:
                return (["norm"] if sub == self.sublayers()[0][0] else []), []
            return [f"{sub}_norm"], []
        if self.placement == "sandwich":
            return [f"{sub}_norm"], [f"{sub}_post_norm"]
        return [f"{sub}_norm"], []

    def norm_count(self) -> dict[str, int]:
        """How many d-wide norms each sublayer has (a parallel block's shared norm is the
        first sublayer's)."""
        return {sub: sum(len(side) for side in self.norms_around(sub))
                for sub, _ in self.sublayers()}

    def shares_input(self, sub: str) -> bool:
        """Whether sublayer `sub` reads the same tensor as the one before it (the MLP of a
        parallel block with one norm, or without norms)."""
        return self.parallel and sub != self.sublayers()[0][0] and (
            self.parallel_norms == 1 or not self.norm.present)

    @property
    def routed(self) -> bool:
        return self.ffn is not None and self.ffn.routed

    def describe(self) -> str:
        """A short name for this kind of layer: 'sliding window 4,096, MoE 8 experts top-2'."""
        words = [" + ".join(m.describe() for m in self.mixers)] if self.mixers else []
        if self.cross is not None:
            words.append("cross-attention")
        if self.ffn is not None:
            words.append(self.ffn.describe())
        return ", ".join(words)


@dataclass(frozen=True)
class Group:
    """`count` identical layers of one stack (`first` is the index of the first one in the
    stack)."""

    stack: str
    layer: Layer
    count: int
    first: int


@dataclass(frozen=True)
class ModelSpec:
    """A whole model: its layers, embeddings, positions, head and descriptive fields.

    `norm` is the model's norm (final norms, embedding norm); `final_norm` puts one at the end of
    each stack. `relative_buckets` is T5's learned relative position bias (buckets x
    `relative_heads`, in the first layer of each stack). Encoder-only models may carry BERT's
    token-type table (`token_types`), an embedding norm, a masked-LM head (`head: masked-lm`:
    dense d x d, its `head_activation`, a norm, then the vocabulary projection with a bias; or
    `head: bottleneck`, UltraBERT's d → `head_width` → d, bias-free, GELU after each) and
    a pooler (dense d x d on the first token). `position_offset` adds rows to a learned
    position table (OPT's 2); `embed_dim` is the width of the token table and the head when it
    is not d (OPT's word_embed_proj_dim: project_in e → d after the embedding, project_out
    d → e before the head); `lm_head_bias` is how many vocabulary-sized bias vectors the head
    holds (a masked-LM head 1, an untied BERT 2, phi's LM head 1). An encoder-only model's
    `embed_dim` is a factorised embedding (ALBERT, ELECTRA, DeBERTa-v2): token, position and
    token-type tables E wide, projected E → d (`embed_proj_bias`), the embedding norm E wide
    before the projection or d wide after it (`embed_norm_width`), and the masked-LM head's
    transform d → E, its norm E wide and the vocabulary projection E → V (`head_bias`: the
    transform's bias; `head_width`: that transform's width and the untied projection's input
    when not E, RemBERT's). Per-stack sizes of an encoder-decoder: the encoder's position table
    (`encoder_max_seq_len`) and token table (`encoder_vocab_size`, when not shared);
    `unused_token_tables` are V × d tables transformers holds but never reads (an untied BART's
    `shared`); `extra_token_rows`: rows of the token table past `vocab_size` that inputs read and
    the untied head does not predict (Molmo 2's additional_vocab_size); `relative_bias_per_layer`:
    T5's bias in every self-attention layer (UMT5).
    `frontend` holds the kinds that turn the raw input into the encoder's sequence (Whisper's
    convolutions over mel frames), counted before the encoder's layers. `towers` are image
    encoders with their projectors (`kinds.vision`): their tensors count with the model, their
    forward only on the images a command is given. `mtp_layers` are DeepSeek-V3's
    multi-token-prediction modules, each a copy of the last layer's kind plus two norms and a
    2d → d projection; they train with the model but do not serve.
    """

    architecture: str
    d_model: int
    vocab_size: int
    layers: tuple[Layer, ...]
    norm: Norm
    positions: str
    final_norm: bool = True
    final_norm_bias: Optional[bool] = None  # the final LayerNorm's bias where not the norm's
    max_seq_len: Optional[int] = None
    default_seq: Optional[int] = None
    tie_embeddings: bool = True
    share_encoder_embeddings: bool = True
    position_offset: int = 0
    embed_dim: Optional[int] = None
    lm_head_bias: int = 0
    multipliers: tuple[str, ...] = ()  # scalar multiplies of the embeddings, the logits (µP)
    head_bias: bool = True
    head_width: Optional[int] = None
    embed_proj_bias: bool = False
    embed_norm_width: str = "embed"
    encoder_max_seq_len: Optional[int] = None
    encoder_vocab_size: Optional[int] = None
    unused_token_tables: int = 0
    extra_token_rows: int = 0
    relative_bias_per_layer: bool = False
    frontend: tuple[Any, ...] = ()
    towers: tuple[Any, ...] = ()  # image encoders and their projectors (kinds.vision)
    relative_buckets: Optional[int] = None
    relative_heads: int = 0
    token_types: int = 0
    embedding_norm: bool = False
    head: str = "lm"
    head_activation: str = "gelu"
    pooler: bool = False
    mtp_layers: int = 0
    title: str = ""
    source: str = ""
    notes: str = ""
    training_tokens: Optional[int] = None
    training_tokens_source: str = ""
    _groups: tuple[Group, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError("a model needs at least one layer")
        runs = [stack for stack, _ in itertools.groupby(x.stack for x in self.layers)]
        wanted = {"decoder-only": ["decoder"], "encoder-only": ["encoder"],
                  "encoder-decoder": ["encoder", "decoder"]}[self.architecture]
        if runs != wanted:
            raise ValueError(f"a {self.architecture} model needs layers of "
                             f"{' and '.join(wanted)} stacks, in that order")
        for x in {id(x): x for x in self.layers}.values():
            if (x.cross is not None) != (self.architecture == "encoder-decoder"
                                         and x.stack == "decoder"):
                raise ValueError("cross-attention belongs to the decoder of an encoder-decoder "
                                 "model")
        if self.positions == "learned" and self.max_seq_len is None:
            raise ValueError("learned positions need max_seq_len (the size of the position "
                             "table)")
        if (self.positions == "relative") != (self.relative_buckets is not None):
            raise ValueError("relative positions need relative_buckets (and only they do)")
        # a masked-LM head (dense, activation, norm, then the vocabulary) also ends
        # ModernBERT-decoder, a decoder-only model
        if self.architecture != "encoder-only" and (
                self.token_types or self.pooler
                or (self.head == "masked-lm" and self.architecture != "decoder-only")):
            raise ValueError("token_types and pooler belong to encoder-only models, a masked-lm "
                             "head to encoder-only and decoder-only ones")
        if self.mtp_layers and self.architecture != "decoder-only":
            raise ValueError("multi-token prediction (mtp_layers) is for decoder-only models")
        if self.head == "none" and not self.tie_embeddings:
            raise ValueError("a model without a head has no LM head to untie")
        if self.position_offset and self.positions != "learned":
            raise ValueError("position_offset applies to positions: learned only")
        if self.embed_dim is not None and self.architecture == "encoder-decoder":
            raise ValueError("embed_dim (an embedding narrower or wider than d_model) is for "
                             "decoder-only and encoder-only models")
        if (self.embed_proj_bias or self.embed_norm_width != "embed") and not (
                self.embed_dim is not None and self.is_encoder_only):
            raise ValueError("embed_proj_bias and embed_norm_width describe a factorised "
                             "embedding: an encoder-only model with embed_dim")
        if self.head == "none" and self.lm_head_bias:
            raise ValueError("a model without a head has no LM head bias")
        rembert = self.head == "masked-lm" and not self.tie_embeddings
        if (self.head == "bottleneck") != (self.head_width is not None) and not rembert:
            raise ValueError("head_width is a bottleneck head's inner width (head: bottleneck "
                             "needs it) or a masked-LM head's wider or narrower than the "
                             "embedding (RemBERT's: head: masked-lm, tie_embeddings: false)")
        if not self.head_bias and self.head != "masked-lm":
            raise ValueError("head_bias: false applies to head: masked-lm (its transform)")
        if (self.encoder_max_seq_len is not None or self.encoder_vocab_size is not None
                or self.unused_token_tables) and not self.is_encoder_decoder:
            raise ValueError("encoder_max_seq_len, encoder_vocab_size and unused_token_tables "
                             "are for encoder-decoder models")
        if self.extra_token_rows and (self.tie_embeddings or self.is_encoder_decoder):
            raise ValueError("extra_token_rows (input-only rows of the token table, Molmo 2's "
                             "additional_vocab_size) needs a decoder with tie_embeddings: false")
        if self.encoder_max_seq_len is not None and self.positions != "learned":
            raise ValueError("encoder_max_seq_len sizes a learned position table: positions: "
                             "learned only")
        if self.encoder_vocab_size is not None and self.share_encoder_embeddings:
            raise ValueError("encoder_vocab_size is the encoder's own token table: set "
                             "share_encoder_embeddings: false")
        if self.relative_bias_per_layer and self.positions != "relative":
            raise ValueError("relative_bias_per_layer applies to positions: relative only")
        if self.towers and self.architecture != "decoder-only":
            raise ValueError("a vision tower feeds a decoder-only model's sequence")
        if any(f.slot == "frontend" for f in self.frontend) and \
                self.architecture != "encoder-decoder":
            raise ValueError("an input front end (audio_frontend) feeds an encoder-decoder's "
                             "encoder")
        if any(f.slot == "input_extras" for f in self.frontend) and \
                self.architecture != "encoder-only":
            raise ValueError("input_extras (embedding tables and an input projection beside "
                             "BERT's) belong to encoder-only models")
        object.__setattr__(self, "_groups", _group(self.layers))

    # ---------------------------------------------------------------------------- structure

    def groups(self, stack: Optional[str] = None) -> tuple[Group, ...]:
        """Identical layers gathered, in order of first appearance (per stack if given)."""
        return tuple(g for g in self._groups if stack is None or g.stack == stack)

    def final(self) -> Norm:
        """The norm at the end of each stack: the model's, with `final_norm_bias` where given
        (ESM C's final LayerNorm has no bias, its layers' have)."""
        if self.final_norm_bias is None:
            return self.norm
        return dataclasses.replace(self.norm, bias=self.final_norm_bias)

    @property
    def stacks(self) -> tuple[str, ...]:
        return tuple(s for s in STACKS if self.groups(s))

    def n_layers(self, stack: Optional[str] = None) -> int:
        return sum(g.count for g in self.groups(stack))

    @property
    def is_encoder_decoder(self) -> bool:
        return self.architecture == "encoder-decoder"

    @property
    def is_encoder_only(self) -> bool:
        return self.architecture == "encoder-only"

    @property
    def output_stack(self) -> str:
        """The stack whose tokens reach the head: the decoder, or an encoder-only model's
        encoder."""
        return "encoder" if self.is_encoder_only else "decoder"

    @property
    def is_moe(self) -> bool:
        return any(g.layer.routed for g in self._groups)

    @property
    def mtp_layer(self) -> Layer:
        """The layer inside each multi-token-prediction module: the same kind as the last."""
        return self.layers[-1]


def _group(layers: tuple[Layer, ...]) -> tuple[Group, ...]:
    """Identical layers counted together. Layers are usually shared objects (`build_spec` makes
    one per kind), so they are first counted by identity, cheaply even for a million layers,
    then merged by value."""
    by_id: dict[int, list] = {}  # id → [layer, count, first index in its stack]
    index = dict.fromkeys(STACKS, 0)
    for layer in layers:
        seen = by_id.get(id(layer))
        if seen is None:
            by_id[id(layer)] = [layer, 1, index[layer.stack]]
        else:
            seen[1] += 1
        index[layer.stack] += 1
    groups: dict[Layer, list] = {}
    for layer, count, first in by_id.values():
        if layer in groups:
            groups[layer][1] += count
            groups[layer][2] = min(groups[layer][2], first)
        else:
            groups[layer] = [layer, count, first]
    return tuple(Group(layer.stack, layer, count, first) for layer, count, first in
                 sorted(groups.values(), key=lambda g: (STACKS.index(g[0].stack), g[2])))


# ------------------------------------------------------------------------------- building


def layer_names(cfg: Any, n_layers: int) -> list[str]:
    """Each decoder layer's `layer_types` entry: from `layer_types` (one entry per layer, or a
    pattern whose length divides the layer count), `global_every` (every n-th layer full, the
    others local) or `sliding_window`/`attention_chunk` alone (every layer local)."""
    window, chunk = cfg.sliding_window, cfg.attention_chunk
    local = "window" if window is not None else "chunked" if chunk is not None else None
    types, every = cfg.layer_types, cfg.global_every
    if types is not None and every is not None:
        raise ValueError("give layer_types or global_every, not both")
    if types is not None:
        if not types or n_layers % len(types):
            raise ValueError(f"layer_types has {len(types)} entries, which neither match nor "
                             f"divide the {n_layers} layers; list every layer or a repeating "
                             "pattern")
        names = list(types) * (n_layers // len(types))
    elif every is not None:
        if local is None:
            raise ValueError("global_every needs sliding_window or attention_chunk (the local "
                             "layers' size)")
        names = ["full" if (i + 1) % every == 0 else local for i in range(n_layers)]
    else:
        names = [local or "full"] * n_layers
    known = registry.mixer_names()
    for name in set(names):
        parts = name.split("+")
        if name not in FFN_ONLY and not all(registry.builder(p) is not None for p in parts):
            raise ValueError(f"layer_types entries are {', '.join(known)}, {', '.join(FFN_ONLY)} "
                             f"(a feed-forward-only layer) or mixers joined by + (side by side; "
                             f"a weight-shared block numbered name@N, as shared@1), got {name!r}")
    used = {p for name in names for p in name.split("+")}
    # a window kind's variants are named window_* (window_gate_bias)
    if window is not None and not any(p == "window" or p.startswith("window_") for p in used):
        raise ValueError("sliding_window is set but no layer is a window layer")
    if chunk is not None and "chunked" not in used:
        raise ValueError("attention_chunk is set but no layer is chunked")
    return names


def _mixers(cfg: Any, name: str) -> tuple[Any, ...]:
    if name in FFN_ONLY:
        return ()
    built = []
    for part in name.split("+"):
        build = registry.builder(part)
        assert build is not None  # layer_names checked it
        built.append(build(cfg, part))
    return tuple(built)


def _moe() -> Any:
    """The mixture-of-experts kind, imported only by models that have one."""
    from ..kinds import moe

    return moe


def build_spec(cfg: Any) -> ModelSpec:
    """The `ModelSpec` of a validated model config (`models.config`). Raises ValueError."""
    present = [name for name in registry.block_names() if getattr(cfg, name, None) is not None]
    arch = cfg.architecture
    n_dec, n_enc = cfg.n_layers, cfg.n_encoder_layers
    for name, n in (("n_layers", n_dec), ("n_encoder_layers", n_enc)):
        if n > MAX_LAYERS:
            raise ValueError(f"{name}={n!r} is more than {MAX_LAYERS:,} layers; check the number")
    if arch == "encoder-decoder" and n_enc == 0:
        raise ValueError("an encoder-decoder model needs n_encoder_layers >= 1")
    if arch != "encoder-decoder" and cfg.encoder_layer_types is not None:
        raise ValueError("encoder_layer_types names an encoder-decoder's encoder mixers; an "
                         "encoder-only model's are its layer_types")
    if arch != "encoder-decoder" and n_enc:
        raise ValueError("n_encoder_layers is only for architecture: encoder-decoder; remove it "
                         "or set the architecture")
    norm = attention.model_norm(cfg)
    local = any(getattr(cfg, k) is not None for k in
                ("sliding_window", "attention_chunk", "global_every"))
    if local and arch == "encoder-only":
        raise ValueError("encoder layers attend bidirectionally: sliding_window, "
                         "attention_chunk and global_every apply to decoders (an encoder's "
                         "layer_types name bidirectional mixers: bidirectional, local, ...)")
    moe_cfg = getattr(cfg, "moe", None)
    if moe_cfg is not None and arch == "encoder-only":
        raise ValueError("moe layers are supported in decoder-only and encoder-decoder models")
    if moe_cfg is not None and arch == "encoder-decoder" and moe_cfg.layers is None:
        raise ValueError("an encoder-decoder's moe block lists its routed layers by index: "
                         "moe.layers (decoder) and moe.encoder_layers")
    if moe_cfg is not None and arch != "encoder-decoder" and moe_cfg.encoder_layers:
        raise ValueError("moe.encoder_layers is an encoder-decoder's; remove it")
    if cfg.parallel_norms is not None and not cfg.parallel_block:
        raise ValueError("parallel_norms applies to parallel_block: true only")
    layout = dict(placement=cfg.norm_placement, parallel=cfg.parallel_block,
                  parallel_norms=cfg.parallel_norms or 1)
    dense = mlp.from_config(cfg, cfg.d_ff) if cfg.d_ff is not None else None
    if dense is not None and cfg.sub_norms:  # BitNet's ffn_sub_norm before down
        from ..kinds.sub_norms import with_sub_norm

        dense = with_sub_norm(dense, attention.model_norm(cfg))
    if dense is not None and getattr(cfg, "language_adapters", None) is not None:
        from ..kinds.language_adapters import with_adapters  # X-MOD's, after every MLP

        dense = with_adapters(dense, cfg, norm)
    layers: list[Layer] = []
    if arch != "decoder-only":
        # an encoder-only model's layer_types may name a mixer that holds its own MLP
        # (SqueezeBERT's grouped convolutions); every other encoder layer has a dense one
        if dense is None and not (arch == "encoder-only" and cfg.layer_types is not None):
            raise ValueError("d_ff is required: encoder layers have an MLP")
        n = n_dec if arch == "encoder-only" else n_enc
        layers += _encoder(cfg, n, dense, norm, layout)
    if arch != "encoder-only":
        own = registry.ffns(present)
        layers += _decoder(cfg, n_dec, dense, norm, layout, own[0] if own else None)
    layers = _weight_sets(cfg, layers)
    return ModelSpec(
        architecture=arch, d_model=cfg.d_model, vocab_size=cfg.vocab_size,
        layers=tuple(layers), norm=norm, positions=cfg.positions,
        final_norm=cfg.final_norm, final_norm_bias=cfg.final_norm_bias,
        max_seq_len=cfg.max_seq_len,
        default_seq=cfg.default_seq, tie_embeddings=cfg.tie_embeddings,
        share_encoder_embeddings=cfg.share_encoder_embeddings,
        position_offset=cfg.position_offset,
        # a factorised encoder embedding keeps its projection even at E = d (ALBERT's)
        embed_dim=cfg.embed_dim if cfg.embed_dim != cfg.d_model or arch == "encoder-only"
        else None,
        head_bias=cfg.head_bias, head_width=cfg.head_width, embed_proj_bias=cfg.embed_proj_bias,
        embed_norm_width=cfg.embed_norm_width, encoder_max_seq_len=cfg.encoder_max_seq_len,
        encoder_vocab_size=cfg.encoder_vocab_size,
        unused_token_tables=cfg.unused_token_tables, extra_token_rows=cfg.extra_token_rows,
        relative_bias_per_layer=cfg.relative_bias_per_layer,
        frontend=tuple(f for make in registry.frontends(present) if (f := make(cfg)) is not None),
        towers=tuple(t for make in registry.towers(present) if (t := make(cfg)) is not None),
        lm_head_bias=(cfg.lm_head_bias if cfg.lm_head_bias is not None
                      else 1 if cfg.head == "masked-lm" else 0),
        multipliers=model_scales(cfg),
        relative_buckets=cfg.relative_buckets,
        relative_heads=(cfg.n_heads or 0) if cfg.relative_buckets is not None else 0,
        token_types=cfg.token_types, embedding_norm=cfg.embedding_norm, head=cfg.head,
        head_activation=cfg.activation, pooler=cfg.pooler, mtp_layers=cfg.mtp_layers,
        title=cfg.title, source=cfg.source, notes=cfg.notes,
        training_tokens=cfg.training_tokens,
        training_tokens_source=cfg.training_tokens_source)


def _encoder(cfg: Any, n: int, dense: Any, norm: Norm, layout: dict) -> list[Layer]:
    """The encoder's layers: bidirectional attention and the dense MLP (an encoder-decoder's
    encoder with its own `encoder_n_heads` and `encoder_d_ff` where given), or an encoder-only
    model's `layer_types` (an encoder-decoder's `encoder_layer_types`), each a bidirectional
    mixer (`bidirectional`, ModernBERT's `local`, DeBERTa's `deberta`, LongT5's
    `block_local`, ...)."""
    own = cfg.encoder_n_heads is not None or cfg.encoder_d_ff is not None
    if own and cfg.architecture != "encoder-decoder":
        raise ValueError("encoder_n_heads and encoder_d_ff are an encoder-decoder's encoder "
                         "sizes; an encoder-only model's are n_heads and d_ff")
    if own:
        cfg = dataclasses.replace(
            cfg, n_heads=cfg.encoder_n_heads or cfg.n_heads, d_ff=cfg.encoder_d_ff or cfg.d_ff,
            n_kv_heads=None if cfg.encoder_n_heads else cfg.n_kv_heads)
        dense = mlp.from_config(cfg, cfg.d_ff)
    if cfg.encoder_layer_types is not None:  # the encoder's mixers, without the decoder's
        cfg = dataclasses.replace(cfg, layer_types=cfg.encoder_layer_types,
                                  sliding_window=None, attention_chunk=None, global_every=None)
    if cfg.layer_types is not None and (cfg.architecture == "encoder-only"
                                        or cfg.encoder_layer_types is not None):
        made: dict[str, Layer] = {}
        names = layer_names(cfg, n)
        for name in names:
            if name not in made:
                mixers = _mixers(cfg, name)
                own_mlp = bool(mixers) and all(getattr(m, "holds_mlp", False) for m in mixers)
                if dense is None and not own_mlp:
                    raise ValueError("d_ff is required: encoder layers have an MLP (only a "
                                     "mixer that holds its own, as squeezebert, goes without)")
                # an encoder-decoder's d_ff is its decoder's: a mixer holding its own MLP
                # (LED's Longformer layers) takes the encoder layer's place whole
                made[name] = Layer("encoder", mixers, None if own_mlp else dense, norm,
                                   **layout)
        return [made[name] for name in names]
    plain = Layer("encoder", (attention.build(cfg, "bidirectional"),), dense, norm, **layout)
    moe_cfg = getattr(cfg, "moe", None)
    if moe_cfg is not None and moe_cfg.encoder_layers:  # Switch Transformers' sparse layers
        routed = dataclasses.replace(plain, ffn=_moe().from_config(cfg))
        return [routed if r else plain for r in _moe().encoder_routed_layers(moe_cfg, n)]
    return [plain] * n


def _weight_sets(cfg: Any, layers: list[Layer]) -> list[Layer]:
    """Layers tagged with their `layer_weights` entry (one per layer, or a pattern whose length
    divides the layers): layers of one number share their tensors."""
    weights = cfg.layer_weights
    if weights is None:
        return layers
    if cfg.architecture == "encoder-decoder":
        raise ValueError("layer_weights applies to one stack: a decoder-only or encoder-only "
                         "model")
    n = len(layers)
    if not weights or n % len(weights):
        raise ValueError(f"layer_weights has {len(weights)} entries, which neither match nor "
                         f"divide the {n} layers; list every layer or a repeating pattern")
    made: dict[tuple[int, int], Layer] = {}
    kinds: dict[int, Layer] = {}
    out = []
    for layer, w in zip(layers, list(weights) * (n // len(weights))):
        if kinds.setdefault(w, layer) != layer:
            raise ValueError(f"layer_weights: the layers sharing weight set {w} must be of one "
                             "kind")
        if (id(layer), w) not in made:
            made[id(layer), w] = dataclasses.replace(layer, tied=f"weights{w}")
        out.append(made[id(layer), w])
    return out


def _decoder(cfg: Any, n: int, dense: Optional[Any], norm: Norm, layout: dict,
             own_ffn: Optional[Any] = None) -> list[Layer]:
    """The decoder's layers, one shared object per kind of layer; `own_ffn(cfg, name)`, a
    kind's feed-forward block for a layer of type `name`, in place of the MLP or mixture."""
    names = layer_names(cfg, n)
    moe_cfg = getattr(cfg, "moe", None)
    routed_ffn = _moe().from_config(cfg) if moe_cfg is not None else None
    separate = any(name in FFN_ONLY for name in names)  # mixers and FFNs in layers of their own
    if separate:
        routed = [name == "moe" for name in names]
        if any(routed) and routed_ffn is None:
            raise ValueError("moe layers need a moe block (experts, top_k, d_ff)")
    else:
        routed = _moe().routed_layers(moe_cfg, n) if routed_ffn is not None else [False] * n
    cross = attention.build(cfg, "bidirectional") if cfg.architecture == "encoder-decoder" \
        else None
    made: dict[tuple[str, bool], Layer] = {}
    out = []
    for name, is_routed in zip(names, routed):
        if (name, is_routed) not in made:
            mixers = _mixers(cfg, name)
            ffn = None if separate and mixers else routed_ffn if is_routed else dense
            if own_ffn is not None:
                ffn = own_ffn(cfg, name)
            if ffn is None and not mixers:
                raise ValueError("mlp layers need d_ff (the MLP's width)")
            if ffn is None and not separate and any(m.slot == "attn" for m in mixers):
                raise ValueError("missing key 'd_ff' (required: attention layers have an MLP; "
                                 "only recurrent mixers may go without one)")
            if ffn is None and not separate and moe_cfg is not None:
                raise ValueError("the dense layers of this mixture of experts need d_ff")
            made[name, is_routed] = Layer("decoder", mixers, ffn, norm, cross=cross, **layout)
        out.append(made[name, is_routed])
    return out
