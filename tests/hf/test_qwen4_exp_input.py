"""Qwen4-Exp's configs that transformers refuses: one line naming the key and the entry, exit
code 2 (a layer list against the layer count, PLE on an attention layer, missing indexer keys)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.behaviour

BASE = dict(model_type="qwen4_exp_text", num_hidden_layers=4, indexer_n_heads=2,
            indexer_kv_heads=1, indexer_head_dim=256, indexer_budget=4,
            indexer_compress_ratio=2)


def _refused(cli, tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, **keys}))
    r = cli("model", str(path))
    assert r.code == 2, r.out
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "Traceback" not in r.err
    return r.err


@pytest.mark.parametrize("types, named", [
    (["linear_attention"] * 3, "layer 3 has none"),
    (["linear_attention"] * 5, "layer_types[4] names no layer"),
    (["linear_attention", "mamba", "linear_attention", "full_attention"],
     "layer_types[1] = 'mamba'"),
])
def test_a_layer_list_against_the_layer_count_names_the_key_and_index(cli, tmp_path, types,
                                                                      named):
    err = _refused(cli, tmp_path, layer_types=types)
    assert named in err and "layer_types" in err


def test_ple_on_an_attention_layer_names_the_entry(cli, tmp_path):
    # the default pattern makes layer 4 (one-indexed) the attention layer
    err = _refused(cli, tmp_path, ple_layer_ids=[1, 4], eos_token_id=1)
    assert "ple_layer_ids[1] = 4" in err and "attention layer" in err


def test_a_ple_id_past_the_layers_names_the_entry(cli, tmp_path):
    err = _refused(cli, tmp_path, ple_layer_ids=[0], eos_token_id=1)
    assert "ple_layer_ids[0] = 0" in err and "1..4" in err


def test_attention_layers_without_the_indexer_keys_name_them(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen4_exp_text"}))
    r = cli("model", str(path))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "indexer_n_heads" in r.err and "indexer_compress_ratio" in r.err


def test_ple_without_an_eos_token_names_it(cli, tmp_path):
    err = _refused(cli, tmp_path, ple_layer_ids=[1])
    assert "eos_token_id" in err
