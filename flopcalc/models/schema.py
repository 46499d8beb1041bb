"""The model file schema: what a preset YAML, a `--set` override or an imported Hugging Face
config.json must say before anything is counted (README "Your own model" documents each key).

Every field is strict: `true` is not 1, `768.0` is not 768, `"768"` is not 768. Unknown keys are
rejected, so a typo (`n_head`) is an error rather than a silently ignored line. Cross-field
rules live with the resolved model (`models.spec`), which `resolve()` builds: the same checks run
whether a config comes from here or from the validation cache.
"""

from __future__ import annotations

from typing import Annotated, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

from .spec import ModelSpec, build_spec

PositiveInt = Annotated[StrictInt, Field(gt=0)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]

_FROZEN_STRICT = ConfigDict(extra="forbid", frozen=True)


class Biases(BaseModel):
    """Which projections carry an additive bias (GPT-2: all; Llama: none; Qwen2: q/k/v only)."""

    model_config = _FROZEN_STRICT

    qkv: StrictBool = False
    attn_out: StrictBool = False
    mlp: StrictBool = False

    @model_validator(mode="before")
    @classmethod
    def _from_bool(cls, value: object) -> object:
        # `bias: true` is shorthand for a bias on every projection.
        if isinstance(value, bool):
            return {"qkv": value, "attn_out": value, "mlp": value}
        return value


class MoeConfig(BaseModel):
    """A mixture of experts in place of the MLP (on the layers `first_dense`, `every` and
    `dense_layers` pick). Experts use the model's `mlp` kind and `activation`."""

    model_config = _FROZEN_STRICT

    experts: PositiveInt
    top_k: PositiveInt
    d_ff: PositiveInt  # each routed expert's width
    shared_experts: NonNegativeInt = 0
    shared_d_ff: Optional[PositiveInt] = None  # each shared expert's width; default d_ff
    shared_gate: StrictBool = False  # Qwen2-MoE: a sigmoid gate d → 1 on the shared expert
    router_bias: StrictBool = False  # gpt-oss
    first_dense: NonNegativeInt = 0  # DeepSeek's first_k_dense_replace
    every: PositiveInt = 1  # MoE on layers with (i + 1) % every == 0 (Qwen decoder_sparse_step)
    dense_layers: List[NonNegativeInt] = []  # Qwen's mlp_only_layers


class LatentAttentionConfig(BaseModel):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2), in Hugging Face's names."""

    model_config = _FROZEN_STRICT

    q_lora_rank: Optional[PositiveInt]  # null: queries projected directly from d_model
    kv_lora_rank: PositiveInt
    qk_nope_head_dim: PositiveInt
    qk_rope_head_dim: PositiveInt
    v_head_dim: PositiveInt


class ModelConfig(BaseModel):
    """A transformer's architecture, as far as parameter and FLOP counts depend on it.

    Decoder-only: `n_layers` layers (self-attention + MLP). Encoder-decoder: `n_encoder_layers`
    encoder layers (self-attention + MLP) and `n_layers` decoder layers (self-attention +
    cross-attention + MLP). Encoder-only: `n_layers` bidirectional layers.
    """

    model_config = _FROZEN_STRICT

    title: StrictStr = ""
    source: StrictStr = ""
    notes: StrictStr = ""

    architecture: Literal["decoder-only", "encoder-decoder", "encoder-only"] = "decoder-only"
    n_layers: PositiveInt
    n_encoder_layers: NonNegativeInt = 0

    d_model: PositiveInt
    n_heads: PositiveInt
    n_kv_heads: Optional[PositiveInt] = None  # None: multi-head attention (= n_heads)
    head_dim: Optional[PositiveInt] = None  # None: d_model / n_heads
    v_head_dim: Optional[PositiveInt] = None  # None: head_dim
    d_ff: PositiveInt
    mlp: Literal["plain", "gated"] = "plain"
    activation: Literal["relu", "gelu", "silu"] = "gelu"
    bias: Biases = Biases()

    norm: Literal["layernorm", "rmsnorm", "none"] = "layernorm"
    norm_bias: StrictBool = True  # LayerNorm's bias (false: a gain only, as in OLMo)
    norm_placement: Literal["pre", "post", "sandwich"] = "pre"
    final_norm: StrictBool = True
    parallel_block: StrictBool = False  # attention and MLP read the same input (GPT-J, NeoX)
    parallel_norms: Optional[Literal[1, 2]] = None  # norms of a parallel block; default 1
    qk_norm: Literal["none", "per_head", "all_heads"] = "none"
    attention_sinks: StrictBool = False  # gpt-oss: one learned logit per head

    sliding_window: Optional[PositiveInt] = None
    attention_chunk: Optional[PositiveInt] = None
    layer_types: Optional[List[Literal["full", "window", "chunked"]]] = None
    global_every: Optional[PositiveInt] = None

    moe: Optional[MoeConfig] = None
    latent_attention: Optional[LatentAttentionConfig] = None
    mtp_layers: NonNegativeInt = 0

    positions: Literal["learned", "sinusoidal", "rotary", "relative", "none"]
    relative_buckets: Optional[PositiveInt] = None
    max_seq_len: Optional[PositiveInt] = None
    default_seq: Optional[PositiveInt] = None

    vocab_size: PositiveInt
    tie_embeddings: StrictBool = True
    share_encoder_embeddings: StrictBool = True
    token_types: NonNegativeInt = 0
    embedding_norm: StrictBool = False
    head: Literal["lm", "masked-lm", "none"] = "lm"
    pooler: StrictBool = False

    training_tokens: Optional[PositiveInt] = None
    training_tokens_source: StrictStr = ""

    @model_validator(mode="after")
    def _consistent(self) -> ModelConfig:
        self.resolve()  # the resolved model's own invariants (models.spec), one error each
        return self

    def resolve(self) -> ModelSpec:
        """The validated config as the `ModelSpec` that counting reads."""
        return build_spec(self.model_dump())
