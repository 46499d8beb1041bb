"""Zamba (transformers `models/zamba/modeling_zamba.py`) counted by hand: multi-head Mamba-1
mixers in every layer and the one shared block (no adapters) on the hybrid layers."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4; two Mamba heads over E = 2·4 = 8 channels, state 2, conv 3, dt rank ⌈4/16⌉ = 1; the
# shared block: 2 heads of 2d / 2 = 4 reading 2d = 8, a gated MLP of 6; layers hybrid, Mamba,
# hybrid; a vocabulary of 10.
TINY = dict(model_type="zamba", vocab_size=10, hidden_size=4, intermediate_size=6,
            num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=2, n_mamba_heads=2,
            mamba_expand=2, mamba_d_state=2, mamba_d_conv=3,
            layers_block_type=["hybrid", "mamba", "hybrid"], max_position_embeddings=64)


@pytest.mark.parametrize("tie, total", [(True, 1020), (False, 1368)])
def test_tiny_zamba_by_hand(cli, tmp_path, tie, total):
    # every layer: in_proj 4·16 = 64, conv 8·3 + 8 = 32, x_proj (1 + 2·2)·8 = 40 (2 heads of
    #   5 × 4), dt_proj 8·1 + bias 8 = 16, A_log 8·2 = 16, D 8, out_proj 8·4 = 32 → 208, its
    #   norm 4 → 212; three layers 636
    # the shared block: norm 8, q, k, v 8·8 = 64 each, o 8·4 = 32, norm 4, MLP 3·4·6 = 72
    #   → 308; each hybrid layer's linear 4·4 = 16, two 32
    # tied (the default): the block once, the head is the table (10·4 = 40), final norm 4:
    #   636 + 308 + 32 + 40 + 4 = 1,020. Untied: the block in both hybrid layers (+308) and
    #   a head of its own (+40): 1,368 (transformers 5.24 builds both on the meta device)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "tie_word_embeddings": tie}))
    doc = run(cli, "model", path, "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == total


def test_zamba_attention_width_other_than_twice_d_refused(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "attention_hidden_size": 12}))
    result = cli("model", path)
    assert result.code == 2
    assert "attention_hidden_size 12" in result.err
    assert len(result.err.strip().splitlines()) == 1
