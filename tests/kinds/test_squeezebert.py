"""SqueezeBERT's grouped-convolution layer by hand (kinds/squeezebert.py): d 8, 2 heads, MLP 16
wide; groups q 2, k 1, v 4, post 1, intermediate 2, output 4."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MODEL = """architecture: encoder-only
n_layers: 1
d_model: 8
n_heads: 2
norm_placement: post
final_norm: false
positions: learned
max_seq_len: 6
vocab_size: 10
head: none
layer_types: [squeezebert]
squeezebert: {q_groups: 2, k_groups: 1, v_groups: 4, post_attention_groups: 1,
              intermediate_groups: 2, output_groups: 4, intermediate_size: 16}
"""


def _path(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def test_params_and_flops(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path, MODEL), "--seq", "3", "--batch", "2")
    c = doc["params"]["components"]
    # weights out·in/g: q 8·8/2 = 32, k 64, v 16, post 64, inter 16·8/2 = 64, out 8·16/4 = 32
    assert [c[f"encoder.squeeze.{n}.weight"] for n in ("q", "k", "v", "post", "inter", "out")] \
        == [32, 64, 16, 64, 64, 32]
    # convs 272 + biases 8·5 + 16 = 56 + post norm 16 + the layer's norm 16 = 360 per layer;
    # tables 10·8 + 6·8 = 128
    assert doc["params"]["total"] == 360 + 128
    # T = 6 tokens: convs 2·6·272 = 3264; scores and values 2 · 2·(2·3·3)·8 = 576
    assert doc["flops"]["forward"] == 3264 + 576


def test_other_encoder_layers_still_need_d_ff(cli, tmp_path):
    text = MODEL.replace("layer_types: [squeezebert]", "layer_types: [bidirectional]")
    r = cli("model", _path(tmp_path, text))
    assert r.code == 2 and "d_ff is required" in r.err
