"""Qwen4-Exp's kinds (flopcalc/kinds/qwen4_exp.py) by hand: the gated residual and the mixer,
a PLE layer's n-gram tables and projections, the QSA attention's tensors, and the keys a QSA
query keeps and the blocks its indexer scores."""

from __future__ import annotations

import pytest

from flopcalc.kinds.base import Span, total
from flopcalc.kinds.masks import Mask
from flopcalc.kinds.qwen4_exp import (GatedResidual, HyperMixer, NgramEmbedding, QsaAttention,
                                      block_sum, kept_sum)

pytestmark = pytest.mark.hand


def test_gated_residual_and_mixer_tensors():
    # N = 3 streams of d = 32, rank 8: hc_norm 3·32 = 96, down 96·8 = 768, up 8·96 = 768,
    # block_inject_weight 96·3 = 288 → 1,920; the mixer has no injection map → 1,632
    assert total(GatedResidual(3, 8).params(32, "hc")) == 1920
    assert total(HyperMixer(3, 8).params(32)) == 1632


def test_gated_residual_flops():
    # T = 5: 2·5·96·8 + 2·5·8·96 + 2·5·96·3 = 7,680 + 7,680 + 2,880 = 18,240
    assert total(GatedResidual(3, 8).flops(32, 5, "hc")) == 18240


def test_ngram_embedding_tensors():
    # ngram 3, 2 heads per order → 4 heads; the primes from 50: 53, 59, 61, 67 | 71, 73, 79, 83.
    # The second PLE layer (index 1) takes the second four: 306 rows, padded to a multiple of
    # 8 → 312, of E / heads = 8 / 4 = 2 → 624. N = 2 streams of d = 16 (32 channels):
    # key_proj 8·32 = 256, value_proj 8·16 = 128, three norms 3·32 = 96, conv 32·3 = 96
    # → 624 + 256 + 128 + 96 + 96 = 1,200
    ple = NgramEmbedding(streams=2, width=8, kernel=3, ngram=3, heads_per_ngram=2, vocab_base=50,
                         multiple=8, index=1)
    assert ple.rows == 312
    assert total(ple.params(16)) == 1200
    # the first layer's four primes sum to 240, already a multiple of 8
    assert NgramEmbedding(2, 8, 3, 3, 2, 50, 8, 0).rows == 240


def test_qsa_attention_tensors():
    # d = 32, 4 query heads of 8, 2 KV heads: q 32·32 = 1,024, k and v 32·16 = 512 each,
    # o 1,024, the output gate 32·32 = 1,024, q/k norms 8 + 8; the indexer: index_qk_proj
    # 32·(2 + 1)·16 = 1,536 and its two norms 16 + 16 → 5,680
    attn = QsaAttention(heads=4, kv_heads=2, qk_dim=8, v_dim=8, mask=Mask("causal"),
                        qk_norm="per_head", gate=True, index_heads=2, index_dim=16, ratio=2,
                        blocks=2)
    assert total(attn.params(32)) == 5680


def test_kept_keys_and_scored_blocks():
    # blocks of m = 2, k = 2 kept: a query seeing i keys keeps all while i ≤ (k + 1)·m − 1 = 5
    # (1 + … + 5 = 15), then k·m + (i mod 2): i = 6..10 → 4, 5, 4, 5, 4 = 22 → 37
    assert kept_sum(10, 2, 2) == 37
    # whole blocks seen: ⌊i/2⌋ for i = 1..10 → 0+1+1+2+2+3+3+4+4+5 = 25
    assert block_sum(10, 2) == 25
    # blocks of 3, top 1: i = 1..5 keep i (15); i = 6, 7 keep 3 + 0, 3 + 1 → 22
    assert kept_sum(7, 3, 1) == 22


def test_qsa_forward_counts_the_kept_keys_under_causal_and_every_key_under_full():
    attn = QsaAttention(heads=1, kv_heads=1, qk_dim=4, v_dim=4, mask=Mask("causal"),
                        index_heads=1, index_dim=2, ratio=2, blocks=2)
    causal = {p.name: p.value for p in attn.forward(8, Span(1, 10, 10, "causal"))}
    full = {p.name: p.value for p in attn.forward(8, Span(1, 10, 10, "full"))}
    # scores 2·h·d_qk per pair: 37 kept pairs → 2·4·37 = 296; every pair: 2·4·100 = 800
    assert causal["scores"] == 296 and full["scores"] == 800
    # the indexer scores its 25 visible blocks either way: 2·1·2·25 = 100
    assert causal["indexer.scores"] == full["indexer.scores"] == 100


def test_mixer_and_ngram_flops():
    # the mixer at T = 5, N = 3, d = 32, r = 8: 2·5·96·8 + 2·5·8·96 = 15,360 (no injection map)
    assert total(HyperMixer(3, 8).forward(32, Span(1, 5, 5))) == 15360
    # PLE at T = 5, N = 2 streams of d = 16, E = 8, K = 3: key 2·5·8·32 = 2,560, value
    # 2·5·8·16 = 1,280, the depthwise conv 2·5·32·3 = 960 → 4,800 (the tables are lookups)
    ple = NgramEmbedding(2, 8, 3, 3, 2, 50, 8, 0)
    assert total(ple.flops(16, 5)) == 4800
