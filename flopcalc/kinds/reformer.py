"""`reformer`: a Reformer layer (Kitaev et al. 2020, "Reformer: The Efficient Transformer";
transformers 5.24 `models/reformer/modeling_reformer.py` ReformerLayer, LSHSelfAttention,
LocalSelfAttention, ChunkReformerFeedForward) and the model's reversible output
(ReformerEncoder's LayerNorm over 2d, ReformerOnlyLMHead).

Reversible layers (§3): the model runs two d-wide streams, Y₁ = X₁ + Attn(LN(X₂)),
Y₂ = X₂ + FF(LN(Y₁)); each layer's matmuls are those of one attention and one MLP on d. After
the last layer the two streams are concatenated: a LayerNorm over 2d and the head 2d → V (with
its bias, and a second `lm_head.bias` of V held beside it) on the s real tokens.

The model pads the sequence with pad tokens to P, the next multiple of the least common
multiple L of the layers' chunk lengths, when s is not one and s exceeds the smallest chunk
length (ReformerModel.forward, outside training); otherwise P = s. Every layer's matmuls run on
P tokens. Per layer, heads h of d_h (h·d_h need not be d), T = B·P:

- `local` (LocalSelfAttention): q, k, v (T×d)·(d×h·d_h) → 3·2·T·d·h·d_h; with P ≤ c (its
  chunk length) every query scores every key, 2·B·h·P²·d_h for scores and again for values;
  above, chunks of c queries against (before + 1 + after)·c keys: 2·B·h·P·(nb+1+na)·c·d_h each;
- `lsh` (LSHSelfAttention, §2): one shared query-key projection and v, 2·2·T·d·h·d_h; with
  P ≤ c, full attention as above; above, the hashing rotations
  (B·h·P×d_h)·(d_h×n_hashes·r/2) → 2·B·h·P·d_h·n_hashes·r/2 (r: `num_buckets`, or the sum of
  its factors; when unset, what `_set_num_buckets` derives from P), then every hash round's
  sorted chunks as the local case: 2·B·h·n_hashes·P·(nb+1+na)·c·d_h for scores and for values;
- the output (T×h·d_h)·(h·d_h×d) and the MLP (T×d)·(d×f), (T×f)·(f×d), with biases.

Which keys an LSH query scores depends on the data (its bucket), but how many does not: the
chunks have fixed sizes, so the matmuls FlopCounterMode counts are set by the shapes. flopcalc
counts those matmuls under either `--attention` convention (the pairs a hash admits are not
known before the forward). The layer's own norm is the attention's LayerNorm; the kind holds
the MLP's.
"""

from __future__ import annotations

from math import lcm
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (ATTENTION, ELEMENTWISE, LAST, LAYERS, NORMS, REPLICATED, ROW, VOCAB,
                   WEIGHTS, Kind, Part, Published, Span, linear)
from .mlp import ACTIVATION_FLOPS
from .registry import Entry

_LAYERNORM = 7  # per element: mean, variance (subtract, square, sum), normalise, scale, shift


def num_buckets(p: int, chunk: int, max_positions: int) -> list[int]:
    """The bucket factors `LSHSelfAttention._set_num_buckets` sets when `num_buckets` is unset:
    2^⌊log₂(2·P/c)⌋ buckets, split in two factors above 2·max(⌊√(max_positions/c)⌋, c)."""
    power = (2 * (p // chunk)).bit_length() - 1
    limit = 2 * max(int((max_positions // chunk) ** 0.5), chunk)
    if 2 ** power > limit:
        return [2 ** (power // 2), 2 ** (power - power // 2)]
    return [2 ** power]


@dataclass(frozen=True)
class ReformerLayer(Kind):
    """One Reformer layer: `attention` "lsh" or "local", `heads` of `head_dim`, chunks of
    `chunk` with `before`/`after` neighbouring chunks, `hashes` rounds of `buckets` (factors;
    empty: derived from the length), the sequence padded to a multiple of `pad` above
    `min_chunk`, an MLP `d_ff` wide of `activation`."""

    attention: str
    heads: int
    head_dim: int
    chunk: int
    before: int
    after: int
    pad: int
    min_chunk: int
    d_ff: int
    activation: str = "relu"
    hashes: int = 1
    buckets: tuple[int, ...] = ()
    max_positions: int = 4096
    slot = "reformer"
    bidirectional = True
    holds_mlp = True  # the layer's MLP (with its LayerNorm) is the kind's own

    def padded(self, n: int) -> int:
        """P: what ReformerModel pads n to (a multiple of `pad` above the smallest chunk)."""
        if n % self.pad == 0 or n <= self.min_chunk:
            return n
        return -(-n // self.pad) * self.pad

    def rotations(self, p: int) -> int:
        """r/2: the hash rotations per round at a padded length p (r the buckets, or the sum
        of their factors)."""
        factors = self.buckets or tuple(num_buckets(p, self.chunk, self.max_positions))
        return sum(factors) // 2

    @property
    def width(self) -> int:
        return self.heads * self.head_dim

    def params(self, d: int, active: bool = False) -> list[Part]:
        w = self.width
        names = ("query_key", "value") if self.attention == "lsh" else ("query", "key", "value")
        parts: list[Part] = []
        for name in names:
            parts += linear(name, d, w, False)
        parts += linear("output", w, d, False, ROW)
        parts += [Part(f"ffn_norm.{x}", d, LAYERS, (d,), REPLICATED, module="ffn_norm")
                  for x in ("weight", "bias")]
        return parts + linear("up", d, self.d_ff, True) + linear("down", self.d_ff, d, True, ROW)

    def forward(self, d: int, x: Span) -> list[Part]:
        p, w, f = self.padded(x.n), self.width, self.d_ff
        t = x.batch * p  # every matmul of the layer runs on the padded tokens
        projections = 2 if self.attention == "lsh" else 3
        # (T×d)·(d×h·d_h) per projection; the output (T×h·d_h)·(h·d_h×d); the MLP (T×d)·(d×f)
        # and (T×f)·(f×d)
        parts = [Part("qkv", projections * 2 * t * d * w, WEIGHTS),
                 Part("o", 2 * t * w * d, WEIGHTS),
                 Part("up", 2 * t * d * f, WEIGHTS), Part("down", 2 * t * f * d, WEIGHTS)]
        h = x.batch * self.heads
        if p <= self.chunk:  # full attention: (P×d_h)·(d_h×P), (P×P)·(P×d_h) per head
            pairs = p * p
        else:  # each round's P/c chunks of c queries against (nb + 1 + na)·c keys
            rounds = self.hashes if self.attention == "lsh" else 1
            pairs = rounds * p * (self.before + 1 + self.after) * self.chunk
            if self.attention == "lsh":  # (P×d_h)·(d_h×rounds·r/2) per head
                parts.append(Part("hash", 2 * h * p * self.head_dim * self.hashes
                                  * self.rotations(p), ATTENTION))
        return parts + [Part("scores", 2 * h * pairs * self.head_dim, ATTENTION),
                        Part("values", 2 * h * pairs * self.head_dim, ATTENTION)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        t = x.batch * self.padded(x.n)
        f = self.d_ff
        return [Part("elementwise.bias", t * (f + d), ELEMENTWISE),
                Part("elementwise.activation", t * f * ACTIVATION_FLOPS.get(self.activation, 0),
                     ELEMENTWISE),
                Part("elementwise.ffn_norm", t * d * _LAYERNORM, ELEMENTWISE),
                Part("elementwise.residual", 2 * t * d, ELEMENTWISE)]

    def count_period(self) -> Optional[int]:
        return self.pad  # the padding: one polynomial on each block of `pad` lengths at most

    def tp_units(self) -> int:
        return self.heads

    def published(self, d: int) -> Published:
        w = self.width
        return Published(heads=self.heads, kv_heads=self.heads, head_dim=self.head_dim,
                         qk_width=w, v_width=w, kv_width=w, kv_kind="mha", ffn="plain",
                         ffn_widths=(self.d_ff,),
                         departures=(f"Reformer's {self.attention} attention over chunks of "
                                     f"{self.chunk} (the sequence padded to {self.pad})",))

    def describe(self) -> str:
        what = (f"LSH attention ({self.hashes} hash round(s))" if self.attention == "lsh"
                else "local attention")
        return f"Reformer layer, {what}, chunks of {self.chunk:,}"

    def notes(self) -> list[str]:
        line = (f"Reformer {self.attention} layers: chunks of {self.chunk:,} queries against "
                f"{self.before + 1 + self.after} chunk(s) of keys once the (padded) sequence "
                f"exceeds {self.chunk:,}, full attention below; the sequence padded to a "
                f"multiple of {self.pad:,} above {self.min_chunk:,} tokens, every matmul of the "
                "layer on the padded tokens")
        if self.attention == "lsh":
            line += ("; LSH: one shared query-key projection, the hashing rotations counted, "
                     "the chunks' matmuls counted whichever keys the buckets pick (the same "
                     "count for any data), under either --attention convention")
        return [line]


@dataclass(frozen=True)
class ReformerOutput(Kind):
    """The reversible stack's end: a LayerNorm over the two concatenated d-wide streams and the
    LM head (2d → V, with its bias, and `lm_head.bias`, V, held beside it), on the s real
    tokens (a model-level kind run before the model's own head, which is none)."""

    vocab: int
    slot = "reformer_head"
    before_head = True  # counting.model runs it on the stack's output

    def params(self, d: int, active: bool = False) -> list[Part]:
        v = self.vocab
        return [Part(f"norm.{x}", 2 * d, NORMS, (2 * d,), REPLICATED, LAST, module="norm")
                for x in ("weight", "bias")] + [
            Part("decoder.weight", 2 * d * v, LAYERS, (2 * d, v), VOCAB, LAST, matmul=True,
                 module="decoder"),
            Part("decoder.bias", v, LAYERS, (v,), VOCAB, LAST, module="decoder"),
            Part("bias", v, LAYERS, (v,), VOCAB, LAST, module="")]

    def forward(self, d: int, x: Span) -> list[Part]:
        # (T×2d)·(2d×V) → 2·T·2d·V on the real tokens (the padding is cut before the head)
        return [Part("decoder", 2 * x.tokens * 2 * d * self.vocab, WEIGHTS, role=VOCAB,
                     weight_shape=(2 * d, self.vocab))]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return [Part("elementwise.norm", x.tokens * 2 * d * _LAYERNORM, ELEMENTWISE),
                Part("elementwise.bias", x.tokens * self.vocab, ELEMENTWISE)]

    def describe(self) -> str:
        return f"Reformer output: LayerNorm(2d) and head 2d → {self.vocab:,}"

    def notes(self) -> list[str]:
        return ["Reformer: the two reversible streams concatenated, a LayerNorm over 2d and "
                "the LM head (T×2d)·(2d×V) on the real tokens; lm_head.bias held beside the "
                "decoder's own bias"]


@dataclass(frozen=True)
class ReformerConfig:
    """`reformer:` in a model file: the attention's heads and head width, each kind's chunk
    length and neighbouring chunks, the LSH hash rounds and buckets (a list of factors; empty:
    derived from the length as transformers does, with `max_position_embeddings`), the MLP's
    width and the vocabulary of the 2d-wide head. Layers name `reformer_lsh` or
    `reformer_local` in `layer_types`."""

    num_attention_heads: Annotated[int, Min(1)]
    attention_head_size: Annotated[int, Min(1)]
    feed_forward_size: Annotated[int, Min(1)]
    vocab_size: Annotated[int, Min(1)]
    lsh_attn_chunk_length: Annotated[int, Min(1)] = 64
    local_attn_chunk_length: Annotated[int, Min(1)] = 64
    lsh_num_chunks_before: Annotated[int, Min(0)] = 1
    lsh_num_chunks_after: Annotated[int, Min(0)] = 0
    local_num_chunks_before: Annotated[int, Min(0)] = 1
    local_num_chunks_after: Annotated[int, Min(0)] = 0
    num_hashes: Annotated[int, Min(1)] = 1
    num_buckets: Optional[list[int]] = None  # the factors (one for an int)
    max_position_embeddings: Annotated[int, Min(1)] = 4096


LAYER_TYPES = ("reformer_lsh", "reformer_local")


def build(cfg: Any, name: str) -> ReformerLayer:
    block = cfg.reformer
    if block is None:
        raise ValueError("reformer layers need a reformer block (heads, head size, chunk "
                         "lengths, feed_forward_size, vocab_size)")
    kind = name.split("_", 1)[1]
    kinds = {t.split("_", 1)[1] for t in (cfg.layer_types or ()) if t in LAYER_TYPES}
    chunks = {"lsh": block.lsh_attn_chunk_length, "local": block.local_attn_chunk_length}
    used = [chunks[k] for k in sorted(kinds & set(chunks))] or [chunks[kind]]
    buckets = block.num_buckets
    factors = tuple(buckets or ())
    if any(b < 2 or b % 2 for b in factors):
        raise ValueError(f"reformer.num_buckets={buckets}: every factor must be even and at "
                         "least 2")
    lsh = kind == "lsh"
    return ReformerLayer(
        attention=kind, heads=block.num_attention_heads, head_dim=block.attention_head_size,
        chunk=chunks[kind],
        before=block.lsh_num_chunks_before if lsh else block.local_num_chunks_before,
        after=block.lsh_num_chunks_after if lsh else block.local_num_chunks_after,
        pad=lcm(*used), min_chunk=min(used), d_ff=block.feed_forward_size,
        activation=cfg.activation or "relu", hashes=block.num_hashes, buckets=factors,
        max_positions=block.max_position_embeddings)


def output(cfg: Any) -> Optional[ReformerOutput]:
    return ReformerOutput(cfg.reformer.vocab_size) if cfg.reformer is not None else None


REGISTER = Entry(layer_types=LAYER_TYPES, build=build,
                 blocks=(("reformer", ReformerConfig),), frontend=output)
