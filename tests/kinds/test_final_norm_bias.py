"""`final_norm_bias: false`: a final LayerNorm without a bias where the layers' norms have one
(ESM C), by hand: d 4, 2 layers, LayerNorm."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand]

MODEL = """n_layers: 2
d_model: 4
n_heads: 2
d_ff: 8
positions: rotary
vocab_size: 8
norm: layernorm
"""


def test_final_norm_without_bias(cli, tmp_path):
    plain, nobias = tmp_path / "plain.yaml", tmp_path / "nobias.yaml"
    plain.write_text(MODEL)
    nobias.write_text(MODEL + "final_norm_bias: false\n")
    a = run(cli, "model", str(plain))["params"]
    b = run(cli, "model", str(nobias))["params"]
    # the final norm keeps its gain (4) and loses its bias (4); each layer's two norms keep both
    assert b["components"]["decoder.final_norm.weight"] == 4
    assert "decoder.final_norm.bias" not in b["components"]
    assert a["total"] - b["total"] == 4
    assert b["components"]["decoder.attn_norm.bias"] == 8
