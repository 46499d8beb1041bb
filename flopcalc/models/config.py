"""The model file format: what a preset YAML, a `--set` override or an imported Hugging Face
config.json must say before anything is counted (docs/models.md, "Your own model", documents
each key).

This is its one declaration (see `flopcalc.declare`): the fast reader and pydantic's both follow
it. The blocks that belong to one kind of layer (`moe`, `latent_attention`, `mamba2`, ...) are
declared in that kind's module and join the format through the kinds registry. Cross-field rules
live with the resolved model (`models.spec`), so the same checks run on every path into the
counting.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Any, Iterable, Literal, Optional

from ..records import dataclass, make_dataclass
from ..declare import Min, optional_fields
from ..kinds import registry

Positive = Annotated[int, Min(1)]
Count = Annotated[int, Min(0)]


@dataclass(frozen=True)
class Biases:
    """Which projections carry an additive bias (GPT-2: all; Llama: none; Qwen2: q/k/v only)."""

    qkv: bool = False
    attn_out: bool = False
    mlp: bool = False
    k: Optional[bool] = None  # the key projection's, when not as qkv (Whisper: none on k)
    mlp_down: Optional[bool] = None  # the MLP's down projection's, when not as mlp (GTE)

    @staticmethod
    def shorthand(value: Any) -> Any:
        """`bias: true` is a bias on every projection."""
        if isinstance(value, bool):
            return {"qkv": value, "attn_out": value, "mlp": value}
        return value


@dataclass(frozen=True)
class Checkpoint:
    """How the model's published checkpoint stores its weights, in its config.json's words
    (`torch_dtype`, and `quantization_config`'s `quant_method`, `weight_block_size` and
    `modules_to_not_convert`): what `serve` and `infer` count when no flag says otherwise
    (`models.quantization`)."""

    repo: str  # the Hugging Face id of the checkpoint (org/name)
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    quant_method: Optional[Literal["fp8", "mxfp4", "fbgemm_fp8"]] = None
    weight_block_size: Optional[list[Positive]] = None
    modules_to_not_convert: Optional[list[str]] = None
    # config.json's `architectures`: engines pick per-family defaults by it (vLLM keeps
    # NemotronH's SSM state in fp32 when the config does not say)
    architectures: Optional[list[str]] = None

    def as_config(self) -> dict[str, Any]:
        """The config.json keys this block stands for."""
        out: dict[str, Any] = {"torch_dtype": self.dtype}
        if self.architectures is not None:
            out["architectures"] = list(self.architectures)
        if self.quant_method is not None:
            q: dict[str, Any] = {"quant_method": self.quant_method}
            if self.weight_block_size is not None:
                q["weight_block_size"] = list(self.weight_block_size)
            if self.modules_to_not_convert is not None:
                q["modules_to_not_convert"] = list(self.modules_to_not_convert)
            out["quantization_config"] = q
        return out


@dataclass(frozen=True, kw_only=True)
class BaseConfig:
    """A model's architecture, as far as its counts depend on it.

    Decoder-only: `n_layers` layers. Encoder-decoder: `n_encoder_layers` encoder layers
    (self-attention + MLP) and `n_layers` decoder layers (self-attention + cross-attention +
    MLP). Encoder-only: `n_layers` bidirectional layers.
    """

    title: str = ""
    source: str = ""
    notes: str = ""

    architecture: Literal["decoder-only", "encoder-decoder", "encoder-only"] = "decoder-only"
    n_layers: Positive
    n_encoder_layers: Count = 0

    d_model: Positive
    n_heads: Optional[Positive] = None  # attention layers' query heads
    n_kv_heads: Optional[Positive] = None  # None: multi-head attention (= n_heads)
    head_dim: Optional[Positive] = None  # None: d_model / n_heads
    v_head_dim: Optional[Positive] = None  # None: head_dim
    d_ff: Optional[Positive] = None  # the dense MLP's width; None: no MLP
    mlp: Literal["plain", "gated"] = "plain"
    # relu2: ReLU squared (Primer; Nemotron, Persimmon, Arcee); xielu: Apertus's xIELU, with two
    # learned scalars per MLP
    activation: Literal["relu", "gelu", "silu", "relu2", "xielu"] = "gelu"
    bias: Biases = Biases()

    norm: Literal["layernorm", "rmsnorm", "none"] = "layernorm"
    norm_bias: bool = True  # LayerNorm's bias (false: a gain only, as in Cohere)
    norm_affine: bool = True  # false: norms without gain or bias (OLMo, OPT without affine)
    norm_placement: Literal["pre", "post", "sandwich"] = "pre"
    final_norm: bool = True
    final_norm_bias: Optional[bool] = None  # the final LayerNorm's bias, where not norm_bias's
    parallel_block: bool = False  # attention and MLP read the same input (GPT-J, NeoX)
    parallel_norms: Optional[Literal[1, 2]] = None  # norms of a parallel block; default 1
    qk_norm: Literal["none", "per_head", "all_heads"] = "none"
    qk_norm_bias: Optional[bool] = None  # a LayerNorm QK-norm's bias; None: as norm_bias
    qk_norm_form: Optional[Literal["layernorm", "rmsnorm"]] = None  # None: the model's norm
    attention_sinks: bool = False  # gpt-oss: one learned logit per head
    # Qwen3-Next (true): o reads attention·sigmoid(a gate from q_proj); "head": one gate per
    # head from a d → h projection (LFM3, Laguna, and on latent attention Bailing-hybrid;
    # kinds.head_gate)
    attention_gate: Literal[False, True, "head"] = False
    # BitNet: the model's norm over the attention output before o and over the MLP's hidden
    # product before down (kinds.sub_norms)
    sub_norms: bool = False

    sliding_window: Optional[Positive] = None
    attention_chunk: Optional[Positive] = None
    layer_types: Optional[list[str]] = None  # each layer's mixer (docs/models.md: layer_types)
    global_every: Optional[Positive] = None
    mtp_layers: Count = 0

    # alibi: no position parameters, a bias added to every score (element-wise)
    positions: Literal["learned", "sinusoidal", "rotary", "relative", "alibi", "none"]
    position_offset: Count = 0  # learned table rows beyond max_seq_len (OPT: 2)
    relative_buckets: Optional[Positive] = None
    max_seq_len: Optional[Positive] = None
    default_seq: Optional[Positive] = None

    vocab_size: Positive
    tie_embeddings: bool = True
    embed_dim: Optional[Positive] = None  # token table and head width when not d_model (OPT)
    # vocabulary-sized bias vectors on the head; None: 1 for masked-lm, 0 for lm (phi: 1;
    # untied BERT: 2, transformers keeps an unused copy)
    lm_head_bias: Optional[Count] = None
    share_encoder_embeddings: bool = True
    token_types: Count = 0
    embedding_norm: bool = False
    # "bottleneck": UltraBERT's prediction head, d → head_width → d (bias-free, GELU after each)
    # before the vocabulary projection
    head: Literal["lm", "masked-lm", "bottleneck", "none"] = "lm"
    pooler: bool = False
    head_bias: bool = True  # the masked-LM transform's bias (ModernBERT: classifier_bias)
    # a masked-LM head's transform width and its untied vocabulary projection's input when not
    # the embedding's (RemBERT's output_embedding_size); None: as the embedding. A bottleneck
    # head's inner width (UltraBERT's prediction_head_size)
    head_width: Optional[Positive] = None
    # A factorised embedding (encoder-only with embed_dim: ALBERT, ELECTRA, DeBERTa-v2): the
    # E -> d projection's bias, and whether the embedding norm is E wide before it ("embed") or
    # d wide after it ("model": DeBERTa-v2)
    embed_proj_bias: bool = False
    embed_norm_width: Literal["embed", "model"] = "embed"
    layer_weights: Optional[list[int]] = None  # each layer's weight set; equal: shared (ALBERT)
    # an encoder-decoder's encoder where it differs from the decoder (BART's encoder_*, Whisper)
    encoder_n_heads: Optional[Positive] = None
    encoder_d_ff: Optional[Positive] = None
    encoder_max_seq_len: Optional[Positive] = None  # the encoder's position table rows
    encoder_vocab_size: Optional[Positive] = None  # its own token table (Marian, unshared)
    # an encoder-decoder's encoder mixers, as an encoder-only model's layer_types (LongT5's
    # block_local); None: bidirectional attention
    encoder_layer_types: Optional[list[str]] = None
    unused_token_tables: Count = 0  # V x d tables held but never read (untied BART's `shared`)
    extra_token_rows: Count = 0  # token-table rows past vocab_size the head does not predict
    relative_bias_per_layer: bool = False  # T5's bias in every self-attention (UMT5)

    training_tokens: Optional[Positive] = None
    training_tokens_source: str = ""
    checkpoint: Optional[Checkpoint] = None  # the published checkpoint's storage

    # Written once here rather than generated for every format (`_with_blocks` builds one per
    # run): the same comparison and text as dataclass's, over whichever fields the format has.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = [f.name for f in dataclasses.fields(self) if f.compare]
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr
        ) + ")"

    def __getattr__(self, name: str) -> Any:
        """A kind's block this reading left out (see `model_config`) reads as None, as an
        absent block does (a name the kinds listing lacks is looked for in every kind before
        it is called unknown); anything else is an AttributeError."""
        if not name.startswith("_") and (name in registry.block_names()
                                         or name in registry.blocks()):
            return None
        raise AttributeError(name)


def model_config(keys: Optional[Iterable[str]] = None) -> type:
    """The format: the base keys and every kind's block (rebuilt when a kind is registered);
    with `keys`, only the blocks among them, so that reading a file imports only the kinds it
    names. A block left out reads as None, as an absent block does."""
    wanted = None if keys is None else frozenset(keys) & frozenset(registry.block_names())
    if wanted == frozenset():
        return BaseConfig  # no block named: the base keys are the whole format for it
    return _with_blocks(registry.generation(), wanted)


@functools.lru_cache(maxsize=16)
def _with_blocks(generation: int, wanted: Optional[frozenset[str]]) -> type:
    # eq and repr are BaseConfig's (generating them for ~60 fields cost every run ~1.5 ms);
    # the hash is BaseConfig's too, over the base keys: equal formats still hash equal.
    return make_dataclass("ModelConfig", optional_fields(registry.blocks(wanted)),
                                      bases=(BaseConfig,), frozen=True, kw_only=True,
                                      eq=False, repr=False)
