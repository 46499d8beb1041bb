"""Muse Spark's text model (transformers `models/muse_spark/modeling_muse_spark.py`) counted by
hand: gated attention, a dense and a latent-mixture layer, their extra norms and residual
gates."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4, 2 heads of 2, one KV head; layers [window, full] (the last full), [dense, mixture];
# the mixture: 2 experts of 2 (top 1) in a latent of 3.
TINY = dict(model_type="muse_spark_text", vocab_size=10, hidden_size=4, intermediate_size=3,
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=2,
            sliding_window=2, mlp_layer_types=["dense", "sparse"], num_local_experts=2,
            num_experts_per_tok=1, moe_intermediate_size=2, moe_hidden_size=3,
            max_position_embeddings=64)


def test_tiny_muse_spark_by_hand(cli, tmp_path):
    # attention (each layer): q 4·4 = 16, k 4·2 = 8, v 8, o 16, gate_proj 4·4 = 16 → 64 (the
    #   q/k and output norms weightless); input and pre-feed-forward norms 8; the
    #   post-feed-forward norm 4 and two residual gates 8 → 12
    # layer 0: 64 + 8 + 12 + dense MLP 3·4·3 = 36 → 120
    # layer 1: 64 + 8 + 12 + router 2·4 = 8, pre_expert_proj 4·3 = 12, its norm 3, experts
    #   2·(3·2·2 + 2·3) = 36, post_expert_norm 3, post_expert_proj 3·4 = 12 → 74 → 158
    # model: embeddings 40 (their norm weightless), head 40, final norm 4: 362
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    doc = run(cli, "model", path, "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 362
    # per token against weights: attention 16 + 8 + 8 + 16 + 16 = 64 twice; the MLP 36; the
    # mixture's router 8, projections 12 + 12 and one expert 18 → 50; head 40 → 254, ×2×4
    # tokens = 2,032
    assert doc["flops"]["weights"] == 2_032
