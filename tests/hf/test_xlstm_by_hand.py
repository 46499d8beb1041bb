"""xLSTM (transformers `models/xlstm/modeling_xlstm.py`) counted by hand: mLSTM layers run in
chunks of chunk_size and the rest token by token, and gated feed-forwards."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4, 2 heads: queries and keys int(0.5·4) = 2 wide (d_k = 1), values 4 (d_v = 2); the
# feed-forward 4·2.667 = 10.668 rounded up to a multiple of 4: 12; chunks of 2; one block.
TINY = dict(model_type="xlstm", vocab_size=10, hidden_size=4, num_hidden_layers=1, num_heads=2,
            ffn_round_up_to_multiple_of=4, chunk_size=2, tie_word_embeddings=True)


def test_tiny_xlstm_by_hand(cli, tmp_path):
    # mLSTM: q 4·2 = 8, k 8, v 4·4 = 16, output gate 16, input and forget gates 4·2 + 2 = 10
    #   each, the value norm 4, out 4·4 = 16 → 88; two RMSNorms 8; feed-forward 3·4·12 = 144
    #   → block 240; embeddings 40, a head of its own 40 (never tied), final norm 4: 324
    # (transformers 5.24 builds 324 on the meta device)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    doc = run(cli, "model", path, "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 324
    # per token against weights: q 8, k 8, v 16, output gate 16, input and forget gates 4·2 = 8
    # each, out 16 → 80; feed-forward 144; head 40 → 264, ×2×4 tokens = 2,112
    assert doc["flops"]["weights"] == 2_112
    # 4 tokens = 2 whole chunks, per token and head: Kᵀ·V 2·1·2 = 4, Q·Kᵀ and ·V 2·2·(1 + 2)
    # = 12, Q·C and Q·n 2·1·2 + 2·1 = 6 → 22; × 2 heads × 4 tokens = 176
    assert doc["flops"]["scan"] == 176
    # 5 tokens: the same 2 chunks, then one step: k·vᵀ and q·C 4·1·2 = 8, q·n 2 → 10 per head
    doc = run(cli, "model", path, "--seq", 5, "--batch", 1)
    assert doc["flops"]["scan"] == 176 + 2 * 10
