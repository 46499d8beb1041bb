"""What models/hf/decoders3.py refuses, each with one line naming the key (and the index), and
the settings it must not refuse (transformers builds them)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.behaviour

TINY = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64)


def _run(cli, tmp_path, model_type, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **TINY, **keys}))
    return cli("model", str(path), "--format", "json")


def _refused(cli, tmp_path, model_type, **keys):
    r = _run(cli, tmp_path, model_type, **keys)
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err


@pytest.mark.parametrize("model_type, keys, words", [
    # MiniMax-M3's indexer layers, named by index (in layer_types, or the legacy freq list)
    ("minimax_m3_vl_text", dict(layer_types=["full_attention"] * 3 + ["minimax_m3_sparse"]),
     "layer_types[3] = 'minimax_m3_sparse'"),
    ("minimax_m3_vl_text", dict(sparse_attention_config={"sparse_attention_freq": [0, 1, 0, 0]}),
     "layer_types[1]"),
    ("minimax_m3_vl_text", dict(mlp_layer_types=["dense", "moe", "dense", "dense"]),
     "mlp_layer_types[1] = 'moe'"),
    ("beam", dict(mlp_layer_types=["dense"] * 3 + ["mixture"]), "mlp_layer_types[3]"),
    ("beam", dict(layer_types=["sliding_attention"] * 3), "layer_types has 3 entries"),
    # Aria's routed experts are SiLU whatever hidden_act says
    ("aria_text", dict(hidden_act="gelu"), "hidden_act 'gelu'"),
    ("doge", dict(is_moe=True), "is_moe true"),
    ("modernbert-decoder", dict(local_attention=1), "local_attention 1"),
    ("evolla", {}, "protein encoder"),
])
def test_refusals_name_the_key(cli, tmp_path, model_type, keys, words):
    assert words in _refused(cli, tmp_path, model_type, **keys)


def test_diffllama_with_an_odd_kv_head_count_is_refused(cli, tmp_path):
    # DiffLlamaAttention splits the value heads in two halves: transformers refuses 3 as well
    err = _refused(cli, tmp_path, "diffllama", num_attention_heads=6, num_key_value_heads=3,
                   hidden_size=96)
    assert "n_kv_heads=3 must be even" in err


def test_doge_reads_no_sliding_window(cli, tmp_path):
    # DogeAttention never reads sliding_window: a file that sets it counts as one without
    plain = json.loads(_run(cli, tmp_path, "doge").out)
    windowed = json.loads(_run(cli, tmp_path, "doge", sliding_window=4).out)
    assert windowed["params"]["total"] == plain["params"]["total"]
    assert windowed["flops"]["forward"] == plain["flops"]["forward"]
