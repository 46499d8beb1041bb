"""Mistral Large 4 (mistral_large4_text, mistral_large4) by hand, its published-size config, and
its bad layer lists (tests/sweep/cases_hf_flagship2.py checks the same types against
transformers)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

# d 32, 4 heads; latent 12, keys 8 + 4 (rotary), values 6; an indexer of 3 heads of 8 keeping 3;
# 4 layers, the first dense (24), the rest 4 experts of 8, top-2, one shared expert of 8
ML4 = dict(model_type="mistral_large4_text", hidden_size=32, intermediate_size=24,
           moe_intermediate_size=8, num_hidden_layers=4, num_attention_heads=4,
           num_key_value_heads=4, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4,
           v_head_dim=6, index_n_heads=3, index_head_dim=8, index_topk=3, n_routed_experts=4,
           num_experts_per_tok=2, vocab_size=64, max_position_embeddings=64,
           no_rope_layers=[1, 1, 1, 1])


def _file(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _params(cli, tmp_path, **keys):
    return run(cli, "model", _file(tmp_path, dict(ML4, **keys)))["params"]["total"]


def test_a_layer_reading_an_earlier_latent_has_no_kv_a(cli, tmp_path):
    # layer 1 reads layer 0's latent: no kv_a_proj_with_mqa 32·(12 + 4) = 512 and no
    # kv_a_layernorm 12 → 524 fewer
    own = _params(cli, tmp_path)
    assert own - _params(cli, tmp_path, kv_source_layers=[0, 0, 2, 3]) == 524


def test_a_nope_layer_widens_its_unrotated_keys(cli, tmp_path):
    # NoPE: kv_a 32·12 instead of 32·16 (−128), kv_b 12·4·(12 + 6) instead of 12·4·(8 + 6)
    # (+192) → 64 more per NoPE layer
    rope = _params(cli, tmp_path)
    assert _params(cli, tmp_path, no_rope_layers=[1, 0, 1, 0]) - rope == 2 * 64


def test_a_layer_reusing_a_selection_has_no_indexer(cli, tmp_path):
    # no indexer: q_input_norm 2·32 = 64, wq_b 32·24 = 768, wk 32·8 = 256, k_norm 2·8 = 16,
    # weights_proj 32·3 = 96, its softmax scaling 2·3 = 6 → 1,206 fewer per layer
    full = _params(cli, tmp_path)
    assert full - _params(cli, tmp_path, indexer_types=["full", "shared", "full", "shared"]) \
        == 2 * 1_206


def test_the_rotary_scaling_is_held_once(cli, tmp_path):
    # alpha: one value per inverse frequency, ⌈4/2⌉ = 2; at qk_rope_head_dim 6 (keys 8 + 6):
    # 3 values, once; each of the 4 layers' q_proj widens by 32·4·2 = 256 and its kv_a by
    # 32·2 = 64: 4·(256 + 64) + 1 = 1,281 more
    assert _params(cli, tmp_path, qk_rope_head_dim=6) - _params(cli, tmp_path) == 1_281


@pytest.mark.parametrize("keys, message", [
    (dict(kv_source_layers=[0, 2, 2, 3]), "kv_source_layers[1] = 2"),
    (dict(kv_source_layers=[0, 0, 1, 3]), "kv_source_layers[2] = 1"),
    (dict(kv_source_layers=[0, 0, 2]), "kv_source_layers has 3 entries"),
    (dict(kv_source_layers=[0, 0, 2, 2], no_rope_layers=[1, 1, 1, 0]),
     "kv_source_layers[3] = 2, but no_rope_layers differs"),
    (dict(no_rope_layers=[1, 1, 1]), "no_rope_layers has 3 entries"),
    (dict(indexer_types=["shared", "full", "full", "full"]), "indexer_types[0] is 'shared'"),
])
def test_contradicting_layer_lists_are_one_line(cli, tmp_path, keys, message):
    r = cli("model", str(_file(tmp_path, dict(ML4, **keys))))
    assert r.code == 2 and message in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.recorded
def test_the_published_size_counts_as_transformers_builds_it(cli):
    # MistralLarge4ForConditionalGeneration on the meta device (transformers 5.24) from
    # tests/data/hf/sparse/mistral-large-4.json: 1,051,822,421,536 parameters, the Pixtral
    # tower and projector included (tests/pytorch/test_mistral_large4.py measures it)
    doc = run(cli, "model", DATA / "hf" / "sparse" / "mistral-large-4.json")
    assert doc["params"]["total"] == 1_051_822_421_536
