"""Gemma 3n's layer kind by hand (kinds/gemma3n.py: AltUp, LAuReL, per-layer inputs, the top-k
gate, KV sharing) and its importer's refusals (models/hf/gemma3n.py).

The model: d 4, 2 layers of 2 heads × 2 (1 KV head), window 3, a gated MLP 8 wide in layer 0
and 4 wide in layer 1, RMSNorm sandwich norms and per-head q/k norms, a tied vocabulary of 10;
AltUp over n = 2 streams, LAuReL rank r = 1, per-layer inputs p = 2 from a 6-row table; layer 1
reuses layer 0's keys and values; layer 0's gate passes the Gaussian top-k.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

TINY = """n_layers: 2
d_model: 4
n_heads: 2
n_kv_heads: 1
head_dim: 2
d_ff: 8
mlp: gated
activation: gelu
bias: false
norm: rmsnorm
norm_placement: sandwich
qk_norm: per_head
positions: rotary
vocab_size: 10
layer_types: [{first}, gemma3n_shared_window@1]
gemma3n: {{streams: 2, laurel_rank: 1, per_layer_width: 2, per_layer_vocab: 6, window: 3,
          d_ff: [8, 4], sparse: [true, false]}}
"""


def model(tmp_path, first="gemma3n_window@0"):
    path = tmp_path / "g3n.yaml"
    path.write_text(TINY.format(first=first))
    return str(path)


def test_params(cli, tmp_path):
    c = run(cli, "model", model(tmp_path))["params"]["components"]
    # AltUp per layer: correct_output_scale 4, correction n×n = 4, prediction n×n² = 8,
    # router d×n = 8, router norm 4 → 28; over the two layers 56
    assert (c["decoder.mlp.altup.correct_output_scale"],
            c["decoder.mlp.altup.correction_coefs.weight"],
            c["decoder.mlp.altup.prediction_coefs.weight"],
            c["decoder.mlp.altup.modality_router.weight"]) == (8, 8, 16, 16)
    # LAuReL: 4×1 + 1×4 + its norm 4 per layer
    assert (c["decoder.mlp.laurel.linear_left.weight"],
            c["decoder.mlp.laurel.linear_right.weight"]) == (8, 8)
    # the first layer's: table 6 × L·p = 6 × 4 = 24, projection 4 × 4 = 16, its norm p = 2,
    # one (n − 1) stream projection 4×4 = 16; the last layer's projection back 16
    assert (c["decoder.mlp.embed_tokens_per_layer"],
            c["decoder.mlp.per_layer_model_projection.weight"],
            c["decoder.mlp.per_layer_projection_norm.weight"],
            c["decoder.mlp.altup_projections.0.weight"],
            c["decoder.mlp.altup_unembed_projections.0.weight"]) == (24, 16, 2, 16, 16)
    # the KV-shared layer has no k, v nor k norm: k 4×2 and k_norm 2 once
    assert (c["decoder.attn.k.weight"], c["decoder.attn.k_norm.weight"]) == (8, 2)
    # layer 0: attention 16 + 8 + 8 + 16 + q/k norms 4 = 52, 4 sandwich norms 16, MLP
    #   3·4·8 = 96, AltUp 28, LAuReL 12, per-layer gate 8 + projection 8 + norm 4 = 20,
    #   first-layer extras 24 + 16 + 2 + 16 = 58 → 282
    # layer 1: q 16 + o 16 + q norm 2 = 34, norms 16, MLP 3·4·4 = 48, 28, 12, 20, 16 → 174
    # table 10 × 4 = 40 (tied head), final norm 4 → 282 + 174 + 40 + 4 = 500
    assert sum(c.values()) == 500


def test_forward_flops(cli, tmp_path):
    doc = run(cli, "model", model(tmp_path), "--seq", 3)
    # T = 3. Layer 0: q 2·3·4·4 = 96, k and v 2·3·4·2 = 48 each, o 96, scores and AV
    #   2·2·3·3·2 = 72 each → 432; MLP 3 · 2·3·4·8 = 576; AltUp routers 2 · 2·3·4·2 = 96,
    #   prediction 2·3·2·4 = 48, mix 2·3·4·2·2 = 96, correction 2·3·2·2 = 24 → 264; LAuReL
    #   2 · 2·3·4·1 = 48; per-layer gate and projection 2 · 2·3·4·2 = 96; model projection
    #   2·3·4·4 = 96 and stream projection 96 → 1,608.
    # Layer 1: q 96, o 96, scores 72, AV 72 → 336; MLP 3 · 2·3·4·4 = 288; 264; 48; 96; the
    #   projection back 96 → 1,128. Head 2·3·4·10 = 240. 1,608 + 1,128 + 240 = 2,976
    assert doc["flops"]["forward"] == 2976


def test_top_k_gate_is_no_matmul(cli, tmp_path):
    # a dense gate in layer 0 instead: the same forward FLOPs, only element-wise work moves
    path = tmp_path / "dense.yaml"
    path.write_text(TINY.format(first="gemma3n_window@0").replace("[true, false]",
                                                                  "[false, false]"))
    sparse = run(cli, "model", model(tmp_path), "--seq", 3, "--elementwise")
    dense = run(cli, "model", str(path), "--seq", 3, "--elementwise")
    assert run(cli, "model", str(path), "--seq", 3)["flops"]["forward"] == 2976
    # the top-k over T = 3 tokens of the 8-wide gate: mean, deviation (3), subtract, ReLU:
    # 6 · 8 · 3 = 144
    assert sparse["flops"]["forward"] - dense["flops"]["forward"] == 144


def test_kv_shared_layer_keeps_no_cache(cli, tmp_path):
    # layer 0 alone keeps K and V: 1 head × (2 + 2) values × 4 bytes = 16 bytes per token
    two = run(cli, "infer", model(tmp_path), "--prompt", 2, "--gen", 0, "--kv-dtype", "fp32")
    assert two["kv_cache"]["bytes"] == 2 * 16
    # at most the window's 3 tokens
    eight = run(cli, "infer", model(tmp_path), "--prompt", 8, "--gen", 0, "--kv-dtype", "fp32")
    assert eight["kv_cache"]["bytes"] == 3 * 16


@pytest.mark.parametrize("first, words", [
    ("gemma3n_window", "gemma3n_window@N, N the layer's index (0..1)"),
    ("gemma3n_window@2", "gemma3n_window@N, N the layer's index (0..1)"),
])
def test_layer_names_carry_their_index(cli, tmp_path, first, words):
    r = cli("model", model(tmp_path, first))
    assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1


def hf(tmp_path, **keys):
    data = {"model_type": "gemma3n_text", "num_hidden_layers": 4, "hidden_size": 8,
            "intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1,
            "head_dim": 4, "vocab_size": 32, "vocab_size_per_layer_input": 32,
            "layer_types": ["sliding_attention", "full_attention"] * 2,
            "num_kv_shared_layers": 0, **keys}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("keys, words", [
    # transformers finds no earlier layer computing the shared layers' keys
    ({"num_kv_shared_layers": 4}, "num_kv_shared_layers=4 must be 0 or between 1 and"),
    ({"num_kv_shared_layers": 3}, "the KV-shared layers (from layer 1)"),
    ({"activation_sparsity_pattern": [0.95]}, "activation_sparsity_pattern must list one"),
    ({"intermediate_size": [16, 16]}, "intermediate_size has 2 entries"),
    ({"layer_types": ["linear_attention"] * 4}, "layer_types[0] = 'linear_attention'"),
])
def test_importer_refusals(cli, tmp_path, keys, words):
    r = cli("model", hf(tmp_path, **keys))
    assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1


def test_importer_reads_per_layer_widths(cli, tmp_path):
    # 4 layers of widths 16, 8, 16, 8: the gated MLPs hold 3·8·(16 + 8 + 16 + 8) = 1,152
    c = run(cli, "model", hf(tmp_path, intermediate_size=[16, 8, 16, 8],
                             num_kv_shared_layers=2))["params"]["components"]
    assert sum(v for k, v in c.items() if k.split(" ")[0] in (
        "decoder.mlp.gate.weight", "decoder.mlp.up.weight", "decoder.mlp.down.weight")) == 1152
