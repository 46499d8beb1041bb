"""Bytes: the KV cache, and the memory traffic of prefill and decode steps (the byte model of
`flopcalc infer`).

- KV cache: each layer keeps K and V of its KV heads (h_kv·(d_qk + d_v) values per token), or
  MLA's latent and rotary key (r_kv + d_rope), for the tokens its mask still needs: all of them,
  the last w of a window layer, at most one block of a chunked layer.
- A decode step reads every weight once (of a lookup table, an untied token embedding or a
  position table, only the rows its B tokens use; a tied table is read in full by the LM head),
  reads the K/V of the keys each layer attends over and writes the new token's K/V.
- Of a mixture of experts a step reads only the experts its tokens are routed to: k per layer
  when all B tokens pick the same ones, min(E, B·k) when all differ, and E·(1 − (1 − k/E)^B)
  on average under uniform routing, which the roofline uses.
- The prefill moves at least the weights (experts as for B·P tokens) and writes the prompt's
  K/V. Activations are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..models.spec import ModelSpec, Moe
from .attention import kv_values, kv_values_decompressed
from .masks import cached_tokens, sum_visible_keys
from .mlp import expert_params
from .model import model_params
from .parts import EMBEDDING, Part, merged, total

BYTES = "bytes"
# Storage bits per element. The scale factors of quantised formats (a few bytes per tensor, row
# or block) are not counted.
DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
EXACT_ROUTING_BATCH = 65_536  # beyond this many tokens (1 − k/E)^B is taken in floating point


def storage_bytes(elements: int | Fraction, dtype: str) -> Fraction:
    """Bytes of `elements` values stored as `dtype` (int4: half a byte each)."""
    return Fraction(elements) * DTYPE_BITS[dtype] / 8


def kv_bytes_per_token(spec: ModelSpec, nbytes: int, decompressed: bool = False) -> int:
    """Bytes every layer adds to the cache per token (before a window evicts any);
    `decompressed`: a cache of every query head's own key and value (multi-head attention, or
    MLA's keys and values decompressed)."""
    values = kv_values_decompressed if decompressed else kv_values
    return sum(g.count * values(g.layer.attention) * nbytes for g in spec.groups("decoder"))


def kv_cache_parts(spec: ModelSpec, tokens: int, batch: int, nbytes: int,
                   decompressed: bool = False) -> list[Part]:
    """The cache of `batch` sequences after `tokens` tokens each, per kind of layer."""
    values = kv_values_decompressed if decompressed else kv_values
    parts = []
    for g in spec.groups("decoder"):
        mask = g.layer.attention.mask
        held = cached_tokens(mask, tokens)
        name = "decoder.full" if not mask.local else f"decoder.{mask.kind}_{mask.size}"
        parts.append(Part(name, batch * g.count * held * nbytes * values(g.layer.attention),
                          BYTES))
    return merged(parts)


def kv_read_bytes(spec: ModelSpec, first: int, last: int, batch: int, nbytes: int) -> int:
    """K/V bytes the decode steps at positions first..last read: each layer, the keys its mask
    lets each step's query see."""
    return batch * nbytes * sum(
        g.count * kv_values(g.layer.attention) * sum_visible_keys(g.layer.attention.mask,
                                                                    first, last)
        for g in spec.groups("decoder"))


@dataclass(frozen=True)
class ExpertReads:
    """Routed experts read per MoE layer by one forward over some tokens."""

    least: int  # every token picks the same k
    expected: Fraction  # uniform routing: E·(1 − (1 − k/E)^tokens)
    most: int  # every token picks different ones: min(E, tokens·k)
    exact: bool  # False when `expected` was computed in floating point


def expert_reads(moe: Moe, tokens: int) -> ExpertReads:
    e, k = moe.experts, moe.top_k
    if tokens <= EXACT_ROUTING_BATCH:
        expected = e - Fraction((e - k) ** tokens, e ** (tokens - 1))
        exact = True
    else:
        expected = Fraction(e * (1 - (1 - k / e) ** tokens)).limit_denominator(10**6)
        exact = False
    return ExpertReads(k, expected, min(e, tokens * k), exact)


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
    fixed = 0
    for p in model_params(spec):
        lookup = p.kind == EMBEDDING and len(p.shape) == 2 and (
            p.name.endswith(("positions", "token_types"))
            or (p.name.endswith("embed.tokens") and not spec.tie_embeddings))
        fixed += min(tokens, p.shape[0]) * p.shape[1] if lookup else p.value
    least = most = fixed
    expected, exact = Fraction(fixed), True
    for g in spec.groups():
        if isinstance(g.layer.mlp, Moe):
            per_expert = expert_params(g.layer.mlp, spec.d_model)
            reads = expert_reads(g.layer.mlp, tokens)
            unused = g.count * g.layer.mlp.experts * per_expert  # counted in `fixed` above
            least += g.count * reads.least * per_expert - unused
            most += g.count * reads.most * per_expert - unused
            expected += g.count * reads.expected * per_expert - unused
            exact = exact and reads.exact
    return WeightReads(least, expected, most, exact)


def weight_params(spec: ModelSpec) -> int:
    """Every stored parameter (a tied LM head counts once)."""
    return total(model_params(spec))
