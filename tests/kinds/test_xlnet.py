"""XLNet's relative attention (content stream) by hand (kinds/xlnet.py): d 8, 2 heads of 4,
MLP 12 wide, vocabulary 10, one layer, the head tied with its own bias. The sweep checks the
same arithmetic against FlopCounterMode (tests/sweep/cases_seq2seq_leftovers.py)."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MODEL = """architecture: encoder-only
n_layers: 1
d_model: 8
n_heads: 2
d_ff: 12
mlp: plain
norm: layernorm
norm_placement: post
final_norm: false
positions: none
vocab_size: 10
head: lm
lm_head_bias: 1
bias: {qkv: false, attn_out: false, mlp: true}
layer_types: [xlnet]
xlnet: {attn_type: bi}
"""


def _path(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def test_params(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path, MODEL), "--seq", "3")
    c = doc["params"]["components"]
    assert c["encoder.attn.r.weight"] == 64 and c["encoder.attn.seg_embed"] == 2 * 8
    # q, k, v, o 4·8·8 = 256 (no biases), r 8·8 = 64, r_w, r_r, r_s 3·(2·4) = 24, seg_embed
    # 2·8 = 16 → 360; two LayerNorms 32; up 8·12 + 12 = 108, down 12·8 + 8 = 104 → 604;
    # the token table 10·8 = 80 (the head tied to it) and the head's bias 10
    assert doc["params"]["total"] == 604 + 90


@pytest.mark.parametrize("attn_type, positions", [("bi", 6), ("uni", 4)])
def test_forward(cli, tmp_path, attn_type, positions):
    text = MODEL.replace("attn_type: bi", f"attn_type: {attn_type}")
    doc = run(cli, "model", _path(tmp_path, text), "--seq", "3", "--batch", "2")
    # s = 3, B = 2, T = 6: q, k, v, o 4·2·6·8·8 = 3,072; MLP 2·2·6·8·12 = 2,304; head
    # 2·6·8·10 = 960; content scores and AV 2 · 2·B·h·s²·d_h = 2 · 2·2·2·9·4 = 576;
    # R = 2s = 6 (bi) or s + 1 = 4 (uni) position rows per sequence: r 2·B·R·8·8 = 256·R,
    # position scores 2·B·h·s·R·d_h = 96·R
    assert doc["flops"]["forward"] == 3_072 + 2_304 + 960 + 576 + 352 * positions
