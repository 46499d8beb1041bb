"""What Gemma 4's importer refuses, each with one line naming the key (and the index)."""

from __future__ import annotations

import json

import pytest

from tests.hf.test_gemma4_by_hand import TINY

pytestmark = pytest.mark.behaviour


def _refused(cli, tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **keys}))
    r = cli("model", str(path))
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err


@pytest.mark.parametrize("keys, words", [
    (dict(layer_types=["chunked_attention", "full_attention"]), "layer_types[0]"),
    (dict(layer_types=["sliding_attention"]), "layer_types has 1 entries"),
    (dict(per_layer_config={"1": {"head_dim": 8}, "0": {"head_dim": 8}}), "per_layer_config[0]"),
    (dict(per_layer_config={"1": {"rope_theta": 8}}), "'rope_theta'"),
    (dict(per_layer_config={"7": {"head_dim": 8}}), "per_layer_config['7']"),
    (dict(use_bidirectional_attention="all"), "use_bidirectional_attention"),
    (dict(num_kv_shared_layers=3), "num_kv_shared_layers=3"),
    (dict(num_kv_shared_layers=1, layer_types=["full_attention", "full_attention"]),
     None),  # accepted: layer 0 computes the full layers' K and V
])
def test_contradicting_gemma4_configs_are_named(cli, tmp_path, keys, words):
    if words is None:
        path = tmp_path / "config.json"
        path.write_text(json.dumps({**TINY, **keys}))
        assert cli("model", str(path)).code == 0
        return
    assert words in _refused(cli, tmp_path, **keys)


def test_kv_shared_layers_need_their_type_computed_before_them(cli, tmp_path):
    # layers [sliding, full, full]: the last two share, and no earlier layer is full
    err = _refused(cli, tmp_path, num_hidden_layers=3, num_kv_shared_layers=2,
                   layer_types=["sliding_attention", "full_attention", "full_attention"])
    assert "from layer 1" in err


@pytest.mark.parametrize("model_type", ["gemma4_assistant", "gemma4_unified_assistant"])
def test_gemma4_drafters_are_refused_by_what_they_read(cli, tmp_path, model_type):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type}))
    r = cli("model", str(path))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "drafter" in r.err and "YAML" in r.err and "qwen2_moe" not in r.err  # no list
