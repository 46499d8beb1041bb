"""An encoder's own layer types by hand (kinds/encoder_attention.py): ModernBERT-like global and
local (bidirectional band) layers.

d 4, 2 heads of 2, a gated MLP of 4, no biases, bias-free LayerNorms, 3 pre-norm layers with a
final norm: layer 0 global, layers 1 and 2 local over a window of 4 (±2 tokens), a masked-LM
head whose transform and decoder have no bias, a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MODERN = """architecture: encoder-only
n_layers: 3
d_model: 4
n_heads: 2
d_ff: 4
mlp: gated
bias: false
norm_bias: false
positions: rotary
vocab_size: 8
head: masked-lm
head_bias: false
lm_head_bias: 0
layer_types: [bidirectional, local, local]
local_attention: {window: 4}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "modern.yaml"
    path.write_text(MODERN)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # Per layer: two norms 4 (gains only), q, k, v, o 16 each, gate, up, down 16 each: 3 layers.
    # Final norm 4; the head's transform 16 without bias, its norm 4, no decoder bias.
    assert c == {"embed.tokens": 32, "encoder.attn_norm.weight": 12,
                 "encoder.attn.q.weight": 48, "encoder.attn.k.weight": 48,
                 "encoder.attn.v.weight": 48, "encoder.attn.o.weight": 48,
                 "encoder.mlp_norm.weight": 12, "encoder.mlp.gate.weight": 48,
                 "encoder.mlp.up.weight": 48, "encoder.mlp.down.weight": 48,
                 "encoder.final_norm.weight": 4, "head.transform.weight": 16,
                 "head.norm.weight": 4}
    assert sum(c.values()) == 416


def test_full_counts_every_pair(cli, model):
    f = run(cli, "model", model, "--seq", 7, "--batch", 2)["flops"]["components"]
    # 3 layers × 2 heads × 2 sequences × 49 pairs × 2·2 = 2352, local or not (FlopCounterMode)
    assert f["encoder.attn.scores"] == f["encoder.attn.av"] == 2352


def test_causal_counts_the_band(cli, model):
    f = run(cli, "model", model, "--seq", 7, "--batch", 2, "--attention", "causal")["flops"][
        "components"]
    # Global: 49 pairs; local with r = 2: each of 7 queries sees itself and 2 on either side,
    # 5·7 − 2·3 = 29 pairs. 2 heads × 2 sequences × (49 + 2·29) × 2·2 = 1712.
    assert f["encoder.attn.scores"] == 1712
    # Up to r + 1 = 3 tokens the band holds the whole sequence: 3 layers × 9 pairs × 2·2·2.
    short = run(cli, "model", model, "--seq", 3, "--attention", "causal")["flops"]["components"]
    assert short["encoder.attn.scores"] == 3 * 9 * 8


def test_crossover(cli, model):
    # Weights per token: 3 layers × (q, k, v, o 4·2·16 + gate, up, down 3·2·16) = 672.
    # full: 48·s² = 672·s at s = 14. causal: 16·s² + 2·16·(5s − 6) = 672·s, i.e.
    # 16s² − 512s − 192 = 0, s = 32.37..., so 33.
    full = run(cli, "model", model)["crossover"]
    causal = run(cli, "model", model, "--attention", "causal")["crossover"]
    assert (full["seq"], full["exact"]) == (14, "14")
    assert causal["seq"] == 33


def test_layers_and_notes(cli, model):
    doc = run(cli, "model", model, "--seq", 7)
    assert [(g["kind"], g["n_layers"]) for g in doc["layers"]] == [
        ("bidirectional, gated MLP 4", 1), ("bidirectional local ±2, gated MLP 4", 2)]
    assert any(line.startswith("local layers (ModernBERT): each token sees ±2 tokens")
               for line in doc["conventions"])


@pytest.mark.parametrize("change, message", [
    (("layer_types: [bidirectional, local, local]", "layer_types: [full]"),
     "encoder layers attend bidirectionally"),
    (("local_attention: {window: 4}\n", ""), "local layers need a local_attention block"),
    (("layer_types: [bidirectional, local, local]", "layer_types: [bidirectional]\n"
      "sliding_window: 4"), "sliding_window, attention_chunk and global_every apply to "
     "decoders"),
])
def test_errors(cli, tmp_path, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text(MODERN.replace(*change))
    r = cli("model", str(path))
    assert r.code == 2 and message in r.err and "Traceback" not in r.err


def test_decoder_layers_cannot_be_bidirectional(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("n_layers: 1\nd_model: 4\nn_heads: 2\nd_ff: 4\npositions: rotary\n"
                    "vocab_size: 8\nlayer_types: [bidirectional]\n")
    r = cli("model", str(path))
    assert r.code == 2 and "decoder self-attention is causal" in r.err
