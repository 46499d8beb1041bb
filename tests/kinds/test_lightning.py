"""Lightning attention by hand: a mixer small enough that every count is worked in the comment
beside it.

d 4, 2 heads of 2 (HD = 4), blocks of 2 tokens; one layer (an RMSNorm and the mixer, no MLP), a
final RMSNorm, a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

LIGHTNING = """n_layers: 1
d_model: 4
n_heads: 2
norm: rmsnorm
activation: silu
positions: none
vocab_size: 8
tie_embeddings: true
layer_types: [lightning]
lightning: {block_size: 2}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "lightning.yaml"
    path.write_text(LIGHTNING)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # qkv 4·12 = 48, the output gate 4·4 = 16, the norm's gain over all heads 4, out 16: 84. The
    # layer's RMSNorm 4, the final one 4, the table 32. The decay slopes are buffers.
    assert c == {"embed.tokens": 32, "decoder.lightning_norm.weight": 4,
                 "decoder.lightning.qkv.weight": 48, "decoder.lightning.output_gate.weight": 16,
                 "decoder.lightning.norm.weight": 4, "decoder.lightning.out.weight": 16,
                 "decoder.final_norm.weight": 4}
    assert sum(c.values()) == 124


def test_forward_five_tokens_in_blocks_of_two(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    # T = 5: qkv 2·5·4·12 = 480, the gate 2·5·4·4 = 160, out 160, the LM head 2·5·4·8 = 320.
    # Blocks of 2, 2 and 1 (no padding): Σ s² = 4 + 4 + 1 = 9 pairs per head; Q·Kᵀ and its
    # product with V 2·2·9·2 = 72 each; the state read (s×D)·(D×D) and update (D×s)·(s×D) over
    # all 5 tokens 2·2·5·2·2 = 80 each. In all 4·B·H·D·(Σ s² + L·D) = 16·(9 + 10) = 304.
    assert f["components"] == {
        "decoder.lightning.qkv": 480, "decoder.lightning.output_gate": 160,
        "decoder.lightning.blocks.scores": 72, "decoder.lightning.blocks.values": 72,
        "decoder.lightning.blocks.state_read": 80, "decoder.lightning.blocks.state_update": 80,
        "decoder.lightning.out": 160, "lm_head": 320}
    assert f["families"] == {"weights": 480 + 160 + 160 + 320, "scan": 304}
    assert (f["attention"], f["forward"]) == (0, 1424)


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # SiLU on q, k, v 4·5·12 = 240. Per block (3): exp(−slope·s) 3·2 = 6 (18); the scores times
    # the decay mask 2·(4 + 4 + 1) = 18; Q·decay, inter + intra, K·decay 3·2·5·2 = 60; the
    # state's decay and the add 2·2·4 per block (48): 144. The RMSNorm over the 4 channels
    # 4·20 + 2·5 = 90, the gate's sigmoid 4·20 = 80 and the product 20: 190.
    assert (c["decoder.lightning.elementwise.activation"],
            c["decoder.lightning.elementwise.blocks"],
            c["decoder.lightning.elementwise.norm_gate"]) == (240, 144, 190)


def test_decode_and_state(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    d, kv = doc["decode"], doc["kv_cache"]
    # A step: qkv 2·4·12 = 96, the gate 32, the update λ·S + kᵀv over the 2·2·2 = 8 state values
    # 3·8 = 24, the read-out q·S 2·8 = 16, out 32, the LM head 64: 264, whatever the position.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (264, 264, 3 * 264)
    # The state, 8 values, in the KV dtype (bf16): 16 bytes per sequence; nothing per token.
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"]) == (0, 16)
    assert kv["layers"] == {"decoder.lightning.kv_state": 16}
    # Bytes of a step: the weights once 124·2 = 248, the state read and written 16 each.
    assert d["bytes_first"] == 248 + 32
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--kv-dtype", "fp32")
    assert doc["kv_cache"]["state_bytes_per_sequence"] == 32


def test_memory(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # s = 5, b = 1, 16-bit: the RMSNorm's and the mixer's inputs 2·5·4 = 40 each; qkv_proj's
    # output and the activated q, k, v 2·5·12 = 120 each; the kernel's output 40, the norm's fp32
    # reciprocal per token 4·5 = 20; the gate's sigmoid, the normed output and out's input 40 each.
    assert t == {"norm_inputs": 40, "lightning.input": 40, "lightning.qkv_proj_output": 120,
                 "lightning.qkv": 120, "lightning.norm_input": 40, "lightning.norm_rstd": 20,
                 "lightning.gate": 40, "lightning.norm_output": 40, "lightning.o_input": 40}


def test_heads_default_to_the_attention_heads_and_must_split_d(cli, tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text(LIGHTNING.replace("n_heads: 2", "n_heads: 3"))
    r = cli("model", str(path))
    assert r.code == 2 and "not divisible by the 3 lightning heads" in r.err
    path.write_text(LIGHTNING.replace("{block_size: 2}", "{block_size: 2, head_dim: 3}")
                    .replace("n_heads: 2", "n_heads: 3"))
    c = run(cli, "model", str(path))["params"]["components"]
    assert c["decoder.lightning.qkv.weight"] == 4 * 27  # 3 heads of 3: HD = 9
