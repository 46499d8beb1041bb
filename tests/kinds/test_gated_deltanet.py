"""Gated DeltaNet by hand: a mixer small enough that every count is worked in the comment beside
it, then Qwen3-Next-80B-A3B's worked figures and the importers' nested and flat forms.

d 4; 1 query/key head of 2 (H_k·d_k = 2), 2 value heads of 2 (H_v·d_v = 4); a conv of 3 taps;
chunks of 4; one layer (an RMSNorm and the mixer, no MLP), a final RMSNorm, a tied vocabulary
of 8. Conv channels 2·2 + 4 = 8; in_proj_qkvz width 2·2 + 2·4 = 12, in_proj_ba 2·2 = 4; the
state 2·2·2 = 8 values.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from flopcalc.kinds.base import Span, total
from flopcalc.kinds.gated_deltanet import GatedDeltaNet

from tests.conftest import DATA, run

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

GDN = """n_layers: 1
d_model: 4
norm: rmsnorm
positions: none
vocab_size: 8
tie_embeddings: true
layer_types: [gdn]
gated_deltanet: {n_key_heads: 1, n_value_heads: 2, key_head_dim: 2, value_head_dim: 2,
                 d_conv: 3, chunk_size: 4}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "gdn.yaml"
    path.write_text(GDN)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # in_proj_qkvz 4·12 = 48, in_proj_ba 4·4 = 16, the conv 8·3 = 24 (no bias), dt_bias and
    # A_log 2 each, the gated norm's gain 2 (d_v, shared by the heads), out_proj 4·4 = 16: 110.
    # The layer's RMSNorm 4, the final one 4, the table 32.
    assert c == {"embed.tokens": 32, "decoder.gdn_norm.weight": 4,
                 "decoder.gdn.in_proj_qkvz.weight": 48, "decoder.gdn.in_proj_ba.weight": 16,
                 "decoder.gdn.conv.weight": 24, "decoder.gdn.dt_bias": 2,
                 "decoder.gdn.A_log": 2, "decoder.gdn.norm.weight": 2,
                 "decoder.gdn.out_proj.weight": 16, "decoder.final_norm.weight": 4}
    assert sum(c.values()) == 150


def test_forward_five_tokens_pad_to_two_chunks(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    # T = 5; 2 chunks of 4 (5 padded to 8), on both value heads: 16 padded rows. in_proj_qkvz
    # 2·5·4·12 = 480, in_proj_ba 2·5·4·4 = 160; the conv over 5 + 2 columns 2·8·3·7 = 336;
    # k_β·kᵀ and q·kᵀ 2·16·4·2 = 256 each; k_cumdecay·S, q·S and kᵀ·v_new 2·16·2·2 = 128 each;
    # attn·v_new 2·16·4·2 = 256; out_proj 2·5·4·4 = 160; the LM head 2·5·4·8 = 320.
    assert f["components"] == {
        "decoder.gdn.in_proj_qkvz": 480, "decoder.gdn.in_proj_ba": 160,
        "decoder.gdn.conv": 336, "decoder.gdn.scan.kkt": 256, "decoder.gdn.scan.qkt": 256,
        "decoder.gdn.scan.state_k": 128, "decoder.gdn.scan.state_q": 128,
        "decoder.gdn.scan.intra_v": 256, "decoder.gdn.scan.state_update": 128,
        "decoder.gdn.out_proj": 160, "lm_head": 320}
    assert f["families"] == {"weights": 480 + 160 + 336 + 160 + 320,
                             "scan": 256 + 256 + 128 + 128 + 256 + 128}
    assert (f["attention"], f["forward"]) == (0, 2608)


def test_one_token_costs_a_whole_chunk(cli, model):
    c = run(cli, "model", model, "--seq", 1)["flops"]["components"]
    # L = 1 is padded to one chunk of 4: k_β·kᵀ 2·(2·4)·4·2 = 128, as at L = 4.
    assert c["decoder.gdn.scan.kkt"] == 128
    assert run(cli, "model", model, "--seq", 4)["flops"]["components"]["decoder.gdn.scan.kkt"] \
        == 128


def test_the_triangular_solve_as_a_named_alternative(cli, model, tmp_path):
    # Not counted by default (FlopCounterMode sees no FLOPs in solve_triangular); by forward
    # substitution 1·2 heads·2 chunks·4·3·(2 + 2) = 192; as the inverse times two matrices,
    # 2·16 rows·4·(2 + 2) = 512.
    assert "decoder.gdn.scan.solve" not in run(cli, "model", model, "--seq", 5)["flops"][
        "components"]
    for solve, flops in (("substitution", 192), ("matmul", 512)):
        path = tmp_path / f"{solve}.yaml"
        path.write_text(GDN.replace("chunk_size: 4}", f"chunk_size: 4, solve: {solve}}}"))
        f = run(cli, "model", path, "--seq", 5)["flops"]
        assert f["components"]["decoder.gdn.scan.solve"] == flops
        assert f["forward"] == 2608 + flops
    doc = run(cli, "model", model, "--seq", 5)
    assert any(line.startswith("gated DeltaNet: as the Hugging Face PyTorch path") and
               "substitution" in line for line in doc["conventions"])


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # SiLU after the conv 4·8·5 = 160. Gates: β = sigmoid(b) 4·5·2 = 40, −exp(A_log) 2·2 = 4,
    # a + dt_bias, softplus (3), ·A per token and head 5·5·2 = 50: 94. The l2-norms of q and k
    # on the 2 value heads 2·(3·5·2·2 + 2·5·2) = 160 and q·dk^−½ 5·2·2 = 20: 180. Decays on the
    # 16 padded rows: v·β, k·β 16·4 = 64, the cumsum 16, the pairwise decays and their two
    # products 4·(2·2 chunks)·4² = 256, k_β·e^g and q·e^g 2·16·3 = 96, k·e^(g_last − g) 16·4 =
    # 64, e^(g_last) 4 chunks: 500. The scan 2·16·2 + 2·4·2·2 = 96. The gated norm 9·5·4 +
    # 2·5·2 = 200.
    assert (c["decoder.gdn.elementwise.conv"], c["decoder.gdn.elementwise.gates"],
            c["decoder.gdn.elementwise.qk_norm"], c["decoder.gdn.elementwise.decay"],
            c["decoder.gdn.elementwise.scan"], c["decoder.gdn.elementwise.gated_norm"]) == (
        160, 94, 180, 500, 96, 200)
    # The layer's RMSNorm 4·5·4 = 80, its residual add 5·4 = 20, the final norm 80.
    assert (c["decoder.gdn.elementwise.norm"], c["decoder.gdn.elementwise.residual"],
            c["decoder.final_norm.elementwise"]) == (80, 20, 80)


def test_decode_and_state(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    d, kv = doc["decode"], doc["kv_cache"]
    # A step: in_proj_qkvz 2·4·12 = 96, in_proj_ba 2·4·4 = 32, the conv 2·8·3 = 48; on the 8
    # state values the decay 8, the read-out Sᵀk 16, δ = β·(v − Sᵀk) 2·4 = 8, the update 16,
    # the output Sᵀq 16; out_proj 32; the LM head 2·4·8 = 64: 336, whatever the position.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (336, 336, 3 * 336)
    assert (d["components"]["decoder.gdn.scan.update"],
            d["components"]["decoder.gdn.scan.delta"]) == (3 * 16, 3 * 8)
    # Kept per sequence: the conv window 8 x 3 = 24 values in bf16 (48 bytes), the state 8
    # values in fp32 (32 bytes); no per-token cache.
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"], kv["bytes"]) == (0, 80, 80)
    assert kv["layers"] == {"decoder.gated_deltanet.conv_state": 48,
                            "decoder.gated_deltanet.recurrent_state": 32}
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--state-dtype", "bf16")
    assert doc["kv_cache"]["state_bytes_per_sequence"] == 64


def test_memory_keeps_what_the_kernel_keeps(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # s = 5, b = 1, 16-bit unless fp32: the norm's and the mixer's inputs 2·5·4 = 40 each; the
    # projections' output 2·5·(12 + 4) = 160; q and k on the 2 value heads 2·5·2·2·2 = 80, their
    # fp32 1/‖·‖ 4·5·2·2 = 80; v 2·5·4 = 40; the fp32 gate 4·5·2 = 40; β 2·5·2 = 20; the UT
    # inverse, 4 per row 2·5·2·4 = 80; the core's output 40; the norm's fp32 1/rms 4·5·2 = 40;
    # out_proj's input 40.
    assert t == {"norm_inputs": 40, "gdn.input": 40, "gdn.in_proj_output": 160, "gdn.qk": 80,
                 "gdn.qk_rstd": 80, "gdn.v": 40, "gdn.g": 40, "gdn.beta": 20,
                 "gdn.ut_inverse": 80, "gdn.core_output": 40, "gdn.norm_rstd": 40,
                 "gdn.out_proj_input": 40}


def test_tensor_parallelism_splits_the_key_heads(cli, model):
    r = cli("memory", model, "--tp", "2")
    assert r.code == 2 and "--tp 2 must divide the 1" in r.err


def test_bad_heads_name_the_fix(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(GDN.replace("n_value_heads: 2", "n_value_heads: 3").replace(
        "n_key_heads: 1", "n_key_heads: 2"))
    r = cli("model", str(path))
    assert r.code == 2 and "n_key_heads=2 must divide gated_deltanet.n_value_heads=3" in r.err
    assert "Traceback" not in r.err


def test_published_formulas():
    g = GatedDeltaNet(key_heads=1, value_heads=2, key_dim=2, value_dim=3, conv=3)
    # Projections per token 2·4·(2·2 + 2·6 + 4) + 2·6·4 = 160 + 48 = 208; conv 2·3·(4 + 6) = 60;
    # Megatron-LM's core 8·H_v·d_v² = 8·2·9 = 144, MaxText's 8·H_v·d_k·d_v = 8·2·2·3 = 96.
    assert g.formula("megatron_lm", 4, 100, local=True) == Fraction(208 + 60 + 144)
    assert g.formula("maxtext", 4, 100, local=True) == Fraction(208 + 60 + 96)
    assert g.formula("chinchilla", 4, 100, local=True) is None


# ------------------------------------------------------------- Qwen3-Next-80B-A3B's figures

def test_qwen3_next_worked_figures(cli):
    doc = run(cli, "model", "qwen3-next-80b-a3b", "--seq", 4096)
    c = doc["params"]["components"]
    # The worked check: one gated DeltaNet mixer 33,718,464 parameters, one gated
    # attention mixer 27,263,488 (mixers only, without the layer's two RMSNorms): 36 and 12 of
    # them.
    assert sum(v for k, v in c.items() if k.startswith("decoder.gdn.")) == 36 * 33_718_464
    assert sum(v for k, v in c.items() if k.startswith("decoder.attn.")) == 12 * 27_263_488
    assert doc["params"]["total"] == 79_674_391_296  # the meta-device model's
    f = doc["flops"]["components"]
    gdn = sum(v for k, v in f.items() if k.startswith("decoder.gdn."))
    attn = sum(v for k, v in f.items() if k.startswith("decoder.attn."))
    # FlopCounterMode per layer and token at L = 4096 (the research's real-size check):
    # 72,155,184 per gated DeltaNet layer, 121,634,816 per gated attention layer.
    assert (gdn, attn) == (36 * 4096 * 72_155_184, 12 * 4096 * 121_634_816)
    assert doc["flops"]["forward"] == 4096 * 8_102_282_944
    kv = run(cli, "infer", "qwen3-next-80b-a3b", "--prompt", 4096, "--gen", 1)["kv_cache"]
    # 524,288 recurrent-state values per sequence and layer, fp32: 36 · 2,097,152 bytes.
    assert kv["layers"]["decoder.gated_deltanet.recurrent_state"] == 36 * 524_288 * 4
    assert kv["layers"]["decoder.gated_deltanet.conv_state"] == 36 * 8192 * 4 * 2


def test_qwen3_next_published_formula_terms():
    g = GatedDeltaNet(key_heads=16, value_heads=32, key_dim=128, value_dim=128, conv=4)
    # compare_published.py: with d_k = d_v both are 71,630,848 per token and layer.
    assert g.formula("megatron_lm", 2048, 4096, local=True) == g.formula("maxtext", 2048, 4096, local=True) == 71_630_848
    # With d_k ≠ d_v they differ only in the core: 8·32·192² against 8·32·64·192.
    g = GatedDeltaNet(key_heads=16, value_heads=32, key_dim=64, value_dim=192, conv=4)
    assert g.formula("megatron_lm", 2048, 1, local=True) - g.formula("maxtext", 2048, 1, local=True) == \
        8 * 32 * 192 * 192 - 8 * 32 * 64 * 192


def test_the_chunk_core_at_a_multiple_of_64():
    # HF's core per token at L a multiple of 64 is 6·H_v·d_k·d_v + 2·H_v·64·(2·d_k + d_v)
    # (compare_published.py): 4,718,592 for the 80B layer.
    g = GatedDeltaNet(key_heads=16, value_heads=32, key_dim=128, value_dim=128, conv=4)
    scan = total(g.forward(2048, Span(1, 4096, 4096)), "scan")
    assert scan == 4096 * (6 * 32 * 128 * 128 + 2 * 32 * 64 * (2 * 128 + 128)) == \
        4096 * 4_718_592


# -------------------------------------------------------------------------------- importers

def _text_keys():
    return {"vocab_size": 97, "hidden_size": 64, "intermediate_size": 96,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
            "linear_key_head_dim": 8, "linear_value_head_dim": 12}


def _total(cli, tmp_path, name, data):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return run(cli, "model", path, "--seq", 70)


def test_qwen3_5_nested_and_flat_forms_agree(cli, tmp_path):
    keys = _text_keys()
    nested = _total(cli, tmp_path, "nested", {
        "model_type": "qwen3_5", "tie_word_embeddings": True,
        "text_config": {"model_type": "qwen3_5_text", **keys},
        "vision_config": {"depth": 2}})
    flat = _total(cli, tmp_path, "flat", {"model_type": "qwen3_5_text", **keys,
                                          "tie_word_embeddings": True})
    top = _total(cli, tmp_path, "top", {"model_type": "qwen3_5", **keys,
                                        "tie_word_embeddings": True})
    # The text model, its head tied by the wrapper's flag as Qwen3_5ForConditionalGeneration
    # ties it (the text config says nothing: untied on its own), and the wrapper's vision tower
    # (Qwen3_5VisionConfig's defaults: 1,152 wide, MLP 4,304, patch 16 x 16 x 2 frames, 2,304
    # positions, merger to 3,584): per block 2·2·1,152 + 1,152·3,456 + 3,456 + 1,152² + 1,152
    # + 1,152·4,304 + 4,304 + 4,304·1,152 + 1,152 = 15,239,504; conv 1,536·1,152 + 1,152 =
    # 1,770,624; positions 2,304·1,152 = 2,654,208; merger 2·1,152 + 4,608² + 4,608 +
    # 4,608·3,584 + 3,584 = 37,759,232. The nested file's 2 blocks: 72,663,072; the flat file
    # without vision_config gets the default 27 blocks: 453,650,672.
    rest = 1_770_624 + 2_654_208 + 37_759_232
    assert nested["params"]["total"] == flat["params"]["total"] + 2 * 15_239_504 + rest
    assert top["params"]["total"] == flat["params"]["total"] + 27 * 15_239_504 + rest
    assert "all in params.total" in nested["model"]["notes"]
    assert nested["flops"]["forward"] == flat["flops"]["forward"]  # no images: no tower run
    assert "lm_head.weight" not in nested["params"]["components"]
    # the text config's own flag does not tie the wrapper's head: V x d more (97 x 64)
    untied = _total(cli, tmp_path, "untied", {
        "model_type": "qwen3_5", "text_config": {"model_type": "qwen3_5_text", **keys,
                                                 "tie_word_embeddings": True},
        "vision_config": {"depth": 2}})
    assert untied["params"]["total"] - nested["params"]["total"] == 97 * 64


def test_qwen3_next_dense_and_moe_layers(cli, tmp_path):
    keys = {**_text_keys(), "model_type": "qwen3_next", "num_experts": 4,
            "num_experts_per_tok": 2, "moe_intermediate_size": 24,
            "shared_expert_intermediate_size": 40, "decoder_sparse_step": 2,
            "mlp_only_layers": [3]}
    doc = _total(cli, tmp_path, "next", keys)
    c = doc["params"]["components"]
    # Layers 0 and 2 are dense ((i + 1) % 2), 3 is listed in mlp_only_layers: one MoE layer
    # (1), three dense MLPs of 96. (An index that names no layer is an error now.)
    assert c["decoder.mlp.router.weight"] == 64 * 4
    assert c["decoder.mlp.up.weight"] == 3 * 64 * 96


def test_layer_types_are_checked(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"model_type": "qwen3_next", **_text_keys(),
                                "layer_types": ["linear_attention", "sliding_attention",
                                                "full_attention", "full_attention"]}))
    r = cli("model", str(path))
    assert r.code == 2 and "'sliding_attention'" in r.err and "Traceback" not in r.err


def test_the_published_config_imports_as_the_preset(cli):
    path = DATA / "hf" / "gated_deltanet" / "qwen3-next-80b-a3b-instruct.json"
    imported = run(cli, "model", path, "--seq", 4096)
    preset = run(cli, "model", "qwen3-next-80b-a3b", "--seq", 4096)
    assert imported["params"]["total"] == preset["params"]["total"] == 79_674_391_296
    assert imported["params"]["active"] == preset["params"]["active"]
    assert imported["flops"]["forward"] == preset["flops"]["forward"]
