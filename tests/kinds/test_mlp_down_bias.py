"""A bias on the MLP's down projection alone (`bias: {mlp_down: true}`, GTE's gated MLP), by
hand: d 4, a gated MLP 8 wide, 2 layers."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand]

MODEL = """n_layers: 2
d_model: 4
n_heads: 2
d_ff: 8
mlp: gated
positions: rotary
vocab_size: 8
"""


def test_down_bias_only(cli, tmp_path):
    plain, down = tmp_path / "plain.yaml", tmp_path / "down.yaml"
    plain.write_text(MODEL)
    down.write_text(MODEL + "bias: {mlp_down: true}\n")
    a = run(cli, "model", str(plain))["params"]
    b = run(cli, "model", str(down))["params"]
    # down's bias is d = 4 wide, in each of 2 layers; gate and up keep none
    assert b["components"]["decoder.mlp.down.bias"] == 8
    assert "decoder.mlp.up.bias" not in b["components"]
    assert b["total"] - a["total"] == 8
