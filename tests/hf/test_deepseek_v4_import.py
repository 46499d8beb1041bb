"""DeepSeek-V4's importer (flopcalc/models/hf/deepseek_v4.py): transformers' counts of the
default config and of the published schedule, and the per-layer lists it refuses, each with one
line naming the key and the index."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.recorded, pytest.mark.behaviour]

# DeepSeek-V4-Flash's schedule (its model card: layers 0 and 1 sliding only, then rates 4 and
# 128 alternating), with the MTP layer's entry at the end as the published file lists it
FLASH = [0, 0] + [4, 128] * 20 + [4] + [0]


def _file(tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "deepseek_v4", **keys}))
    return str(path)


@pytest.mark.parametrize("keys, total", [
    # transformers 5.24's DeepseekV4ForCausalLM on the meta device: the default config (three
    # heavily compressed layers first) and the published schedule (compress_ratios, cut to
    # the 43 layers as DeepseekV4Config cuts it)
    ({}, 284_325_869_015),
    ({"compress_ratios": FLASH}, 284_332_230_231),
])
def test_counts_as_transformers_builds_it(cli, tmp_path, keys, total):
    assert run(cli, "model", _file(tmp_path, **keys))["params"]["total"] == total


def test_the_preset_is_the_published_schedule(cli, tmp_path):
    ours = run(cli, "model", "deepseek-v4", "--seq", "4096")
    theirs = run(cli, "model", _file(tmp_path, compress_ratios=FLASH), "--seq", "4096")
    assert ours["params"]["total"] == theirs["params"]["total"] == 284_332_230_231
    assert ours["flops"]["forward"] == theirs["flops"]["forward"]


@pytest.mark.parametrize("keys, words", [
    (dict(num_hidden_layers=4, layer_types=["sliding_attention"] * 3),
     "layer_types has 3 entries, num_hidden_layers is 4: layer 3 has none"),
    (dict(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"]),
     "layer_types[1] = 'full_attention'"),
    (dict(num_hidden_layers=3, compress_ratios=[0, 4, 64]), "compress_ratios[2] = 64"),
    (dict(num_hidden_layers=3, compress_ratios=[0, 4]), "compress_ratios has 2 entries"),
    (dict(num_hidden_layers=3, mlp_layer_types=["moe", "dense", "moe"]),
     "mlp_layer_types[1] = 'dense'"),
    (dict(num_hidden_layers=2, mlp_layer_types=["moe"]), "mlp_layer_types has 1 entries"),
    (dict(num_hidden_layers=2, compress_rates={"compressed_sparse_attention": 4}),
     "compress_rates['heavily_compressed_attention']"),
])
def test_contradicting_layer_lists_are_named_in_one_line(cli, tmp_path, keys, words):
    r = cli("model", _file(tmp_path, **keys))
    assert r.code == 2
    assert words in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_longer_lists_are_cut_as_transformers_cuts_them(cli, tmp_path):
    """DeepseekV4Config keeps the first num_hidden_layers entries (the published file lists the
    MTP layer's too): 2 sliding layers of 3 listed count as the first 2."""
    listed = ["sliding_attention"] * 2 + ["heavily_compressed_attention"]
    long = run(cli, "model", _file(tmp_path, num_hidden_layers=2, layer_types=listed))
    exact = run(cli, "model", _file(tmp_path, num_hidden_layers=2,
                                    layer_types=["sliding_attention"] * 2))
    assert long["params"]["total"] == exact["params"]["total"]
