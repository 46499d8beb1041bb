"""Gemma 4's text model counted by hand (transformers `models/gemma4/modeling_gemma4.py`):
full layers of their own width with keys as values, and per-layer inputs."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# Two layers, sliding then full; the full layer 8 wide per head with keys as values and one KV
# head; per-layer inputs 2 wide from a 10-row table.
TINY = dict(model_type="gemma4_text", vocab_size=16, hidden_size=8, intermediate_size=12,
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=4,
            global_head_dim=8, layer_types=["sliding_attention", "full_attention"],
            sliding_window=4, attention_k_eq_v=True, num_global_key_value_heads=1,
            hidden_size_per_layer_input=2, vocab_size_per_layer_input=10,
            max_position_embeddings=64)


def test_tiny_gemma4_by_hand(cli, tmp_path):
    # layer 0 (sliding, heads 4 wide): q 8·2·4 = 64, k 8·4 = 32, v 32, o 8·8 = 64 → 192;
    #   q_norm, k_norm 4 + 4; four sandwich norms 4·8 = 32; MLP 3·8·12 = 288;
    #   per-layer gate 8·2 = 16, projection 2·8 = 16, its norm 8 → 40; layer 560
    # layer 1 (full, heads 8 wide, keys as values): q 8·2·8 = 128, k 8·8 = 64, no v,
    #   o 16·8 = 128 → 320; norms 8 + 8; sandwich 32; MLP 288; per-layer 40; layer 696
    # model: tokens 16·8 = 128 (head tied), final norm 8, per-layer table 10·(2·2) = 40,
    #   its projection 8·(2·2) = 32 and norm 2 → 210; total 560 + 696 + 210 = 1,466
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    doc = run(cli, "model", path, "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 1466
    # per token against weights: layer 0 64 + 32 + 32 + 64 + 288 + 16 + 16 = 512; layer 1
    # 128 + 64 + 128 + 288 + 32 = 640; the per-layer projection 32; the head 16·8 = 128 →
    # 1,312, ×2×4 tokens = 10,496. Scores and AV over all 4×4 pairs (eager attention computes
    # the masked ones too): 2 heads·16·2·(4 + 4) = 512 and 2·16·2·(8 + 8) = 1,024 → 1,536
    assert doc["flops"]["weights"] == 10_496
    assert doc["flops"]["attention"] == 1_536
