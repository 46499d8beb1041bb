"""Gated attention by hand (Qwen3-Next's full-attention layers): the query projection twice as
wide, its second half a gate per output element, o reading attention·sigmoid(gate).

d 4, 2 query heads of 2 over 1 KV head, one layer with a plain ReLU MLP of 4, RMSNorms, a tied
vocabulary of 8; the same model without the gate beside it, so that every figure is the
difference the research states: d·h·d_v more parameters, 2·T·d·h·d_v more FLOPs, 5 more
element-wise FLOPs per gated element, nothing more cached.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

BASE = """n_layers: 1
d_model: 4
n_heads: 2
n_kv_heads: 1
d_ff: 4
mlp: plain
activation: relu
norm: rmsnorm
positions: none
vocab_size: 8
tie_embeddings: true
"""


@pytest.fixture
def models(tmp_path):
    plain, gated = tmp_path / "plain.yaml", tmp_path / "gated.yaml"
    plain.write_text(BASE)
    gated.write_text(BASE + "attention_gate: true\n")
    return str(plain), str(gated)


def test_params(cli, models):
    plain, gated = (run(cli, "model", m)["params"] for m in models)
    # The gate: a (4 x 2·2) half of q_proj, 16 parameters; everything else as without it.
    c = gated["components"]
    assert c["decoder.attn.q_gate.weight"] == 16
    assert gated["total"] - plain["total"] == 16
    assert {k: v for k, v in c.items() if k != "decoder.attn.q_gate.weight"} == \
        plain["components"]
    # q 16, k 8, v 8, o 16, the gate 16; the MLP 16 + 16; norms 3·4; the table 32.
    assert gated["total"] == 64 + 32 + 12 + 32


def test_forward(cli, models):
    plain, gated = (run(cli, "model", m, "--seq", 3)["flops"] for m in models)
    # T = 3: q 2·3·4·4 = 96 and the gate as much again; k, v 2·3·4·2 = 48 each; scores and
    # values 2·2 heads·9 pairs·2 = 72 each; o 96; the MLP 96 + 96; the LM head 2·3·4·8 = 192.
    assert gated["components"]["decoder.attn.q_gate"] == 96
    assert gated["forward"] - plain["forward"] == 96
    assert gated["forward"] == 96 * 2 + 48 * 2 + 72 * 2 + 96 + 96 * 2 + 192


def test_elementwise(cli, models):
    plain, gated = (run(cli, "model", m, "--seq", 3, "--elementwise")["flops"]["components"]
                    for m in models)
    # sigmoid (4) and the product (1) on each of the 3·4 gated output elements: 60.
    assert gated["decoder.attn.elementwise.gate"] == 60
    assert {k: v for k, v in gated.items() if k not in (
        "decoder.attn.q_gate", "decoder.attn.elementwise.gate")} == plain


def test_gate_bias(cli, tmp_path):
    path = tmp_path / "bias.yaml"
    path.write_text(BASE + "attention_gate: true\nbias: {qkv: true}\n")
    doc = run(cli, "model", path, "--seq", 3, "--elementwise")
    # q_proj's bias is 2·h·d wide: the gate's half 4, added on 3·4 elements.
    assert doc["params"]["components"]["decoder.attn.q_gate.bias"] == 4
    # q, k, v biases 3·(4 + 2 + 2) = 24 and the gate's 12.
    assert doc["flops"]["components"]["decoder.attn.elementwise.bias"] == 24 + 12


def test_decode_and_cache(cli, models):
    plain, gated = (run(cli, "infer", m, "--prompt", 5, "--gen", 2) for m in models)
    # One more (1 x 4)·(4 x 4) product per step; the gate is not cached.
    assert gated["decode"]["flops"] - plain["decode"]["flops"] == 2 * 2 * 4 * 4
    assert gated["kv_cache"]["bytes"] == plain["kv_cache"]["bytes"]


def test_memory_keeps_the_gate(cli, models):
    plain, gated = (run(cli, "memory", m, "--seq", 5)["activations"]["layers"][0]["tensors"]
                    for m in models)
    # s = 5: the sigmoid gate and the ungated output, 2·5·4 = 40 bytes each in 16 bits.
    assert (gated["attn.gate"], gated["attn.ungated_output"]) == (40, 40)
    assert {k: v for k, v in gated.items() if k not in ("attn.gate", "attn.ungated_output")} \
        == plain


def test_conventions_say_how(cli, models):
    doc = run(cli, "model", models[1])
    assert any(line.startswith("gated attention (Qwen3-Next)") for line in doc["conventions"])


def test_not_with_latent_attention(cli, tmp_path):
    path = tmp_path / "mla.yaml"
    path.write_text(BASE.replace("n_kv_heads: 1\n", "") + "attention_gate: true\n"
                    "latent_attention: {q_lora_rank: null, kv_lora_rank: 2, "
                    "qk_nope_head_dim: 2, qk_rope_head_dim: 2, v_head_dim: 2}\n")
    r = cli("model", str(path))
    assert r.code == 2 and "attention_gate applies to softmax attention" in r.err
