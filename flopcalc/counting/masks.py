"""How many (query, key) pairs an attention mask lets through, and how many keys a decode step
attends over: pure integer arithmetic, one closed form per kind of mask.

Positions are 1-based: query i of a sequence may see key j under (keys(i): how many it sees)
- `causal`: j <= i (i keys);
- `window` of w keys: 0 <= i - j < w (min(i, w) keys: itself and the w - 1 before it), as
  Hugging Face's sliding-window masks define it;
- `chunked` in blocks of c: j in i's block and j <= i ((i - 1) mod c + 1 keys);
- `bidirectional`: every key of the sequence (encoders, cross-attention).

Under the `full` convention every layer counts every pair (what FlopCounterMode counts: a mask
does not shrink the matmuls); under `causal` each layer counts what its own mask lets through.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterator

from ..models.spec import Mask
from .parts import Convention


def prefix_pairs(mask: Mask, n: int) -> int:
    """Σ_{i=1..n} keys(i): the pairs of a causal-style mask over n positions (keys(i) as in the
    module docstring)."""
    if n <= 0:
        return 0
    if mask.kind == "window":
        assert mask.size is not None
        w = mask.size
        # Queries 1..w see i keys; each later one sees w.
        return n * (n + 1) // 2 if n <= w else w * (w + 1) // 2 + (n - w) * w
    if mask.kind == "chunked":
        assert mask.size is not None
        full_chunks, rest = divmod(n, mask.size)
        c = mask.size
        return full_chunks * c * (c + 1) // 2 + rest * (rest + 1) // 2
    return n * (n + 1) // 2


def sum_visible_keys(mask: Mask, lo: int, hi: int) -> int:
    """Σ_{i=lo..hi} keys(i): the keys decode steps at positions lo..hi attend
    over, together (0 when hi < lo)."""
    if hi < lo:
        return 0
    return prefix_pairs(mask, hi) - prefix_pairs(mask, lo - 1)


def pairs(mask: Mask, n_q: int, n_k: int, convention: Convention) -> int:
    """(query, key) pairs one head scores for one sequence of n_q queries over n_k keys."""
    if mask.kind == "bidirectional" or convention == "full":
        return n_q * n_k
    assert n_q == n_k, "a causal-style mask needs as many queries as keys"
    return prefix_pairs(mask, n_q)


def cached_tokens(mask: Mask, tokens: int) -> int:
    """Tokens of K/V a layer must hold after `tokens` tokens: all of them, or the last w of a
    window layer, or (chunked) at most one block."""
    if mask.local:
        assert mask.size is not None
        return min(tokens, mask.size)
    return tokens


def breakpoints(mask: Mask, lo: int, hi: int) -> Iterator[int]:
    """Positions p in [lo, hi) after which keys(i) changes its affine form: a window's w,
    every multiple of a chunk size. Between consecutive breakpoints it is affine in i."""
    if mask.kind == "window":
        assert mask.size is not None
        if lo <= mask.size < hi:
            yield mask.size
    elif mask.kind == "chunked":
        assert mask.size is not None
        first = -(-lo // mask.size) * mask.size
        yield from range(first, hi, mask.size)


def pair_polynomial(mask: Mask, convention: Convention, s: int) -> tuple[Fraction, Fraction,
                                                                          Fraction]:
    """(a, b, c) with pairs(mask, x, x, convention) = a·x² + b·x + c for every integer x in the
    segment of lengths that contains s (segments end at `breakpoints`). A window is quadratic up
    to w and linear after; a chunked mask is quadratic within each block of lengths."""
    half = Fraction(1, 2)
    if mask.kind == "bidirectional" or convention == "full":
        return Fraction(1), Fraction(0), Fraction(0)
    if mask.kind == "window":
        assert mask.size is not None
        w = mask.size
        if s <= w:
            return half, half, Fraction(0)
        return Fraction(0), Fraction(w), Fraction(w * (w + 1), 2) - w * w  # w·x − w(w−1)/2
    if mask.kind == "chunked":
        assert mask.size is not None
        c = mask.size
        k = (s - 1) // c  # lengths k·c+1 .. (k+1)·c: k full blocks, then r = x − k·c
        base = Fraction(k * c * (c + 1), 2)
        # base + (x − kc)(x − kc + 1)/2
        kc = k * c
        return half, half - kc, base + Fraction(kc * kc - kc, 2)
    return half, half, Fraction(0)

