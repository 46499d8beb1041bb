"""Figures a review found unguarded, each against a hand-worked integer (the working is in the
comments): a wrong formula in any of them makes one of these fail."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]


def test_kaplan_uses_the_attention_width_not_d_model(cli):
    # Gemma 3 27B: d_model 5,376 but 32 heads of 128, d_q = 4,096. N = 27,009,346,304 −
    # 262,208·5,376 (tied table) = 25,599,716,096; at s = 1,024 Kaplan's per token is
    # 3·(2·N + 2·62·1,024·4,096) = 155,158,577,664.
    rows = {r["name"]: r for r in run(cli, "conventions", "gemma-3-27b", "--seq", 1024)[
        "conventions"]}
    assert rows["kaplan"]["per_token"] == 3 * (2 * 25_599_716_096 + 2 * 62 * 1024 * 4096)
    # PaLM's attention term too: 12·Σ h·d_h·s = 12·62·4,096·1,024. PaLM's N is every
    # parameter a matmul reads: the tied table is the LM head, so all 27,009,346,304.
    assert rows["palm"]["per_token"] == 6 * 27_009_346_304 + 12 * 62 * 4096 * 1024


def test_cross_attention_keys_and_values_come_from_the_source(cli):
    # transformer-base, 100 source and 50 target tokens, batch 2: per decoder layer the
    # cross-attention K and V project the 2·100 source tokens (2·200·512·512 each), Q and O
    # the 2·50 target tokens; 6 layers.
    c = run(cli, "model", "transformer-base", "--seq", 100, "--tgt-seq", 50, "--batch", 2)[
        "flops"]["components"]
    assert c["decoder.cross_attn.k"] == c["decoder.cross_attn.v"] == 6 * 2 * 200 * 512 * 512
    assert c["decoder.cross_attn.q"] == c["decoder.cross_attn.o"] == 6 * 2 * 100 * 512 * 512
    assert c["decoder.cross_attn.scores"] == 6 * 2 * 2 * 8 * 50 * 100 * 64


def test_the_encoder_stays_bidirectional_under_causal(cli):
    # Causal counts only the decoder's self-attention pairs: the encoder keeps all 100², the
    # decoder 50·51/2 per head, the cross-attention all 50·100.
    c = run(cli, "model", "transformer-base", "--seq", 100, "--tgt-seq", 50, "--attention",
            "causal")["flops"]["components"]
    assert c["encoder.attn.scores"] == 6 * 2 * 8 * 100 * 100 * 64
    assert c["decoder.attn.scores"] == 6 * 2 * 8 * (50 * 51 // 2) * 64
    assert c["decoder.cross_attn.scores"] == 6 * 2 * 8 * 50 * 100 * 64


def test_elementwise_cross_attention_bias_covers_the_source(cli):
    # transformer-base with biases everywhere, 30 source and 20 target tokens: per decoder
    # layer the bias adds are self q/k/v/o 20·(3·512 + 512), cross q and o over the 20 target
    # tokens 2·20·512, cross k and v over the 30 source tokens 2·30·512.
    c = run(cli, "model", "transformer-base", "--seq", 30, "--tgt-seq", 20, "--elementwise")[
        "flops"]["components"]
    encoder = 30 * 4 * 512
    assert c["decoder.attn.elementwise.bias"] == 6 * 20 * 4 * 512
    assert c["decoder.cross_attn.elementwise.bias"] == 6 * (2 * 20 * 512 + 2 * 30 * 512)
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
    rows = {r["name"]: r for r in run(cli, "conventions", "mistral-7b", "--seq", s,
                                      "--tokens", 4)["conventions"]}
    assert rows["exact_causal"]["per_token_exact"] == str(per_token)
    assert rows["exact_causal"]["total"] == int(total) + 1
    assert rows["exact_causal"]["rounded"] is True
    assert rows["exact_full"]["rounded"] is False


def test_layer_attention_share(cli):
    # GPT-3 at 2,048: the layers' attention 4·s²·d·L against their weights 24·d²·s·L, so the
    # share is s / (6d + s) = 2,048 / 75,776 = 1/37.
    x = run(cli, "model", "gpt3", "--seq", 2048)["crossover"]
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
    c = run(cli, "model", path, "--seq", 7, "--attention", "causal")["flops"]["components"]
    assert c["decoder.attn.scores"] == c["decoder.attn.av"] == 2 * 2 * 18 * 4


def test_chunked_pairs_by_hand(cli, tmp_path):
    # Chunks of 3 over 7 tokens: blocks of 3, 3, 1: 6 + 6 + 1 = 13 pairs per head.
    path = tmp_path / "c.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nattention_chunk: 3\n")
    c = run(cli, "model", path, "--seq", 7, "--attention", "causal")["flops"]["components"]
    assert c["decoder.attn.scores"] == 2 * 2 * 13 * 4
    # Decode at position 8 (the second token of the third block) sees 2 keys.
    d = run(cli, "infer", path, "--prompt", 7, "--gen", 1)["decode"]
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
    r = run(cli, "model", path, "--seq", 5)
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
    c = run(cli, "model", path, "--seq", 3)["flops"]["components"]
    expected = {"q_a": 2 * 3 * 16 * 4, "q_b": 2 * 3 * 4 * 2 * 5, "kv_a": 2 * 3 * 16 * 8,
                "kv_b": 2 * 3 * 6 * 2 * 8, "scores": 2 * 2 * 9 * 5, "av": 2 * 2 * 9 * 5,
                "o": 2 * 3 * 2 * 5 * 16}
    assert {k: c[f"decoder.attn.{k}"] for k in expected} == expected
    # Its cache: 6 + 2 values per token; decompressed: 2 heads x (5 + 5).
    kv = run(cli, "infer", path, "--prompt", 3, "--gen", 1, "--kv-dtype", "fp8")["kv_cache"]
    assert (kv["bytes_per_token"], kv["mha_bytes_per_token"]) == (8, 20)


def test_mtp_training_by_hand(cli, tmp_path):
    # One MTP module on a 1-layer model of d 8 (no norms), 4 tokens of vocabulary 4: per token
    # its projection 2·16·8, its layer (attention 2·4·64 + 4·4·8 at s = 4, MLP 2·2·8·8) and the
    # LM head again 2·8·4; training.mtp = 3 x that x D.
    path = tmp_path / "mtp.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nnorm: none\nfinal_norm: false\nmtp_layers: 1\n")
    r = run(cli, "model", path, "--seq", 4, "--tokens", 100)
    per_token = 2 * 16 * 8 + (2 * 4 * 64 + 4 * 4 * 8) + 2 * 2 * 8 * 8 + 2 * 8 * 4
    assert r["training"]["mtp"] == 3 * per_token * 100
    assert r["params"]["mtp"] == 2 * 8 * 8 + 4 * 64 + 2 * 8 * 8  # eh_proj, attention, MLP
    assert r["training"]["exact"] == 3 * r["flops"]["forward_per_token"] * 100 + \
        r["training"]["mtp"]


def test_mtp_in_the_conventions_exact_rows(cli, tmp_path):
    # The model above at s = 4, per token: attention weights 2·4·64 = 512, scores and values
    # 4·4·8 = 128, MLP 2·2·8·8 = 256, head 2·8·4 = 64: 960. The MTP module adds its projection
    # 2·16·8 = 256, a layer (896) and the head again (64): 1,216. exact_full = 3·(960 + 1,216)
    # = 6,528; the module's share 3·1,216 = 3,648; without it 3·960 = 2,880. Causal: 10 of the
    # 16 pairs, so scores and values 128·10/16 = 80 in the model and in the module:
    # 3·(912 + 1,168) = 6,240, and 3·912 = 2,736 without.
    path = tmp_path / "mtp.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\n"
                    "vocab_size: 4\nnorm: none\nfinal_norm: false\nmtp_layers: 1\n")
    rows = {r["name"]: r for r in run(cli, "conventions", path, "--seq", 4)["conventions"]}
    assert (rows["exact_full"]["per_token"], rows["exact_causal"]["per_token"]) == (6_528, 6_240)
    assert rows["exact_full"]["notes"] == [
        "with 1 multi-token-prediction module, trained with the model: 3,648 per token; "
        "without: 2,880 (full), 2,736 (causal)"]
    model = run(cli, "model", path, "--seq", 4, "--tokens", 100)
    assert model["training"]["exact"] == 6_528 * 100  # one rule: model and conventions agree


def test_moe_parameters_by_name(cli, tmp_path):
    # One layer, d 4, 4 gated experts of width 3 (top-2), a router with a bias, one shared
    # expert of width 5 behind a d → 1 gate; no norms, no biases elsewhere, vocabulary 2.
    path = tmp_path / "moe.yaml"
    path.write_text("n_layers: 1\nd_model: 4\nn_heads: 1\nd_ff: 8\nmlp: gated\n"
                    "positions: rotary\nvocab_size: 2\nnorm: none\nfinal_norm: false\n"
                    "moe: {experts: 4, top_k: 2, d_ff: 3, shared_experts: 1, shared_d_ff: 5,"
                    " shared_gate: true, router_bias: true}\n")
    r = run(cli, "model", path, "--seq", 3)
    mlp = {k: v for k, v in r["params"]["components"].items() if ".mlp." in k}
    assert mlp == {
        "decoder.mlp.router.weight": 4 * 4, "decoder.mlp.router.bias": 4,
        "decoder.mlp.experts.gate.weight": 4 * 4 * 3, "decoder.mlp.experts.up.weight": 4 * 4 * 3,
        "decoder.mlp.experts.down.weight": 4 * 3 * 4,
        "decoder.mlp.shared.gate.weight": 4 * 5, "decoder.mlp.shared.up.weight": 4 * 5,
        "decoder.mlp.shared.down.weight": 5 * 4, "decoder.mlp.shared_gate.weight": 4}
    # The rows say each tensor's kind and shape as the config lays them out.
    assert [x for x in _rows(r) if ".mlp." in x[0]] == [
        ("decoder.mlp.router.weight", "layers", (4, 4), 16),
        ("decoder.mlp.router.bias", "layers", (4,), 4),
        ("decoder.mlp.experts.gate.weight", "layers", (4, 4, 3), 48),
        ("decoder.mlp.experts.up.weight", "layers", (4, 4, 3), 48),
        ("decoder.mlp.experts.down.weight", "layers", (4, 3, 4), 48),
        ("decoder.mlp.shared.gate.weight", "layers", (4, 5), 20),
        ("decoder.mlp.shared.up.weight", "layers", (4, 5), 20),
        ("decoder.mlp.shared.down.weight", "layers", (5, 4), 20),
        ("decoder.mlp.shared_gate.weight", "layers", (4, 1), 4)]
    # Every MoE matmul is a weight GEMM: with 3 tokens the router 2·3·4·4, the 2 chosen
    # experts 3·2·3·4·3·2, the shared expert 3·2·4·5·3 and its gate 2·3·4; attention's
    # projections 4·2·3·4·4 and the LM head 2·3·4·2 (the s² terms are attention's).
    f = r["flops"]
    assert f["weights"] == 96 + 432 + 360 + 24 + 384 + 48
    assert f["weights"] + f["attention"] == f["forward"]


def test_megatron_notes_name_what_the_formula_assumes(cli):
    def notes(model):
        rows = run(cli, "conventions", model, "--seq", 16)["conventions"]
        return next(r["notes"] for r in rows if r["name"] == "megatron")

    # DeepSeek-V3: MLA; MoE; a gated dense MLP of 18,432 ≠ 4·7,168; heads 128·128 = 16,384
    # for the output projection (128·192 = 24,576 for queries), neither equal to d = 7,168.
    assert notes("deepseek-v3") == [
        "assumes multi-head attention; this model has latent attention (MLA)",
        "assumes a dense MLP; this model has a mixture of experts (Megatron-LM's later code "
        "counts the top-k routed and the shared experts, but no router)",
        "assumes a two-matrix MLP; this model's MLP is gated (three matrices)",
        "assumes d_ff = 4d = 28,672; this model has d_ff = 18,432",
        "assumes h·d_h = d; this model has h·d_h = 16,384 and d = 7,168"]
    # Mixtral 8x7B: 8 KV heads for 32 query heads, and a mixture of experts.
    assert notes("mixtral-8x7b") == [
        "assumes multi-head attention; this model has GQA (8 KV heads for 32 query heads), so "
        "its K/V projections are narrower",
        "assumes a dense MLP; this model has a mixture of experts (Megatron-LM's later code "
        "counts the top-k routed and the shared experts, but no router)"]
    assert notes("gpt3") == []  # the block the formula was derived for


def test_chinchilla_on_an_encoder_decoder(cli):
    # T5-base at s = 16, Appendix F over all 24 layers, no cross-attention: per layer the
    # projections 2·16·4·768² and the ReLU MLP 2·16·2·768·3,072 (226,492,416), logits and
    # A·V 2·16²·12·64 each (393,216) and softmax 3·12·16² (9,216): 227,288,064; the lookup
    # and the logits 2·16·32,128·768 each. F = 24·227,288,064 + 2·789,577,728
    # = 7,034,068,992; per token 3·F/16 = 1,318,887,936.
    rows = run(cli, "conventions", "t5-base", "--seq", 16)["conventions"]
    assert next(r for r in rows if r["name"] == "chinchilla")["per_token"] == 1_318_887_936


def test_relative_wording():
    from flopcalc.counting.published import _relative

    assert _relative(Fraction(9996, 10000), Fraction(1)) == "within 0.1% of"  # −0.04%
    assert _relative(Fraction(10030, 10000), Fraction(1)) == "0.3% above"
    assert _relative(Fraction(10070, 10000), Fraction(1)) == "0.7% above"
    assert _relative(Fraction(9930, 10000), Fraction(1)) == "0.7% below"


def test_model_line_counts_the_target_length(cli):
    # T5 with a 128-token source and a 16-token target: the line's 6ND figure is the report's
    # own six_nd_below_exact_pct, which counts the 16 decoder tokens.
    t = run(cli, "model", "t5-base", "--seq", 128, "--tgt-seq", 16)["training"]
    assert t["conventions_line"].startswith(f"6ND is {t['six_nd_below_exact_pct']:.1f}% below")


def test_latent_cross_attention_compresses_the_source(cli, tmp_path):
    # MLA in an encoder–decoder, source 3 tokens, target 2: d 8, 2 heads, no query latent,
    # kv rank 4, nope 2 + rope 2, value 3. Cross-attention's queries come from the 2 target
    # tokens (q 2·2·8·2·4), its latent keys/values from the 3 source tokens (kv_a 2·3·8·(4+2),
    # kv_b 2·3·4·2·(2+3)), scores over 2·3 pairs (2·2·6·4), A·V (2·2·6·3), o 2·2·(2·3)·8.
    path = tmp_path / "mla-ed.yaml"
    path.write_text("architecture: encoder-decoder\nn_encoder_layers: 1\nn_layers: 1\n"
                    "d_model: 8\nn_heads: 2\nd_ff: 8\npositions: rotary\nvocab_size: 4\n"
                    "latent_attention: {q_lora_rank: null, kv_lora_rank: 4,"
                    " qk_nope_head_dim: 2, qk_rope_head_dim: 2, v_head_dim: 3}\n")
    r = run(cli, "model", path, "--seq", 3, "--tgt-seq", 2)
    c = r["flops"]["components"]
    cross = {k.removeprefix("decoder.cross_attn."): v for k, v in c.items()
             if k.startswith("decoder.cross_attn.")}
    assert cross == {"q": 2 * 2 * 8 * 8, "kv_a": 2 * 3 * 8 * 6, "kv_b": 2 * 3 * 4 * 2 * 5,
                     "scores": 2 * 2 * 6 * 4, "av": 2 * 2 * 6 * 3, "o": 2 * 2 * 6 * 8}
    # Its parameters: q 8·(2·4), kv_a 8·(4 + 2), the latent's RMSNorm 4, kv_b 4·2·(2 + 3),
    # o (2·3)·8; no biases.
    p = r["params"]["components"]
    assert {k.removeprefix("decoder.cross_attn."): v for k, v in p.items()
            if k.startswith("decoder.cross_attn.")} == {
        "q.weight": 64, "kv_a.weight": 48, "kv_a_norm.weight": 4, "kv_b.weight": 40,
        "o.weight": 48}


def test_bert_head_elementwise(cli):
    # BERT base, 3 sequences of 128 (384 output tokens), with a pooler: the masked-LM head's
    # transform adds its bias (1), GELU (9) and LayerNorm (7) on 384·768 elements, then the
    # output bias on 384·30,522 logits; the pooler a bias and a tanh on 3·768.
    f = run(cli, "model", "bert-base", "--seq", 128, "--batch", 3, "--elementwise",
            "--set", "pooler=true")["flops"]
    c = f["components"]
    # Every part named element-wise is in the element-wise total, none in the matmuls'.
    assert f["elementwise"] == sum(v for k, v in c.items() if "elementwise" in k)
    assert f["weights"] + f["attention"] + f["elementwise"] == f["forward"]
    # The matmuls: the transform (384×768)·(768×768), the pooler (3×768)·(768×768); the
    # embedding LayerNorm 7 per element of the 384 tokens.
    assert (c["head.transform"], c["pooler"]) == (2 * 384 * 768 * 768, 2 * 3 * 768 * 768)
    assert c["embed.norm.elementwise"] == 7 * 384 * 768
    assert {k: v for k, v in c.items() if k.startswith(("head.elementwise", "pooler.elementwise",
                                                        "lm_head.elementwise"))} == {
        "head.elementwise.bias": 384 * 768, "head.elementwise.activation": 384 * 768 * 9,
        "head.elementwise.norm": 384 * 768 * 7, "lm_head.elementwise.bias": 384 * 30522,
        "pooler.elementwise.bias": 3 * 768, "pooler.elementwise.activation": 3 * 768}


def _first_crossing(weights_per_token: int, per_pair: int, keys_seen) -> int:
    """Brute force: the smallest s at which per_pair·Σ_layers Σ_i keys_seen(layer, i) reaches
    weights_per_token·s, counting each query's visible keys straight from the mask."""
    s = 1
    while per_pair * sum(keys_seen(i) for i in range(1, s + 1)) < weights_per_token * s:
        s += 1
    return s


@pytest.mark.parametrize("yaml, keys_seen", [
    # A chunked layer (blocks of 16: query i sees (i − 1) mod 16 + 1 keys) and a causal one.
    ("attention_chunk: 16\nlayer_types: [chunked, full]\n", lambda i: (i - 1) % 16 + 1 + i),
    # Blocks of one key: each query sees itself, like a window of one.
    ("attention_chunk: 1\nlayer_types: [chunked, full]\n", lambda i: 1 + i),
    # A window of one key (each query sees itself) and a causal layer.
    ("sliding_window: 1\nlayer_types: [window, full]\n", lambda i: 1 + i),
])
def test_causal_crossover_across_local_layers(cli, tmp_path, yaml, keys_seen):
    # Two layers of d 8, 2 heads of 4, plain MLP 32: weights per token and layer 2·4·64 +
    # 2·2·8·32 = 1,536, 3,072 for both; each pair costs 2·h·(d_qk + d_v) = 32.
    path = tmp_path / "local.yaml"
    path.write_text("n_layers: 2\nd_model: 8\nn_heads: 2\nd_ff: 32\npositions: rotary\n"
                    "vocab_size: 4\n" + yaml)
    x = run(cli, "model", path, "--attention", "causal")["crossover"]
    assert x["seq"] == _first_crossing(2 * (2 * 4 * 64 + 2 * 2 * 8 * 32), 32, keys_seen)


@pytest.mark.parametrize("w, seq, exact", [
    # One layer of d 8, 2 heads of 4, plain MLP 32 (weights 1,536 per token, 32 per pair),
    # every query seeing at most w keys. Within the window 16·s(s+1) < 1,536·s until s = 95,
    # past it, so the crossing is on the linear part: pairs(s) = w(w+1)/2 + (s − w)·w.
    # w = 64: 32·(64s − 2,016) = 1,536s at s = 126 exactly.
    (64, 126, "126"),
    # w = 60: 32·(60s − 1,770) = 1,536s at s = 56,640/384 = 295/2: the first whole length 148.
    (60, 148, "295/2"),
    # w = 128: the crossing comes first, inside the window: 16·s(s+1) = 1,536·s at s = 95.
    (128, 95, "95"),
    # w = 32: past the window attention per token tends to 32·32 = 1,024 < 1,536: never.
    (32, None, None),
    # w = 48: it tends to 32·48 = 1,536 exactly, but 32·(48s − 1,128) stays below 1,536s.
    (48, None, None),
])
def test_crossover_of_a_windowed_model(cli, tmp_path, w, seq, exact):
    path = tmp_path / "window.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 32\npositions: rotary\n"
                    f"vocab_size: 4\nsliding_window: {w}\n")
    x = run(cli, "model", path, "--attention", "causal")["crossover"]
    assert (x["seq"], x["exact"]) == (seq, exact)
    if w == 32:
        assert x["note"] == ("every layer's attention is local (windowed or chunked): it grows "
                             "linearly in the sequence and stays below the weight GEMMs")
    elif w == 48:
        assert x["note"] == "attention stays below the weight GEMMs at every length"
    else:
        assert x["note"] == ""
        assert x["d_model_multiple"] == float(Fraction(exact)) / 8
    # Under the full convention the window is ignored: 32·s² = 1,536·s at s = 48 = 6d.
    assert run(cli, "model", path)["crossover"]["seq"] == 48


def test_crossover_search_that_runs_out_of_segments_says_so(monkeypatch):
    # Llama 4 Scout's chunked layers (chunks of 8,192) cut the causal search into segments of
    # 8,192 lengths; its crossover, at 221,252, lies in the 28th. Allowed one or two segments,
    # the search stops short of it and says how far it looked rather than "never".
    import flopcalc
    from flopcalc.counting import crossover as module

    spec = flopcalc.load("llama-4-scout").spec
    full = module.crossover(spec, "full").seq
    for cap, reached in ((1, "8,192"), (2, "16,384")):
        monkeypatch.setattr(module, "MAX_SEGMENTS", cap)
        x = module.crossover(spec, "causal")
        assert x.seq is None
        assert x.reason == (f"no crossover in the first {cap:,} window or chunk segments "
                            f"(lengths up to {reached})")
    monkeypatch.setattr(module, "MAX_SEGMENTS", 28)
    assert module.crossover(spec, "causal").seq == 221_252
    # Under the full convention the chunks change nothing: one polynomial, one segment, the
    # same crossover (past the first chunk) with the search allowed a single segment.
    monkeypatch.setattr(module, "MAX_SEGMENTS", 1)
    assert module.crossover(spec, "full").seq == full > 8192


def test_crossover_at_an_irrational_root(cli, tmp_path):
    # The one-layer model above with a window of 4 keys beside a causal layer (weights 3,072
    # per token). Past the window the pairs are (4s − 6) + s(s+1)/2, so 32 of them per pair
    # reach 3,072s where 16s² − 2,928s − 192 = 0: s* = (2,928 + √8,585,472)/32 = 183.07, and
    # 8,585,472 lies between 2,930² and 2,931²: no rational root. f(183) = −192, f(184) = 2,752.
    path = tmp_path / "mixed.yaml"
    path.write_text("n_layers: 2\nd_model: 8\nn_heads: 2\nd_ff: 32\npositions: rotary\n"
                    "vocab_size: 4\nsliding_window: 4\nlayer_types: [window, full]\n")
    x = run(cli, "model", path, "--attention", "causal")["crossover"]
    assert (x["seq"], x["exact"], x["note"]) == (184, None, "")
    assert x["d_model_multiple"] == pytest.approx((2928 + math.sqrt(8_585_472)) / 32 / 8,
                                                  rel=1e-12)
    assert x["seq"] == _first_crossing(3072, 32, lambda i: min(i, 4) + i)


def test_palm_n_leaves_out_lookup_tables(cli):
    # PaLM's N counts every parameter a matmul reads: a tied token table (the LM head) stays,
    # lookup-only tables go. T5-base: per encoder layer attention 4·768² + MLP 2·768·3,072 +
    # 2 RMSNorms 1,536 = 7,079,424; per decoder layer + cross-attention 4·768² and its norm:
    # 9,439,488; final norms 2·768; shared table 32,128·768 = 24,674,304; relative biases
    # 2·32·12 = 768: total 222,903,552, of which 768 are looked up. Attention width 24·768.
    rows = {r["name"]: r for r in run(cli, "conventions", "t5-base", "--seq", 16)["conventions"]}
    total = 12 * 7_079_424 + 12 * 9_439_488 + 2 * 768 + 24_674_304 + 768
    assert total == 222_903_552
    assert rows["palm"]["per_token"] == 6 * (total - 768) + 12 * 16 * 24 * 768
    # 6ND's N: without the table and the relative biases.
    assert rows["six_nd"]["per_token"] == 6 * (total - 24_674_304 - 768)
    # BERT base: tables 30,522·768 (tied: stays) + positions 512·768 + token types 2·768, an
    # embedding LayerNorm 1,536; 12 layers of 4·(768² + 768) + 768·3,072 + 3,072 + 3,072·768
    # + 768 + 2·1,536 = 7,087,872; the masked-LM head 768² + 768 + 1,536 + 30,522.
    rows = {r["name"]: r for r in run(cli, "conventions", "bert-base", "--seq", 128)[
        "conventions"]}
    total = 30522 * 768 + 512 * 768 + 2 * 768 + 1536 + 12 * 7_087_872 + 768 * 768 + 768 \
        + 1536 + 30522
    assert total == 109_514_298
    assert rows["palm"]["per_token"] == 6 * (total - 512 * 768 - 2 * 768) + 12 * 128 * 12 * 768


def test_decoder_only_formulas_on_t5_say_how_they_were_applied(cli):
    # T5-base: 12 encoder and 12 decoder layers (Raffel et al. 2020); the published formulas
    # know one stack, so every one of them takes L = 24 at one length.
    rows = run(cli, "conventions", "t5-base", "--seq", 512)["conventions"]
    note = ("decoder-only formula applied to all L = 24 layers (12 encoder + 12 decoder) with "
            "source length = target length = 512; it has no cross-attention term")
    for name in ("kaplan", "palm", "megatron", "chinchilla"):
        row = next(r for r in rows if r["name"] == name)
        assert any(n.startswith(note) for n in row["notes"]), name


def test_six_nd_takes_the_active_parameters_of_a_mixture(cli):
    # Mixtral 8x7B: 12,879,925,248 active per token (2 of 8 experts; Jiang et al. 2024), less
    # the untied embedding and LM head, 2·32,000·4,096.
    rows = {r["name"]: r for r in run(cli, "conventions", "mixtral-8x7b", "--seq", 16)[
        "conventions"]}
    assert rows["six_nd"]["per_token"] == 6 * (12_879_925_248 - 2 * 32000 * 4096)


def test_encoder_decoder_counts_per_target_token(cli, tmp_path):
    # A source of 128 and a target of 16 tokens: per-token figures divide by the 16 tokens the
    # decoder outputs. An unshared encoder table is an embedding like the decoder's.
    path = tmp_path / "ed.yaml"
    path.write_text("architecture: encoder-decoder\nn_encoder_layers: 1\nn_layers: 1\n"
                    "d_model: 8\nn_heads: 2\nd_ff: 8\nvocab_size: 5\npositions: rotary\n"
                    "share_encoder_embeddings: false\n")
    r = run(cli, "model", path, "--seq", 128, "--tgt-seq", 16)
    assert r["flops"]["forward_per_token"] * 16 == r["flops"]["forward"]
    assert r["params"]["components"]["encoder.embed.tokens"] == 5 * 8
    assert r["params"]["embedding"] == 2 * 5 * 8  # tied head: the two tables only


def _rows(r: dict) -> list[tuple]:
    return [(x["name"], x["kind"], tuple(x["shape"] or ()), x["value"])
            for x in r["params"]["rows"]]


def test_bert_parameters_by_name_kind_and_shape(cli):
    # BERT base as Devlin et al. 2019 and google-bert/bert-base-uncased's tensors lay it out:
    # 30,522-token table, 512 positions, 2 token types, an embedding LayerNorm; 12 post-LN
    # layers of biased 768×768 projections and a 768→3,072→768 MLP; the masked-LM head (a
    # biased 768×768 transform, a LayerNorm, the tied projection's bias) and, set here, the
    # pooler. Kinds: lookup tables and the vocabulary bias are embeddings.
    r = run(cli, "model", "bert-base", "--set", "pooler=true")
    d, f, L, V = 768, 3072, 12, 30522
    layer = [("attn_norm.weight", (d,)), ("attn_norm.bias", (d,)),
             ("attn.q.weight", (d, d)), ("attn.k.weight", (d, d)), ("attn.v.weight", (d, d)),
             ("attn.q.bias", (d,)), ("attn.k.bias", (d,)), ("attn.v.bias", (d,)),
             ("attn.o.weight", (d, d)), ("attn.o.bias", (d,)),
             ("mlp_norm.weight", (d,)), ("mlp_norm.bias", (d,)),
             ("mlp.up.weight", (d, f)), ("mlp.up.bias", (f,)),
             ("mlp.down.weight", (f, d)), ("mlp.down.bias", (d,))]

    def size(shape):
        return shape[0] * (shape[1] if len(shape) > 1 else 1)

    assert _rows(r) == [
        ("embed.tokens", "embedding", (V, d), V * d),
        ("embed.token_types", "embedding", (2, d), 2 * d),
        ("embed.positions", "embedding", (512, d), 512 * d),
        ("embed.norm.weight", "norms", (d,), d), ("embed.norm.bias", "norms", (d,), d),
        *((f"encoder.{n}", "layers", s, L * size(s)) for n, s in layer),
        ("head.transform.weight", "head", (d, d), d * d),
        ("head.transform.bias", "head", (d,), d),
        ("head.norm.weight", "head", (d,), d), ("head.norm.bias", "head", (d,), d),
        ("lm_head.bias", "embedding", (V,), V),
        ("pooler.weight", "head", (d, d), d * d), ("pooler.bias", "head", (d,), d)]


def test_encoder_decoder_tables_by_name(cli, tmp_path):
    # Learned positions: one 6 × 8 table per stack. T5's relative biases: 32 buckets × 12
    # heads per stack (Raffel et al. 2020).
    path = tmp_path / "ed.yaml"
    path.write_text("architecture: encoder-decoder\nn_encoder_layers: 1\nn_layers: 1\n"
                    "d_model: 8\nn_heads: 2\nd_ff: 8\nvocab_size: 5\npositions: learned\n"
                    "max_seq_len: 6\n")
    tables = [x for x in _rows(run(cli, "model", path)) if x[1] == "embedding"]
    assert tables == [("embed.tokens", "embedding", (5, 8), 40),
                      ("encoder.embed.positions", "embedding", (6, 8), 48),
                      ("embed.positions", "embedding", (6, 8), 48)]
    tables = [x for x in _rows(run(cli, "model", "t5-base")) if x[1] == "embedding"]
    assert tables == [("embed.tokens", "embedding", (32128, 768), 32128 * 768),
                      ("encoder.relative_bias", "embedding", (32, 12), 384),
                      ("decoder.relative_bias", "embedding", (32, 12), 384)]


def test_gpt_oss_sinks_and_router_rows(cli):
    # gpt-oss-120b (OpenAI 2025 model card; its config.json): 36 layers, d 2,880, 64 query
    # heads, each layer one learned sink logit per head, and a biased router over 128 experts.
    rows = {x[0]: x[1:] for x in _rows(run(cli, "model", "gpt-oss-120b"))}
    assert rows["decoder.attn.sinks"] == ("layers", (64,), 36 * 64)
    assert rows["decoder.mlp.router.weight"] == ("layers", (2880, 128), 36 * 2880 * 128)
    assert rows["decoder.mlp.router.bias"] == ("layers", (128,), 36 * 128)


def test_gemma_3_layer_rows(cli):
    # Gemma 3 27B (Gemma Team 2025; its config.json): d 5,376, 32 query heads and 16 KV heads
    # of 128, gated MLP 21,504; RMSNorm before and after each sublayer (sandwich), per-head
    # QK-norm of 128; 62 layers, every 6th global: 52 window layers of 1,024 keys and 10 full.
    d, f = 5376, 21504
    rows = [("attn_norm.weight", [d]), ("attn.q.weight", [d, 4096]),
            ("attn.k.weight", [d, 2048]), ("attn.v.weight", [d, 2048]),
            ("attn.o.weight", [4096, d]), ("attn.q_norm.weight", [128]),
            ("attn.k_norm.weight", [128]), ("attn_post_norm.weight", [d]),
            ("mlp_norm.weight", [d]), ("mlp.gate.weight", [d, f]), ("mlp.up.weight", [d, f]),
            ("mlp.down.weight", [f, d]), ("mlp_post_norm.weight", [d])]
    layers = run(cli, "model", "gemma-3-27b")["layers"]
    assert [(x["kind"], x["n_layers"]) for x in layers] == [
        ("sliding window 1,024, gated MLP 21,504", 52), ("full causal, gated MLP 21,504", 10)]
    for layer in layers:
        assert [(x["name"], x["shape"]) for x in layer["param_rows"]] == rows


@pytest.mark.parametrize("norms, names", [
    (1, ["norm.weight", "norm.bias"]),  # GPT-J: one LayerNorm feeds both branches
    (2, ["attn_norm.weight", "attn_norm.bias", "mlp_norm.weight", "mlp_norm.bias"]),  # NeoX
])
def test_parallel_block_norm_rows(cli, tmp_path, norms, names):
    # d 8, 2 heads, plain MLP 32, LayerNorm with bias: the norms come first, then attention's
    # four 8×8 projections, then the MLP's 8×32 and 32×8.
    path = tmp_path / "parallel.yaml"
    path.write_text("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 32\npositions: rotary\n"
                    f"vocab_size: 4\nparallel_block: true\nparallel_norms: {norms}\n")
    (layer,) = run(cli, "model", path)["layers"]
    got = [(x["name"], x["value"]) for x in layer["param_rows"] if "norm" in x["name"]]
    assert got == [(n, 8) for n in names]
    assert layer["params"] == 8 * len(names) + 4 * 64 + 2 * 8 * 32
