"""The token mixers an encoder-only model may name in its `layer_types`: `bidirectional` (every
query sees every key: BERT's attention, ModernBERT's global layers) and `local` (ModernBERT's
local layers: each token sees the tokens within `local_attention.window // 2` positions on
either side; Warner et al. 2024, "Smarter, Better, Faster, Longer: A Modern Bidirectional
Encoder", arXiv:2412.13663; transformers 5.24 `models/modernbert/modeling_modernbert.py`
ModernBertAttention with `masking_utils.sliding_window_bidirectional_overlay`: key j is visible
from query i when |i − j| <= local_attention // 2).

Both are softmax attention (`kinds.attention.Attention`): the same tensors and, under the
default `full` convention, the same FLOPs, every (query, key) pair of the sequence, which is what
FlopCounterMode counts on Hugging Face's eager path (the band is a mask: it does not shrink the
matmuls). Under `--attention causal` a local layer counts the pairs its band lets through:
with radius r, s² pairs while s <= r + 1, then (2r + 1)·s − r·(r + 1) (each of the s queries
sees itself and r keys on either side, less the r·(r + 1) that fall off the two ends).
"""

from __future__ import annotations

from dataclasses import fields
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from . import attention_layers
from .attention import Attention
from .base import Convention
from .masks import Mask
from .registry import Entry


@dataclass(frozen=True)
class BandMask(Mask):
    """A bidirectional band: query i sees key j when |i − j| <= `radius`."""

    radius: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pattern != "bidirectional" or type(self.radius) is not int or self.radius < 0:
            raise ValueError(f"a band mask is bidirectional with a radius >= 0, got "
                             f"{self.pattern!r}, {self.radius!r}")

    def describe(self) -> str:
        return f"bidirectional local ±{self.radius:,}"

    def band_pairs(self, n: int) -> int:
        """Σ_i #{j : |i − j| <= r} over n positions."""
        r = self.radius
        if n <= r + 1:
            return n * n
        return (2 * r + 1) * n - r * (r + 1)

    def pairs(self, n_q: int, n_k: int, convention: Convention) -> int:
        if convention == "full":
            return n_q * n_k
        assert n_q == n_k, "a band mask needs as many queries as keys"
        return self.band_pairs(n_q)

    def segment_end(self, s: int) -> Optional[int]:
        return self.radius + 1 if s <= self.radius + 1 else None

    def pair_polynomial(self, convention: Convention, s: int
                        ) -> tuple[Fraction, Fraction, Fraction]:
        if convention == "full" or s <= self.radius + 1:
            return Fraction(1), Fraction(0), Fraction(0)
        r = self.radius
        return Fraction(0), Fraction(2 * r + 1), Fraction(-r * (r + 1))


@dataclass(frozen=True)
class LocalAttention(Attention):
    """Attention over a `BandMask` (ModernBERT's local layers)."""

    def notes(self) -> list[str]:
        r = getattr(self.mask, "radius", 0)
        return super().notes() + [
            f"local layers (ModernBERT): each token sees ±{r:,} tokens; --attention full counts "
            "every pair, as FlopCounterMode on the eager path; --attention causal counts the "
            f"band's (2r+1)·s − r(r+1) pairs (s² while s <= r + 1), r = {r:,}"]


@dataclass(frozen=True)
class LocalAttentionConfig:
    """`local_attention:` in a model file: ModernBERT's `local_attention`, the whole window
    (a token sees `window // 2` tokens on either side)."""

    window: Annotated[int, Min(1)]


def build(cfg: Any, name: str) -> Attention:
    base = attention_layers.build(cfg, "bidirectional")
    if name == "bidirectional":
        return base
    block = cfg.local_attention
    if block is None:
        raise ValueError("local layers need a local_attention block (window: ModernBERT's "
                         "local_attention)")
    if type(base) is not Attention:
        raise ValueError("local layers are softmax attention, not latent_attention")
    return LocalAttention(**{**{f.name: getattr(base, f.name) for f in fields(base)},
                             "mask": BandMask("bidirectional", radius=block.window // 2)})


REGISTER = Entry(layer_types=("bidirectional", "local"), build=build,
                 blocks=(("local_attention", LocalAttentionConfig),))
