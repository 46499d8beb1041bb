"""LFM2's gated short convolution by hand: a two-layer hybrid small enough that every count is
worked in the comment beside it.

d 4; layer 0 a gated short conv of 3 taps with biases, layer 1 attention (2 heads of 2,
QK-norm); a gated SiLU MLP of 6 in both; RMSNorms; a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

LFM2 = """n_layers: 2
d_model: 4
n_heads: 2
d_ff: 6
mlp: gated
activation: silu
norm: rmsnorm
qk_norm: per_head
positions: rotary
vocab_size: 8
tie_embeddings: true
layer_types: [short_conv, full]
short_conv: {conv_L_cache: 3, conv_bias: true}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "lfm2.yaml"
    path.write_text(LFM2)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # The conv block: in_proj 4·12 = 48 and its bias 12, the conv 4·3 = 12 and its bias 4,
    # out_proj 16 and its bias 4: 96. Attention q, k, v, o 16 each and the QK-norms 2 each: 68.
    # The MLPs 3·4·6 = 72 each, two RMSNorms per layer, the final one, the table 32.
    assert {k: v for k, v in c.items() if k.startswith("decoder.conv.")} == {
        "decoder.conv.in_proj.weight": 48, "decoder.conv.in_proj.bias": 12,
        "decoder.conv.conv.weight": 12, "decoder.conv.conv.bias": 4,
        "decoder.conv.out_proj.weight": 16, "decoder.conv.out_proj.bias": 4}
    assert sum(c.values()) == 32 + 96 + 68 + 2 * 72 + 4 * 4 + 4 == 360


def test_forward(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    c = f["components"]
    # T = 5: in_proj 2·5·4·12 = 480, the conv over 5 + 2 columns 2·4·3·7 = 168, out_proj
    # 2·5·4·4 = 160 (the gates are element-wise).
    assert (c["decoder.conv.in_proj"], c["decoder.conv.conv"], c["decoder.conv.out_proj"]) == (
        480, 168, 160)
    # Attention: q, k, v, o 160 each, 25 pairs per head: QKᵀ and AV 2·2·25·2 = 200 each; the
    # MLPs 3·2·5·4·6 = 720 each; the LM head 320.
    assert f["forward"] == 808 + 4 * 160 + 400 + 2 * 720 + 320 == 3608
    assert f["attention"] == 400


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # B·x and C·conv 2·5·4 = 40; biases: in_proj 5·12 = 60, the conv's on all 7 columns 4·7 = 28,
    # out_proj 5·4 = 20: 108.
    assert (c["decoder.conv.elementwise.gates"], c["decoder.conv.elementwise.bias"]) == (40, 108)


def test_decode_and_state(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    d, kv = doc["decode"], doc["kv_cache"]
    # Per step the conv layer costs in_proj 2·4·12 = 96, its 3 taps on 4 channels 24 and out_proj
    # 32: 3 steps 288, 72, 96.
    c = d["components"]
    assert (c["decoder.conv.in_proj"], c["decoder.conv.conv"], c["decoder.conv.out_proj"]) == (
        288, 72, 96)
    # Per sequence the conv window 4 x 3 = 12 values (bf16: 24 bytes); the attention layer's K
    # and V 2·2·2 = 8 values per token (16 bytes) for the 5 + 3 tokens: 128.
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"], kv["bytes"]) == (16, 24, 152)
    assert kv["layers"]["decoder.short_conv.conv_state"] == 24


def test_memory(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # s = 5, b = 1, 16-bit: in_proj's output (B, C, x) 2·5·12 = 120, the conv's input B·x and
    # output 40 each, out_proj's input 40.
    assert {k: v for k, v in t.items() if k.startswith("conv.")} == {
        "conv.input": 40, "conv.in_proj_output": 120, "conv.conv_input": 40,
        "conv.conv_output": 40, "conv.o_input": 40}


def test_tensor_parallelism_splits_channels(cli, model):
    assert cli("memory", model, "--tp", "2").code == 0
    r = cli("memory", model, "--tp", "8")
    assert r.code == 2 and "--tp 8" in r.err
