"""Which keys a query may see, and the closed forms that follow: pairs scored, keys a decode
step attends over, tokens a cache must hold. Pure integer arithmetic, one closed form per pattern.

Positions are 1-based: query i of a sequence may see key j under (keys(i): how many it sees)
- `causal`: j <= i (i keys);
- `window` of w keys: 0 <= i - j < w (min(i, w) keys: itself and the w - 1 before it), as
  Hugging Face's sliding-window masks define it;
- `chunked` in blocks of c: j in i's block and j <= i ((i - 1) mod c + 1 keys);
- `topk` of k: the k keys a sparse-attention indexer picks among the causal ones (min(i, k));
- `bidirectional`: every key of the sequence (encoders, cross-attention).

A mask answers three separate questions: whether the keys a query sees are bounded
(`keys_bounded`), how many tokens a cache must keep (`cache_bound`: a window or chunk bounds it,
a top-k selection does not, since any earlier key may be picked), and where keys(i) changes its
affine form (`breakpoints`). Under the `full` convention every layer counts every pair (what
FlopCounterMode counts: a mask does not shrink the matmuls); under `causal` each layer counts
what its own mask lets through.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Iterator, Optional

from ..records import dataclass
from .base import Convention

MASKS = ("causal", "bidirectional", "window", "chunked", "topk")
_SIZED = ("window", "chunked", "topk")


@dataclass(frozen=True)
class Mask:
    """A mask pattern and, for window, chunked and top-k masks, its size."""

    pattern: str
    size: Optional[int] = None

    def __post_init__(self) -> None:
        if self.pattern not in MASKS:
            raise ValueError(f"mask must be one of {', '.join(MASKS)}, got {self.pattern!r}")
        if self.pattern in _SIZED:
            if type(self.size) is not int or self.size < 1:
                raise ValueError(f"a {self.pattern} mask needs a size >= 1, got {self.size!r}")
        elif self.size is not None:
            raise ValueError(f"a {self.pattern} mask has no size")

    @property
    def keys_bounded(self) -> bool:
        """A query sees at most `size` keys, however long the sequence."""
        return self.pattern in _SIZED

    @property
    def cache_bound(self) -> Optional[int]:
        """The most tokens a decode cache must keep for this mask (None: all of them)."""
        return self.size if self.pattern in ("window", "chunked") else None

    def describe(self) -> str:
        if self.pattern == "window":
            return f"sliding window {self.size:,}"
        if self.pattern == "chunked":
            return f"chunked {self.size:,}"
        if self.pattern == "topk":
            return f"top-{self.size:,} sparse"
        return {"causal": "full causal", "bidirectional": "bidirectional"}[self.pattern]

    @property
    def label(self) -> str:
        """A short name for cache groups: full, window_4096, chunked_8192."""
        return "full" if self.cache_bound is None else f"{self.pattern}_{self.size}"

    # ----------------------------------------------------------------- pairs and visible keys

    def prefix_pairs(self, n: int) -> int:
        """Σ_{i=1..n} keys(i): the pairs of a causal-style mask over n positions."""
        if n <= 0:
            return 0
        if self.pattern in ("window", "topk"):
            assert self.size is not None
            w = self.size
            # Queries 1..w see i keys; each later one sees w.
            return n * (n + 1) // 2 if n <= w else w * (w + 1) // 2 + (n - w) * w
        if self.pattern == "chunked":
            assert self.size is not None
            c = self.size
            full_chunks, rest = divmod(n, c)
            return full_chunks * c * (c + 1) // 2 + rest * (rest + 1) // 2
        return n * (n + 1) // 2

    def visible_keys(self, lo: int, hi: int) -> int:
        """Σ_{i=lo..hi} keys(i): the keys decode steps at positions lo..hi attend over,
        together (0 when hi < lo)."""
        if hi < lo:
            return 0
        return self.prefix_pairs(hi) - self.prefix_pairs(lo - 1)

    def pairs(self, n_q: int, n_k: int, convention: Convention) -> int:
        """(query, key) pairs one head scores for one sequence of n_q queries over n_k keys."""
        if self.pattern == "bidirectional" or convention == "full":
            return n_q * n_k
        assert n_q == n_k, "a causal-style mask needs as many queries as keys"
        return self.prefix_pairs(n_q)

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        """Positions p in [lo, hi) after which keys(i) changes its affine form: a window's w,
        every multiple of a chunk size. Between consecutive breakpoints it is affine in i."""
        if self.pattern in ("window", "topk"):
            assert self.size is not None
            if lo <= self.size < hi:
                yield self.size
        elif self.pattern == "chunked":
            assert self.size is not None
            yield from range(ceil(Fraction(lo, self.size)) * self.size, hi, self.size)

    @property
    def period(self) -> Optional[int]:
        """The period of its breakpoints when they recur: a chunk's size."""
        return self.size if self.pattern == "chunked" else None

    def segment_end(self, s: int) -> Optional[int]:
        """The last length of the segment of lengths holding s on which the pair count is one
        quadratic polynomial (None: it never changes)."""
        if self.pattern in ("window", "topk"):
            assert self.size is not None
            return self.size if s <= self.size else None
        if self.pattern == "chunked":
            assert self.size is not None
            return ceil(Fraction(s, self.size)) * self.size
        return None

    def pair_polynomial(self, convention: Convention, s: int
                        ) -> tuple[Fraction, Fraction, Fraction]:
        """(a, b, c) with pairs(x, x, convention) = a·x² + b·x + c for every integer x in the
        segment of lengths that contains s (see `segment_end`). A window is quadratic up to w
        and linear after; a chunked mask is quadratic within each block of lengths."""
        half = Fraction(1, 2)
        if self.pattern == "bidirectional" or convention == "full":
            return Fraction(1), Fraction(0), Fraction(0)
        if self.pattern in ("window", "topk"):
            assert self.size is not None
            w = self.size
            if s <= w:
                return half, half, Fraction(0)
            return Fraction(0), Fraction(w), Fraction(w * (w + 1), 2) - w * w  # w·x − w(w−1)/2
        if self.pattern == "chunked":
            assert self.size is not None
            c = self.size
            k = (s - 1) // c  # lengths k·c+1 .. (k+1)·c: k full blocks, then r = x − k·c
            base = Fraction(k * c * (c + 1), 2)
            kc = k * c
            # base + (x − kc)(x − kc + 1)/2
            return half, half - kc, base + Fraction(kc * kc - kc, 2)
        return half, half, Fraction(0)
