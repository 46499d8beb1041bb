"""LongT5's block-local attention pairs, worked by hand (the sweep checks the `full` count
against FlopCounterMode: tests/sweep/cases_hf_seq2seq.py)."""

from __future__ import annotations

import pytest

from flopcalc.kinds.block_local import BlockBandMask

pytestmark = pytest.mark.hand


@pytest.mark.parametrize("radius, n, full, causal", [
    # r = 2, b = 3: 7 tokens pad to 3 blocks of 3 queries × 9 keys = 81; the band:
    # (2·2 + 1)·7 − 2·3 = 29 (queries 1..7 see 3, 4, 5, 5, 5, 4, 3 keys)
    (2, 7, 81, 29),
    # one token: one block of 3 × 9 = 27; the band: itself alone
    (2, 1, 27, 1),
    # r = 0, b = 1: 5 blocks of 1 × 3 = 15; the band: each token itself, 5
    (0, 5, 15, 5),
    # r = 127 (LongT5's default), s = 4,096: 32 blocks of 128 × 384 = 1,572,864;
    # the band: 255·4,096 − 127·128 = 1,028,224
    (127, 4096, 1_572_864, 1_028_224),
])
def test_block_local_pairs(radius, n, full, causal):
    mask = BlockBandMask("bidirectional", radius=radius)
    assert mask.pairs(n, n, "full") == full
    assert mask.pairs(n, n, "causal") == causal


def test_pair_polynomial_matches_pairs_on_every_length():
    mask = BlockBandMask("bidirectional", radius=3)
    for convention in ("full", "causal"):
        for s in range(1, 30):
            a, b, c = mask.pair_polynomial(convention, s)
            end = mask.segment_end(s)
            for x in range(s, end + 1):  # one polynomial across the segment holding s
                assert a * x * x + b * x + c == mask.pairs(x, x, convention), (convention, s, x)
