"""DeepSeek-V4's kinds by hand (kinds/deepseek_v4.py): a model small enough that every count is
worked in the comment beside it.

d 8, 2 heads of 4 (h·d_h = 8), a query rank 4, one K = V head, a window of 2, the output in 2
groups of rank 2, 2 hyper-connection streams; three layers: sliding only with hash-routed
experts, compressed sparse (every 2 tokens, an indexer of 1 head of 2 keeping the top 1), heavily
compressed (every 3 tokens); 2 experts of 2 (top 1) and one shared expert of 2; a tied
vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

DSV4 = """n_layers: 3
d_model: 8
n_heads: 2
head_dim: 4
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
max_seq_len: 64
tie_embeddings: true
layer_types: [dsv4_window_hash, dsv4_csa, dsv4_hca]
deepseek_v4: {q_lora_rank: 4, o_groups: 2, o_lora_rank: 2, hc_mult: 2, sliding_window: 2,
              csa_rate: 2, hca_rate: 3, index_n_heads: 1, index_head_dim: 2, index_topk: 1}
moe: {experts: 2, top_k: 1, d_ff: 2, shared_experts: 1}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "dsv4.yaml"
    path.write_text(DSV4)
    return str(path)


def _shapes(components: dict, name: str) -> int:
    return sum(v for k, v in components.items() if k == name or k.startswith(name + " ["))


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # A hyper-connection of N = 2 streams: fn (2 + 2)·2 = 8 outputs × N·d = 16 → 128, base 8,
    # scale 3 → 139; one before the attention and one before the experts in each of 3 layers.
    assert c["decoder.attn.hc.fn"] == c["decoder.mlp.hc.fn"] == 3 * 128
    assert c["decoder.attn.hc.base"] == 3 * 8 and c["decoder.attn.hc.scale"] == 3 * 3
    # The grouped output: o_a h·d_h·r_o = 8·2 = 16, o_b g·r_o·d = 2·2·8 = 32, per layer.
    assert c["decoder.attn.o_a.weight"] == 3 * 16 and c["decoder.attn.o_b.weight"] == 3 * 32
    # HCA's compressor (one layer): kv and gate 8·4 = 32 each, position bias 3·4 = 12, norm 4.
    # CSA's (one layer): kv and gate 8·(2·4) = 64 each, position bias 2·8 = 16, norm 4; the
    # indexer's kv and gate 8·(2·2) = 32 each, position bias 2·4 = 8, norm 2, q_b 4·(1·2) = 8,
    # weights_proj 8·1 = 8.
    # (tensors of one name and two shapes are listed apart: `name [8x4]`)
    assert _shapes(c, "decoder.attn.compressor.kv.weight") == 32 + 64
    assert _shapes(c, "decoder.attn.compressor.position_bias") == 12 + 16
    assert c["decoder.attn.compressor.indexer.q_b.weight"] == 8
    # The hyper-head: hc_fn N·(N·d) = 2·16 = 32, hc_base 2, hc_scale 1.
    assert (c["hc_head.hc_fn"], c["hc_head.hc_base"], c["hc_head.hc_scale"]) == (32, 2, 1)
    # Per layer: two hyper-connections 2·139 = 278; attention q_a 32 + q_a_norm 4 + q_b 4·8 = 32
    # + kv 8·4 = 32 + kv_norm 4 + o_a 16 + o_b 32 + sinks 2 = 154; experts: router 8·2 = 16,
    # 2 experts 2·3·8·2 = 96, the shared expert 3·8·2 = 48 → 160; two RMSNorms 16 → 608. The
    # CSA layer adds 64 + 64 + 16 + 4 + 32 + 32 + 8 + 2 + 8 + 8 = 238 (846), the HCA layer
    # 32 + 32 + 12 + 4 = 80 (688). The table 64, the final norm 8, the hyper-head 35.
    assert sum(c.values()) == 608 + 846 + 688 + 64 + 8 + 35 == 2249


def test_forward_full_counts_every_key_and_entry_as_the_eager_path(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    c = f["components"]
    # T = 5 tokens. Each hyper-connection: fn 2·5·16·8 = 1280 and the streams mixed
    # 2·5·2²·8 = 320 → 1600; 6 of them.
    assert c["decoder.attn.hc.fn"] + c["decoder.mlp.hc.fn"] == 6 * 1280
    assert c["decoder.attn.hc.mix"] + c["decoder.mlp.hc.mix"] == 6 * 320
    # Scores per layer 2·h·d_h = 16 per pair: sliding 5·5 = 25 pairs → 400; CSA ⌊5/2⌋ = 2
    # entries, 5·7 = 35 pairs → 560; HCA ⌊5/3⌋ = 1 entry, 5·6 = 30 → 480; AV the same.
    assert c["decoder.attn.scores"] == c["decoder.attn.av"] == 400 + 560 + 480
    # The indexer: every query against the 2 entries, 2·n_I·c = 4 per pair → 4·10 = 40.
    assert c["decoder.attn.compressor.indexer.scores"] == 40
    # Per layer q_a 2·5·8·4 = 320, q_b 2·5·4·8 = 320, kv 320, o_a 2·5·8·2 = 160, o_b
    # 2·5·4·8 = 320 → 1440; CSA's compressor 2·5·8·8 = 640 twice and its indexer's kv and gate
    # 2·5·8·4 = 320 each, q_b 2·5·4·2 = 80, weights_proj 2·5·8 = 80 → 2080 (+ 40 scores);
    # HCA's compressor 2·5·8·4 = 320 twice → 640; experts per layer: router 2·5·8·2 = 160,
    # each token's one expert 2·5·3·8·2 = 480, the shared expert 480 → 1120; the hyper-head
    # 2·5·16·2 = 320; the head 2·5·8·8 = 640.
    assert f["forward"] == (6 * 1600 + 3 * 1440 + 2 * (400 + 560 + 480) + 2080 + 40 + 640
                            + 3 * 1120 + 320 + 640) == 23880


def test_forward_causal_counts_the_visible_keys_and_entries(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--attention", "causal")["flops"]["components"]
    # Queries i = 1..5: the window of 2 shows min(i, 2) keys, 1 + 2 + 2 + 2 + 2 = 9; CSA adds
    # min(1, ⌊i/2⌋) = 0 + 1 + 1 + 1 + 1 = 4 entries (13), HCA ⌊i/3⌋ = 0 + 0 + 1 + 1 + 1 = 3
    # (12): 16 per pair → 16·(9 + 13 + 12) = 544.
    assert c["decoder.attn.scores"] == c["decoder.attn.av"] == 16 * 34 == 544
    # The indexer scores the visible entries, ⌊i/2⌋ = 0 + 1 + 1 + 2 + 2 = 6: 4·6 = 24.
    assert c["decoder.attn.compressor.indexer.scores"] == 24


def test_decode_step_sees_what_the_last_query_of_the_prompt_sees():
    """A step at position 5 scores what query 5 of a causal forward does (kind level: the
    commands that decode refuse these layers, see test_serving_paths_refuse)."""
    from flopcalc.kinds.deepseek_v4 import CompressedAttention

    csa = CompressedAttention(heads=2, head_dim=4, q_rank=4, window=2, groups=2, o_rank=2,
                              streams=2, compress="csa", rate=2, index_heads=1, index_dim=2,
                              topk=1)
    step = {p.name: p.value for p in csa.decode(8, 1, 5, 5)}
    # Query 5: 2 window keys and min(1, ⌊5/2⌋) = 1 entry → 16·3 = 48; the indexer ⌊5/2⌋ = 2
    # entries → 4·2 = 8; one token's q_a 2·8·4 = 64.
    assert (step["scores"], step["compressor.indexer.scores"], step["q_a"]) == (48, 8, 64)


@pytest.mark.parametrize("command", [["infer", "--prompt", "16", "--gen", "4"],
                                     ["memory"], ["serve", "--accelerator", "h100"]])
def test_serving_paths_refuse_in_one_line(cli, model, command):
    r = cli(command[0], model, *command[1:])
    assert r.code == 2, r.err
    assert "DeepSeek-V4" in r.err and len(r.err.strip().splitlines()) == 1, r.err
