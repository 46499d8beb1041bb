"""ProphetNet's n-gram decoder by hand (kinds/prophetnet.py): d 8, 2 heads of 4, MLP 12 wide,
vocabulary 10, one encoder and one decoder layer, 2 predicting streams, 3 relative position
buckets, checked as what it adds to the same model with a plain decoder. The sweep checks the
whole count against FlopCounterMode (tests/sweep/cases_encoders_r2.py)."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

PLAIN = """architecture: encoder-decoder
n_encoder_layers: 1
n_layers: 1
d_model: 8
n_heads: 2
d_ff: 12
mlp: plain
bias: true
norm: layernorm
norm_placement: post
final_norm: false
embedding_norm: true
positions: learned
max_seq_len: 16
vocab_size: 10
"""
NGRAM = PLAIN + """layer_types: [ngram]
ngram: {ngram: 2, num_buckets: 3}
"""


def _doc(cli, tmp_path, text, *args):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return run(cli, "model", str(path), *args)


def test_params(cli, tmp_path):
    plain = _doc(cli, tmp_path, PLAIN, "--seq", "3")["params"]["total"]
    # relative_pos_embeddings d → buckets·h: 8·6 + 6 = 54; ngram_embeddings 2·8 = 16
    assert _doc(cli, tmp_path, NGRAM, "--seq", "3")["params"]["total"] == plain + 54 + 16


def test_forward(cli, tmp_path):
    plain = _doc(cli, tmp_path, PLAIN, "--seq", "3")["flops"]["forward"]
    # s = S = 3, B = 1, N = 2 streams beyond the main one: q, k, v, o on the N·s = 6 extra
    # tokens 4·2·6·8·8 = 3,072; relative logits on all (1+N)·s = 9 tokens 2·9·8·6 = 864;
    # predicting pairs h·N·s·2s = 72, scores and values 2·2·72·4 = 1,152; the streams'
    # cross-attention q and o 2·2·6·8·8 = 1,536, its scores and values 2·2·h·6·S·d_h = 576,
    # their MLP 2·2·6·8·12 = 2,304; the head on the second predicting stream 2·3·8·10 = 480
    extra = 3_072 + 864 + 1_152 + 1_536 + 576 + 2_304 + 480
    assert _doc(cli, tmp_path, NGRAM, "--seq", "3")["flops"]["forward"] == plain + extra
