"""Ergo's layer kind by hand (kinds/ergo.py: residual gates, a norm after every expert).

The model: d 4, 2 layers of 2 heads × 2 (1 KV head), RMSNorm sandwich norms and per-head q/k
norms; layer 0 a window of 2 with a plain ReLU² MLP 8 wide, layer 1 full with 2 experts 2 wide
(top 1) and a shared expert 3 wide; an untied vocabulary of 10.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

TINY = """n_layers: 2
d_model: 4
n_heads: 2
n_kv_heads: 1
head_dim: 2
d_ff: 8
mlp: plain
activation: relu2
bias: false
norm: rmsnorm
norm_placement: sandwich
qk_norm: per_head
positions: rotary
vocab_size: 10
tie_embeddings: false
layer_types: [ergo_dense_window, {second}]
ergo: {{window: 2}}
moe: {{experts: 2, top_k: 1, d_ff: 2, shared_experts: 1, shared_d_ff: 3}}
"""


def model(tmp_path, second="ergo_full"):
    path = tmp_path / "ergo.yaml"
    path.write_text(TINY.format(second=second))
    return str(path)


def test_params(cli, tmp_path):
    c = run(cli, "model", model(tmp_path))["params"]["components"]
    # two residual gates of d = 4 in each layer
    assert (c["decoder.mlp.attention_residual_gate.weight"],
            c["decoder.mlp.feedforward_residual_gate.weight"]) == (8, 8)
    # a gain of d = 4 per expert after each of the 2, and one after the shared expert
    assert (c["decoder.mlp.experts.post_expert_norm.weight"],
            c["decoder.mlp.shared.norm.weight"]) == (8, 4)
    # layer 0: attention q 16 + k 8 + v 8 + o 16 + q/k norms 4 = 52, sandwich norms 16, MLP
    #   4×8 + 8×4 = 64, gates 8 → 140
    # layer 1: 52, 16, router 4×2 = 8, experts 2·(4×2 + 2×4) = 32, shared 4×3 + 3×4 = 24,
    #   expert norms 8, shared norm 4, gates 8 → 152
    # embedding 40, untied head 40, final norm 4 → 140 + 152 + 84 = 376
    assert sum(c.values()) == 376


def test_forward_flops(cli, tmp_path):
    # T = 3. Layer 0: q 2·3·4·4 = 96, k and v 48 each, o 96, scores and AV 2·2·3·3·2 = 72
    #   each → 432; MLP 2 · 2·3·4·8 = 384 → 816. Layer 1: 432; router 2·3·4·2 = 48; 3 routed
    #   rows × (2·4·2 + 2·2·4) = 96; shared 2 · 2·3·4·3 = 144 → 720. Head 2·3·4·10 = 240.
    # The norms and gates are no matmul: 816 + 720 + 240 = 1,776
    assert run(cli, "model", model(tmp_path), "--seq", 3)["flops"]["forward"] == 1776


def test_mixture_layers_need_a_moe_block(cli, tmp_path):
    path = tmp_path / "no_moe.yaml"
    path.write_text(TINY.format(second="ergo_full").replace(
        "moe: {experts: 2, top_k: 1, d_ff: 2, shared_experts: 1, shared_d_ff: 3}\n", ""))
    r = cli("model", str(path))
    assert r.code == 2 and "ergo_full layers hold Ergo's mixture of experts" in r.err
