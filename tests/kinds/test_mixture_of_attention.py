"""A mixture of attention heads (JetMoE's MoA) and a mixture of experts with one output bias, by
hand: every count is worked in the comment beside it.

d 4; 3 attention experts, each a query projection d → 1 KV head of 2 and an output projection
2 → d, top-2 (so 2 query heads per token over one shared key/value head of 2); the feed-forward
a mixture of 3 SwiGLU experts of 2, top-2, with JetMoE's d-wide output bias. One layer, a tied
vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MOA = """n_layers: 1
d_model: 4
n_heads: 2
n_kv_heads: 1
head_dim: 2
d_ff: 2
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
tie_embeddings: true
layer_types: [moa]
moa: {experts: 3, top_k: 2}
moe: {experts: 3, top_k: 2, d_ff: 2, output_bias: true}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "moa.yaml"
    path.write_text(MOA)
    return str(path)


def test_params(cli, model):
    p = run(cli, "model", model)["params"]
    c = p["components"]
    # MoA: router 4·3 = 12, query experts 3·4·2 = 24, shared k and v 4·2 = 8 each, output
    # experts 3·2·4 = 24, the output bias 4: 80. MoE: router 12, experts 3·(4·2 + 4·2 + 2·4)
    # = 72, the output bias 4: 88. Two RMSNorms 8, the final norm 4, the table 32: 212.
    assert (c["decoder.attn.router.weight"], c["decoder.attn.q_experts.weight"],
            c["decoder.attn.k.weight"], c["decoder.attn.v.weight"],
            c["decoder.attn.o_experts.weight"], c["decoder.attn.output_bias"]) == (
        12, 24, 8, 8, 24, 4)
    assert c["decoder.mlp.output_bias"] == 4
    assert p["total"] == 212
    # A token uses 2 of the 3 attention experts (8 + 8 unused) and 2 of the 3 MLP experts
    # (24 unused).
    assert p["active"] == 212 - 16 - 24


def test_forward(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    # T = 5. Router 2·5·4·3 = 120; each token's 2 query experts 2·5·2·4·2 = 160; k and v
    # 2·5·4·2 = 80 each; 2 heads score 25 pairs, 2·2·25·2 = 200, values the same; 2 output
    # experts 2·5·2·2·4 = 160. MoE: router 120, 10 routed rows through gate, up and down
    # 2·10·4·2 = 160 each. LM head 2·5·4·8 = 320.
    assert f["components"] == {
        "decoder.attn.router": 120, "decoder.attn.q": 160, "decoder.attn.k": 80,
        "decoder.attn.v": 80, "decoder.attn.scores": 200, "decoder.attn.av": 200,
        "decoder.attn.o": 160, "decoder.mlp.router": 120, "decoder.mlp.experts.gate": 160,
        "decoder.mlp.experts.up": 160, "decoder.mlp.experts.down": 160, "lm_head": 320}
    assert f["forward"] == 1920


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise", "--attention", "causal"
            )["flops"]["components"]
    # Softmax over 15 causal pairs per head: 5·2·15 = 150. The output biases 5·4 = 20 each.
    # Routing, per token the softmax over 3 logits (4 each) and the 2 expert outputs scaled and
    # summed (2·2·4): 5·(12 + 16) = 140 each. The experts' SiLU and product 10·2·(4 + 1) = 100.
    assert (c["decoder.attn.elementwise.softmax"], c["decoder.attn.elementwise.bias"],
            c["decoder.attn.elementwise.routing"], c["decoder.mlp.elementwise.bias"],
            c["decoder.mlp.elementwise.routing"], c["decoder.mlp.elementwise.activation"]) == (
        150, 20, 140, 20, 140, 100)


def test_decode_and_cache(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3)
    d, kv = doc["decode"], doc["kv_cache"]
    # A step's weights: routers 2·4·3 = 24 each, 2 query experts 2·2·4·2 = 32, k and v 16
    # each, 2 output experts 32, the MLP experts 2·(16 + 16 + 16) = 96, the head 64: 304. The
    # 2 heads score the keys the step sees (6, 7, 8 at positions 5..7): 2·2·2 per key and the
    # values the same, 16 per key.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (
        304 + 16 * 6, 304 + 16 * 8, 3 * 304 + 16 * (6 + 7 + 8))
    # The shared key and value head: 2 + 2 values per token, bf16, 8 tokens.
    assert (kv["bytes_per_token"], kv["bytes"]) == (8, 64)
    # One token reads 2 of the 3 experts of each mixture: 212 − 8 − 8 (one attention expert)
    # − 24 (one MLP expert) = 172 parameters, 344 bytes.
    r = d["routing"]
    assert (r["weight_bytes_least"], r["weight_bytes_most"]) == (344, 344)


def test_memory_keeps_the_router_logits(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # The attention router's logits in fp32: 4·5·3 = 60 bytes.
    assert t["attn.router_logits"] == 60


def test_bad_head_count(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(MOA.replace("n_heads: 2", "n_heads: 4"))
    r = cli("model", str(path))
    assert r.code != 0 and "n_kv_heads × moa.top_k" in r.err
    path.write_text(MOA.replace("layer_types: [moa]\nmoa: {experts: 3, top_k: 2}\n",
                                "layer_types: [moa]\n"))
    r = cli("model", str(path))
    assert r.code != 0 and "moa block" in r.err
