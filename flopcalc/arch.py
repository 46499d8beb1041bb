"""The resolved architecture that counting reads: a plain frozen dataclass.

`config.ModelConfig` (pydantic) validates what users write; a valid config becomes an `Arch`
with the same fields (`ModelConfig.resolve()`), and everything downstream reads only `Arch`. Keeping
pydantic out of this type lets a run whose config was validated before skip pydantic's imports
entirely (see `cache.py`): that is most of flopcalc's start-up time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional


class Dims:
    """Sizes derived from the fields, shared by `Arch` and `ModelConfig` so they cannot differ."""

    if TYPE_CHECKING:  # the fields these read; declared by the subclasses
        n_heads: int
        n_kv_heads: Optional[int]
        head_dim: Optional[int]
        d_model: int
        architecture: str

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def d_q(self) -> int:
        """Width of all query heads together (h·d_h); equals d_model unless head_dim says not."""
        return self.n_heads * self.d_head

    @property
    def d_kv(self) -> int:
        """Width of all key (or value) heads together (h_kv·d_h)."""
        return self.kv_heads * self.d_head

    @property
    def is_encoder_decoder(self) -> bool:
        return self.architecture == "encoder-decoder"


@dataclass(frozen=True)
class ArchBiases:
    qkv: bool
    attn_out: bool
    mlp: bool


@dataclass(frozen=True)
class Arch(Dims):
    """Every field of `ModelConfig`, validated; see config.py for what each means."""

    title: str
    source: str
    notes: str
    architecture: str
    n_layers: int
    n_encoder_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: Optional[int]
    head_dim: Optional[int]
    d_ff: int
    mlp: str
    activation: str
    bias: ArchBiases
    norm: str
    norm_placement: str
    final_norm: bool
    positions: str
    max_seq_len: Optional[int]
    default_seq: Optional[int]
    vocab_size: int
    tie_embeddings: bool
    share_encoder_embeddings: bool
    training_tokens: Optional[int]
    training_tokens_source: str

    @classmethod
    def from_dict(cls, data: dict) -> "Arch":
        return cls(**{**data, "bias": ArchBiases(**data["bias"])})

    @classmethod
    def from_stored(cls, data: object) -> "Optional[Arch]":
        """An Arch from a cache entry, or None unless every field has its validated type (a
        cheap check, so a damaged cache file cannot reach the counting)."""
        if not isinstance(data, dict) or set(data) != set(cls.__annotations__):
            return None
        bias = data["bias"]
        if not isinstance(bias, dict) or set(bias) != {"qkv", "attn_out", "mlp"} or any(
                type(v) is not bool for v in bias.values()):
            return None
        for name, kind in cls.__annotations__.items():
            value = data[name]
            if name == "bias" or (kind.startswith("Optional") and value is None):
                continue
            expected = {"str": str, "int": int, "bool": bool}[kind.removeprefix("Optional[")
                                                              .removesuffix("]")]
            if type(value) is not expected or (expected is int and value < (
                    0 if name == "n_encoder_layers" else 1)):
                return None
        return cls.from_dict(data)
