"""The model configuration schema: what a preset YAML, a `--set` override or an imported
Hugging Face config.json must resolve to before anything is counted.

Every field is strict: `true` is not 1, `768.0` is not 768, `"768"` is not 768. Unknown keys are
rejected, so a typo (`n_head`) is an error rather than a silently ignored line.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

from .arch import Arch, Dims

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


class ModelConfig(BaseModel, Dims):
    """A transformer's architecture, as far as parameter and FLOP counts depend on it.

    Encoder-decoder models: `n_encoder_layers` encoder layers (self-attention + MLP) and `n_layers`
    decoder layers (self-attention + cross-attention + MLP). Decoder-only models: `n_layers` layers
    (self-attention + MLP).
    """

    model_config = _FROZEN_STRICT

    title: StrictStr = ""
    source: StrictStr = ""
    notes: StrictStr = ""

    architecture: Literal["decoder-only", "encoder-decoder"] = "decoder-only"
    n_layers: PositiveInt
    n_encoder_layers: NonNegativeInt = 0

    d_model: PositiveInt
    n_heads: PositiveInt
    n_kv_heads: Optional[PositiveInt] = None  # None: multi-head attention (= n_heads)
    head_dim: Optional[PositiveInt] = None  # None: d_model / n_heads
    d_ff: PositiveInt
    mlp: Literal["plain", "gated"] = "plain"
    activation: Literal["relu", "gelu", "silu"] = "gelu"
    bias: Biases = Biases()

    norm: Literal["layernorm", "rmsnorm", "none"] = "layernorm"
    norm_placement: Literal["pre", "post"] = "pre"
    final_norm: StrictBool = True

    positions: Literal["learned", "sinusoidal", "rotary", "none"]
    max_seq_len: Optional[PositiveInt] = None
    default_seq: Optional[PositiveInt] = None

    vocab_size: PositiveInt
    tie_embeddings: StrictBool = True
    share_encoder_embeddings: StrictBool = True

    training_tokens: Optional[PositiveInt] = None
    training_tokens_source: StrictStr = ""

    @model_validator(mode="after")
    def _consistent(self) -> ModelConfig:
        if self.n_kv_heads is not None and self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads} "
                "(each KV head serves a whole group of query heads)"
            )
        if self.head_dim is None and self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "set head_dim explicitly"
            )
        if self.architecture == "encoder-decoder" and self.n_encoder_layers == 0:
            raise ValueError("an encoder-decoder model needs n_encoder_layers >= 1")
        if self.architecture == "decoder-only" and self.n_encoder_layers:
            raise ValueError(
                "n_encoder_layers is only for architecture: encoder-decoder; remove it or set "
                "the architecture"
            )
        if self.positions == "learned" and self.max_seq_len is None:
            raise ValueError("learned positions need max_seq_len (the size of the position table)")
        return self

    def resolve(self) -> Arch:
        """The validated config as the plain `Arch` that counting reads."""
        return Arch.from_dict(self.model_dump())
