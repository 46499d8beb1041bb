"""`block_local`: LongT5's local encoder attention (Guo et al. 2022, "LongT5: Efficient
Text-To-Text Transformer for Long Sequences", §2.1.1; transformers 5.24
`models/longt5/modeling_longt5.py` LongT5LocalAttention). Each token sees the tokens within
`block_local.radius` (r) positions on either side, computed in blocks of b = r + 1 queries: the
sequence is padded to whole blocks, and each block's queries score the keys of their own block
and of the two beside it, 3·b keys (zero padding at both ends), before the band mask.

Softmax attention (`kinds.attention.Attention`), with T5's tensors. Pairs per head and
sequence of s tokens: under the default `full` convention what the eager path computes and
FlopCounterMode counts, ⌈s/b⌉·b·3b (each of the ⌈s/b⌉ blocks scores a b × 3b matrix); under
`--attention causal` the band's (2r + 1)·s − r(r + 1) (s² while s <= r + 1), as ModernBERT's
`local` layers count. The relative position bias is looked up per block (b × 3b offsets), no
matmul.
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
from .encoder_attention import BandMask
from .registry import Entry


@dataclass(frozen=True)
class BlockBandMask(BandMask):
    """A band of radius r computed in blocks of r + 1 queries over 3·(r + 1) keys."""

    @property
    def block(self) -> int:
        return self.radius + 1

    def describe(self) -> str:
        return f"bidirectional local ±{self.radius:,} in blocks of {self.block:,}"

    def blocked_pairs(self, n: int) -> int:
        """⌈n/b⌉ blocks, each b queries × 3b keys."""
        b = self.block
        return -(-n // b) * b * 3 * b

    def pairs(self, n_q: int, n_k: int, convention: Convention) -> int:
        assert n_q == n_k, "a local mask needs as many queries as keys"
        if convention == "full":
            return self.blocked_pairs(n_q)
        return self.band_pairs(n_q)

    def segment_end(self, s: int) -> Optional[int]:
        # the blocked count steps at every multiple of b; the band's form changes at b too
        return -(-s // self.block) * self.block

    def pair_polynomial(self, convention: Convention, s: int
                        ) -> tuple[Fraction, Fraction, Fraction]:
        if convention == "full":  # constant on each block of lengths
            return Fraction(0), Fraction(0), Fraction(self.blocked_pairs(s))
        return super().pair_polynomial(convention, s)


@dataclass(frozen=True)
class BlockLocalAttention(Attention):
    """Attention over a `BlockBandMask` (LongT5's local encoder layers)."""

    def notes(self) -> list[str]:
        r = getattr(self.mask, "radius", 0)
        return super().notes() + [
            f"local layers (LongT5): each token sees ±{r:,} tokens, computed in blocks of "
            f"{r + 1:,} queries over 3·{r + 1:,} keys; --attention full counts the blocks' "
            "pairs, ⌈s/b⌉·b·3b, as FlopCounterMode on the eager path; --attention causal the "
            "band's (2r+1)·s − r(r+1)"]


@dataclass(frozen=True)
class BlockLocalConfig:
    """`block_local:` in a model file: LongT5's `local_radius` (r)."""

    radius: Annotated[int, Min(0)]


def build(cfg: Any, name: str) -> Attention:
    base = attention_layers.build(cfg, "bidirectional")
    block = cfg.block_local
    if block is None:
        raise ValueError("block_local layers need a block_local block (radius: LongT5's "
                         "local_radius)")
    if type(base) is not Attention:
        raise ValueError("block_local layers are softmax attention, not latent_attention")
    return BlockLocalAttention(**{**{f.name: getattr(base, f.name) for f in fields(base)},
                                  "mask": BlockBandMask("bidirectional", radius=block.radius)})


REGISTER = Entry(layer_types=("block_local",), build=build,
                 blocks=(("block_local", BlockLocalConfig),))
