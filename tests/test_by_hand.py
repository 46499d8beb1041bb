"""Figures a review found unguarded, each against a hand-worked integer (the working is in the
comments): a wrong formula in any of them makes one of these fail."""

from __future__ import annotations

from fractions import Fraction

import pytest


def doc(cli, *args) -> dict:
    r = cli(*map(str, args), "-f", "json")
    assert r.code == 0, r.err
    return r.json()


def test_kaplan_uses_the_attention_width_not_d_model(cli):
    # Gemma 3 27B: d_model 5,376 but 32 heads of 128, d_q = 4,096. N = 27,009,346,304 −
    # 262,208·5,376 (tied table) = 25,599,716,096; at s = 1,024 Kaplan's per token is
    # 3·(2·N + 2·62·1,024·4,096) = 155,158,577,664.
    rows = {r["name"]: r for r in doc(cli, "conventions", "gemma-3-27b", "--seq", 1024)[
        "conventions"]}
    assert rows["kaplan"]["per_token"] == 3 * (2 * 25_599_716_096 + 2 * 62 * 1024 * 4096)
    # PaLM's attention term too: 12·Σ h·d_h·s = 12·62·4,096·1,024. PaLM's N is every
    # parameter a matmul reads: the tied table is the LM head, so all 27,009,346,304.
    assert rows["palm"]["per_token"] == 6 * 27_009_346_304 + 12 * 62 * 4096 * 1024


def test_cross_attention_keys_and_values_come_from_the_source(cli):
    # transformer-base, 100 source and 50 target tokens, batch 2: per decoder layer the
    # cross-attention K and V project the 2·100 source tokens (2·200·512·512 each), Q and O
    # the 2·50 target tokens; 6 layers.
    c = doc(cli, "model", "transformer-base", "--seq", 100, "--tgt-seq", 50, "--batch", 2)[
        "flops"]["components"]
    assert c["decoder.cross_attn.k"] == c["decoder.cross_attn.v"] == 6 * 2 * 200 * 512 * 512
    assert c["decoder.cross_attn.q"] == c["decoder.cross_attn.o"] == 6 * 2 * 100 * 512 * 512
    assert c["decoder.cross_attn.scores"] == 6 * 2 * 2 * 8 * 50 * 100 * 64


def test_the_encoder_stays_bidirectional_under_causal(cli):
    # Causal counts only the decoder's self-attention pairs: the encoder keeps all 100², the
    # decoder 50·51/2 per head, the cross-attention all 50·100.
    c = doc(cli, "model", "transformer-base", "--seq", 100, "--tgt-seq", 50, "--attention",
            "causal")["flops"]["components"]
    assert c["encoder.attn.scores"] == 6 * 2 * 8 * 100 * 100 * 64
    assert c["decoder.attn.scores"] == 6 * 2 * 8 * (50 * 51 // 2) * 64
    assert c["decoder.cross_attn.scores"] == 6 * 2 * 8 * 50 * 100 * 64


def test_elementwise_cross_attention_bias_covers_the_source(cli):
    # transformer-base with biases everywhere, 30 source and 20 target tokens: per decoder
    # layer the bias adds are self q/k/v/o 20·(3·512 + 512), cross q and o over the 20 target
    # tokens 2·20·512, cross k and v over the 30 source tokens 2·30·512.
    c = doc(cli, "model", "transformer-base", "--seq", 30, "--tgt-seq", 20, "--elementwise")[
        "flops"]["components"]
    per_layer = 20 * 4 * 512 + 2 * 20 * 512 + 2 * 30 * 512
    encoder = 30 * 4 * 512
    assert c["decoder.attn.elementwise.bias"] == 6 * per_layer
    assert c["encoder.attn.elementwise.bias"] == 6 * encoder


def test_convention_totals_are_rounded_not_truncated(cli):
    # Mistral 7B at s = 5,000 with its 4,096 window, causal: each query i sees min(i, 4,096)
    # keys, Σ = 4,096·4,097/2 + 904·4,096 = 12,093,440 pairs. Per layer the weights read
    # q, o 4,096² each, k, v 4,096·1,024 each and the SwiGLU 3·4,096·14,336: 218,103,808; QKᵀ
    # and A·V are 2·pairs·(32·128) each. LM head 2·s·4,096·32,000. Three passes per token is
    # 3·F/5,000, a fraction; for D = 4 tokens its total 12·F/5,000 rounds up, not down.
    s, pairs = 5000, 4096 * 4097 // 2 + (5000 - 4096) * 4096
    forward = 32 * (2 * s * 218_103_808 + 4 * pairs * 4096) + 2 * s * 4096 * 32000
    per_token = Fraction(3 * forward, s)
    total = 4 * per_token
    assert total - int(total) > Fraction(1, 2)  # floor ≠ nearest
    rows = {r["name"]: r for r in doc(cli, "conventions", "mistral-7b", "--seq", s,
                                      "--tokens", 4)["conventions"]}
    assert rows["exact_causal"]["per_token_exact"] == str(per_token)
    assert rows["exact_causal"]["total"] == int(total) + 1
    assert rows["exact_causal"]["rounded"] is True
    assert rows["exact_full"]["rounded"] is False


def test_layer_attention_share(cli):
    # GPT-3 at 2,048: the layers' attention 4·s²·d·L against their weights 24·d²·s·L, so the
    # share is s / (6d + s) = 2,048 / 75,776 = 1/37.
    x = doc(cli, "model", "gpt3", "--seq", 2048)["crossover"]
    assert x["layer_attention_share_pct"] == pytest.approx(100 / 37, rel=1e-12)
    # The whole forward's: the same attention over forward = layers + LM head 2·s·d·V.
    total = 24 * 12288**2 * 2048 * 96 + 4 * 2048**2 * 12288 * 96 + 2 * 2048 * 12288 * 50257
    assert x["attention_share_pct"] == pytest.approx(
        100 * 4 * 2048**2 * 12288 * 96 / total, rel=1e-12)


def test_window_pairs_by_hand(cli, tmp_path):
    # One layer, 2 heads of 4, window 3, 7 tokens, causal: Σ min(i, 3) = 1 + 2 + 3·5 = 18 pairs
    # per head; scores 2·2·18·4 and AV the same.
    path = tmp_path / "w.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nsliding_window: 3\n")
    c = doc(cli, "model", path, "--seq", 7, "--attention", "causal")["flops"]["components"]
    assert c["decoder.attn.scores"] == c["decoder.attn.av"] == 2 * 2 * 18 * 4


def test_chunked_pairs_by_hand(cli, tmp_path):
    # Chunks of 3 over 7 tokens: blocks of 3, 3, 1: 6 + 6 + 1 = 13 pairs per head.
    path = tmp_path / "c.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nattention_chunk: 3\n")
    c = doc(cli, "model", path, "--seq", 7, "--attention", "causal")["flops"]["components"]
    assert c["decoder.attn.scores"] == 2 * 2 * 13 * 4
    # Decode at position 8 (the second token of the third block) sees 2 keys.
    d = doc(cli, "infer", path, "--prompt", 7, "--gen", 1)["decode"]
    assert d["attention"] == 2 * 2 * 2 * 4 * 2


def test_moe_forward_and_params_by_hand(cli, tmp_path):
    # 2 layers, d 8, MoE of 4 gated experts of width 6, top-2, one shared expert of width 6
    # with a gate, the first layer dense (d_ff 10): per token the router 2·8·4, 2 experts
    # 2·2·3·8·6, the shared expert 2·3·8·6 and its gate 2·8.
    path = tmp_path / "moe.yaml"
    path.write_text("n_layers: 2\nd_model: 8\nn_heads: 2\nd_ff: 10\nmlp: gated\n"
                    "positions: rotary\nvocab_size: 4\nnorm: none\nfinal_norm: false\n"
                    "moe: {experts: 4, top_k: 2, d_ff: 6, shared_experts: 1, shared_gate: true,"
                    " first_dense: 1}\n")
    r = doc(cli, "model", path, "--seq", 5)
    c = r["flops"]["components"]
    assert c["decoder.mlp.router"] == 5 * 2 * 8 * 4
    assert c["decoder.mlp.experts.up"] == 5 * 2 * 2 * 8 * 6
    assert c["decoder.mlp.shared.down"] == 5 * 2 * 6 * 8
    assert c["decoder.mlp.shared_gate"] == 5 * 2 * 8
    assert c["decoder.mlp.up"] == 5 * 2 * 8 * 10  # the dense first layer
    # Params: attention 4·64 per layer; dense MLP 3·8·10; MoE router 32 + 4 experts·144 +
    # shared 144 + gate 8; embedding 32, untied by default? (tied: 0 more).
    moe = 32 + 4 * 144 + 144 + 8
    assert r["params"]["total"] == 2 * 256 + 240 + moe + 4 * 8
    assert r["params"]["active"] == r["params"]["total"] - 2 * 144  # 2 of 4 experts unused


def test_latent_attention_by_hand(cli, tmp_path):
    # MLA, d 16, 2 heads, q rank 4, kv rank 6, nope 3 + rope 2, value 5, 3 tokens:
    # q_a 2·3·16·4, q_b 2·3·4·2·5, kv_a 2·3·16·(6 + 2), kv_b 2·3·6·2·(3 + 5),
    # scores 2·2·9·5 (full), av 2·2·9·5, o 2·3·2·5·16.
    path = tmp_path / "mla.yaml"
    path.write_text("n_layers: 1\nd_model: 16\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nlatent_attention: {q_lora_rank: 4, kv_lora_rank: 6,"
                    " qk_nope_head_dim: 3, qk_rope_head_dim: 2, v_head_dim: 5}\n")
    c = doc(cli, "model", path, "--seq", 3)["flops"]["components"]
    expected = {"q_a": 2 * 3 * 16 * 4, "q_b": 2 * 3 * 4 * 2 * 5, "kv_a": 2 * 3 * 16 * 8,
                "kv_b": 2 * 3 * 6 * 2 * 8, "scores": 2 * 2 * 9 * 5, "av": 2 * 2 * 9 * 5,
                "o": 2 * 3 * 2 * 5 * 16}
    assert {k: c[f"decoder.attn.{k}"] for k in expected} == expected
    # Its cache: 6 + 2 values per token; decompressed: 2 heads x (5 + 5).
    kv = doc(cli, "infer", path, "--prompt", 3, "--gen", 1, "--kv-dtype", "fp8")["kv_cache"]
    assert (kv["bytes_per_token"], kv["mha_bytes_per_token"]) == (8, 20)


def test_mtp_training_by_hand(cli, tmp_path):
    # One MTP module on a 1-layer model of d 8 (no norms), 4 tokens of vocabulary 4: per token
    # its projection 2·16·8, its layer (attention 2·4·64 + 4·4·8 at s = 4, MLP 2·2·8·8) and the
    # LM head again 2·8·4; training.mtp = 3 x that x D.
    path = tmp_path / "mtp.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nnorm: none\nfinal_norm: false\nmtp_layers: 1\n")
    r = doc(cli, "model", path, "--seq", 4, "--tokens", 100)
    per_token = 2 * 16 * 8 + (2 * 4 * 64 + 4 * 4 * 8) + 2 * 2 * 8 * 8 + 2 * 8 * 4
    assert r["training"]["mtp"] == 3 * per_token * 100
    assert r["params"]["mtp"] == 2 * 8 * 8 + 4 * 64 + 2 * 8 * 8  # eh_proj, attention, MLP
    assert r["training"]["exact"] == 3 * r["flops"]["forward_per_token"] * 100 + \
        r["training"]["mtp"]
