"""Bytes: what the mixers keep between decode steps (the KV cache of attention layers, the
fixed state of recurrent ones), and the memory traffic of prefill and decode steps (the byte
model of `flopcalc infer`).

- Cache: each layer keeps what its kinds say (`Kind.cache`): K and V of its KV heads
  (h_kv·(d_qk + d_v) values per token), or MLA's latent and rotary key (r_kv + d_rope), for the
  tokens its mask still needs: all of them, the last w of a window layer, at most one block of a
  chunked layer.
- A decode step reads every weight once (of a lookup table, an untied token embedding or a
  position table, only the rows its B tokens use; a tied table is read in full by the LM head),
  reads the cached values each layer attends over and writes the new token's.
- Of a mixture of experts a step reads only the experts its tokens are routed to (`Moe.reads`):
  the least, the expectation under uniform routing (which the roofline uses) and the most.
- The prefill moves at least the weights (experts as for B·P tokens) and writes the prompt's
  cache. Activations are not counted.
"""

from __future__ import annotations

from fractions import Fraction

from ..records import dataclass
from ..kinds.base import Part, merged, total
from ..models.spec import ModelSpec
from ..tables import DTYPE_BITS
from .model import model_params, token_params

BYTES = "bytes"


def storage_bytes(elements: int | Fraction, dtype: str) -> Fraction:
    """Bytes of `elements` values stored as `dtype` (int4: half a byte each)."""
    return Fraction(elements) * DTYPE_BITS[dtype] / 8


def _caches(spec: ModelSpec):
    """(layers, cache) of every decoder mixer."""
    for g in spec.groups("decoder"):
        for _, kind in g.layer.slots():
            cache = kind.cache()
            if cache.per_token or cache.states:
                yield g.count, cache


def state_bytes_per_sequence(spec: ModelSpec, nbytes: int, state_nbytes: int) -> int:
    """Bytes of the fixed states every layer keeps per sequence (convolution windows in the
    cache dtype, recurrent states in the state dtype), whatever the length."""
    return sum(n * int(c.state_bytes(nbytes, state_nbytes)) for n, c in _caches(spec))


def kv_bytes_per_token(spec: ModelSpec, nbytes: int, decompressed: bool = False) -> int:
    """Bytes every layer adds to the cache per token (before a window evicts any);
    `decompressed`: a cache of every query head's own key and value (multi-head attention, or
    MLA's keys and values decompressed)."""
    return sum(n * (c.per_token_uncompressed if decompressed else c.per_token) * nbytes
               for n, c in _caches(spec))


def kv_cache_parts(spec: ModelSpec, tokens: int, batch: int, nbytes: int,
                   decompressed: bool = False, state_nbytes: int = 4,
                   states: bool = True) -> list[Part]:
    """The cache of `batch` sequences after `tokens` tokens each, per kind of layer: the K/V
    (or latents) of the tokens held, and (`states`) each fixed state (`decoder.LABEL.STATE`)."""
    parts = []
    for n, c in _caches(spec):
        values = c.per_token_uncompressed if decompressed else c.per_token
        if values:
            parts.append(Part(f"decoder.{c.label}", batch * n * c.tokens_held(tokens) * nbytes
                              * values, BYTES))
        for s in c.states if states else ():
            size = nbytes if s.dtype == "cache" else state_nbytes
            parts.append(Part(f"decoder.{c.label}.{s.name}", batch * n * s.values * size,
                              BYTES))
    return merged(parts)


def kv_read_bytes(spec: ModelSpec, first: int, last: int, batch: int, nbytes: int) -> int:
    """Cached bytes the decode steps at positions first..last read: each layer, the keys its
    mask lets each step's query see."""
    return batch * nbytes * sum(g.count * kind.cache_reads(first, last)
                                for g in spec.groups("decoder") for _, kind in g.layer.slots())


@dataclass(frozen=True)
class WeightReads:
    """Parameters a forward over some tokens reads: the same for every routing of a dense
    model; for a mixture of experts, the least, expected and most."""

    least: int
    expected: Fraction
    most: int
    exact: bool


def weight_reads(spec: ModelSpec, tokens: int) -> WeightReads:
    """Parameters read by a forward over `tokens` new tokens (see the module docstring)."""
    fixed = sum(min(tokens, p.shape[0]) * p.shape[1] if p.lookup else p.value
                for p in token_params(spec))  # a vision tower's run only on images
    least = most = fixed
    expected, exact = Fraction(fixed), True
    for g in spec.groups():
        for _, kind in g.layer.slots():
            reads = kind.reads(spec.d_model, tokens)
            if reads is None:
                continue
            unused = reads.experts * reads.per_expert  # counted in `fixed` above
            least += g.count * (reads.least * reads.per_expert - unused)
            most += g.count * (reads.most * reads.per_expert - unused)
            expected += g.count * (reads.expected * reads.per_expert - unused)
            exact = exact and reads.exact
    return WeightReads(least, expected, most, exact)


def weight_params(spec: ModelSpec) -> int:
    """Every stored parameter (a tied LM head counts once)."""
    return total(model_params(spec))
