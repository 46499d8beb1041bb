"""Extra embedding tables and an input projection by hand (kinds/input_extras.py) on a tiny
BERT: d 4, 1 layer (2 heads, MLP 8), 6 learned positions, vocabulary 8 (tied), a masked-LM head;
tables 3 × 2 and 5 × 4, the projection 10 → 4 with a bias (RoCBERT's map_inputs_layer)."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

BERT = """architecture: encoder-only
n_layers: 1
d_model: 4
n_heads: 2
d_ff: 8
norm_placement: post
final_norm: false
positions: learned
max_seq_len: 6
vocab_size: 8
embedding_norm: true
head: masked-lm
"""
EXTRAS = "input_extras: {tables: [{rows: 3, width: 2}, {rows: 5, width: 4}], project_in: 10}\n"


def _model(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def test_params(cli, tmp_path):
    plain = run(cli, "model", _model(tmp_path, BERT))["params"]
    extra = run(cli, "model", _model(tmp_path, BERT + EXTRAS))["params"]
    c = extra["components"]
    # tables 3·2 = 6 and 5·4 = 20; the projection 10·4 = 40 and its bias 4
    assert (c["encoder.input_extras.table0"], c["encoder.input_extras.table1"],
            c["encoder.input_extras.project_in.weight"],
            c["encoder.input_extras.project_in.bias"]) == (6, 20, 40, 4)
    assert extra["total"] - plain["total"] == 70


def test_forward_flops(cli, tmp_path):
    plain = run(cli, "model", _model(tmp_path, BERT), "--seq", "5", "--batch", "3")
    extra = run(cli, "model", _model(tmp_path, BERT + EXTRAS), "--seq", "5", "--batch", "3")
    # the projection on 3·5 tokens: (15×10)·(10×4) → 2·15·10·4 = 1200; the tables are lookups
    assert extra["flops"]["forward"] - plain["flops"]["forward"] == 1200


def test_needs_an_encoder_only_model(cli, tmp_path):
    text = BERT.replace("architecture: encoder-only", "architecture: decoder-only").replace(
        "head: masked-lm\n", "").replace("embedding_norm: true\n", "") + EXTRAS
    r = cli("model", _model(tmp_path, text))
    assert r.code == 2 and "input_extras" in r.err and "encoder-only" in r.err
