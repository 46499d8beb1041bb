"""Mamba-2 by hand: a mixer small enough that every count is worked in the comment beside it.

d 4, 2 heads of 2 channels (E = 4), a state of 2 per head in 1 group (G·N = 2), a conv of 3
taps, chunks of 4; one layer (an RMSNorm and the mixer, no MLP), a final RMSNorm, a tied
vocabulary of 8. Conv channels E + 2GN = 8; in_proj width 2E + 2GN + H = 14.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MAMBA2 = """n_layers: 1
d_model: 4
norm: rmsnorm
positions: none
vocab_size: 8
tie_embeddings: true
layer_types: [mamba2]
mamba2: {n_heads: 2, head_dim: 2, d_state: 2, n_groups: 1, d_conv: 3, chunk_size: 4}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "mamba2.yaml"
    path.write_text(MAMBA2)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # in_proj 4·14 = 56; conv 8·3 = 24 and its bias 8; dt_bias, A_log, D 2 each; the gated
    # norm's gain 4; out_proj 4·4 = 16: 114. The layer's RMSNorm 4, the final one 4, the table 32.
    assert c == {"embed.tokens": 32, "decoder.mamba_norm.weight": 4,
                 "decoder.mamba.in_proj.weight": 56, "decoder.mamba.conv.weight": 24,
                 "decoder.mamba.conv.bias": 8, "decoder.mamba.dt_bias": 2,
                 "decoder.mamba.A_log": 2, "decoder.mamba.D": 2,
                 "decoder.mamba.norm.weight": 4, "decoder.mamba.out_proj.weight": 16,
                 "decoder.final_norm.weight": 4}
    assert sum(c.values()) == 154


def test_forward_five_tokens_pad_to_two_chunks(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    # T = 5, nc = 2 chunks of 4 (5 padded to 8). in_proj 2·5·4·14 = 560; conv over 5 + 2
    # columns 2·8·3·7 = 336; C·Bᵀ 2·2·4²·2·2 = 256; the masked product with X 2·2·16·2·2 = 256;
    # the chunk states 2·2·4·2·2·2 = 128; states passed over 3 chunks 2·3²·2·2·2 = 144; read out
    # 128; out_proj 2·5·4·4 = 160; the LM head 2·5·4·8 = 320.
    assert f["components"] == {
        "decoder.mamba.in_proj": 560, "decoder.mamba.conv": 336, "decoder.mamba.ssd.cb": 256,
        "decoder.mamba.ssd.diag": 256, "decoder.mamba.ssd.states": 128,
        "decoder.mamba.ssd.passing": 144, "decoder.mamba.ssd.readout": 128,
        "decoder.mamba.out_proj": 160, "lm_head": 320}
    assert f["families"] == {"weights": 560 + 336 + 160 + 320, "scan": 256 + 256 + 128 + 144 + 128}
    assert (f["attention"], f["forward"]) == (0, 2288)


def test_no_crossover_and_the_conventions_say_how(cli, model):
    doc = run(cli, "model", model, "--seq", 5)
    assert doc["crossover"]["seq"] is None and "no layer has attention" in doc["crossover"]["note"]
    assert any(line.startswith("Mamba-2: as the Hugging Face PyTorch path") for line in
               doc["conventions"])


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # SiLU after the conv 4·8·5 = 160 and its bias on all 7 columns 8·7 = 56; A = −exp(A_log)
    # 2·2, per token and head dt + bias, softplus, clamp, A·dt 7·5·2 = 70, x·dt 5·4 = 20; decays:
    # 4·2·8 = 64 on the padded length, B·decay 8·2·2 = 32, the segment sums 5·2·4² per chunk
    # (x 2) = 320 and between chunks 4·2·3² = 72; the output 4·8·2·2 = 128; the gated norm
    # 9·5·4 + 2·5 = 190.
    assert (c["decoder.mamba.elementwise.conv"], c["decoder.mamba.elementwise.discretize"],
            c["decoder.mamba.elementwise.decay"], c["decoder.mamba.elementwise.output"],
            c["decoder.mamba.elementwise.gated_norm"]) == (216, 94, 488, 128, 190)
    # The layer's RMSNorm 4·5·4 = 80, its residual add 5·4 = 20, the final norm 80.
    assert (c["decoder.mamba.elementwise.norm"], c["decoder.mamba.elementwise.residual"],
            c["decoder.final_norm.elementwise"]) == (80, 20, 80)


def test_decode_and_state(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    d, kv = doc["decode"], doc["kv_cache"]
    # A step: in_proj 2·4·14 = 112, conv 2·8·3 = 48, the state update 3·(2·2·2) = 24 and its
    # read-out 2·8 = 16, out_proj 32, LM head 2·4·8 = 64: 296, whatever the position.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (296, 296, 3 * 296)
    assert d["components"]["decoder.mamba.scan.update"] == 3 * 24
    # Kept per sequence: the conv window 8 x 3 = 24 values in bf16 (48 bytes) and the state 8
    # values in fp32 (32 bytes); no per-token cache.
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"], kv["bytes"]) == (0, 80, 80)
    assert kv["layers"] == {"decoder.mamba2.conv_state": 48, "decoder.mamba2.ssm_state": 32}
    # Bytes of a step: the weights once 154·2 = 308, the states read and written 80 each.
    assert d["bytes_first"] == d["bytes_last"] == 308 + 160
    # --state-dtype bf16 halves the SSM state: 48 + 16.
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--state-dtype", "bf16")
    assert doc["kv_cache"]["state_bytes_per_sequence"] == 64


def test_memory_keeps_what_the_fused_kernel_keeps(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # s = 5, b = 1: the RMSNorm's input 2·5·4 = 40, the mixer's input 40, its in_proj output
    # 2·5·14 = 140, the scan output 2·5·4 = 40 and the norm's fp32 1/rms per group 4·5·1 = 20.
    assert t == {"norm_inputs": 40, "mamba.input": 40, "mamba.in_proj_output": 140,
                 "mamba.scan_output": 40, "mamba.norm_rstd": 20}


def test_tensor_parallelism_splits_the_heads(cli, model):
    r = cli("memory", model, "--tp", "2")
    assert r.code == 0, r.err
    r = cli("memory", model, "--tp", "4")
    assert r.code == 2 and "--tp 4 must divide the 2" in r.err


@pytest.mark.parametrize("keys, bias", [
    # in_proj and out_proj biases: one add per output, 5 tokens x (14 + 4) = 90
    ("bias: true, conv_bias: false", 5 * 14 + 5 * 4),
    # in_proj's alone (out_bias overrides bias for out_proj): 5·14 = 70
    ("bias: true, out_bias: false, conv_bias: false", 5 * 14),
])
def test_elementwise_projection_biases_and_no_conv_bias(cli, tmp_path, keys, bias):
    path = tmp_path / "biased.yaml"
    path.write_text(MAMBA2.replace("chunk_size: 4}", f"chunk_size: 4, {keys}}}"))
    f = run(cli, "model", str(path), "--seq", 5, "--elementwise")["flops"]
    c = f["components"]
    assert c["decoder.mamba.elementwise.bias"] == bias
    # SiLU after the conv 4·8·5 = 160, no conv bias to add
    assert c["decoder.mamba.elementwise.conv"] == 160
    assert f["families"]["elementwise"] == sum(v for k, v in c.items() if "elementwise" in k)
