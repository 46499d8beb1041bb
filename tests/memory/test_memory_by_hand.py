"""`flopcalc memory` by hand: the state (which tensors tensor, expert and pipeline parallelism
split, ZeRO, precision) and the activations, tensor by tensor, of tiny models, against
integers worked out in the comments (never from the code under test).

Conventions, from docs/commands/memory.md and the paper it follows, Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models" (§4.1-4.3, Table 2): 16-bit
tensors (2 bytes) and 1-byte dropout masks; per layer each norm's input 2sbh, the attention
input 2sbh, Q and K 2sb(d_q + d_k), the softmax output 2as²b, its dropout mask as²b and dropout
output 2as²b, V 2sb·d_v, the output projection's input 2sb·d_o, a dropout mask sbh after each
sublayer, the MLP input 2sbh and its hidden tensors (2 plain, 3 gated, 2sbf each). Tensor
parallelism t splits what lies inside attention and MLP; sequence parallelism splits the rest.
State after Rajbhandari et al. 2020 ("ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", §3.1): 2 + 2 + 12 bytes per parameter for mixed-precision AdamW.

Unless a test says otherwise: seq s = 4, micro-batch b = 2, d_model h = 8, so sb = 8 and
sbh = 64; two heads (a = 2) of width 4; vocabulary V = 10.
"""

from __future__ import annotations

import pytest

from flopcalc.counting.memory import Setup, activation_parts, layer_activations, state_parts
from flopcalc.models.registry import load_model

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

SB = "--seq", 4, "--batch", 2
TAIL = "positions: rotary\nvocab_size: 10\n"

# GPT-like: LayerNorm before each sublayer, GELU MLP of d_ff = 4h = 32, no biases, tied head.
DENSE = "n_layers: {L}\nd_model: 8\nn_heads: 2\nd_ff: 32\n"


def doc(cli, tmp_path, yaml: str, *args) -> dict:
    """The memory report; the eager kernel (its s² tensors) unless the test says --flash."""
    path = tmp_path / "m.yaml"
    path.write_text(yaml + TAIL)
    kernel = () if "--flash" in args else ("--no-flash",)
    return run(cli, "memory", path, *args, *kernel)


def tensors(d: dict, layer: int = 0) -> dict[str, int]:
    return d["activations"]["layers"][layer]["tensors"]


# -------------------------------------------------------------- activations: one dense layer


@pytest.mark.parametrize("sp", [False, True])
def test_korthikanti_tensors_with_tensor_parallelism(cli, tmp_path, sp):
    # t = 2, dropout on, no FlashAttention. Whole without sequence parallelism (w = 1),
    # halved with it (w = 1/2): the norm inputs, attention input, MLP input and the two masks.
    w = 2 if sp else 1
    d = doc(cli, tmp_path, DENSE.format(L=1), *SB, "--tp", 2, "--dropout", "on",
            *(["--sequence-parallel"] if sp else []))
    expected = {
        "norm_inputs": 2 * 2 * 64 // w,  # 2 LayerNorms × 2sbh
        "attn.input": 2 * 64 // w,  # 2sbh
        "attn.qk": 2 * 8 * (8 + 8) // 2,  # 2sb(d_q + d_k)/t = 128
        "attn.softmax": 2 * 2 * 4 * 4 * 2 // 2,  # 2as²b/t = 64
        "attn.softmax_dropout_mask": 2 * 4 * 4 * 2 // 2,  # as²b/t = 32
        "attn.softmax_dropout": 2 * 2 * 4 * 4 * 2 // 2,  # 64
        "attn.v": 2 * 8 * 8 // 2,  # 2sb·d_v/t = 64
        "attn.o_input": 2 * 8 * 8 // 2,  # 2sb·d_o/t = 64
        "attn.dropout_mask": 64 // w,  # sbh
        "mlp.input": 2 * 64 // w,  # 2sbh
        "mlp.hidden": 2 * 2 * 8 * 32 // 2,  # GELU input and output, 2 × 2sbf/t = 512
        "mlp.dropout_mask": 64 // w,  # sbh
    }
    assert tensors(d) == expected
    # Table 2: sbh(10 + 24/t + 5as/(ht)) = 64(10 + 12 + 2.5) = 1,568 without sequence
    # parallelism; sbh(34/t + 5as/(ht)) = 64(17 + 2.5) = 1,248 with it.
    assert d["activations"]["per_layer"] == sum(expected.values()) == (1248 if sp else 1568)


@pytest.mark.parametrize("sp, expected", [(False, 128), (True, 64)])
def test_full_recompute_keeps_the_layer_input(cli, tmp_path, sp, expected):
    # Table 2: full recomputation keeps sbh(2) = 128; sequence parallelism splits it t = 2 ways.
    d = doc(cli, tmp_path, DENSE.format(L=1), *SB, "--tp", 2, "--dropout", "on", "--recompute", "full",
            *(["--sequence-parallel"] if sp else []))
    assert tensors(d) == {"layer_input": expected}


def test_selective_recompute_without_norms(cli, tmp_path):
    # No norms, t = 1, dropout: selective recomputation drops the three s² tensors; what is left
    # is Table 2's sbh(10 + 24) = 2,176 less the two norm inputs 4sbh = 256: 1,920.
    d = doc(cli, tmp_path, DENSE.format(L=1) + "norm: none\nfinal_norm: false\n", *SB,
            "--dropout", "on", "--recompute", "selective")
    assert tensors(d) == {
        "norm_inputs": 0, "attn.input": 128,
        "attn.qk": 2 * 8 * 16,  # 256
        "attn.v": 128, "attn.o_input": 128, "attn.dropout_mask": 64,
        "mlp.input": 128, "mlp.hidden": 2 * 2 * 8 * 32,  # 1,024
        "mlp.dropout_mask": 64,
    }
    assert d["activations"]["per_layer"] == 1920


# ------------------------------------------------------------ activations: the whole device


def test_one_stage_with_sequence_parallelism(cli, tmp_path):
    # §4.3 with p = 1, t = 2 and sequence parallelism: the layer (1,248, as above), the
    # embedding's dropout mask sbhp/t = 32, the final norm's input 2sbh/t = 64, the LM head's
    # input 2sbh/t = 64 and the fp32 logits 4sbV/t = 4·8·10/2 = 160.
    d = doc(cli, tmp_path, DENSE.format(L=1), *SB, "--tp", 2, "--dropout", "on", "--sequence-parallel")
    layer = {f"layers.{k}": v for k, v in tensors(d).items()}
    assert sum(layer.values()) == 1248
    assert d["activations"]["components"] == {
        **layer, "embedding.dropout_mask": 32, "output.final_norm_input": 64,
        "output.lm_head_input": 64, "output.logits_fp32": 160}
    assert d["memory"]["activations"] == 1248 + 32 + 64 + 64 + 160


def test_one_stage_without_sequence_parallelism_keeps_the_output_inputs_whole(cli, tmp_path):
    # Without sequence parallelism the final norm and the LM head read the whole replicated
    # hidden state, like the layers' norms (the 10sbh of Table 2's tensor-parallel row):
    # 2sbh = 128 each; the embedding's mask sbh = 64; the logits are split by vocabulary:
    # 4sbV/t = 160. (§4.3's 2sbh/t assumes sequence parallelism.)
    d = doc(cli, tmp_path, DENSE.format(L=1), *SB, "--tp", 2, "--dropout", "on")
    c = d["activations"]["components"]
    assert (c["embedding.dropout_mask"], c["output.final_norm_input"],
            c["output.lm_head_input"], c["output.logits_fp32"]) == (64, 128, 128, 160)


def test_first_pipeline_stage(cli, tmp_path):
    # L = 3, p = 2, t = 2, dropout, FlashAttention: the first stage holds ⌈3/2⌉ = 2 layers with
    # p = 2 micro-batches in flight: 4 layers' worth; the embedding's dropout mask sbhp = 128
    # (whole: no sequence parallelism); no output tensors (they are on the last stage).
    d = doc(cli, tmp_path, DENSE.format(L=3), *SB, "--tp", 2, "--pp", 2, "--dropout", "on", "--flash")
    one = {
        "norm_inputs": 256, "attn.input": 128, "attn.qk": 128,
        "attn.logsumexp": 4 * 2 * 8 // 2,  # 4 bytes × a·sb rows / t = 32
        "attn.v": 64, "attn.o_input": 64, "attn.dropout_mask": 64,
        "mlp.input": 128, "mlp.hidden": 512, "mlp.dropout_mask": 64,
    }
    assert tensors(d) == one and d["activations"]["per_layer"] == 1440
    assert d["activations"]["components"] == {
        **{f"layers.{k}": 4 * v for k, v in one.items()}, "embedding.dropout_mask": 128}
    assert d["memory"]["activations"] == 4 * 1440 + 128


def test_two_kinds_of_layer_add_up(cli, tmp_path):
    # A full and a sliding-window layer, t = 1, FlashAttention: the same tensors each (the
    # window changes no stored tensor), so every `layers.*` is twice one layer's; then the final
    # norm's input 2sbh = 128, the LM head's 128 and the logits 4sbV = 320.
    yaml = DENSE.format(L=2) + "sliding_window: 2\nlayer_types: [full, window]\n"
    d = doc(cli, tmp_path, yaml, *SB, "--flash")
    one = {"norm_inputs": 256, "attn.input": 128, "attn.qk": 256, "attn.logsumexp": 64,
           "attn.v": 128, "attn.o_input": 128, "mlp.input": 128, "mlp.hidden": 1024}
    assert tensors(d, 0) == tensors(d, 1) == one
    assert d["activations"]["components"] == {
        **{f"layers.{k}": 2 * v for k, v in one.items()}, "output.final_norm_input": 128,
        "output.lm_head_input": 128, "output.logits_fp32": 320}


# --------------------------------------------------- activations: other kinds of attention


MLA = ("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 16\nmlp: gated\nactivation: silu\n"
       "norm: rmsnorm\nlatent_attention: {{q_lora_rank: {q}, kv_lora_rank: 5, "
       "qk_nope_head_dim: 4, qk_rope_head_dim: 2, v_head_dim: 3}}\n")


@pytest.mark.parametrize("q_rank, latents", [
    # The low-rank tensors: q_a's output and the normed query latent (2 × r_q = 3), the KV
    # latent and its normed copy (2 × r_kv = 5), the rotary key (2): 2sb(6 + 10 + 2)/t = 144.
    (3, 2 * 8 * (2 * 3 + 2 * 5 + 2) // 2),
    # No query rank: queries projected directly, no query latent: 2sb(10 + 2)/t = 96.
    ("null", 2 * 8 * (2 * 5 + 2) // 2),
])
def test_latent_attention(cli, tmp_path, q_rank, latents):
    # MLA: heads of qk width 4 + 2 = 6 and v width 3: d_q = d_k = 12, d_v = d_o = 6. t = 2,
    # FlashAttention; SwiGLU MLP of width 16 keeps 3 hidden tensors (the fused activation's
    # gate-and-up input and its output, as Megatron-Core keeps them).
    d = doc(cli, tmp_path, MLA.format(q=q_rank), *SB, "--tp", 2, "--flash")
    assert tensors(d) == {
        "norm_inputs": 256, "attn.input": 128,
        "attn.qk": 2 * 8 * 24 // 2,  # 192
        "attn.latents": latents,
        "attn.logsumexp": 32,
        "attn.v": 2 * 8 * 6 // 2, "attn.o_input": 2 * 8 * 6 // 2,  # 48 each
        "mlp.input": 128, "mlp.hidden": 3 * 2 * 8 * 16 // 2,  # 384
    }


def test_qk_norm_keeps_the_inputs_of_its_norms(cli, tmp_path):
    # GQA (1 KV head of 4) with per-head QK-norm, t = 2, FlashAttention: d_q = 8, d_k = 4, so
    # Q and K are 2sb(8 + 4)/t = 96, and the norms' inputs (Q and K before the norm) 96 more.
    yaml = ("n_layers: 1\nd_model: 8\nn_heads: 2\nn_kv_heads: 1\nd_ff: 16\nmlp: gated\n"
            "activation: silu\nnorm: rmsnorm\nqk_norm: per_head\n")
    d = doc(cli, tmp_path, yaml, *SB, "--tp", 2, "--flash")
    assert tensors(d) == {
        "norm_inputs": 256, "attn.input": 128, "attn.qk": 96, "attn.qk_norm_inputs": 96,
        "attn.logsumexp": 32,
        "attn.v": 2 * 8 * 4 // 2,  # 32
        "attn.o_input": 2 * 8 * 8 // 2,  # 64
        "mlp.input": 128, "mlp.hidden": 384,
    }


ENC_DEC = ("architecture: encoder-decoder\nn_encoder_layers: 1\nn_layers: 1\nd_model: 8\n"
           "n_heads: 2\nd_ff: 32\nnorm: rmsnorm\n")


def test_cross_attention_tensors(cli, tmp_path):
    # The decoder layer of an encoder-decoder model, t = 2, sequence parallelism, dropout:
    # cross-attention's input 2sbh/t = 64; its Q and K 2sb(8 + 8)/t = 128 and V 2sb·8/t = 64;
    # its softmax tensors, of its a = 2 heads, like self-attention's: 2as²b/t = 2·2·16·2/2 =
    # 64, the mask as²b/t = 32 and the dropout output 64.
    dec = tensors(doc(cli, tmp_path, ENC_DEC, *SB, "--tp", 2, "--sequence-parallel",
                      "--dropout", "on"), 1)
    assert dec["cross_attn.input"] == 64
    assert (dec["cross_attn.qk"], dec["cross_attn.v"]) == (128, 64)
    for attention in ("attn", "cross_attn"):
        assert (dec[f"{attention}.softmax"], dec[f"{attention}.softmax_dropout_mask"],
                dec[f"{attention}.softmax_dropout"]) == (64, 32, 64)


def test_cross_attention_keeps_its_output_projection_input(cli, tmp_path):
    # Every tensor of that decoder layer. Cross-attention is an attention block like
    # self-attention (§4.1): its output projection keeps its input 2sb·d_o/t = 64 and, with
    # dropout, its output's mask sbh/t = 32.
    dec = tensors(doc(cli, tmp_path, ENC_DEC, *SB, "--tp", 2, "--sequence-parallel",
                      "--dropout", "on"), 1)
    assert dec == {
        "norm_inputs": 3 * 2 * 64 // 2,  # 3 RMSNorms (self, cross, MLP) × 2sbh/t = 192
        "attn.input": 64, "attn.qk": 128,
        "cross_attn.input": 64, "cross_attn.qk": 128, "cross_attn.v": 64,
        "cross_attn.o_input": 64,
        "attn.softmax": 64, "attn.softmax_dropout_mask": 32, "attn.softmax_dropout": 64,
        "cross_attn.softmax": 64, "cross_attn.softmax_dropout_mask": 32,
        "cross_attn.softmax_dropout": 64,
        "attn.v": 64, "attn.o_input": 64, "attn.dropout_mask": 32,
        "cross_attn.dropout_mask": 32,
        "mlp.input": 64, "mlp.hidden": 512, "mlp.dropout_mask": 32,
    }


# ------------------------------------------------------------------------ mixture of experts

MOE = ("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 16\nmlp: {mlp}\nbias: {{mlp: true}}\n"
       "norm: rmsnorm\nmoe: {{experts: 4, top_k: 2, d_ff: 4, shared_experts: 1, "
       "shared_d_ff: 6}}\n")


@pytest.mark.parametrize("mlp, hidden", [("plain", 2), ("gated", 3)])
def test_moe_tensors(cli, tmp_path, mlp, hidden):
    # E = 4 routed experts of width 4, top k = 2, one shared expert of width 6; t = 2,
    # FlashAttention. Router logits in fp32 4sbE = 128 (router replicated); each token's k
    # copies of its input 2sbkh = 256; the routed experts' hidden tensors 2·sbk·4·n/t and the
    # shared expert's 2sb·6·n/t, n = 2 plain or 3 gated (the fused activation's 2-wide input and
    # its output).
    d = doc(cli, tmp_path, MOE.format(mlp=mlp), *SB, "--tp", 2, "--flash")
    assert tensors(d) == {
        "norm_inputs": 256, "attn.input": 128, "attn.qk": 128, "attn.logsumexp": 32,
        "attn.v": 64, "attn.o_input": 64, "mlp.input": 128,
        "mlp.router_logits": 4 * 8 * 4,
        "mlp.expert_inputs": 2 * 8 * 2 * 8,
        "mlp.experts.hidden": 2 * 16 * 4 * hidden // 2,  # 128 plain, 192 gated
        "mlp.shared.hidden": 2 * 8 * 6 * hidden // 2,  # 96 plain, 144 gated
    }


def test_expert_parallelism_does_not_shrink_the_routed_tokens(cli, tmp_path):
    # Expert parallelism splits the experts, not the tokens: the ep devices are data-parallel
    # ranks (--count is dp x tp x pp), each with its own micro-batch, and the all-to-all sends
    # each routed copy to its expert's device; with balanced routing a device receives sbk
    # copies, as many as it sends. So at e = 2 its expert inputs stay 2sbkh = 256, and the
    # experts' hidden tensors (computed from those inputs) 2·sbk·4·2 = 256 too.
    d = doc(cli, tmp_path, MOE.format(mlp="plain"), *SB, "--dp", 2, "--ep", 2, "--flash")
    assert tensors(d)["mlp.expert_inputs"] == 2 * 8 * 2 * 8
    assert tensors(d)["mlp.experts.hidden"] == 2 * 16 * 4 * 2


@pytest.mark.parametrize("tp, ep, etp, device", [
    # Embedding 10×8 = 80 (tied); attention 4 × 8×8 = 256; RMSNorms 8 + 8 + final 8 = 24;
    # router 8×4 = 32 (replicated); routed experts (4 × (8×4 + 4 + 4×8 + 8) = 304) split
    # e·t_e ways; shared expert up 8×6 + bias 6 (column-parallel), down 6×8 (split) + bias 8
    # (row-parallel, replicated) = 110.
    (1, 2, 1, 80 + 256 + 24 + 32 + 304 // 2 + 110),  # 654
    (2, 2, 2, 80 // 2 + 256 // 2 + 24 + 32 + 304 // 4 + (48 + 6 + 48) // 2 + 8),  # 359
    # whole experts on each tensor-parallel rank (etp 1)
    (2, 2, 1, 80 // 2 + 256 // 2 + 24 + 32 + 304 // 2 + (48 + 6 + 48) // 2 + 8),  # 435
])
def test_moe_device_params(cli, tmp_path, tp, ep, etp, device):
    d = doc(cli, tmp_path, MOE.format(mlp="plain"), *SB, "--tp", tp, "--dp", ep, "--ep", ep,
            "--etp", etp)
    assert d["params"]["total"] == 80 + 256 + 24 + 32 + 304 + 110  # 806
    assert d["params"]["device"] == device


# ----------------------------------------------------------------------------------- state

# Biased GPT-like layer, untied head. Per layer: LayerNorms 2 × (8 + 8) = 32; q, k, v, o
# 4 × 64 = 256; q, k, v biases 24 (column-parallel: split by t); o bias 8 (row-parallel:
# replicated); up 8×16 = 128 + bias 16 (column); down 128 + bias 8 (row): 600 in all, of
# which 48 replicated. Embedding 80, LM head 80 (both split by vocabulary), final norm 16.
BIASED = "n_layers: {L}\nd_model: 8\nn_heads: 2\nd_ff: 16\nbias: true\ntie_embeddings: false\n"
PER_LAYER, PER_LAYER_TP2 = 600, (600 - 48) // 2 + 48  # 600, 324


@pytest.mark.parametrize("L, tp, pp, device", [
    (1, 2, 1, 80 // 2 + PER_LAYER_TP2 + 16 + 80 // 2),  # 420
    (3, 1, 1, 80 + 3 * PER_LAYER + 16 + 80),  # 1,976: one stage holds everything
    (3, 1, 2, 80 + 2 * PER_LAYER),  # 1,280: ⌈3/2⌉ layers; final norm and head on the last
    (3, 2, 2, 80 // 2 + 2 * PER_LAYER_TP2),  # 688
])
def test_device_params_under_tensor_and_pipeline_parallelism(cli, tmp_path, L, tp, pp, device):
    d = doc(cli, tmp_path, BIASED.format(L=L), *SB, "--tp", tp, "--pp", pp)
    assert d["params"]["total"] == 80 + L * PER_LAYER + 16 + 80
    assert d["params"]["device"] == device


@pytest.mark.parametrize("args, state", [
    # 420 parameters on the device (t = 2, as above), dp = 8. ZeRO (§5): stage 1 splits the
    # optimizer, 2 the gradients too, 3 the weights too.
    (["--zero", 0], (2 * 420, 2 * 420, 12 * 420)),  # 840, 840, 5,040
    (["--zero", 1], (840, 840, 5040 // 8)),  # 630
    (["--zero", 2], (840, 840 // 8, 630)),  # 105
    (["--zero", 3], (105, 105, 630)),
    # dp = 16: 840/16 = 52.5 rounds up to 53; 5,040/16 = 315.
    (["--zero", 3, "--dp", 16], (53, 53, 315)),
    # bf16: no master copy, 2 + 2 + 8; fp32 with SGD: 4 + 4 + 4; 8-bit AdamW: 2 + 2 + (4 + 2).
    (["--precision", "bf16"], (840, 840, 8 * 420)),
    (["--precision", "fp32", "--optimizer", "sgd"], (4 * 420, 4 * 420, 4 * 420)),
    (["--optimizer", "adamw-8bit", "--zero", 1], (840, 840, 6 * 420 // 8)),  # 315
])
def test_zero_stages_and_precisions(cli, tmp_path, args, state):
    d = doc(cli, tmp_path, BIASED.format(L=1), *SB, "--tp", 2, "--dp", 8, *args)
    m = d["memory"]
    assert (m["weights"], m["gradients"], m["optimizer"]) == state
    assert m["total"] == sum(state) + m["activations"]


@pytest.mark.parametrize("pp, device", [
    # Encoder-decoder, 2 + 2 layers, untied encoder table, T5 relative positions (3 buckets ×
    # 2 heads = 6 per stack). Encoder layer: 2 RMSNorms 16 + attention 256 + MLP 256 = 528;
    # decoder layer adds cross-attention and its norm: 792; final norms 8 per stack.
    (1, 80 + 80 + 6 + 6 + 2 * 528 + 2 * 792 + 8 + 8),  # 2,828
    # p = 2: ⌈4/2⌉ = 2 of the 4 layers (half of each kind: 528 + 792); the tables and relative
    # biases on the first stage; both final norms on the last.
    (2, 80 + 80 + 6 + 6 + 528 + 792),  # 1,492
])
def test_encoder_decoder_pipeline_placement(cli, tmp_path, pp, device):
    yaml = ("architecture: encoder-decoder\nn_encoder_layers: 2\nn_layers: 2\nd_model: 8\n"
            "n_heads: 2\nd_ff: 16\nnorm: rmsnorm\nshare_encoder_embeddings: false\n"
            "relative_buckets: 3\nvocab_size: 10\npositions: relative\n")
    path = tmp_path / "t5.yaml"
    path.write_text(yaml)
    r = cli("memory", path, "--format", "json", *map(str, SB), "--pp", pp)
    assert r.code == 0, r.err
    assert r.json()["params"]["device"] == device


@pytest.mark.parametrize("tp, pp, device", [
    # BERT-like encoder with a masked-LM head and a pooler, 2 post-LN layers, no final norm.
    # Layer: LayerNorms 2 × 16 + attention 256 + MLP 256 = 544. Head: transform 8×8 + bias 8,
    # LayerNorm 16, the tied projection's bias 10; pooler 8×8 + bias 8.
    # p = 2: the table and 1 layer; head and pooler on the last stage.
    (1, 2, 80 + 544),  # 624
    # t = 2: matrices and the embedding (and the vocabulary bias) halved; norms and the
    # transform's and pooler's biases replicated.
    (2, 1, 40 + 2 * (256 + 32) + 32 + 8 + 16 + 5 + 32 + 8),  # 717
])
def test_masked_lm_head_and_pooler(cli, tmp_path, tp, pp, device):
    yaml = ("architecture: encoder-only\nn_layers: 2\nd_model: 8\nn_heads: 2\nd_ff: 16\n"
            "norm_placement: post\nfinal_norm: false\nhead: masked-lm\npooler: true\n")
    d = doc(cli, tmp_path, yaml, *SB, "--tp", tp, "--pp", pp)
    assert d["params"]["device"] == device


def test_every_part_is_in_bytes(tmp_path):
    # The counting functions' parts (state, the device's activations, one layer's; with and
    # without full recomputation) are all byte counts.
    path = tmp_path / "m.yaml"
    path.write_text(DENSE.format(L=1) + TAIL)
    spec = load_model(str(path)).spec
    for setup in (Setup(4, 2, dropout=True), Setup(4, 2, recompute="full")):
        parts = (state_parts(spec, setup) + activation_parts(spec, setup)
                 + layer_activations(spec.layers[0], 8, setup))
        assert {p.family for p in parts} == {"bytes"}


# ------------------------------------------------------------------------------ bad layouts


@pytest.mark.parametrize("yaml, args, message", [
    (DENSE.format(L=1), ["--tp", 4],
     "--tp 4 must divide the 2 attention heads (each device holds whole heads)"),
    (DENSE.format(L=1), ["--pp", 2], "--pp 2 is more than the 1 layers; a stage needs a layer"),
    (DENSE.format(L=1), ["--ep", 2], "--ep applies to mixtures of experts; this model is dense"),
    (MOE.format(mlp="plain"), ["--ep", 3], "--ep 3 must divide the 4 routed experts"),
    (MOE.format(mlp="plain"), ["--ep", 2, "--dp", 3],
     "--ep 2 x --etp 1 = 2 must divide the tp x cp x dp = 3 devices of a pipeline stage "
     "(Megatron-Core draws the expert-parallel groups from them)"),
    (MOE.format(mlp="plain"), ["--ep", 4, "--tp", 2],  # 4 > tp x dp = 2
     "--ep 4 x --etp 1 = 4 must divide the tp x cp x dp = 2 devices of a pipeline stage "
     "(Megatron-Core draws the expert-parallel groups from them)"),
    (MOE.format(mlp="plain"), ["--tp", 2, "--etp", 4],
     "--etp 4 must divide --tp 2: an expert's tensor-parallel group lies inside the "
     "attention's"),
    (DENSE.format(L=1), ["--etp", 2], "--etp applies to mixtures of experts; this model is "
     "dense"),
    (DENSE.format(L=1), ["--sequence-parallel"],
     "--sequence-parallel splits along the tensor-parallel group: give --tp > 1"),
])
def test_bad_layout_is_one_exact_line(cli, tmp_path, yaml, args, message):
    path = tmp_path / "m.yaml"
    path.write_text(yaml + TAIL)
    r = cli("memory", path, *map(str, args))
    assert (r.code, r.out, r.err) == (2, "", f"flopcalc: error: {message}\n")


def test_no_final_norm_or_head_keeps_no_output_tensors(cli, tmp_path):
    # An encoder without a final norm or a head: nothing after its last layer is kept.
    yaml = ("architecture: encoder-only\nn_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 32\n"
            "final_norm: false\nhead: none\n")
    c = doc(cli, tmp_path, yaml, *SB)["activations"]["components"]
    assert not [k for k in c if k.startswith("output.")]


@pytest.mark.parametrize("norms, mlp_input", [(1, None), (2, 128)])
def test_parallel_block_input(cli, tmp_path, norms, mlp_input):
    # A parallel block with one norm feeds attention and MLP the same tensor (kept once, as
    # attn.input 2sbh = 128); with two norms the MLP's input is its own norm's output.
    yaml = DENSE.format(L=1) + f"parallel_block: true\nparallel_norms: {norms}\n"
    t = tensors(doc(cli, tmp_path, yaml, *SB))
    assert t["attn.input"] == 128
    assert t.get("mlp.input") == mlp_input
    assert t["norm_inputs"] == 128 * norms


def test_learned_positions_are_replicated_under_tensor_parallelism(cli, tmp_path):
    # BIASED with a learned 6 × 8 position table: at t = 2 the device holds 420 (as above)
    # + the whole table 48 (Megatron-LM keeps it on every rank).
    yaml = BIASED.format(L=1) + "max_seq_len: 6\n"
    path = tmp_path / "m.yaml"
    path.write_text(yaml + "positions: learned\nvocab_size: 10\n")
    r = cli("memory", path, "--format", "json", *map(str, SB), "--tp", 2)
    assert r.code == 0, r.err
    assert r.json()["params"]["device"] == 420 + 48


# ------------------------------------------------------------------ multi-token prediction

def test_mtp_modules_train_so_memory_holds_them(cli, tmp_path):
    # The dense layer above (L = 1, d 8, d_ff 32, V 10, tied head) with one MTP module, s 4,
    # b 2, t = 1, mixed AdamW (2 + 2 + 12 bytes per parameter). Parameters: the model's
    # 10·8 embedding + the layer (4·64 attention + 2·8·32 MLP + 2 norms of 2·8) + the final
    # norm 16 = 80 + 800 + 16 = 896; the module's two norms 2·16, its 2d → d projection 16·8,
    # its layer 800 and head norm 16: 976. Activations past the layer (DeepSeek-V3 §2.2):
    # the three norm inputs 3·2sbh = 3·128, the projection's 2d-wide input 2sb·2h = 256, its
    # head's input 2sbh = 128, its fp32 logits 4sbV = 320, and its layer's own tensors.
    d = doc(cli, tmp_path, DENSE.format(L=1) + "mtp_layers: 1\n", *SB)
    assert d["params"]["device"] == 896 + 976
    assert d["memory"]["weights"] == 2 * (896 + 976)
    assert d["memory"]["optimizer"] == 12 * (896 + 976)
    c = d["activations"]["components"]
    layer = {k.removeprefix("layers."): v for k, v in c.items() if k.startswith("layers.")}
    assert {k.removeprefix("mtp.layer."): v for k, v in c.items()
            if k.startswith("mtp.layer.")} == layer
    assert (c["mtp.norm_inputs"], c["mtp.eh_proj_input"], c["mtp.lm_head_input"],
            c["mtp.logits_fp32"]) == (384, 256, 128, 320)
    # Without norms (`norm: none`) neither the model nor the module has any: parameters
    # 80 + 768 and 128 + 768, and no norm inputs are saved; the projection's, the head's and
    # the logits are as before.
    bare = doc(cli, tmp_path, DENSE.format(L=1) + "mtp_layers: 1\nnorm: none\n", *SB)
    assert bare["params"]["device"] == 848 + 896
    assert {k: v for k, v in bare["activations"]["components"].items()
            if k.startswith("mtp.") and not k.startswith("mtp.layer.")} == {
        "mtp.eh_proj_input": 256, "mtp.lm_head_input": 128, "mtp.logits_fp32": 320}
    # With two stages the module sits on the last one, with the head: the first stage's
    # device holds neither its parameters nor its activations.
    two = doc(cli, tmp_path, DENSE.format(L=2) + "mtp_layers: 1\n", *SB, "--pp", 2)
    assert not any(k.startswith("mtp.") for k in two["activations"]["components"])
    plain = doc(cli, tmp_path, DENSE.format(L=2), *SB, "--pp", 2)
    assert two["params"]["device"] == plain["params"]["device"]
