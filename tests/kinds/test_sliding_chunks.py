"""Longformer's sliding-chunk layer by hand (kinds/sliding_chunks.py): d 8, 2 heads of 4, MLP
12 wide; layer 0 with attention_window 4 (w = 2), layer 1 with 8 (w = 4); the sequence padded
to a multiple of 8. The sweep checks the same arithmetic against FlopCounterMode
(tests/sweep/cases_seq2seq_leftovers.py)."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MODEL = """architecture: encoder-only
n_layers: 2
d_model: 8
n_heads: 2
norm: layernorm
norm_placement: post
final_norm: false
positions: learned
max_seq_len: 16
vocab_size: 10
head: none
layer_types: [sliding_chunks@4, sliding_chunks@8]
sliding_chunks: {pad_to: 8, intermediate_size: 12}
"""


def _path(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def test_params(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path, MODEL), "--seq", "5")
    c = doc["params"]["components"]
    # the global copies are held though no global token runs them: 8·8 in each of 2 layers
    assert c["encoder.longformer.q_global.weight"] == 2 * 64
    # per layer: q, k, v, q_global, k_global, v_global, o 7·(64 + 8) = 504, the attention
    # norm 16, up 8·12 + 12 = 108, down 12·8 + 8 = 104, the layer's output norm 16 → 748;
    # tables: tokens 10·8 + positions 16·8 = 208
    assert doc["params"]["total"] == 2 * 748 + 208


def test_forward_pads_to_the_window(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path, MODEL), "--seq", "5", "--batch", "2")
    # 5 tokens pad to P = 8, T = 16 rows per layer: q, k, v, o 4·2·16·8·8 = 8192, MLP
    # 2·2·16·8·12 = 6144 → 14,336 per layer.
    # layer 0 (w 2), per head and sequence: scores (P/w − 1)·2·(2w)²·d_h = 3·2·16·4 = 384,
    # values 2·(P/w)·w·3w·d_h = 2·4·2·6·4 = 384; × 2 heads × 2 sequences → 3,072
    # layer 1 (w 4): scores 1·2·64·4 = 512, values 2·2·4·12·4 = 768 → 4·1,280 = 5,120
    assert doc["flops"]["forward"] == 2 * 14_336 + 3_072 + 5_120
    causal = run(cli, "model", _path(tmp_path, MODEL), "--seq", "5", "--batch", "2",
                 "--attention", "causal")
    # the band at 5 tokens: layer 0 (2·2 + 1)·5 − 2·3 = 19 pairs, layer 1 25 (5 ≤ w + 1);
    # 2·pairs·d_h each for scores and values, × 4 head-sequences
    assert causal["flops"]["forward"] == 2 * 14_336 + 4 * 2 * 2 * 4 * (19 + 25)


def test_a_window_that_does_not_tile_the_padding_is_refused(cli, tmp_path):
    text = MODEL.replace("sliding_chunks@4,", "sliding_chunks@6,")
    r = cli("model", _path(tmp_path, text))
    assert r.code == 2 and "pad_to=8 is not a multiple of 6" in r.err
