"""Chameleon's language model by hand (`chameleon`: its VQ-VAE named as left out) and the
`qk_norm_form` key it needs (biased LayerNorm QK-norms in a model of RMSNorms);
tests/sweep/cases_mm_leftovers.py checks the same against transformers."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]


def _file(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_default_config_counts_the_language_model_and_names_the_vq_vae(cli, tmp_path):
    # ChameleonConfig(): d 4,096, 32 layers of 32 heads, MLP 11,008, vocabulary 65,536, untied
    # token table and head 2·65,536·4,096 = 536,870,912; final norm 4,096
    # per layer: q, k, v, o 4·4,096² = 67,108,864; q and k LayerNorms over all heads, gain and
    #   bias: 4·4,096 = 16,384; MLP 3·4,096·11,008 = 135,266,304; two RMSNorms 8,192
    #   → 202,399,744; 32 layers 6,476,791,808
    # total 7,013,666,816 (what transformers builds beside the VQ-VAE:
    # tests/data/zoo/chameleon.json)
    doc = run(cli, "model", _file(tmp_path, {"model_type": "chameleon"}))
    assert doc["params"]["total"] == 7_013_666_816
    assert "VQ-VAE image tokenizer (vq_config)" in doc["model"]["notes"]


YAML = ("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 16\nvocab_size: 10\npositions: rotary\n"
        "norm: rmsnorm\nmlp: gated\nbias: false\nqk_norm: all_heads\n")


@pytest.mark.parametrize("extra, norms", [
    # q and k over all heads (8 each): RMSNorm gains 8 + 8
    ("", 16),
    # LayerNorms with their biases: 2·(8 + 8)
    ("qk_norm_form: layernorm\n", 32),
    # LayerNorms without biases
    ("qk_norm_form: layernorm\nqk_norm_bias: false\n", 16),
])
def test_qk_norm_form(cli, tmp_path, extra, norms):
    # tied table 10·8 = 80; q, k, v, o 4·64 = 256; MLP 3·8·16 = 384; two norms and the final
    # norm 3·8 = 24
    path = tmp_path / "m.yaml"
    path.write_text(YAML + extra)
    assert run(cli, "model", path, "--seq", "4")["params"]["total"] == 80 + 256 + 384 + 24 + norms


def test_qk_norm_form_needs_a_qk_norm(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(YAML.replace("qk_norm: all_heads", "qk_norm: none")
                    + "qk_norm_form: layernorm\n")
    r = cli("model", str(path), "--seq", "4")
    assert r.code == 2 and "qk_norm_form" in r.err
