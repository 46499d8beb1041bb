"""`ngram`: ProphetNet's n-gram self-attention (Qi et al. 2020, "ProphetNet: Predicting Future
N-gram for Sequence-to-Sequence Pre-training", §2.2; transformers 5.24
`models/prophetnet/modeling_prophetnet.py` ProphetNetNgramSelfAttention, ProphetNetDecoderLayer).

The decoder runs 1 + N streams of its s tokens through every layer: the main stream and N
predicting streams (N = `ngram`). Per layer, B sequences, h heads of d_h = d/h:

- q, k, v and o (with biases) on all (1 + N)·s tokens: 4 · 2·B·(1+N)·s·d²;
- the main stream: each of s queries against the s main keys, scores and values
  2·B·h·s²·d_h each, plus its relative position logits, `relative_pos_embeddings`
  (d → buckets·h, with a bias) on the s main tokens: 2·B·s·d·buckets·h;
- each predicting stream: s queries against 2s keys (the main stream's and its own), scores and
  values 2·B·h·s·2s·d_h each per stream, and the relative position logits on its s tokens;
- the rest of the layer also runs on every stream: the cross-attention's q and o and its scores
  and values against the S source tokens, and the MLP (f wide). flopcalc's decoder layer
  counts those for the main stream (and the cross-attention's k, v, which run once on the
  source); this kind adds the N predicting streams' share: 2·2·B·N·s·d² (q, o),
  2·2·B·h·N·s·S·d_h (scores, values), 2·2·B·N·s·d·f (the MLP).

The matmuls are counted as run (the causal masks add −∞, the products keep their shapes), under
either `--attention` convention. A decode step is counted as the main stream's attention only
(the predicting streams a generate also runs are not).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from . import attention_layers
from .attention import Attention
from .masks import Mask
from .base import (ATTENTION, EMBEDDING, FIRST, REPLICATED, VOCAB, WEIGHTS, Kind, Part, Span,
                   gemm, linear)
from .registry import Entry


@dataclass(frozen=True)
class NgramAttention(Attention):
    """ProphetNet's self-attention over the main and `ngram` predicting streams, with relative
    position logits over `buckets` buckets; `d_ff`, the decoder MLP's width (the predicting
    streams' share of it is counted here)."""

    ngram: int = 2
    buckets: int = 32
    d_ff: int = 0
    slot = "ngram_attn"  # its span carries the source length (the streams' cross-attention)

    def params(self, d: int, active: bool = False) -> list[Part]:
        return super().params(d, active) + linear("relative_pos_embeddings", d,
                                                  self.buckets * self.heads, True)

    def forward(self, d: int, x: Span) -> list[Part]:
        s, n, b = x.n, self.ngram, x.batch
        t = b * s * (1 + n)  # every stream's tokens
        h, d_h = self.heads, self.qk_dim
        rel = self.buckets * self.heads
        main, predict = h * s * s, h * n * s * 2 * s  # pairs: s² main, 2s keys per prediction
        return [
            gemm("q", t, d, self.d_q), gemm("k", t, d, self.d_k), gemm("v", t, d, self.d_v),
            gemm("o", t, self.d_o, d),
            # (B·(1+N)·s×d)·(d×buckets·h): the main stream's and each predicting stream's
            gemm("relative_pos_embeddings", t, d, rel),
            Part("scores", 2 * b * (main + predict) * d_h, ATTENTION),
            Part("av", 2 * b * (main + predict) * d_h, ATTENTION),
            # the predicting streams through the cross-attention (q, o; scores and values
            # against the S source tokens) and the MLP
            Part("streams.cross_qo", 2 * 2 * b * n * s * d * d, WEIGHTS),
            Part("streams.cross_attention", 2 * 2 * b * h * n * s * x.source * d_h, ATTENTION),
            Part("streams.mlp", 2 * 2 * b * n * s * d * self.d_ff, WEIGHTS)]

    def pair_terms(self) -> list[tuple[int, Any]]:
        """Every pair as run (the masks keep the shapes): the main stream's s², each
        predicting stream's 2s² and its s·S against the source (S = s in the crossover)."""
        full = Mask("bidirectional")
        return [(self.per_pair * (1 + 3 * self.ngram), full)]

    def describe(self) -> str:
        return f"ProphetNet n-gram self-attention ({self.ngram} predicting streams)"

    def notes(self) -> list[str]:
        return super().notes() + [
            f"ProphetNet: the decoder runs the main stream and {self.ngram} predicting "
            "stream(s) of s tokens through every layer (each predicting stream's queries "
            "against 2s keys, relative position logits per stream); the predicting streams' "
            "cross-attention and MLP are counted with the self-attention; matmuls as run "
            "(masks keep the shapes); a decode step counts the main stream only"]


@dataclass(frozen=True)
class NgramStreams(Kind):
    """The decoder's n-gram streams at the model level: `ngram_embeddings` (N × d, added to
    each predicting stream's input, a lookup), and the LM head on the N predicting streams'
    tokens, of which flopcalc's head counts one stream's s: the other N − 1 here,
    (T×d)·(d×V) each (the main stream reaches no head)."""

    ngram: int
    vocab: int
    slot = "ngram_streams"
    before_head = True  # counted on the decoder's output tokens

    def params(self, d: int, active: bool = False) -> list[Part]:
        return [Part("ngram_embeddings", self.ngram * d, EMBEDDING, (self.ngram, d), REPLICATED,
                     FIRST, lookup=True)]

    def forward(self, d: int, x: Span) -> list[Part]:
        return [Part("lm_head", 2 * (self.ngram - 1) * x.tokens * d * self.vocab, WEIGHTS,
                     role=VOCAB, weight_shape=(d, self.vocab))]

    def describe(self) -> str:
        return f"ProphetNet's {self.ngram} predicting streams at the head"

    def notes(self) -> list[str]:
        return [f"ProphetNet: the LM head runs on the {self.ngram} predicting streams' tokens "
                "(not the main stream's): the streams beyond the first counted here"]


@dataclass(frozen=True)
class NgramConfig:
    """`ngram:` in a model file: the predicting streams (`ngram`) and the relative position
    buckets. Decoder layers name `ngram` in `layer_types`."""

    ngram: Annotated[int, Min(1)] = 2
    num_buckets: Annotated[int, Min(1)] = 32


def build(cfg: Any, name: str) -> Attention:
    base = attention_layers.build(cfg, "full")
    if type(base) is not Attention:
        raise ValueError("ngram layers are softmax attention, not latent_attention")
    block = cfg.ngram or NgramConfig()
    return NgramAttention(**{f.name: getattr(base, f.name) for f in fields(base)},
                          ngram=block.ngram, buckets=block.num_buckets, d_ff=cfg.d_ff or 0)


def streams(cfg: Any) -> Optional[NgramStreams]:
    block = cfg.ngram
    return NgramStreams(block.ngram, cfg.vocab_size) if block is not None else None


REGISTER = Entry(layer_types=("ngram",), build=build, blocks=(("ngram", NgramConfig),),
                 frontend=streams)
