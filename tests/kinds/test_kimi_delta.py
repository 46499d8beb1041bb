"""Kimi delta attention by hand: a mixer small enough that every count is worked in the comment
beside it.

d 4, 2 heads of 2 channels (HD = 4), a conv of 3 taps over q, k and v (12 channels), chunks of
4; one layer (an RMSNorm and the mixer, no MLP), a final RMSNorm, a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

KDA = """n_layers: 1
d_model: 4
norm: rmsnorm
activation: silu
positions: none
vocab_size: 8
tie_embeddings: true
layer_types: [kda]
kimi_delta: {num_heads: 2, head_dim: 2, short_conv_kernel_size: 3, chunk_size: 4}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "kda.yaml"
    path.write_text(KDA)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # q, k, v 4·4 = 16 each; the conv 12·3 = 36 (no bias); f_a 4·2 = 8, f_b 2·4 = 8; dt_bias 4
    # (per channel), A_log 2 (per head); b 4·2 = 8; g_a 8, g_b 8; the gated norm's gain over a
    # head's 2; o 4·4 = 16: 148. The layer's RMSNorm 4, the final one 4, the table 32.
    assert c == {"embed.tokens": 32, "decoder.kda_norm.weight": 4,
                 "decoder.kda.q.weight": 16, "decoder.kda.k.weight": 16,
                 "decoder.kda.v.weight": 16, "decoder.kda.conv.weight": 36,
                 "decoder.kda.f_a.weight": 8, "decoder.kda.f_b.weight": 8,
                 "decoder.kda.dt_bias": 4, "decoder.kda.A_log": 2, "decoder.kda.b.weight": 8,
                 "decoder.kda.g_a.weight": 8, "decoder.kda.g_b.weight": 8,
                 "decoder.kda.o_norm.weight": 2, "decoder.kda.o.weight": 16,
                 "decoder.final_norm.weight": 4}
    assert sum(c.values()) == 188


def test_forward_five_tokens_pad_to_two_chunks(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    # T = 5. q, k, v 2·5·4·4 = 160 each; the conv over 5 + 2 columns 2·12·3·7 = 504; f_a, f_b,
    # b, g_a, g_b 2·5·4·2 = 80 each (d·D = D·HD = d·H = 8); o 160; the LM head 2·5·4·8 = 320.
    # The chunked rule runs on 5 padded to 8: 2 chunks x 2 heads = 4 blocks, each with
    # A·(v·β) and A·(k·β·e^g) 2·(2·4·4·2) = 128, (q·e^g)·S and k_cumdecay·S 2·(2·4·2·2) = 64,
    # A_qk·v_new 2·4·4·2 = 64 and the state update 2·2·4·2 = 32: 512, 256, 256, 128.
    assert f["components"] == {
        "decoder.kda.q": 160, "decoder.kda.k": 160, "decoder.kda.v": 160,
        "decoder.kda.conv": 504, "decoder.kda.f_a": 80, "decoder.kda.f_b": 80,
        "decoder.kda.b": 80, "decoder.kda.g_a": 80, "decoder.kda.g_b": 80,
        "decoder.kda.chunk.ut_transform": 512, "decoder.kda.chunk.state_reads": 256,
        "decoder.kda.chunk.intra": 256, "decoder.kda.chunk.state_update": 128,
        "decoder.kda.o": 160, "lm_head": 320}
    # The chunk terms are 2·B·H·Lp·(3·C·D + 3·D²) = 2·2·8·(24 + 12) = 1,152.
    assert f["families"] == {"weights": 3 * 160 + 504 + 5 * 80 + 160 + 320, "scan": 1152}
    assert (f["attention"], f["forward"]) == (0, 3016)


def test_one_token_costs_a_whole_chunk(cli, model):
    f = run(cli, "model", model, "--seq", 1)["flops"]["components"]
    # L = 1 pads to one chunk of 4: 2 blocks (1 chunk x 2 heads), 256 + 128 + 128 + 64.
    assert (f["decoder.kda.chunk.ut_transform"], f["decoder.kda.chunk.state_reads"],
            f["decoder.kda.chunk.intra"], f["decoder.kda.chunk.state_update"]) == (
        256, 128, 128, 64)
    assert f["decoder.kda.conv"] == 2 * 12 * 3 * 3  # 1 + 2 columns


def test_no_crossover_and_the_conventions_say_how(cli, model):
    doc = run(cli, "model", model, "--seq", 5)
    assert doc["crossover"]["seq"] is None and "no layer has attention" in doc["crossover"]["note"]
    assert any(line.startswith("Kimi delta attention: as the Hugging Face PyTorch path") and
               "per chunk of 4" in line for line in doc["conventions"])


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # SiLU on the 12 conv channels of 5 tokens 4·12·5 = 240. Gates: f + dt_bias, the written-out
    # softplus (compare, exp, add, log) and the product, 6 per channel 6·5·4 = 120, −exp(A_log)
    # 2·2 = 4, β's sigmoid 4·5·2 = 40: 164. The l2norms of q and k: 2·(3·20 + 2·10) = 160.
    # On the padded 8: q·scale, v·β, k·β, the cumsum, exp(g) and k·β·exp(g), 6·(2·8)·2 = 192.
    # Per block (4 of them): the (4, 4, 2) decay 2·32 = 64, A = −(k_β·k·decay).sum 3·32 + 16 =
    # 112, the forward substitution Σ_{i<4} (2i² + i) = 3 + 10 + 21 = 34, + I 16: 226, x 4 = 904.
    # The scan per block: 7·4·2 + 3·16·2 + 2·4 + 2 = 56 + 96 + 8 + 2 = 162, x 4 = 648. The gated
    # norm 9·5·4 + 2·5·2 = 200.
    assert (c["decoder.kda.elementwise.conv"], c["decoder.kda.elementwise.gates"],
            c["decoder.kda.elementwise.l2norm"], c["decoder.kda.elementwise.prepare"],
            c["decoder.kda.elementwise.intra_chunk"], c["decoder.kda.elementwise.scan"],
            c["decoder.kda.elementwise.gated_norm"]) == (240, 164, 160, 192, 904, 648, 200)
    # The layer's RMSNorm 4·5·4 = 80, its residual add 5·4 = 20, the final norm 80.
    assert (c["decoder.kda.elementwise.norm"], c["decoder.kda.elementwise.residual"],
            c["decoder.final_norm.elementwise"]) == (80, 20, 80)


def test_decode_and_state(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    d, kv = doc["decode"], doc["kv_cache"]
    # A step: q, k, v 2·4·4 = 32 each, f_a, f_b, b, g_a, g_b 16 each, the conv's 3 taps on 12
    # channels 72, the decay of the 2·2·2 = 8 state values 8, the delta rule 4·8 + 2·2·2 = 40,
    # the read-out 2·8 = 16, o 32, the LM head 2·4·8 = 64: 408, whatever the position.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (408, 408, 3 * 408)
    assert (d["components"]["decoder.kda.scan.decay"], d["components"]["decoder.kda.scan.delta"],
            d["components"]["decoder.kda.scan.readout"]) == (3 * 8, 3 * 40, 3 * 16)
    # Kept per sequence: the conv window 12 x 3 = 36 values in bf16 (72 bytes) and the state 8
    # values in fp32 (32 bytes); no per-token cache.
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"], kv["bytes"]) == (0, 104, 104)
    assert kv["layers"] == {"decoder.kda.conv_state": 72, "decoder.kda.recurrent_state": 32}
    # Bytes of a step: the weights once 188·2 = 376, the states read and written 104 each.
    assert d["bytes_first"] == d["bytes_last"] == 376 + 208
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--state-dtype", "bf16")
    assert doc["kv_cache"]["state_bytes_per_sequence"] == 72 + 16


def test_memory_keeps_what_fla_keeps(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # s = 5, b = 1, 16-bit unless said: the RMSNorm's input 2·5·4 = 40 and the mixer's 40; the
    # conv inputs (q, k, v projections) 2·5·12 = 120; f_a's and g_a's outputs 2·5·2·2 = 40; the
    # kernel's q, k, v 120, raw gate 2·5·4 = 40, β 2·5·2 = 20, A_qk and A_kk (C = 4 wide per head)
    # 2·5·2·2·4 = 160, fp32 reciprocal norms of q and k 4·5·2·2 = 80; the gated norm's input and
    # gate 2·5·8 = 80 and fp32 reciprocal per head 4·5·2 = 40; o's input 40.
    assert t == {"norm_inputs": 40, "kda.input": 40, "kda.conv_inputs": 120,
                 "kda.gate_low_rank": 40, "kda.qkv": 120, "kda.gate": 40, "kda.beta": 20,
                 "kda.intra_chunk": 160, "kda.l2norm_rstd": 80, "kda.gated_norm_inputs": 80,
                 "kda.gated_norm_rstd": 40, "kda.o_input": 40}


def test_tensor_parallelism_splits_the_heads(cli, model):
    t = run(cli, "memory", model, "--seq", 5, "--tp", 2)["activations"]["layers"][0]["tensors"]
    # Everything halves but f_a's and g_a's outputs (replicated low-rank projections).
    assert (t["kda.conv_inputs"], t["kda.gate_low_rank"], t["kda.intra_chunk"]) == (60, 40, 80)
    r = cli("memory", model, "--tp", "4")
    assert r.code == 2 and "--tp 4 must divide the 2" in r.err


def test_a_missing_block_is_one_line(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(KDA.replace("kimi_delta: {num_heads: 2, head_dim: 2, "
                                "short_conv_kernel_size: 3, chunk_size: 4}\n", ""))
    r = cli("model", str(path))
    assert r.code == 2 and "kda layers need a kimi_delta block" in r.err
    assert "Traceback" not in r.err
