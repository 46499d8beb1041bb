"""Hy4's importer (flopcalc/models/hf/hy_v4.py): transformers' count of the default config, and
per-layer lists that contradict the layer count, each refused in one line naming the key and
the index."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.recorded, pytest.mark.behaviour]


def _file(tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "hy_v4", **keys}))
    return str(path)


def test_default_config_counts_as_transformers_builds_it(cli, tmp_path):
    # transformers 5.24's HYV4ForCausalLM from HYV4Config() on the meta device
    assert run(cli, "model", _file(tmp_path))["params"]["total"] == 58_278_193_133


@pytest.mark.parametrize("keys, words", [
    (dict(num_hidden_layers=4, indexer_types=["full"] * 3),
     "indexer_types has 3 entries, num_hidden_layers is 4: layer 3 has none"),
    (dict(num_hidden_layers=2, indexer_types=["full", "sometimes"]), "indexer_types[1]"),
    (dict(num_hidden_layers=2, indexer_types=["shared", "full"]), "indexer_types[0]"),
    (dict(num_hidden_layers=2, mlp_layer_types=["dense", "sparse", "sparse"]),
     "mlp_layer_types[2] names no layer"),
    (dict(num_hidden_layers=2, mlp_layer_types=["dense", "moe"]), "mlp_layer_types[1]"),
    (dict(num_hidden_layers=2, layer_types=["indexed_attention", "full_attention"]),
     "layer_types[1]"),
])
def test_contradicting_layer_lists_are_named_in_one_line(cli, tmp_path, keys, words):
    r = cli("model", _file(tmp_path, **keys))
    assert r.code == 2
    assert words in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_extra_indexer_types_are_ignored_as_transformers_ignores_them(cli, tmp_path):
    long = run(cli, "model", _file(tmp_path, num_hidden_layers=2, indexer_types=["full"] * 3))
    exact = run(cli, "model", _file(tmp_path, num_hidden_layers=2, indexer_types=["full"] * 2))
    assert long["params"]["total"] == exact["params"]["total"]
