"""Hy4's kinds by hand (kinds/hy_v4.py): independent hyper-connections around gated sparse latent
attention, a dense MLP and a mixture, every count worked in the comment beside it.

d 8, 2 heads; latent attention with a query rank 4, a KV rank 4, per head 2 + 2 rotary
query/key dimensions and values of 2, an output gate and sinks; an indexer of 1 head of 2, top
3, in layer 0 (layer 1 reuses its selection); 2 hyper-connection streams; layer 0 a gated MLP
of 4, layer 1 2 experts of 2 (top 1) and a shared one; a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

HY = """n_layers: 2
d_model: 8
n_heads: 2
d_ff: 4
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
max_seq_len: 64
tie_embeddings: true
layer_types: [hy_dsa_dense, hy_dsa_shared]
latent_attention: {q_lora_rank: 4, kv_lora_rank: 4, qk_nope_head_dim: 2, qk_rope_head_dim: 2,
                   v_head_dim: 2}
sparse_attention: {index_n_heads: 1, index_head_dim: 2, index_topk: 3}
hyper_connections: {hc_mult: 2}
moe: {experts: 2, top_k: 1, d_ff: 2, shared_experts: 1}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "hy.yaml"
    path.write_text(HY)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # An independent hyper-connection of N = 2: fn 2·N = 4 gates × N·d = 16 → 64, base 4,
    # scale 2 → 70 (no mixing matrix); one before each sublayer of 2 layers.
    assert c["decoder.attn.hc.fn"] == c["decoder.mlp.hc.fn"] == 2 * 64
    assert c["decoder.attn.hc.scale"] == 2 * 2
    # The output gate d → h·d_v = 8·4 = 32, the sinks 2, per layer.
    assert c["decoder.attn.q_gate.weight"] == 2 * 32 and c["decoder.attn.sinks"] == 2 * 2
    # Per layer: the connections 2·70 = 140; latent attention q_a 8·4 = 32, its norm 4, q_b
    # 4·(2·4) = 32, kv_a 8·(4 + 2) = 48, its norm 4, kv_b 4·2·(2 + 2) = 32, o (2·2)·8 = 32,
    # sinks 2, gate 32 → 218; two RMSNorms 16. Layer 0 adds its indexer, wq_b 4·2 = 8, wk
    # 8·2 = 16, k_norm 2 + 2, weights_proj 8 → 36, and the MLP 3·8·4 = 96 (506); layer 1 the
    # mixture: router 8·2 = 16, experts 2·3·8·2 = 96, shared 3·8·2 = 48 → 160 (534). The
    # table 64, the final norm 8, the hyper-head 2·16 + 2 + 1 = 35.
    assert sum(c.values()) == 506 + 534 + 64 + 8 + 35 == 1147


def test_forward(cli, model):
    f = run(cli, "model", model, "--seq", 4)["flops"]
    c = f["components"]
    # T = 4. Each connection 2·4·16·4 = 512, four of them; the gate 2·4·8·4 = 256 per layer.
    assert c["decoder.attn.hc.fn"] + c["decoder.mlp.hc.fn"] == 4 * 512
    assert c["decoder.attn.q_gate"] == 2 * 256
    # Per layer the latent attention: q_a 2·4·8·4 = 256, q_b 256, kv_a 2·4·8·6 = 384, kv_b
    # 256, o 256, the gate 256, scores 2·2·4·16 pairs = 256, AV 2·2·2·16 = 128 → 2048. Layer
    # 0's indexer: wq_b 2·4·4·2 = 64, wk 2·4·8·2 = 128, weights_proj 64, scores 2·1·2·16 = 64,
    # head sum 2·1·16 = 32 → 352. The MLP 2·4·3·8·4 = 768; the mixture's router 2·4·8·2 = 128,
    # one expert 2·4·3·8·2 = 384 and the shared one 384 → 896. The hyper-head 2·4·16·2 = 256,
    # the head 2·4·8·8 = 512.
    assert f["forward"] == 2048 + 2 * 2048 + 352 + 768 + 896 + 256 + 512 == 8928


def test_training_memory_is_refused_in_one_line(cli, model):
    r = cli("memory", model)
    assert r.code == 2 and "hyper-connections" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1


def test_attention_bias_leaves_the_gate_unbiased(cli, tmp_path):
    """attention_bias biases q_a, kv_a and o (HYV4Attention), never gate_proj."""
    path = tmp_path / "hy-bias.yaml"
    path.write_text(HY + "bias: {qkv: true, attn_out: true}\n")
    c = run(cli, "model", str(path))["params"]["components"]
    assert "decoder.attn.q_gate.bias" not in c
    # q_a's bias r_q = 4, kv_a's r_kv + d_rope = 6, o's d = 8, in each of 2 layers
    assert (c["decoder.attn.q_a.bias"], c["decoder.attn.kv_a.bias"], c["decoder.attn.o.bias"]) \
        == (8, 12, 16)
