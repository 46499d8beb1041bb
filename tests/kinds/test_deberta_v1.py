"""DeBERTa v1's disentangled attention reads 2·min(L, S) rows of its relative table per forward
(transformers 5.24 `models/deberta/modeling_deberta.py`, compute_attention_span), so its
position projections and c2p/p2c products stop growing at S; the crossover follows the slice.
Every expected value is worked by hand below."""

from __future__ import annotations

import pytest

from flopcalc.kinds.base import Span
from flopcalc.kinds.deberta_v1 import DisentangledAttentionV1
from flopcalc.kinds.masks import Mask

pytestmark = pytest.mark.hand

# d = 8, 2 heads of 4, S = 3: a table of 6 rows, c2p and p2c
KIND = DisentangledAttentionV1(heads=2, kv_heads=2, qk_dim=4, v_dim=4,
                               mask=Mask("bidirectional"), qkv_bias=True, k_bias=False,
                               out_bias=True, relative=True, span=3, c2p=True, p2c=True,
                               model_width=8)


def _parts(n: int) -> dict[str, int]:
    return {p.name: p.value for p in KIND.forward(8, Span(batch=1, n=n, source=n))}


def test_the_slice_grows_with_the_length_up_to_the_span():
    # L = 2: a = 2, 4 rows. pos_proj: 2 projections · 2·4·8·8 = 1,024;
    # c2p: 2·B·h·L·d_h·2a = 2·1·2·2·4·4 = 128; p2c the same
    parts = _parts(2)
    assert (parts["pos_proj"], parts["c2p"], parts["p2c"]) == (1024, 128, 128)


def test_the_slice_stops_at_the_span():
    # L = 5 > S = 3: a = 3, 6 rows. pos_proj: 2 · 2·6·8·8 = 1,536;
    # c2p: 2·1·2·5·4·6 = 480; p2c the same
    parts = _parts(5)
    assert (parts["pos_proj"], parts["c2p"], parts["p2c"]) == (1536, 480, 480)


def test_v1_biases():
    # q and v biased (8 each), k not; o with a bias; pos_key (no bias) 8·8, pos_query 8·8 + 8;
    # the 6 × 8 table: 3·64 + 2·8 + (64 + 8) + 64 + (64 + 8) + 48 = 464
    assert sum(p.value for p in KIND.params(8)) == 464
