"""Kolibri 1.1's indexed attention (transformers 5.25 `models/kolibri1_1/modeling_kolibri1_1.py`,
Kolibri1_1Attention and Kolibri1_1Indexer).

An `indexed` layer is causal softmax attention without positions (per-head q/k norms) whose
queries each attend to at most B = `topk` + `local_tokens` + `sink_tokens` keys, picked by a
weightless indexer: the ReLU'd logits of the first `heads` query heads against key head 0,
summed over those heads. Its cost, as the reference computes it (what FlopCounterMode counts):
for a sequence of n tokens, the queries that see more than B keys (n − B of them) are scored
against all n keys, 2·H·d_h·(n − B)·n; an `indexed_pool` layer (transformers' index_layers)
first picks a pool of `pool_size` keys by scoring the queries that see more than `pool_size`
keys against the n // c block means of `compression` = c keys each, 2·H·d_h·(n − P)·⌊n/c⌋.
The other indexed layers rescore the pool of the pool layer before them (no pool cost).
A layer `_shared` reads the keys and values of an earlier layer of its type (kv_source_layers):
no k and v projections nor k norm, and no cache of its own (as kinds/gemma4.py's KV sharing).

The attention's own matmuls run over every key under `--attention full` (the eager path masks
the unpicked keys); `--attention causal` and decode steps count the min(i, B) keys a query
attends to (the `topk` mask of B). Every token stays cached: any may be picked."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Iterator, Optional

from ..records import dataclass
from ..declare import Min
from .base import ATTENTION, Part, Span
from .gemma4 import Gemma4Attention
from .masks import Mask
from .registry import Entry

TYPES = ("indexed", "indexed_pool", "indexed_shared", "indexed_pool_shared")


def _floor_sum(m: int, c: int) -> int:
    """Σ_{p=0..m} ⌊p/c⌋: q = ⌊m/c⌋ whole blocks of c contribute c·q(q − 1)/2, the last
    (m − q·c + 1) terms q each."""
    if m < 0:
        return 0
    q = m // c
    return c * q * (q - 1) // 2 + q * (m - q * c + 1)


@dataclass(frozen=True)
class IndexedAttention(Gemma4Attention):
    """Causal attention over the keys a weightless indexer picks (see the module docstring)."""

    index_heads: int = 1
    topk: int = 1
    pool_size: int = 1
    compression: int = 1
    local_tokens: int = 0
    sink_tokens: int = 0
    pool_source: bool = False

    @property
    def budget(self) -> int:
        return self.topk + self.local_tokens + self.sink_tokens

    def _scale(self) -> int:
        return 2 * self.index_heads * self.qk_dim  # one query's head scores against one key

    def indexer(self, x: Span) -> int:
        """The indexer's FLOPs over `x`: per sample of length L starting at S in a sequence of
        n, 2·H·d_h·max(0, L − B)·(n − S) for the token scores, and on pool layers
        2·H·d_h·max(0, L − P)·⌊(n − S)/c⌋ for the block scores (keys from the sample's first
        on, as the reference slices them)."""
        total, start = 0, 0
        for length in x.packed or (x.n,):
            keys = x.n - start
            total += max(0, length - self.budget) * keys
            if self.pool_source:
                total += max(0, length - self.pool_size) * (keys // self.compression)
            start += length
        return x.batch * self._scale() * total

    def forward(self, d: int, x: Span) -> list[Part]:
        # every pair is scored under `full` (FlopCounterMode's), the picked ones under causal
        parts = super().forward(d, x)
        flops = self.indexer(x)
        return parts + ([Part("indexer.scores", flops, ATTENTION)] if flops else [])

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        """Steps at positions first..last: the attention over the min(p, B) picked keys, and
        the indexer's scores of the new token against its p keys when p > B (Σ p), against
        the ⌊p/c⌋ block means when p > P on pool layers."""
        parts = super().decode(d, batch, first, last)
        lo = max(first, self.budget + 1)
        total = (lo + last) * (last - lo + 1) // 2 if last >= lo else 0
        if self.pool_source:
            lo = max(first, self.pool_size + 1)
            if last >= lo:
                total += _floor_sum(last, self.compression) - _floor_sum(lo - 1,
                                                                        self.compression)
        flops = batch * self._scale() * total
        return parts + ([Part("indexer.scores", flops, ATTENTION)] if flops else [])

    def breakpoints(self, lo: int, hi: int) -> Iterator[int]:
        points = set(super().breakpoints(lo, hi))
        points |= {p for p in (self.budget, self.pool_size if self.pool_source else 0)
                   if lo <= p <= hi}
        return iter(sorted(points))

    def period(self) -> Optional[int]:
        return self.compression if self.pool_source else super().period()

    def describe(self) -> str:
        return f"{super().describe()}, indexed ({self.budget} keys)"

    def notes(self) -> list[str]:
        out = [n for n in super().notes() if not n.startswith("KV-shared layers (Gemma 4)")]
        out.append("indexed attention (Kolibri 1.1): a weightless indexer scores each query that "
                   "sees more than topk + local + sink keys against every key with its first "
                   "index heads (2·H·d_h per pair), pool layers also against the block means "
                   "of compression keys; the eager attention scores every pair, the picked "
                   "ones count under --attention causal and in decode")
        if self.kv_shared:
            out.append("KV-shared indexed layers (Kolibri 1.1's kv_source_layers): no k and v "
                       "projections, the keys and values of an earlier layer, no cache of "
                       "their own")
        return out


@dataclass(frozen=True)
class IndexedAttentionConfig:
    """`indexed_attention:` in a model file (transformers Kolibri1_1Config's names)."""

    topk: Annotated[int, Min(1)] = 2048  # index_topk
    pool_size: Annotated[int, Min(1)] = 16384  # index_pool_size
    compression: Annotated[int, Min(1)] = 16  # index_compression
    heads: Annotated[int, Min(1)] = 12  # index_num_heads
    local_tokens: Annotated[int, Min(0)] = 128  # index_num_local_tokens
    sink_tokens: Annotated[int, Min(0)] = 8  # index_num_sink_tokens


def build(cfg: Any, name: str) -> IndexedAttention:
    from .attention_layers import build as attention

    block = cfg.indexed_attention
    if block is None:
        raise ValueError(f"{name} layers need an indexed_attention block")
    attn = attention(cfg, "full")
    fields = {f.name: getattr(attn, f.name) for f in dataclasses.fields(attn)}
    budget = block.topk + block.local_tokens + block.sink_tokens
    fields["mask"] = Mask("topk", budget)
    return IndexedAttention(**fields, kv_shared=name.endswith("_shared"),
                            index_heads=block.heads, topk=block.topk,
                            pool_size=block.pool_size, compression=block.compression,
                            local_tokens=block.local_tokens, sink_tokens=block.sink_tokens,
                            pool_source=name.startswith("indexed_pool"))


REGISTER = Entry(layer_types=TYPES, build=build,
                 blocks=(("indexed_attention", IndexedAttentionConfig),))
