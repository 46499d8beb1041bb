"""UltraBERT (transformers `models/ultrabert/modeling_ultrabert.py`) counted by hand: EuroBERT's
layers and its prediction head (d → prediction_head_size → d, then the decoder); a model file's
bottleneck head without its width is refused."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4, 2 heads of 2 (no grouping), d_ff 3, V 10, a prediction head of 5; three layers
# (sliding, sliding, full: the class default), windows of 1 on either side.
TINY = dict(model_type="ultrabert", vocab_size=10, hidden_size=4, intermediate_size=3,
            num_hidden_layers=3, num_attention_heads=2, prediction_head_size=5,
            sliding_window=1, max_position_embeddings=64)


def _doc(cli, tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **keys}))
    return run(cli, "model", path, "--seq", 4, "--batch", 1)


def test_tiny_ultrabert_by_hand(cli, tmp_path):
    # a layer: q, k, v, o 4·4 = 16 each → 64; gate, up, down 3·4·3 = 36; two RMSNorms 8
    #   → 108;
    #   three layers 324; final norm 4; embeddings 10·4 = 40; the head's linear1 4·5 = 20 and
    #   linear2 5·4 = 20, the untied decoder 40 → 80: 448
    doc = _doc(cli, tmp_path)
    assert doc["params"]["total"] == 448
    # per token against weights: three layers 3·(64 + 36) = 300, the head 20 + 20 + 40 = 80
    #   → 380; ×2×4 tokens = 3,040
    assert doc["flops"]["weights"] == 3_040


def test_tied_decoder_drops_one_table(cli, tmp_path):
    # tie_word_embeddings ties head.decoder to the token table: 448 − 40 = 408
    assert _doc(cli, tmp_path, tie_word_embeddings=True)["params"]["total"] == 408


def test_bottleneck_head_needs_its_width(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("architecture: encoder-only\nn_layers: 1\nd_model: 8\nn_heads: 2\n"
                    "d_ff: 16\nvocab_size: 10\npositions: rotary\nhead: bottleneck\n")
    r = cli("model", str(path), "--format", "json")
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "head: bottleneck needs it" in r.err
