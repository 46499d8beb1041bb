"""Dory (transformers `models/dory/modeling_dory.py`) counted by hand: nGPT-scaled gated
attention and MLP, weightless norms, the recurrent layers' weights held once and run
n_recurrent_loops times, the head's logit scale; and the splits it refuses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4, 2 heads of 2, one KV head, d_ff 3, V 10; layers: 1 input, 1 recurrent run twice,
# 1 output, all full attention.
TINY = dict(model_type="dory", vocab_size=10, hidden_size=4, intermediate_size=3,
            num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1, head_dim=2,
            n_input_layers=1, n_output_layers=1, n_recurrent_loops=2,
            layer_types=["full_attention"] * 3, max_position_embeddings=64)


def _write(tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **keys}))
    return path


def test_tiny_dory_by_hand(cli, tmp_path):
    # attention (each layer): q 4·4 = 16, k 4·2 = 8, v 8, o 16, gate_proj 4·4 = 16 → 64;
    #   sqk 4, s_gate 4 (h·d_h each), lambda_1 4 (d) → 12 (every norm weightless)
    # MLP: gate, up, down 3·4·3 = 36; suv_gate 3, suv_up 3 (d_ff each), lambda_2 4 → 10
    # a layer: 64 + 12 + 36 + 10 = 122; three sets of weights (the recurrent one held once):
    #   366; embeddings 40, untied head 40 and its logit_scale 10 → 456
    doc = run(cli, "model", _write(tmp_path), "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 456
    # per token against weights: a layer's run 64 + 36 = 100, four runs (input, recurrent
    # twice, output) 400, head 40 → 440; ×2×4 tokens = 3,520
    assert doc["flops"]["weights"] == 3_520


def test_released_layout_halves_the_counts(cli, tmp_path):
    # a released file lists attention and "mlp" blocks alternately with every count doubled:
    # the same three layers, the same 456 parameters
    path = _write(tmp_path, num_hidden_layers=6, n_input_layers=2, n_output_layers=2,
                  layer_types=["full_attention", "mlp"] * 3)
    assert run(cli, "model", path, "--seq", 4)["params"]["total"] == 456


@pytest.mark.parametrize("keys, words", [
    (dict(n_input_layers=2, n_output_layers=2), "must equal num_hidden_layers=3"),
    (dict(n_recurrent_loops=0), "n_recurrent_loops=0"),
    (dict(recurrent_kv_cache_mode="all"), "recurrent_kv_cache_mode 'all'"),
    (dict(layer_types=["full_attention", "mlp", "mlp"]), "layer_types[2]"),
    (dict(layer_types=["mlp", "full_attention", "full_attention"]), "layer_types[0]"),
])
def test_dory_refusals_name_the_key(cli, tmp_path, keys, words):
    r = cli("model", str(_write(tmp_path, **keys)), "--format", "json")
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert words in r.err


def test_last_loop_cache_mode_is_named(cli, tmp_path):
    # the same weights and forward; only the cache differs, and the notes say how
    doc = run(cli, "model", _write(tmp_path, recurrent_kv_cache_mode="last_loop"), "--seq", 4)
    assert doc["params"]["total"] == 456
    assert "last_loop" in doc["model"]["notes"]
