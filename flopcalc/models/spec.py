"""The resolved model that counting reads: plain frozen dataclasses, one `Layer` per layer.

`models.schema.ModelConfig` (pydantic) checks what users write; its `resolve()` turns a valid
config into a `ModelSpec` with `build_spec`. Every dataclass here checks its own invariants in
`__post_init__` (types, allowed values, divisibility, cross-field rules), so no path into the
counting, the validation cache included, can hand it an impossible model: a bad value raises
`ValueError` wherever it comes from. Keeping pydantic out of these types lets a run whose
config validated before skip pydantic's import (see `cache.py`).

A model is a tuple of layers in forward order (encoder layers first). Most models repeat one
or two kinds of layer; `ModelSpec.groups()` gathers identical layers so that counting works
once per kind of layer and multiplies by how many there are.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Optional, Union

STACKS = ("encoder", "decoder")
ARCHITECTURES = ("decoder-only", "encoder-decoder", "encoder-only")
MASKS = ("causal", "bidirectional", "window", "chunked")
NORMS = ("layernorm", "rmsnorm", "none")
PLACEMENTS = ("pre", "post", "sandwich")
ACTIVATIONS = ("relu", "gelu", "silu")
QK_NORMS = ("none", "per_head", "all_heads")
POSITIONS = ("learned", "sinusoidal", "rotary", "relative", "none")
HEADS = ("lm", "masked-lm", "none")
MAX_LAYERS = 100_000  # no model has more; more is a typo, and would cost time and memory


def _int(owner: object, name: str, minimum: int = 1) -> None:
    value = getattr(owner, name)
    if type(value) is not int or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _opt_int(owner: object, name: str, minimum: int = 1) -> None:
    if getattr(owner, name) is not None:
        _int(owner, name, minimum)


def _bool(owner: object, *names: str) -> None:
    for name in names:
        if type(getattr(owner, name)) is not bool:
            raise ValueError(f"{name} must be true or false, got {getattr(owner, name)!r}")


def _choice(owner: object, name: str, choices: tuple[str, ...]) -> None:
    value = getattr(owner, name)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def _str(owner: object, *names: str) -> None:
    for name in names:
        if type(getattr(owner, name)) is not str:
            raise ValueError(f"{name} must be text")


def _type(owner: object, name: str, kind: Any, optional: bool = False) -> None:
    value = getattr(owner, name)
    if not (isinstance(value, kind) or (optional and value is None)):
        raise ValueError(f"{name} is malformed")


@dataclass(frozen=True)
class Norm:
    """A normalisation: LayerNorm (gain, and a bias unless `bias` is false), RMSNorm (gain) or
    none."""

    kind: str
    bias: bool = True

    def __post_init__(self) -> None:
        _choice(self, "kind", NORMS)
        _bool(self, "bias")

    @property
    def present(self) -> bool:
        return self.kind != "none"


@dataclass(frozen=True)
class Mask:
    """Which keys a query may see. `causal`: every earlier key and itself; `bidirectional`:
    every key (encoders); `window`: the `size` most recent keys, itself included (key j is
    visible from query i when 0 <= i - j < size); `chunked`: the keys of its own block of
    `size` tokens, up to itself."""

    kind: str
    size: Optional[int] = None

    def __post_init__(self) -> None:
        _choice(self, "kind", MASKS)
        if self.kind in ("window", "chunked"):
            _int(self, "size")
        elif self.size is not None:
            raise ValueError(f"a {self.kind} mask has no size")

    @property
    def local(self) -> bool:
        """A query sees a bounded number of keys, however long the sequence."""
        return self.kind in ("window", "chunked")

    def describe(self) -> str:
        if self.kind == "window":
            return f"sliding window {self.size:,}"
        if self.kind == "chunked":
            return f"chunked {self.size:,}"
        return {"causal": "full causal", "bidirectional": "bidirectional"}[self.kind]


@dataclass(frozen=True)
class Latent:
    """Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-`q_rank` bottleneck
    (or projected directly when None), keys and values decompressed per head from a shared
    latent of `kv_rank` values, plus one rotary key of `rope_dim` shared by every head."""

    q_rank: Optional[int]
    kv_rank: int
    rope_dim: int

    def __post_init__(self) -> None:
        _opt_int(self, "q_rank")
        _int(self, "kv_rank")
        _int(self, "rope_dim")


@dataclass(frozen=True)
class Attention:
    """One attention sublayer. Per head, queries and keys are `qk_dim` wide and values
    `v_dim` wide; `kv_heads` key/value heads serve `heads` query heads (GQA/MQA)."""

    heads: int
    kv_heads: int
    qk_dim: int
    v_dim: int
    mask: Mask
    qkv_bias: bool = False
    out_bias: bool = False
    qk_norm: str = "none"
    sinks: bool = False
    latent: Optional[Latent] = None

    def __post_init__(self) -> None:
        for name in ("heads", "kv_heads", "qk_dim", "v_dim"):
            _int(self, name)
        _type(self, "mask", Mask)
        _bool(self, "qkv_bias", "out_bias", "sinks")
        _choice(self, "qk_norm", QK_NORMS)
        _type(self, "latent", Latent, optional=True)
        if self.heads % self.kv_heads:
            raise ValueError(f"n_kv_heads={self.kv_heads} must divide n_heads={self.heads} "
                             "(each KV head serves a whole group of query heads)")
        if self.latent is not None:
            if self.kv_heads != self.heads:
                raise ValueError("latent attention decompresses keys and values for every "
                                 "head: n_kv_heads must equal n_heads")
            if self.qk_dim <= self.latent.rope_dim:
                raise ValueError("latent attention: qk_rope_head_dim must be smaller than the "
                                 "query/key head width (qk_nope_head_dim + qk_rope_head_dim)")

    @property
    def d_q(self) -> int:
        """Width of all query heads together (h·d_qk)."""
        return self.heads * self.qk_dim

    @property
    def d_k(self) -> int:
        """Width of all key heads together (h_kv·d_qk)."""
        return self.kv_heads * self.qk_dim

    @property
    def d_v(self) -> int:
        """Width of all value heads together (h_kv·d_v)."""
        return self.kv_heads * self.v_dim

    @property
    def d_o(self) -> int:
        """Width of the attention output before its projection (h·d_v)."""
        return self.heads * self.v_dim


@dataclass(frozen=True)
class Mlp:
    """A feed-forward block: plain (up, activation, down) or gated (gate and up, their
    product, down: SwiGLU/GeGLU), `d_ff` wide."""

    gated: bool
    d_ff: int
    activation: str
    bias: bool = False

    def __post_init__(self) -> None:
        _bool(self, "gated", "bias")
        _int(self, "d_ff")
        _choice(self, "activation", ACTIVATIONS)


@dataclass(frozen=True)
class Moe:
    """A mixture of experts: a router d → `experts`, `top_k` routed experts per token, and
    `shared` (when given) an MLP every token uses, `shared_count` experts fused into one as
    Hugging Face builds them; `shared_gate` is Qwen2-MoE's sigmoid gate d → 1 on it."""

    experts: int
    top_k: int
    expert: Mlp
    shared: Optional[Mlp] = None
    shared_count: int = 0
    shared_gate: bool = False
    router_bias: bool = False

    def __post_init__(self) -> None:
        _int(self, "experts")
        _int(self, "top_k")
        _int(self, "shared_count", 0)
        _type(self, "expert", Mlp)
        _type(self, "shared", Mlp, optional=True)
        _bool(self, "shared_gate", "router_bias")
        if self.top_k > self.experts:
            raise ValueError(f"moe.top_k={self.top_k} must not exceed moe.experts="
                             f"{self.experts}")
        if (self.shared is None) != (self.shared_count == 0):
            raise ValueError("moe: shared experts need both a count and a width")
        if self.shared_gate and self.shared is None:
            raise ValueError("moe.shared_gate needs shared experts")


@dataclass(frozen=True)
class Layer:
    """One transformer layer: self-attention, cross-attention (decoders of encoder-decoder
    models), an MLP or a mixture of experts, and its norms. `placement` is where the norms
    sit: `pre` (before each sublayer), `post` (after it) or `sandwich` (both); a `parallel`
    block feeds attention and MLP the same input through `parallel_norms` norms (1 or 2)."""

    stack: str
    attention: Attention
    mlp: Union[Mlp, Moe]
    norm: Norm
    cross: Optional[Attention] = None
    placement: str = "pre"
    parallel: bool = False
    parallel_norms: int = 1

    def __post_init__(self) -> None:
        _choice(self, "stack", STACKS)
        _type(self, "attention", Attention)
        _type(self, "cross", Attention, optional=True)
        _type(self, "mlp", (Mlp, Moe))
        _type(self, "norm", Norm)
        _choice(self, "placement", PLACEMENTS)
        _bool(self, "parallel")
        if self.parallel_norms not in (1, 2) or type(self.parallel_norms) is not int:
            raise ValueError(f"parallel_norms must be 1 or 2, got {self.parallel_norms!r}")
        if self.parallel and self.cross is not None:
            raise ValueError("a parallel block has no cross-attention")
        if self.parallel and self.placement != "pre":
            raise ValueError("a parallel block normalises its input: norm_placement must be pre")
        if self.stack == "encoder" and self.attention.mask.kind != "bidirectional":
            raise ValueError("encoder layers attend bidirectionally: a window or chunk applies "
                             "to decoder layers only")
        if self.stack == "decoder" and self.attention.mask.kind == "bidirectional":
            raise ValueError("decoder self-attention is causal")

    @property
    def is_moe(self) -> bool:
        return isinstance(self.mlp, Moe)

    def describe(self) -> str:
        """A short name for this kind of layer: 'sliding window 4,096, MoE 8 experts top-2'."""
        words = [self.attention.mask.describe()]
        if self.attention.latent is not None:
            words[0] = f"latent attention, {words[0]}"
        if self.cross is not None:
            words.append("cross-attention")
        if isinstance(self.mlp, Moe):
            shared = f" + {self.mlp.shared_count} shared" if self.mlp.shared else ""
            words.append(f"MoE {self.mlp.experts} experts top-{self.mlp.top_k}{shared}")
        else:
            words.append(f"{'gated' if self.mlp.gated else 'plain'} MLP {self.mlp.d_ff:,}")
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
    each stack. `relative_buckets` is T5's learned relative position bias (buckets x heads, in
    the first layer of each stack). Encoder-only models may carry BERT's token-type table
    (`token_types`), an embedding norm, a masked-LM head (`head: masked-lm`: dense d x d,
    a norm, then the vocabulary projection with a bias) and a pooler (dense d x d on the first
    token). `mtp_layers` are DeepSeek-V3's multi-token-prediction modules, each a copy of the
    last layer's kind plus two norms and a 2d → d projection; they train with the model but do
    not serve, so they stay outside its totals.
    """

    architecture: str
    d_model: int
    vocab_size: int
    layers: tuple[Layer, ...]
    norm: Norm
    positions: str
    final_norm: bool = True
    max_seq_len: Optional[int] = None
    default_seq: Optional[int] = None
    tie_embeddings: bool = True
    share_encoder_embeddings: bool = True
    relative_buckets: Optional[int] = None
    token_types: int = 0
    embedding_norm: bool = False
    head: str = "lm"
    pooler: bool = False
    mtp_layers: int = 0
    title: str = ""
    source: str = ""
    notes: str = ""
    training_tokens: Optional[int] = None
    training_tokens_source: str = ""
    _groups: tuple[Group, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _choice(self, "architecture", ARCHITECTURES)
        _int(self, "d_model")
        _int(self, "vocab_size")
        _type(self, "layers", tuple)
        _type(self, "norm", Norm)
        _choice(self, "positions", POSITIONS)
        _choice(self, "head", HEADS)
        _bool(self, "final_norm", "tie_embeddings", "share_encoder_embeddings",
              "embedding_norm", "pooler")
        _opt_int(self, "max_seq_len")
        _opt_int(self, "default_seq")
        _opt_int(self, "relative_buckets")
        _opt_int(self, "training_tokens")
        _int(self, "token_types", 0)
        _int(self, "mtp_layers", 0)
        _str(self, "title", "source", "notes", "training_tokens_source")
        if not self.layers or not all(isinstance(x, Layer)
                                      for x in {id(x): x for x in self.layers}.values()):
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
        if self.architecture != "encoder-only" and (self.token_types or self.pooler
                                                     or self.head == "masked-lm"):
            raise ValueError("token_types, pooler and a masked-lm head belong to encoder-only "
                             "models")
        if self.mtp_layers and self.architecture != "decoder-only":
            raise ValueError("multi-token prediction (mtp_layers) is for decoder-only models")
        if self.head == "none" and not self.tie_embeddings:
            raise ValueError("a model without a head has no LM head to untie")
        object.__setattr__(self, "_groups", _group(self.layers))

    # ---------------------------------------------------------------------------- structure

    def groups(self, stack: Optional[str] = None) -> tuple[Group, ...]:
        """Identical layers gathered, in order of first appearance (per stack if given)."""
        return tuple(g for g in self._groups if stack is None or g.stack == stack)

    @property
    def stacks(self) -> tuple[str, ...]:
        return tuple(s for s in STACKS if self.groups(s))

    def n_layers(self, stack: Optional[str] = None) -> int:
        return sum(g.count for g in self.groups(stack))

    def first_layer(self, stack: Optional[str] = None) -> Layer:
        return next(g.layer for g in self.groups(stack) if g.first == 0)

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
        return any(g.layer.is_moe for g in self._groups)

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


def layer_kinds(cfg: dict[str, Any], n_layers: int) -> list[str]:
    """Each decoder layer's attention kind, `full`, `window` or `chunked`, from `layer_types`
    (one entry per layer, or a pattern whose length divides the layer count), `global_every`
    (every n-th layer full, the others local) or `sliding_window`/`attention_chunk` alone
    (every layer local)."""
    window, chunk = cfg.get("sliding_window"), cfg.get("attention_chunk")
    local = "window" if window is not None else "chunked" if chunk is not None else None
    types, every = cfg.get("layer_types"), cfg.get("global_every")
    if types is not None and every is not None:
        raise ValueError("give layer_types or global_every, not both")
    if types is not None:
        if not isinstance(types, (list, tuple)) or not types or n_layers % len(types):
            length = len(types) if isinstance(types, (list, tuple)) else "?"
            raise ValueError(f"layer_types has {length} entries, which neither match nor "
                             f"divide the {n_layers} layers; list every layer or a repeating "
                             "pattern")
        kinds = list(types) * (n_layers // len(types))
    elif every is not None:
        if local is None:
            raise ValueError("global_every needs sliding_window or attention_chunk (the local "
                             "layers' size)")
        kinds = ["full" if (i + 1) % every == 0 else local for i in range(n_layers)]
    else:
        kinds = [local or "full"] * n_layers
    for kind in set(kinds):
        if kind not in ("full", "window", "chunked"):
            raise ValueError(f"layer_types entries are full, window or chunked, got {kind!r}")
        if kind == "window" and window is None:
            raise ValueError("window layers need sliding_window (the window size)")
        if kind == "chunked" and chunk is None:
            raise ValueError("chunked layers need attention_chunk (the chunk size)")
    if window is not None and "window" not in kinds:
        raise ValueError("sliding_window is set but no layer is a window layer")
    if chunk is not None and "chunked" not in kinds:
        raise ValueError("attention_chunk is set but no layer is chunked")
    return kinds


def moe_layers(moe: dict[str, Any], n_layers: int) -> list[bool]:
    """Which decoder layers are mixtures of experts: not among the first `first_dense`, not in
    `dense_layers`, and on every `every`-th layer ((i + 1) % every == 0, as Qwen's
    decoder_sparse_step and Llama 4's interleave step count)."""
    first, every = moe.get("first_dense", 0), moe.get("every", 1)
    dense = set(moe.get("dense_layers") or ())
    bad = sorted(i for i in dense if not 0 <= i < n_layers)
    if bad:
        raise ValueError(f"moe.dense_layers {bad} are not layers of this model (0 to "
                         f"{n_layers - 1})")
    flags = [i >= first and i not in dense and (i + 1) % every == 0 for i in range(n_layers)]
    if not any(flags):
        raise ValueError("moe: no layer is a mixture of experts (check first_dense, every and "
                         "dense_layers)")
    return flags


def _attention(cfg: dict[str, Any], mask: Mask) -> Attention:
    heads, d = cfg["n_heads"], cfg["d_model"]
    bias = cfg["bias"]
    mla = cfg.get("latent_attention")
    if mla is not None:
        return Attention(
            heads=heads, kv_heads=heads,
            qk_dim=mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"],
            v_dim=mla["v_head_dim"], mask=mask, qkv_bias=bias["qkv"], out_bias=bias["attn_out"],
            qk_norm=cfg["qk_norm"], sinks=cfg["attention_sinks"],
            latent=Latent(mla["q_lora_rank"], mla["kv_lora_rank"], mla["qk_rope_head_dim"]))
    if cfg.get("head_dim") is None and d % heads:
        raise ValueError(f"d_model={d} is not divisible by n_heads={heads}; set head_dim "
                         "explicitly")
    head_dim = cfg.get("head_dim") or d // heads
    kv_heads = cfg.get("n_kv_heads") or heads
    return Attention(heads=heads, kv_heads=kv_heads, qk_dim=head_dim,
                     v_dim=cfg.get("v_head_dim") or head_dim, mask=mask, qkv_bias=bias["qkv"],
                     out_bias=bias["attn_out"], qk_norm=cfg["qk_norm"],
                     sinks=cfg["attention_sinks"])


def _mlp(cfg: dict[str, Any], width: int) -> Mlp:
    return Mlp(gated=cfg["mlp"] == "gated", d_ff=width, activation=cfg["activation"],
               bias=cfg["bias"]["mlp"])


def _moe(cfg: dict[str, Any]) -> Moe:
    m = cfg["moe"]
    count = m.get("shared_experts", 0)
    shared = _mlp(cfg, count * (m.get("shared_d_ff") or m["d_ff"])) if count else None
    return Moe(experts=m["experts"], top_k=m["top_k"], expert=_mlp(cfg, m["d_ff"]),
               shared=shared, shared_count=count, shared_gate=m.get("shared_gate", False),
               router_bias=m.get("router_bias", False))


def build_spec(cfg: dict[str, Any]) -> ModelSpec:
    """The `ModelSpec` of a config mapping with every field present (`ModelConfig.model_dump()`
    or its cached copy). Raises ValueError (or KeyError/TypeError for a malformed mapping)."""
    arch = cfg["architecture"]
    n_dec, n_enc = cfg["n_layers"], cfg.get("n_encoder_layers") or 0
    for name, n in (("n_layers", n_dec), ("n_encoder_layers", n_enc)):
        if type(n) is not int or n > MAX_LAYERS:
            raise ValueError(f"{name}={n!r} is more than {MAX_LAYERS:,} layers; check the number")
    if arch == "encoder-decoder" and n_enc == 0:
        raise ValueError("an encoder-decoder model needs n_encoder_layers >= 1")
    if arch != "encoder-decoder" and n_enc:
        raise ValueError("n_encoder_layers is only for architecture: encoder-decoder; remove it "
                         "or set the architecture")
    norm = Norm(cfg["norm"], cfg["norm_bias"] if cfg["norm"] == "layernorm" else False)
    if cfg["norm"] != "layernorm" and cfg.get("norm_bias") is False:
        raise ValueError("norm_bias applies to norm: layernorm only")
    local = any(cfg.get(k) is not None for k in
                ("sliding_window", "attention_chunk", "layer_types", "global_every"))
    if local and arch == "encoder-only":
        raise ValueError("encoder layers attend bidirectionally: sliding_window, "
                         "attention_chunk, layer_types and global_every apply to decoders")
    if cfg.get("moe") is not None and arch != "decoder-only":
        raise ValueError("moe layers are supported in decoder-only models")
    layout = dict(placement=cfg["norm_placement"], parallel=cfg["parallel_block"],
                  parallel_norms=cfg["parallel_norms"] or 1)
    if cfg["parallel_norms"] is not None and not cfg["parallel_block"]:
        raise ValueError("parallel_norms applies to parallel_block: true only")
    dense = _mlp(cfg, cfg["d_ff"])
    layers: list[Layer] = []
    if arch != "decoder-only":
        n = n_dec if arch == "encoder-only" else n_enc
        encoder = Layer("encoder", _attention(cfg, Mask("bidirectional")), dense, norm, **layout)
        layers += [encoder] * n
    if arch != "encoder-only":
        kinds = layer_kinds(cfg, n_dec)
        sizes = {"full": None, "window": cfg.get("sliding_window"),
                 "chunked": cfg.get("attention_chunk")}
        masks = {k: Mask("causal" if k == "full" else k, sizes[k]) for k in set(kinds)}
        moe = _moe(cfg) if cfg.get("moe") is not None else None
        routed = moe_layers(cfg["moe"], n_dec) if moe else [False] * n_dec
        cross = _attention(cfg, Mask("bidirectional")) if arch == "encoder-decoder" else None
        made: dict[tuple[str, bool], Layer] = {}  # one object per kind of layer
        for kind, is_moe in zip(kinds, routed):
            if (kind, is_moe) not in made:
                made[kind, is_moe] = Layer("decoder", _attention(cfg, masks[kind]),
                                           moe if is_moe else dense, norm, cross=cross, **layout)
            layers.append(made[kind, is_moe])
    return ModelSpec(
        architecture=arch, d_model=cfg["d_model"], vocab_size=cfg["vocab_size"],
        layers=tuple(layers), norm=norm, positions=cfg["positions"],
        final_norm=cfg["final_norm"], max_seq_len=cfg.get("max_seq_len"),
        default_seq=cfg.get("default_seq"), tie_embeddings=cfg["tie_embeddings"],
        share_encoder_embeddings=cfg["share_encoder_embeddings"],
        relative_buckets=cfg.get("relative_buckets"), token_types=cfg["token_types"],
        embedding_norm=cfg["embedding_norm"], head=cfg["head"], pooler=cfg["pooler"],
        mtp_layers=cfg["mtp_layers"], title=cfg["title"], source=cfg["source"],
        notes=cfg["notes"], training_tokens=cfg.get("training_tokens"),
        training_tokens_source=cfg["training_tokens_source"])
