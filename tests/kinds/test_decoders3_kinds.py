"""The layer kinds added for transformers' DiffLlama and Doge, worked by hand on a tiny config
(d 64, 4 heads of 16, 2 KV heads, f 96, vocabulary 128, 2 layers, untied head; one sequence of
5 tokens). The model-zoo sweep checks the same kinds against PyTorch at other sizes."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.hand

TINY = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64,
            tie_word_embeddings=False)
# q 64·64 + k 64·32 + v 64·32 + o 64·64 = 12,288; gated MLP 3·64·96 = 18,432; 2 norms of 64
LLAMA_LAYER = 12_288 + 18_432 + 128
# embedding 128·64 + head 64·128 + final norm 64
OUTSIDE = 8_192 + 8_192 + 64
# one sequence of 5: projections 2·5·12,288 = 122,880, MLP 2·5·18,432 = 184,320; eager
# attention scores every (query, key) pair: QKᵀ 2·4·25·16 = 3,200 and AV 3,200
PROJ_MLP, SCORES_AV = 122_880 + 184_320, 6_400
HEAD = 2 * 5 * 64 * 128  # 81,920


def _model(cli, tmp_path, model_type, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **TINY, **keys}))
    r = cli("model", str(path), "--seq", "5", "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_differential_attention_counts_two_attention_calls(cli, tmp_path):
    doc = _model(cli, tmp_path, "diffllama")
    # + λ_q1, λ_k1, λ_q2, λ_k2 of 16 each per layer: 64
    assert doc["params"]["total"] == 2 * (LLAMA_LAYER + 64) + OUTSIDE  # 78,272
    # the scores and AV twice: 2·6,400 per layer
    assert doc["flops"]["forward"] == 2 * (PROJ_MLP + 2 * SCORES_AV) + HEAD  # 721,920


def test_dynamic_mask_attention_adds_dt_proj_a_and_residual_scales(cli, tmp_path):
    doc = _model(cli, tmp_path, "doge")
    # + q_norm and k_norm (16 each), dt_proj 32 → 2 (64), A (2), two residual scales of 64
    assert doc["params"]["total"] == 2 * (LLAMA_LAYER + 32 + 64 + 2 + 128) + OUTSIDE  # 75,996
    # + dt_proj over the 5 keys: 2·5·32·2 = 640 per layer
    assert doc["flops"]["forward"] == 2 * (PROJ_MLP + SCORES_AV + 640) + HEAD  # 709,920


def test_gate_bias_attention_adds_one_bias_per_head(cli, tmp_path):
    doc = _model(cli, tmp_path, "beam", mlp_layer_types=["dense", "dense"],
                 layer_types=["full_attention", "full_attention"])
    # + QK-norms (16 each), gate_proj 64·64 = 4,096, gate_bias 4; 4 sandwich norms of 64
    assert doc["params"]["total"] == 2 * (LLAMA_LAYER + 32 + 4_096 + 4 + 128) + OUTSIDE
    # + the gate projection 2·5·64·64 = 40,960 per layer
    assert doc["flops"]["forward"] == 2 * (PROJ_MLP + SCORES_AV + 40_960) + HEAD
