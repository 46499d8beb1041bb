"""Extra embedding tables and an input projection by hand (kinds/input_extras.py) on a tiny
BERT: d 4, 1 layer (2 heads, MLP 8), 6 learned positions, vocabulary 8 (tied), a masked-LM head;
tables 3 × 2 and two of 5 × 4, the projection 10 → 4 with a bias (RoCBERT's map_inputs_layer),
and one 6 → 3 held but not run."""

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
EXTRAS = ("input_extras: {tables: [{rows: 3, width: 2}, {rows: 5, width: 4, count: 2}],\n"
          "  projections: [{inputs: 10}, {inputs: 6, outputs: 3, bias: false, runs: false}]}\n")


def _model(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def test_params(cli, tmp_path):
    plain = run(cli, "model", _model(tmp_path, BERT))["params"]
    extra = run(cli, "model", _model(tmp_path, BERT + EXTRAS))["params"]
    c = extra["components"]
    # tables 3·2 = 6 and 2 of 5·4 = 40; the projection 10·4 = 40 and its bias 4; the one not
    # run 6·3 = 18 without a bias
    assert (c["encoder.input_extras.table0"], c["encoder.input_extras.table1"],
            c["encoder.input_extras.project0.weight"],
            c["encoder.input_extras.project0.bias"],
            c["encoder.input_extras.project1.weight"]) == (6, 40, 40, 4, 18)
    assert "encoder.input_extras.project1.bias" not in c
    assert extra["total"] - plain["total"] == 108


def test_forward_flops(cli, tmp_path):
    plain = run(cli, "model", _model(tmp_path, BERT), "--seq", "5", "--batch", "3")
    extra = run(cli, "model", _model(tmp_path, BERT + EXTRAS), "--seq", "5", "--batch", "3")
    # the projection on 3·5 tokens: (15×10)·(10×4) → 2·15·10·4 = 1200; the tables are lookups
    # and the second projection is never called
    assert extra["flops"]["forward"] - plain["flops"]["forward"] == 1200


def test_needs_an_encoder_only_model(cli, tmp_path):
    text = BERT.replace("architecture: encoder-only", "architecture: decoder-only").replace(
        "head: masked-lm\n", "").replace("embedding_norm: true\n", "") + EXTRAS
    r = cli("model", _model(tmp_path, text))
    assert r.code == 2 and "input_extras" in r.err and "encoder-only" in r.err
