"""`--elementwise` by hand: every element-wise formula on tiny models, against integers worked
out in the comments (never from the code under test).

Per-element costs are docs "Element-wise costs (`--elementwise`)": LayerNorm 7 (6 without its
bias), RMSNorm 4 (QK-norms and MLA's latent norms too), 1 per output element of a biased
projection, ReLU 1 / GELU 9 / SiLU 4 per hidden element plus 1 for a gated MLP's product,
softmax 5 per score and per sink logit, routing (softmax over the E router logits 4 each, the k
expert outputs scaled and summed 2·k·d, the shared output added d, Qwen2-MoE's sigmoid gate
4 + d), residual add 1 per element per sublayer. Routed experts run on T·top_k tokens and
shared experts on all T (docs/conventions.md "Mixture of experts"). T = batch · seq throughout.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

BASE = "positions: rotary\nvocab_size: 4\n"


def flops(cli, tmp_path, yaml: str, *args) -> dict:
    """`flops` of `model --elementwise` on a model file; checks forward = w + a + e."""
    path = tmp_path / "m.yaml"
    path.write_text(yaml + BASE)
    f = run(cli, "model", path, "--elementwise", *args)["flops"]
    assert f["forward"] == f["weights"] + f["attention"] + f["elementwise"]
    return f


def elementwise(flops: dict) -> dict[str, int]:
    return {k: v for k, v in flops["components"].items() if ".elementwise" in k}


def check(flops: dict, expected: dict[str, int]) -> None:
    """Every element-wise component (names and values, none missing or extra) and their sum."""
    assert elementwise(flops) == expected
    assert flops["elementwise"] == sum(expected.values())


# ------------------------------------------------------------------------ mixture of experts


MOE_ALL = ("n_layers: 1\nd_model: 4\nn_heads: 2\nd_ff: 8\nmlp: gated\nactivation: silu\n"
           "bias: {mlp: true}\nnorm: rmsnorm\n"
           "moe: {experts: 4, top_k: 2, d_ff: 3, shared_experts: 1, shared_d_ff: 5,"
           " shared_gate: true, router_bias: true}\n")


def test_moe_with_shared_gated_expert_router_bias_and_batch(cli, tmp_path):
    # d 4, SwiGLU experts of width 3, top-2 of 4, one shared expert of width 5 behind a sigmoid
    # gate, biases on experts and router; batch 2 × seq 3: T = 6 tokens, T·k = 12 routed.
    f = flops(cli, tmp_path, MOE_ALL, "--seq", 3, "--batch", 2)
    check(f, {
        # RMSNorm 4 per element over T·d = 24, before attention, before the MoE, at the end.
        "decoder.attn.elementwise.norm": 4 * 24,
        "decoder.mlp.elementwise.norm": 4 * 24,
        "decoder.final_norm.elementwise": 4 * 24,
        "decoder.attn.elementwise.residual": 24,
        "decoder.mlp.elementwise.residual": 24,
        # Expert biases on 12 routed tokens: gate 3 + up 3 + down 4 = 10 each → 120; router
        # bias 6 tokens × 4 logits = 24; shared biases gate 5 + up 5 + down 4 = 14 on 6 → 84.
        "decoder.mlp.elementwise.bias": 120 + 24 + 84,  # 228
        # SiLU 4 + gate product 1 = 5 per hidden element: experts 5·12·3 = 180, shared
        # 5·6·5 = 150.
        "decoder.mlp.elementwise.activation": 180 + 150,  # 330
        # Per token: router softmax 4·4 = 16, two expert outputs scaled and summed 2·2·4 = 16,
        # shared output added 4, its sigmoid gate 4 + 4 = 8 → 44; × 6 tokens.
        "decoder.mlp.elementwise.routing": 6 * 44,  # 264
        # 5 per score: batch 2 × 2 heads × 3² pairs (full convention) = 36 scores.
        "decoder.attn.elementwise.softmax": 5 * 36,
    })
    assert f["elementwise"] == 1338


def test_moe_plain_relu_without_bias_or_shared_experts(cli, tmp_path):
    # d 4, one head, ReLU experts of width 5, top-2 of 3, no biases, no shared experts, no
    # norms; T = 5, T·k = 10 routed. No bias component at all, no norm component.
    f = flops(cli, tmp_path, "n_layers: 1\nd_model: 4\nn_heads: 1\nd_ff: 8\nactivation: relu\n"
              "norm: none\nfinal_norm: false\nmoe: {experts: 3, top_k: 2, d_ff: 5}\n", "--seq", 5)
    check(f, {
        "decoder.attn.elementwise.residual": 20,  # T·d
        "decoder.mlp.elementwise.residual": 20,
        "decoder.mlp.elementwise.activation": 1 * 10 * 5,  # ReLU on 10 routed × 5 wide
        "decoder.mlp.elementwise.routing": 5 * (4 * 3 + 2 * 2 * 4),  # 5 · 28 = 140
        "decoder.attn.elementwise.softmax": 5 * 1 * 25,  # 1 head × 5² scores
    })


def test_moe_two_fused_shared_experts_no_gate_after_a_dense_layer(cli, tmp_path):
    # 2 layers: layer 0 a dense GELU MLP of width 6, layer 1 a MoE (top-2 of 3 GELU experts of
    # width 2, two shared experts of width 3 fused into one of width 6, no gate); MLP biases,
    # no router bias, no norms. batch 3 × seq 2: T = 6, T·k = 12 routed, d = 4.
    f = flops(cli, tmp_path, "n_layers: 2\nd_model: 4\nn_heads: 2\nd_ff: 6\nactivation: gelu\n"
              "bias: {mlp: true}\nnorm: none\nfinal_norm: false\n"
              "moe: {experts: 3, top_k: 2, d_ff: 2, shared_experts: 2, shared_d_ff: 3,"
              " first_dense: 1}\n", "--seq", 2, "--batch", 3)
    check(f, {
        "decoder.attn.elementwise.residual": 2 * 24,  # 2 layers × T·d
        "decoder.mlp.elementwise.residual": 2 * 24,
        # Dense: up 6 + down 4 = 10 per token → 60. MoE: experts up 2 + down 4 on 12 routed
        # → 72, shared up 6 + down 4 on 6 → 60 (no router bias).
        "decoder.mlp.elementwise.bias": 60 + 72 + 60,
        # GELU 9 per element: dense 9·6·6 = 324; experts 9·12·2 = 216; shared 9·6·6 = 324.
        "decoder.mlp.elementwise.activation": 324 + 216 + 324,
        # MoE layer only, per token: softmax 4·3 = 12, 2·2·4 = 16, shared added 4 → 32.
        "decoder.mlp.elementwise.routing": 6 * 32,
        "decoder.attn.elementwise.softmax": 2 * 5 * (3 * 2 * 2**2),  # 2 layers × 24 scores
    })


# ------------------------------------------------------------------------------- dense MLPs


def test_geglu_with_biases_layernorm_sandwich(cli, tmp_path):
    # d 4, 2 heads, GeGLU of width 3, biases everywhere, LayerNorm (7), sandwich norms (2 per
    # sublayer); batch 2 × seq 2: T = 4, T·d = 16.
    f = flops(cli, tmp_path, "n_layers: 1\nd_model: 4\nn_heads: 2\nd_ff: 3\nmlp: gated\n"
              "activation: gelu\nbias: true\nnorm: layernorm\nnorm_placement: sandwich\n",
              "--seq", 2, "--batch", 2)
    check(f, {
        "decoder.attn.elementwise.norm": 2 * 7 * 16,
        "decoder.mlp.elementwise.norm": 2 * 7 * 16,
        "decoder.final_norm.elementwise": 7 * 16,
        "decoder.attn.elementwise.residual": 16,
        "decoder.mlp.elementwise.residual": 16,
        "decoder.attn.elementwise.bias": 4 * (4 + 4 + 4 + 4),  # q, k, v, o on 4 tokens
        "decoder.mlp.elementwise.bias": 4 * (3 + 3 + 4),  # gate, up, down
        "decoder.mlp.elementwise.activation": (9 + 1) * 4 * 3,  # GELU + gate product
        "decoder.attn.elementwise.softmax": 5 * 2 * 2 * 2**2,
    })


def test_plain_relu_no_bias_post_layernorm_without_its_bias(cli, tmp_path):
    # d 4, 1 head, ReLU MLP of width 5, no biases, post-LN with gain only (6 per element), no
    # final norm; batch 3 × seq 2: T = 6, T·d = 24.
    f = flops(cli, tmp_path, "n_layers: 1\nd_model: 4\nn_heads: 1\nd_ff: 5\nactivation: relu\n"
              "norm: layernorm\nnorm_bias: false\nnorm_placement: post\nfinal_norm: false\n",
              "--seq", 2, "--batch", 3)
    check(f, {
        "decoder.attn.elementwise.norm": 6 * 24,
        "decoder.mlp.elementwise.norm": 6 * 24,
        "decoder.attn.elementwise.residual": 24,
        "decoder.mlp.elementwise.residual": 24,
        "decoder.mlp.elementwise.activation": 1 * 6 * 5,
        "decoder.attn.elementwise.softmax": 5 * 3 * 1 * 2**2,
    })


@pytest.mark.parametrize("norms", [1, 2])
def test_parallel_block_norms(cli, tmp_path, norms):
    # GPT-J style: attention and SiLU MLP (width 3) read one input; with one shared norm only
    # the attention sublayer has a norm (no mlp norm component, not even a zero); both
    # sublayers add their output to the residual. RMSNorm, d 4, T = 3, T·d = 12.
    f = flops(cli, tmp_path, "n_layers: 1\nd_model: 4\nn_heads: 2\nd_ff: 3\nactivation: silu\n"
              f"norm: rmsnorm\nparallel_block: true\nparallel_norms: {norms}\n", "--seq", 3)
    expected = {
        "decoder.attn.elementwise.norm": 4 * 12,
        "decoder.final_norm.elementwise": 4 * 12,
        "decoder.attn.elementwise.residual": 12,
        "decoder.mlp.elementwise.residual": 12,
        "decoder.mlp.elementwise.activation": 4 * 3 * 3,
        "decoder.attn.elementwise.softmax": 5 * 2 * 3**2,
    }
    if norms == 2:
        expected["decoder.mlp.elementwise.norm"] = 4 * 12
    check(f, expected)


# ------------------------------------------------------------------------ attention extras

GQA = ("n_layers: 1\nd_model: 8\nn_heads: 4\nn_kv_heads: 2\nhead_dim: 2\nd_ff: 4\n"
       "norm: none\nfinal_norm: false\n")


@pytest.mark.parametrize("bias, expected", [
    # 4 query heads of 2 (d_q 8), 2 KV heads: keys 2·2 = 4, values 2·3 = 6 (v_head_dim 3);
    # T = 3 tokens. q/k/v biases: 3·(8 + 4 + 6) = 54.
    ("{qkv: true}", 54),
    # The output projection maps h·d_v = 12 back to d = 8: its bias is d wide, 3·8 = 24.
    ("{attn_out: true}", 24),
    ("true", 54 + 24),
])
def test_attention_biases_gqa(cli, tmp_path, bias, expected):
    f = flops(cli, tmp_path, GQA + f"v_head_dim: 3\nbias: {bias}\n", "--seq", 3)
    assert f["components"]["decoder.attn.elementwise.bias"] == expected
    assert ("decoder.mlp.elementwise.bias" in f["components"]) == (bias == "true")


@pytest.mark.parametrize("norm, per_element", [
    ("rmsnorm", 4),
    # A LayerNorm model's QK-norms are LayerNorms (the params list q_norm.bias): 7, or 6
    # without the bias.
    ("layernorm", 7),
    ("layernorm\nnorm_bias: false", 6),
])
@pytest.mark.parametrize("kind", ["per_head", "all_heads"])
def test_qk_norm(cli, tmp_path, norm, per_element, kind):
    # QK-norm normalises every query and key element, per head or over all heads alike:
    # T·(d_q + d_k) = 6·(8 + 4) = 72 elements for batch 2 × seq 3 with GQA (4 q heads of 2,
    # 2 KV heads).
    yaml = GQA.replace("norm: none\n", f"norm: {norm}\n") + f"qk_norm: {kind}\n"
    f = flops(cli, tmp_path, yaml, "--seq", 3, "--batch", 2)
    assert f["components"]["decoder.attn.elementwise.qk_norm"] == per_element * 72
    # The rest of the layer: norms 2·per·T·d, residuals 2·T·d, GELU 9·T·4, softmax
    # 5·2·4·3² (batch 2, 4 heads), no final norm.
    rest = 2 * per_element * 48 + 2 * 48 + 9 * 6 * 4 + 5 * 2 * 4 * 9
    assert f["elementwise"] == per_element * 72 + rest


def test_no_qk_norm_component_without_qk_norm(cli, tmp_path):
    f = flops(cli, tmp_path, GQA, "--seq", 3)
    assert not any("qk_norm" in k for k in f["components"])


MLA = ("n_layers: 1\nd_model: 16\nn_heads: 2\nd_ff: 8\nnorm: rmsnorm\n"
       "latent_attention: {q_lora_rank: %s, kv_lora_rank: 6, qk_nope_head_dim: 3,"
       " qk_rope_head_dim: 2, v_head_dim: 5}\n")


def test_latent_attention_biases_and_latent_norms(cli, tmp_path):
    # MLA, d 16, 2 heads, q rank 4, kv rank 6, rope 2; biases on q_a (4 wide), kv_a (6 + 2)
    # and o (16), as Hugging Face's attention_bias; batch 2 × seq 3: T = 6, T·d = 96.
    f = flops(cli, tmp_path, MLA % 4 + "bias: {qkv: true, attn_out: true}\n",
              "--seq", 3, "--batch", 2)
    check(f, {
        "decoder.attn.elementwise.bias": 6 * (4 + 8 + 16),  # 168
        # RMSNorms of the query latent (4) and the kv latent (6): 4·6·(4 + 6).
        "decoder.attn.elementwise.qk_norm": 4 * 6 * 10,  # 240
        "decoder.attn.elementwise.norm": 4 * 96,
        "decoder.mlp.elementwise.norm": 4 * 96,
        "decoder.final_norm.elementwise": 4 * 96,
        "decoder.attn.elementwise.residual": 96,
        "decoder.mlp.elementwise.residual": 96,
        "decoder.mlp.elementwise.activation": 9 * 6 * 8,  # GELU, width 8
        "decoder.attn.elementwise.softmax": 5 * 2 * 2 * 3**2,
    })


def test_latent_attention_without_query_rank(cli, tmp_path):
    # q_lora_rank null: one direct query projection without bias or latent norm; biases on
    # kv_a (8) and o (16) only, T = 6: 6·24 = 144; only the kv latent's RMSNorm 4·6·6 = 144.
    f = flops(cli, tmp_path, MLA % "null" + "bias: {qkv: true, attn_out: true}\n",
              "--seq", 3, "--batch", 2)
    assert f["components"]["decoder.attn.elementwise.bias"] == 6 * (8 + 16)
    assert f["components"]["decoder.attn.elementwise.qk_norm"] == 4 * 6 * 6


def test_latent_attention_with_qk_norm_and_no_bias(cli, tmp_path):
    # No biases: no attention bias component. QK-norm (RMSNorm) over the decompressed queries
    # and keys, 2 heads × (3 + 2) = 10 each: 4·6·(10 + 10) = 480, plus the latent norms 240.
    f = flops(cli, tmp_path, MLA % 4 + "qk_norm: per_head\n", "--seq", 3, "--batch", 2)
    assert f["components"]["decoder.attn.elementwise.qk_norm"] == 480 + 240
    assert not any(k.endswith("elementwise.bias") for k in f["components"])


# -------------------------------------------------------------------------------- softmax


@pytest.mark.parametrize("attention, scores", [
    # Window layer (w = 2): Σ min(i, 2) over i = 1..4 is 1 + 2 + 2 + 2 = 7 pairs; full causal
    # layer 4·5/2 = 10; × batch 2 × 2 heads: 28 + 40 scores.
    ("causal", 2 * 2 * 7 + 2 * 2 * 10),
    ("full", 2 * (2 * 2 * 4**2)),  # every pair in both layers
])
def test_softmax_with_sinks_window_and_batch(cli, tmp_path, attention, scores):
    # gpt-oss style: one sink logit per head joins every query row's softmax, 2 heads × 8
    # query rows (batch 2 × seq 4) = 16 per layer, 2 layers.
    f = flops(cli, tmp_path, "n_layers: 2\nd_model: 4\nn_heads: 2\nd_ff: 4\nnorm: none\n"
              "final_norm: false\nattention_sinks: true\nsliding_window: 2\n"
              "layer_types: [window, full]\n", "--seq", 4, "--batch", 2,
              "--attention", attention)
    assert f["components"]["decoder.attn.elementwise.softmax"] == 5 * (scores + 2 * 16)


# --------------------------------------------------------------------- encoder–decoder

ENC_DEC = ("architecture: encoder-decoder\nn_layers: 1\nn_encoder_layers: 1\nd_model: 4\n"
           "n_heads: 2\nd_ff: 3\nactivation: relu\nbias: true\nnorm: rmsnorm\n"
           "attention_sinks: true\n")


def test_encoder_decoder_cross_attention_with_sinks_and_batch(cli, tmp_path):
    # Source s = 3, target m = 2, batch 2: encoder tokens 6 (T·d = 24), decoder tokens 4
    # (T·d = 16). Biases everywhere, RMSNorm pre-norm with final norms, ReLU of width 3, one
    # sink per head in every attention (cross-attention included).
    f = flops(cli, tmp_path, ENC_DEC, "--seq", 3, "--tgt-seq", 2, "--batch", 2)
    check(f, {
        "encoder.attn.elementwise.norm": 4 * 24,
        "encoder.mlp.elementwise.norm": 4 * 24,
        "encoder.final_norm.elementwise": 4 * 24,
        "encoder.attn.elementwise.residual": 24,
        "encoder.mlp.elementwise.residual": 24,
        "encoder.attn.elementwise.bias": 6 * 4 * 4,  # q, k, v, o on 6 tokens
        "encoder.mlp.elementwise.bias": 6 * (3 + 4),
        "encoder.mlp.elementwise.activation": 6 * 3,
        # 2·2 heads·3² = 36 scores + 2 heads × 6 rows of sinks = 12.
        "encoder.attn.elementwise.softmax": 5 * (36 + 12),
        "decoder.attn.elementwise.norm": 4 * 16,
        "decoder.cross_attn.elementwise.norm": 4 * 16,
        "decoder.mlp.elementwise.norm": 4 * 16,
        "decoder.final_norm.elementwise": 4 * 16,
        "decoder.attn.elementwise.residual": 16,
        "decoder.cross_attn.elementwise.residual": 16,
        "decoder.mlp.elementwise.residual": 16,
        # Self q/k/v/o on 4 target tokens 4·16 = 64; cross q and o on the 4 target tokens
        # 4·8 = 32, cross k and v on the 6 source tokens 6·8 = 48 (docs/conventions.md: cross-attn
        # keys and values come from the source).
        "decoder.attn.elementwise.bias": 64,
        "decoder.cross_attn.elementwise.bias": 32 + 48,
        "decoder.mlp.elementwise.bias": 4 * (3 + 4),
        "decoder.mlp.elementwise.activation": 4 * 3,
        # Self: 2·2·2² = 16 scores + 2 heads × 4 rows = 8.
        "decoder.attn.elementwise.softmax": 5 * (16 + 8),
        # Cross: each of the 4 target rows scores the 3 source keys, 2·2·2·3 = 24 scores,
        # + 2 heads × 4 target rows of sinks = 8.
        "decoder.cross_attn.elementwise.softmax": 5 * (24 + 8),
    })


def test_encoder_decoder_cross_attention_qk_norm(cli, tmp_path):
    # With qk_norm every attention has q_norm and k_norm (the params list
    # decoder.cross_attn.q_norm.weight), and the docs count QK-norms under --elementwise.
    # RMSNorm 4 per element; 2 query heads of 2 (d_q = 4), 1 KV head (d_k = 2); s = 3, m = 2,
    # batch 2: 6 source and 4 target tokens.
    f = flops(cli, tmp_path, ENC_DEC + "n_kv_heads: 1\nqk_norm: per_head\n", "--seq", 3,
              "--tgt-seq", 2, "--batch", 2)
    c = f["components"]
    assert c["encoder.attn.elementwise.qk_norm"] == 4 * 6 * (4 + 2)  # 144
    # Decoder self-attention: 4 target tokens × (4 + 2) → 4·24 = 96. Cross-attention: its
    # queries are the 4 target tokens (4·4 = 16 elements), its keys the 6 source tokens
    # (6·2 = 12 elements) → 4·28 = 112.
    decoder = sum(v for k, v in c.items() if k.startswith("decoder.") and "qk_norm" in k)
    assert decoder == 96 + 112
