"""Whisper's audio front end by hand (kinds/audio_frontend.py), with the encoder-decoder features
Whisper needs: a key projection without bias, the encoder's own heads, MLP width and position
table.

d 4, 2 mel bins; an encoder of 1 layer (1 head of 4, MLP 4) over a 3-row table, a decoder of 1
layer (2 heads of 2, MLP 8) over a 5-row table; LayerNorms before each sublayer and at the end
of each stack; a tied vocabulary of 8. `--seq` is the encoder's positions, the input 2·seq mel
frames.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

WHISPER = """architecture: encoder-decoder
n_encoder_layers: 1
n_layers: 1
d_model: 4
n_heads: 2
d_ff: 8
encoder_n_heads: 1
encoder_d_ff: 4
bias: {qkv: true, attn_out: true, mlp: true, k: false}
positions: learned
max_seq_len: 5
encoder_max_seq_len: 3
default_seq: 3
vocab_size: 8
audio_frontend: {mel_bins: 2}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "whisper.yaml"
    path.write_text(WHISPER)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # conv1 4 × 2 × 3 = 24 and its bias 4; conv2 4 × 4 × 3 = 48 and 4
    assert (c["encoder.frontend.conv1.weight"], c["encoder.frontend.conv1.bias"],
            c["encoder.frontend.conv2.weight"], c["encoder.frontend.conv2.bias"]) == (
        24, 4, 48, 4)
    # the encoder's table 3 × 4, the decoder's 5 × 4; one token table (the decoder's), tied
    assert (c["encoder.embed.positions"], c["embed.positions"], c["embed.tokens"]) == (12, 20, 32)
    assert "encoder.embed.tokens" not in c and "lm_head.weight" not in c
    # q, v and o have biases, k none, in self- and cross-attention
    for slot in ("encoder.attn", "decoder.attn", "decoder.cross_attn"):
        assert f"{slot}.q.bias" in c and f"{slot}.v.bias" in c and f"{slot}.k.bias" not in c
    # the encoder's MLP 4 × 4 + 4, 4 × 4 + 4; the decoder's 4 × 8 + 8, 8 × 4 + 4
    assert (c["encoder.mlp.up.weight"], c["decoder.mlp.up.weight"]) == (16, 32)
    assert sum(c.values()) == 544


def test_forward(cli, model):
    doc = run(cli, "model", model, "--seq", 7, "--batch", 2)
    f = doc["flops"]["components"]
    # 14 mel frames per sequence: conv1 2·2·14·4·(2·3) = 1344; conv2 over 7 positions
    # 2·2·7·4·(4·3) = 1344
    assert (f["encoder.frontend.conv1"], f["encoder.frontend.conv2"]) == (1344, 1344)
    # the encoder: 1 head of 4 over 49 pairs, 2·1·2·49·4 = 784; its MLP 2·14·4·4 = 448; the
    # decoder: 2 heads of 2, 2·2·2·49·2 = 784; its MLP 2·14·4·8 = 896
    assert (f["encoder.attn.scores"], f["encoder.mlp.up"], f["decoder.attn.scores"],
            f["decoder.mlp.up"]) == (784, 448, 784, 896)
    assert any(line.startswith("Whisper audio front end: --seq is the encoder's positions")
               for line in doc["conventions"])


def test_frontend_runs_over_the_encoder_length(cli, model):
    # --tgt-seq 3 shortens the decoder only: conv1 and conv2 still run over 7 positions
    # (1344 each, as above); the decoder's MLP 2·2·3·4·8 = 384
    f = run(cli, "model", model, "--seq", 7, "--tgt-seq", 3, "--batch", 2)["flops"][
        "components"]
    assert (f["encoder.frontend.conv1"], f["encoder.frontend.conv2"], f["decoder.mlp.up"]) == (
        1344, 1344, 384)


def test_elementwise(cli, model):
    f = run(cli, "model", model, "--seq", 7, "--batch", 2, "--elementwise")["flops"][
        "components"]
    # bias adds over conv1's 14 and conv2's 7 outputs of 4 channels, 2 sequences: 168; GELU 9 each
    assert (f["encoder.frontend.elementwise.bias"],
            f["encoder.frontend.elementwise.activation"]) == (168, 1512)
    # q and v biases only: 14·4 + 14·4 queries and values, o 14·4 = 168 per attention
    assert f["encoder.attn.elementwise.bias"] == 168


def test_default_seq_is_the_encoder_table(cli, model):
    doc = run(cli, "model", model)
    assert (doc["settings"]["seq"], doc["settings"]["tgt_seq"]) == (3, 3)
    assert not any("--seq" in w for w in doc["warnings"])


def test_frontend_needs_an_encoder_decoder(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("n_layers: 1\nd_model: 4\nn_heads: 2\nd_ff: 4\npositions: rotary\n"
                    "vocab_size: 8\naudio_frontend: {mel_bins: 2}\n")
    r = cli("model", str(path))
    assert r.code == 2 and "feeds an encoder-decoder's encoder" in r.err
