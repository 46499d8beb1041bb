"""The hybrids on Mamba-2 by hand: mixers side by side (Falcon-H1), feed-forward-only layers with
ReLU² and a latent mixture of experts (Nemotron-H), Zamba2's shared blocks, and the µP
multipliers; models small enough that every count is worked in the comment beside it.

Every model has d 4, a vocabulary of 8 and, where it has one, the Mamba-2 mixer of
tests/kinds/test_mamba2.py: 2 heads of 2 (E = 4), a state of 2 in 1 group (G·N = 2), a conv of 3
taps over E + 2GN = 8 channels, chunks of 4, in_proj width 2E + 2GN + H = 14. At 5 tokens it
costs 1,968 FLOPs: in_proj 560, conv 336, the SSD 256 + 256 + 128 + 144 + 128, out_proj 160; a
decode step 232 (in_proj 112, conv 48, state update 24, read-out 16, out_proj 32).
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MAMBA = "mamba2: {n_heads: 2, head_dim: 2, d_state: 2, d_conv: 3, chunk_size: 4"

PARALLEL = f"""n_layers: 1
d_model: 4
n_heads: 2
n_kv_heads: 1
head_dim: 2
d_ff: 6
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
tie_embeddings: false
layer_types: [full+mamba2]
{MAMBA}, gated_norm: false}}
multipliers: {{embedding: true, logits: true, attention: [input, key, output],
  mamba2: [input, projection, output], mlp: [gate, output]}}
"""

FFN_ONLY = f"""n_layers: 4
d_model: 4
n_heads: 2
n_kv_heads: 1
head_dim: 2
d_ff: 6
mlp: plain
activation: relu2
bias: {{mlp: true}}
norm: rmsnorm
positions: none
vocab_size: 8
tie_embeddings: false
layer_types: [mamba2, full, mlp, moe]
{MAMBA}}}
moe: {{experts: 4, top_k: 2, d_ff: 3, shared_experts: 1, shared_d_ff: 5, latent_size: 2,
  expert_bias: false}}
"""

SHARED = f"""n_layers: 3
d_model: 4
norm: rmsnorm
positions: none
activation: gelu
vocab_size: 8
tie_embeddings: true
layer_types: [mamba2+shared@0, mamba2, mamba2+shared@0]
{MAMBA}}}
shared_block: {{n_heads: 2, d_ff: 6, adapter_rank: 1}}
"""


def write(tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


@pytest.fixture
def parallel(tmp_path):
    return write(tmp_path, "parallel", PARALLEL)


@pytest.fixture
def ffn_only(tmp_path):
    return write(tmp_path, "ffn_only", FFN_ONLY)


@pytest.fixture
def shared(tmp_path):
    return write(tmp_path, "shared", SHARED)


# ------------------------------------------------------ attention and Mamba-2 side by side


def test_parallel_mixers_share_one_norm(cli, parallel):
    c = run(cli, "model", parallel)["params"]["components"]
    # One norm before both mixers (4) and one before the MLP (4). Attention: q 4·4, k and v
    # 4·2, o 4·4 = 48. Mamba-2 without a gated-norm weight: in_proj 4·14 = 56, conv 8·3 + 8,
    # dt_bias, A_log, D 2 each, out_proj 4·4 = 110. Gated MLP 3·4·6 = 72. The tables 2·32, the
    # final norm 4: 306 in all; the µP multipliers are scalars, no parameters.
    assert c["decoder.attn_norm.weight"] == 4 and "decoder.mamba_norm.weight" not in c
    assert "decoder.mamba.norm.weight" not in c
    assert sum(v for k, v in c.items() if k.startswith("decoder.attn.")) == 48
    assert sum(v for k, v in c.items() if k.startswith("decoder.mamba.")) == 110
    assert sum(c.values()) == 306


def test_parallel_forward_is_both_mixers(cli, parallel):
    f = run(cli, "model", parallel, "--seq", 5)["flops"]
    c = f["components"]
    # Attention over 5 tokens: q 2·5·4·4 = 160, k and v 2·5·4·2 = 80 each, 25 pairs per head:
    # scores 2·2·25·2 = 200, values 200, o 160: 880. Mamba-2 1,968. MLP 3·2·5·4·6 = 720. The
    # head 2·5·4·8 = 320.
    assert sum(v for k, v in c.items() if k.startswith("decoder.attn.")) == 880
    assert sum(v for k, v in c.items() if k.startswith("decoder.mamba.")) == 1968
    assert (c["decoder.mlp.gate"], c["lm_head"]) == (240, 320)
    assert f["forward"] == 880 + 1968 + 720 + 320


def test_parallel_elementwise_and_multipliers(cli, parallel):
    c = run(cli, "model", parallel, "--seq", 5, "--elementwise")["flops"]["components"]
    # The shared norm once: 4·5·4 = 80; the two mixers' outputs added to each other and to the
    # residual: 2·5·4 = 40.
    assert (c["decoder.attn.elementwise.norm"], c["decoder.attn.elementwise.residual"]) == \
        (80, 40)
    assert (c["decoder.mlp.elementwise.norm"], c["decoder.mlp.elementwise.residual"]) == \
        (80, 20)
    # Multipliers, one multiply per element: attention input 5·4, keys 5·1·2, output 5·4 = 50;
    # Mamba-2 input 20, in_proj output 5·14 = 70, output 20 = 110; MLP gate 5·6, output 5·4 = 50;
    # the embeddings 5·4 = 20, the logits 5·8 = 40.
    assert (c["decoder.attn.elementwise.multipliers"], c["decoder.mamba.elementwise.multipliers"],
            c["decoder.mlp.elementwise.multipliers"]) == (50, 110, 50)
    assert (c["embed.elementwise.multiplier"], c["lm_head.elementwise.multiplier"]) == (20, 40)
    # Without the gated norm's weight the output is y·SiLU(z): 5 per element, 5·5·4 = 100.
    assert c["decoder.mamba.elementwise.gated_norm"] == 100


def test_parallel_decode_keeps_kv_and_states(cli, parallel):
    doc = run(cli, "infer", parallel, "--prompt", 5, "--gen", 3)
    d, kv = doc["decode"], doc["kv_cache"]
    # A step at position c: attention q 32, k 16, v 16, o 32 and 2·2·c·2 for each of scores and
    # values (96 + 16c); Mamba-2 232; MLP 3·2·4·6 = 144; the head 64: 536 + 16c, at c = 6, 7, 8.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (632, 664, 3 * 536 + 16 * 21)
    # The cache: one KV head's K and V, 4 values per token in bf16 over 8 tokens = 64 bytes;
    # the conv window 8 x 3 in bf16 (48) and the state 8 values in fp32 (32).
    assert kv["layers"] == {"decoder.full": 64, "decoder.mamba2.conv_state": 48,
                            "decoder.mamba2.ssm_state": 32}
    assert kv["bytes"] == 144


# --------------------------------------- feed-forward-only layers, ReLU², a latent MoE


def test_ffn_only_layers_have_no_mixer(cli, ffn_only):
    doc = run(cli, "model", ffn_only)
    c = doc["params"]["components"]
    # Layer 0: its norm and the Mamba-2 mixer with its gated-norm weight, 4 + 114 = 118.
    # Layer 1: norm and attention, 4 + 48 = 52. Layer 2, the MLP alone: norm 4, up 4·6 + 6,
    # down 6·4 + 4 = 62 (plain: ReLU² has no gate). Layer 3, the MoE alone: norm 4, router
    # 4·4 = 16, latent projections 4·2 + 2 and 2·4 + 4, four experts of up 2·3 and down 3·2
    # without biases (48), the shared expert 4·5 + 5 + 5·4 + 4 = 49: 139. Tables 64, final norm
    # 4: 439. Per token the experts used are 2 of 4: 439 − 24 = 415.
    assert c["decoder.mlp_norm.weight"] == 8 and c["decoder.mlp.up.bias"] == 6
    assert (c["decoder.mlp.latent_in.weight"], c["decoder.mlp.latent_in.bias"],
            c["decoder.mlp.latent_out.weight"], c["decoder.mlp.latent_out.bias"]) == (8, 2, 8, 4)
    assert c["decoder.mlp.experts.up.weight"] == 24 and "decoder.mlp.experts.up.bias" not in c
    assert (doc["params"]["total"], doc["params"]["active"]) == (439, 415)


def test_ffn_only_forward(cli, ffn_only):
    f = run(cli, "model", ffn_only, "--seq", 5)["flops"]
    c = f["components"]
    # MLP layer: up and down 2·5·4·6 = 240 each. MoE layer: router 2·5·4·4 = 160, d → 2 and
    # 2 → d 2·5·4·2 = 80 each, each token's 2 experts in the latent width 2·10·2·3 = 120 up and
    # 120 down, the shared expert 2·5·4·5 = 200 each way. Mamba-2 1,968, attention 880, head 320.
    assert (c["decoder.mlp.latent_in"], c["decoder.mlp.latent_out"]) == (80, 80)
    assert (c["decoder.mlp.experts.up"], c["decoder.mlp.shared.up"]) == (120, 200)
    assert f["forward"] == 1968 + 880 + 480 + (160 + 160 + 240 + 400) + 320


def test_relu_squared_and_latent_routing_elementwise(cli, ffn_only):
    c = run(cli, "model", ffn_only, "--seq", 5, "--elementwise")["flops"]["components"]
    # ReLU² is 2 per element (max, square): the MLP 2·5·6 = 60, the experts 2·10·3 = 60 and the
    # shared expert 2·5·5 = 50.
    assert c["decoder.mlp.elementwise.activation"] == 60 + 60 + 50
    # Biases: the MLP 5·(6 + 4) = 50, the latent projections 5·(2 + 4) = 30, the shared expert
    # 5·(5 + 4) = 45. Routing: 4 per router logit and each token's 2 outputs scaled and summed
    # in the latent width, 5·(4·4 + 2·2·2) = 120, and the shared output added 5·4 = 20.
    assert c["decoder.mlp.elementwise.bias"] == 50 + 30 + 45
    assert c["decoder.mlp.elementwise.routing"] == 140
    # Each of the four layers has one norm and one residual add: two under `mlp`.
    assert (c["decoder.mlp.elementwise.norm"], c["decoder.mlp.elementwise.residual"]) == \
        (160, 40)


def test_ffn_only_decode(cli, ffn_only):
    d = run(cli, "infer", ffn_only, "--prompt", 5, "--gen", 3)["decode"]
    # A step at c: Mamba-2 232, attention 96 + 16c, MLP 2·2·4·6 = 96, MoE router 32, latent
    # 16 + 16, 2 experts 2·2·2·3·2 = 48, shared 2·2·4·5 = 80 (192), head 64: 680 + 16c.
    assert (d["flops_first"], d["flops_last"]) == (680 + 96, 680 + 128)


def test_latent_moe_memory(cli, ffn_only):
    layers = run(cli, "memory", ffn_only, "--seq", 5)["activations"]["layers"]
    t = next(x["tensors"] for x in layers if x["kind"].startswith("MoE"))
    # s = 5, b = 1: the fp32 router logits 4·5·4 = 80; each token's 2 expert inputs in the
    # latent width 2·10·2 = 40; the experts' activation input and output 2·2·10·3 = 120; fc2's
    # input, the combined latent 2·5·2 = 20; the shared expert's 2·2·5·5 = 100.
    assert t == {"norm_inputs": 40, "mlp.input": 40, "mlp.router_logits": 80,
                 "mlp.expert_inputs": 40, "mlp.experts.hidden": 120, "mlp.latent_output": 20,
                 "mlp.shared.hidden": 100}


def test_nemotron_pattern_string(cli, tmp_path):
    # nemotron_h's legacy hybrid_override_pattern: M Mamba-2, * attention, - MLP, E MoE; the
    # layer count is the pattern's length, and the head is never tied (16·10 = 160).
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "nemotron_h", "hybrid_override_pattern": "M*-E-", '
                    '"hidden_size": 16, "vocab_size": 10, "tie_word_embeddings": true}')
    r = cli("show", str(path))
    assert r.code == 0, r.err
    assert "n_layers: 5\n" in r.out
    assert "layer_types:\n- mamba2\n- full\n- mlp\n- moe\n- mlp\n" in r.out
    assert run(cli, "model", str(path))["params"]["components"]["lm_head.weight"] == 160


# ------------------------------------------------------------------ Zamba2's shared blocks


def test_shared_block_counts_once_when_tied(cli, shared):
    c = run(cli, "model", shared)["params"]["components"]
    # The block (2d = 8): its norm 8, q, k, v 8·8 = 64 each (2 heads of 2d/2 = 4), o 8·4 = 32,
    # the MLP norm 4, gate_up 4·12 = 48, down 6·4 = 24: 308, once for both hybrid layers. Each
    # hybrid layer's own: the gate_up adapter 4·1 + 1·12 = 16 and the linear 4·4 = 16. Three
    # Mamba-2 layers 3·118 = 354, the tied table 32, the final norm 4: 762.
    assert c["decoder.shared.attn.q.weight"] == 64
    assert (c["decoder.shared.mlp.adapter.down.weight"], c["decoder.shared.mlp.adapter.up.weight"],
            c["decoder.shared.linear.weight"]) == (8, 24, 32)
    assert sum(c.values()) == 762
    # Untied (transformers with tie_word_embeddings false), every hybrid layer holds its own
    # block, 2·308 = 616, and each copy the adapters of both layers of its block, 2·2·16 = 64:
    # 32 + 354 + 616 + 64 + 32 + 4 = 1,102.
    untied = run(cli, "model", shared, "--set", "shared_block.tied=false")["params"]
    assert untied["components"]["decoder.shared.attn.q.weight"] == 128
    assert untied["components"]["decoder.shared.mlp.adapter.down.weight"] == 16
    assert untied["total"] == 1102


def test_shared_block_runs_every_time(cli, shared):
    f = run(cli, "model", shared, "--seq", 5)["flops"]
    c = f["components"]
    # Per hybrid layer: q, k, v 2·5·8·8 = 640 each, 25 pairs per head: scores 2·2·25·4 = 400
    # and values 400, o 2·5·8·4 = 320, gate_up 2·5·4·12 = 480, its adapter 2·5·4·1 + 2·5·1·12
    # = 160, down 2·5·6·4 = 240, the linear 2·5·4·4 = 160: 4,080, twice. Three Mamba-2 5,904,
    # the head 320.
    assert (c["decoder.shared.attn.q"], c["decoder.shared.mlp.adapter"]) == (1280, 320)
    assert f["forward"] == 2 * 4080 + 3 * 1968 + 320
    e = run(cli, "model", shared, "--seq", 5, "--elementwise")["flops"]["components"]
    # Per hybrid layer: RMSNorms over 2d and d, 4·5·(8 + 4) = 240; softmax 5·2·25 = 250; the
    # adapter's add 5·12 = 60; GELU and the gate product (9 + 1)·5·6 = 300. The hybrid layers'
    # residual adds count the block's output added to the Mamba-2 input: 2·5·4 = 40 each.
    assert (e["decoder.shared.elementwise.norms"], e["decoder.shared.elementwise.softmax"],
            e["decoder.shared.elementwise.adapters"], e["decoder.shared.elementwise.activation"]) \
        == (480, 500, 120, 600)
    assert e["decoder.mamba.elementwise.residual"] == 2 * 40 + 20


def test_shared_block_decode_and_cache(cli, shared):
    doc = run(cli, "infer", shared, "--prompt", 5, "--gen", 3)
    d, kv = doc["decode"], doc["kv_cache"]
    # A hybrid step at c: q, k, v 2·8·8 = 128 each, o 2·8·4 = 64, scores and values 2·2·c·4
    # each, gate_up 2·4·12 = 96, adapter 2·4 + 2·12 = 32, down 48, linear 32: 656 + 32c. The
    # step: 3·232 + 2·(656 + 32c) + 64 = 2,072 + 64c.
    assert (d["flops_first"], d["flops_last"]) == (2072 + 6 * 64, 2072 + 8 * 64)
    # K and V of 2 heads of 4 in both hybrid layers: 2·2·2·4 = 32 values per token, in bf16 64
    # bytes, over 8 tokens 512; three Mamba-2 states of 48 + 32 bytes.
    assert kv["layers"]["decoder.shared"] == 512
    assert kv["bytes"] == 512 + 3 * 80


def test_shared_block_memory(cli, shared):
    layers = run(cli, "memory", shared, "--seq", 5, "--no-flash")["activations"]["layers"]
    t = layers[0]["tensors"]
    # s = 5, b = 1, 16-bit: the concatenated input and the normed attention input 2·5·8 = 80
    # each; Q and K 2·5·(8 + 8) = 160; the softmax 2·2·25 = 100; V and o's input 80 each; the
    # MLP norm's and the MLP's inputs 2·5·4 = 40 each; the fused activation's gate-and-up
    # input and its output 3·2·5·6 = 180; the adapter's rank-1 intermediate 2·5·1 = 10; the
    # linear's input 40.
    assert {k: v for k, v in t.items() if k.startswith("shared.")} == {
        "shared.concat_input": 80, "shared.attention_input": 80, "shared.attn.qk": 160,
        "shared.attn.softmax": 100, "shared.attn.v": 80, "shared.attn.o_input": 80,
        "shared.mlp_norm_input": 40, "shared.mlp_input": 40, "shared.mlp.hidden": 180,
        "shared.adapters.hidden": 10, "shared.linear_input": 40}


@pytest.mark.parametrize("entry, says", [
    ("mamba2+shared@x", "name@N"),
    ("full@1", "name@N"),
])
def test_bad_block_tags(cli, shared, entry, says):
    r = cli("model", shared, "--set", f"layer_types=[{entry}]")
    assert r.code == 2 and says in r.err and "Traceback" not in r.err


def test_shared_layers_need_their_block(cli, shared):
    r = cli("model", shared, "--set", "shared_block=null")
    assert r.code == 2 and "shared_block" in r.err
