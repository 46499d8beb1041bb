"""Bailing-hybrid (transformers `models/bailing_hybrid/modular_bailing_hybrid.py`) counted by
hand: Kimi delta attention with full-rank gates, latent attention gated per head."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4, 2 heads; layers [delta, latent] (layer_group_size 2), [dense, mixture]
# (first_k_dense_replace 1). As a published file writes it: head_dim (2) is the delta
# attention's head width, with no linear_* keys.
TINY = dict(model_type="bailing_hybrid", vocab_size=10, hidden_size=4, intermediate_size=3,
            num_hidden_layers=2, num_attention_heads=2, head_dim=2, layer_group_size=2,
            first_k_dense_replace=1, short_conv_kernel_size=2, kv_lora_rank=2,
            qk_nope_head_dim=2, qk_rope_head_dim=2, v_head_dim=2, moe_intermediate_size=2,
            num_experts=2, num_experts_per_token=1, num_shared_experts=1, n_group=1,
            topk_group=1, model_max_length=64)


def test_tiny_bailing_hybrid_by_hand(cli, tmp_path):
    # layer 0, delta attention (H = 2, D = 2, HD = 4): q, k, v 3·4·4 = 48, the conv over
    #   3·4 channels of 2 taps 24, f 4·4 = 16 (full rank), dt_bias 4, A_log 2, b 4·2 = 8,
    #   g 4·4 = 16 (full rank), o_norm 2, o 4·4 = 16 → 136; norms 8; dense MLP 3·4·3 = 36
    #   → 180
    # layer 1, latent attention (2 heads of 2 + 2, values of 2, latent 2): q 4·8 = 32,
    #   kv_a 4·(2 + 2) = 16, its norm 2, kv_b 2·2·(2 + 2) = 16, o 4·4 = 16, g_proj 4·2 = 8
    #   → 90; norms 8; router 2·4 = 8, experts 2·3·4·2 = 48, shared 3·4·2 = 24 → 80 → 178
    # model: embeddings 40, an untied head 40, final norm 4: 180 + 178 + 84 = 442
    # (transformers 5.24 builds 442 on the meta device)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    doc = run(cli, "model", path, "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 442
