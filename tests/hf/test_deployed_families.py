"""Hy3 (hy_v3) and GLM-5 (glm_moe_dsa) by hand, and their bad layer lists: each error names
the key and the entry (tests/pytorch/test_deployed_families.py checks the same types against
transformers)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

# Hy3 at d 32: 4 query heads of 8, 2 KV heads, 2 layers (the first dense of 48, the second 4
# experts of 16, top-2, one shared expert of 16), vocabulary 64, untied.
HY = dict(model_type="hy_v3", hidden_size=32, intermediate_size=48, moe_intermediate_size=16,
          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
          num_experts=4, num_experts_per_tok=2, num_shared_experts=1, vocab_size=64,
          max_position_embeddings=64)
# GLM-5 at d 32: query rank 16, KV rank 12, heads of 8 + 4 (rope) / 6, an indexer of 3 heads of
# 8 picking 3 keys; 2 layers, both dense
GLM = dict(model_type="glm_moe_dsa", hidden_size=32, intermediate_size=24,
           moe_intermediate_size=8, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8,
           qk_rope_head_dim=4, v_head_dim=6, index_n_heads=3, index_head_dim=8, index_topk=3,
           n_routed_experts=4, num_experts_per_tok=2, vocab_size=64,
           max_position_embeddings=64, first_k_dense_replace=2)


def _file(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_hy_v3_by_hand(cli, tmp_path):
    # embeddings and head 2·64·32 = 4,096; final norm 32
    # per layer: q 32·32 + k 32·16 + v 32·16 + o 32·32 = 3,072, q/k norms 8 + 8, two norms 64
    #   → 3,152, twice → 6,304
    # layer 0's MLP 3·32·48 = 4,608
    # layer 1: router 4·32 = 128, experts 4·3·32·16 = 6,144, shared 3·32·16 = 1,536 → 7,808
    # total 4,096 + 32 + 6,304 + 4,608 + 7,808 = 22,848
    assert run(cli, "model", _file(tmp_path, HY))["params"]["total"] == 22_848


def test_hy_v3_zero_shared_experts_widen_to_intermediate_size(cli, tmp_path):
    # HYV3MLP(intermediate_size=0) takes config.intermediate_size: the shared expert is
    # 3·32·48 = 4,608 wide instead of 1,536, so 22,848 + 3,072
    data = dict(HY, num_shared_experts=0)
    assert run(cli, "model", _file(tmp_path, data))["params"]["total"] == 25_920


def test_glm_moe_dsa_shared_layer_has_no_indexer(cli, tmp_path):
    # a shared layer drops the indexer: wq_b 16·(3·8) = 384, wk 32·8 = 256, k_norm 2·8 = 16,
    # weights_proj 32·3 = 96 → 752 parameters; forward at 4 tokens (--attention full, the
    # eager path: 16 scored pairs) 2·4·(384 + 256 + 96) = 5,888 for the projections and
    # 16·2·3·(8 + 1) = 864 for the scores → 6,752 FLOPs
    full = run(cli, "model", _file(tmp_path, dict(GLM, indexer_types=["full", "full"])),
               "--seq", "4", "--attention", "full")
    shared = run(cli, "model", _file(tmp_path, dict(GLM, indexer_types=["full", "shared"])),
                 "--seq", "4", "--attention", "full")
    assert full["params"]["total"] - shared["params"]["total"] == 752
    assert full["flops"]["forward"] - shared["flops"]["forward"] == 6_752


def test_glm_moe_dsa_pattern_and_schedule_read_as_the_config_class_derives_them(cli, tmp_path):
    # index_topk_pattern "FS" and, without it, index_topk_freq 2 with offset 1 (layer i full
    # when max(i − 1 + 1, 0) is even: layer 1 shared) give the same model as the list
    listed = run(cli, "model", _file(tmp_path, dict(GLM, indexer_types=["full", "shared"])))
    pattern = run(cli, "model", _file(tmp_path, dict(GLM, index_topk_pattern="FS")))
    schedule = run(cli, "model", _file(tmp_path, dict(GLM, index_topk_freq=2,
                                                      index_skip_topk_offset=1)))
    assert listed["params"]["total"] == pattern["params"]["total"] == \
        schedule["params"]["total"]


@pytest.mark.parametrize("data, words", [
    (dict(GLM, indexer_types=["shared", "full"]), "indexer_types[0] is 'shared'"),
    (dict(GLM, indexer_types=["full", "half"]), "indexer_types[1] = 'half'"),
    (dict(GLM, indexer_types=["full"]), "indexer_types has 1 entries, num_hidden_layers is 2"),
    (dict(GLM, index_topk_pattern="FX"), "index_topk_pattern[1] = 'X'"),
    (dict(GLM, index_topk_pattern="FSF"), "index_topk_pattern has 3 entries"),
    (dict(HY, mlp_layer_types=["dense", "moe"]), "mlp_layer_types[1] = 'moe'"),
    (dict(HY, mlp_layer_types=["dense"]), "mlp_layer_types has 1 entries, num_hidden_layers"),
])
def test_bad_layer_lists_name_the_key_and_the_entry(cli, tmp_path, data, words):
    r = cli("model", str(_file(tmp_path, data)))
    assert r.code == 2
    assert words in r.err and len(r.err.strip().splitlines()) == 1, r.err


# MiMo-V2-Flash at d 32: 4 query heads, q/k heads of 12 and values of 8, 2 KV heads (4 on the
# sliding layers), 2 dense layers, window 4
MIMO = dict(model_type="mimo_v2_flash", hidden_size=32, intermediate_size=48,
            moe_intermediate_size=16, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=12, v_head_dim=8, n_routed_experts=4,
            num_experts_per_tok=2, sliding_window=4, vocab_size=64, max_position_embeddings=64,
            mlp_layer_types=["dense", "dense"])


def test_mimo_v2_flash_sliding_layer_holds_twice_the_kv_heads_and_sinks(cli, tmp_path):
    # a sliding layer instead of a full one: 2 more KV heads, k 32·2·12 = 768 and v 32·2·8 =
    # 512, and a sink per query head, 4 → 1,284 more parameters
    full = run(cli, "model", _file(tmp_path, dict(
        MIMO, layer_types=["full_attention", "full_attention"])))
    sliding = run(cli, "model", _file(tmp_path, dict(
        MIMO, layer_types=["full_attention", "sliding_attention"])))
    assert sliding["params"]["total"] - full["params"]["total"] == 1_284


@pytest.mark.parametrize("model_type, total", [
    # transformers 5.24's own count of each config class's default, on the meta device
    # (tests/sweep/cases_deployed.py checks the same against the model it builds)
    ("hy_v3", 295_033_528_320),
    ("glm_moe_dsa", 743_911_199_232),
    ("mimo_v2_flash", 308_778_768_832),
    ("olmo_hybrid", 7_430_870_688),
    ("rwkv", 7_392_649_216),
    ("recurrent_gemma", 2_010_263_040),
    ("solar_open", 102_651_793_408),
    ("youtu", 1_961_560_064),
    ("sarvam_moe", 32_152_648_064),
    ("granite_swa", 2_144_463_840),
    # HYV4VLTextConfig(): its own defaults (78 layers of 6,144), not HYV4Config's; the
    # wrapper's untied head (tests/data/zoo/hy_v4_vl_text.json, transformers 5.24)
    ("hy_v4_vl_text", 769_907_389_085),
])
def test_a_file_naming_only_its_type_counts_the_class_defaults(cli, tmp_path, model_type, total):
    """A hand-written file that leaves every size out: transformers fills each from its config
    class, derived ones included (OLMo Hybrid's linear heads of int(0.75·3840/30) = 96 and
    values twice that; MiMo-V2-Flash's sliding layers every 6th but layer 0)."""
    assert run(cli, "model", _file(tmp_path, {"model_type": model_type}))["params"][
        "total"] == total


@pytest.mark.parametrize("model_type, feature", [
    ("evolla", "protein encoder"), ("gemma4_assistant", "speculative drafter"),
])
def test_families_flopcalc_cannot_count_are_refused_by_what_they_lack(cli, tmp_path,
                                                                      model_type, feature):
    """A type whose layers are not kinds flopcalc has stops with one line naming the feature
    and the YAML route, not the list of every supported type."""
    r = cli("model", str(_file(tmp_path, {"model_type": model_type})))
    assert r.code == 2
    assert feature in r.err and "YAML" in r.err and "qwen2_moe" not in r.err  # no list
    assert len(r.err.strip().splitlines()) == 1, r.err


# RWKV-4 at d 8: time mixing 6 wide, channel mixing 10, one layer, vocabulary 16, untied
RWKV = dict(model_type="rwkv", hidden_size=8, attention_hidden_size=6, intermediate_size=10,
            num_hidden_layers=1, vocab_size=16, context_length=64)


def test_rwkv_by_hand(cli, tmp_path):
    # embeddings and head 2·16·8 = 256; LayerNorms (gain and bias, 16 each): pre_ln, ln1, ln2,
    # ln_out → 64; time mixing: key, value, receptance 3·8·6 = 144, output 6·8 = 48, decay and
    # first 6 + 6, three mixes 24 → 228; channel mixing: key 8·10 = 80, value 10·8 = 80,
    # receptance 8·8 = 64, two mixes 16 → 240; total 256 + 64 + 228 + 240 = 788
    # forward at 4 tokens: time 2·4·(144 + 48) = 1,536, channel 2·4·(80 + 80 + 64) = 1,792,
    # head 2·4·8·16 = 1,024 → 4,352
    doc = run(cli, "model", _file(tmp_path, RWKV), "--seq", "4")
    assert doc["params"]["total"] == 788
    assert doc["flops"]["forward"] == 4_352


# RecurrentGemma at d 8: one recurrent layer, an LRU width of 4 in 2 gate blocks of 2, a conv
# of 2 taps, an MLP of 12 // 2 = 6, vocabulary 16, tied
GRIFFIN = dict(model_type="recurrent_gemma", hidden_size=8, num_attention_heads=2, lru_width=4,
               conv1d_width=2, num_hidden_layers=1, block_types=["recurrent"],
               intermediate_size=12, vocab_size=16)


def test_recurrent_gemma_by_hand(cli, tmp_path):
    # embeddings 16·8 = 128 (the head tied); RMSNorms 8 + 8 + the final 8 = 24
    # recurrent block: linear_y and linear_x 8·4 + 4 = 36 each, the conv 4·2 + 4 = 12, Λ 4,
    #   two gates 2·2·2 + 2·2 = 12 each, linear_out 4·8 + 8 = 40 → 152
    # MLP: gate and up 8·6 + 6 = 54 each, down 6·8 + 8 = 56 → 164; total 468
    # forward at 4 tokens: linear_y, linear_x, linear_out 2·4·8·4 = 256 each, the conv
    #   2·4·2·(4 + 1) = 80, the gates 2·4·2·(2·2) = 64 each → 976; the MLP 2·4·(2·8·6 + 6·8)
    #   = 1,152; the head 2·4·8·16 = 1,024 → 3,152
    doc = run(cli, "model", _file(tmp_path, GRIFFIN), "--seq", "4")
    assert doc["params"]["total"] == 468
    assert doc["flops"]["forward"] == 3_152


def test_recurrent_gemma_bad_block_type_names_the_entry(cli, tmp_path):
    r = cli("model", str(_file(tmp_path, dict(GRIFFIN, block_types=["recurrent", "mlp"]))))
    assert r.code == 2 and "block_types[1]" in r.err, r.err


def test_sarvam_moe_reads_the_published_files_names(cli, tmp_path):
    """sarvamai/sarvam-30b's config names its experts `num_experts`, `num_shared_experts` and
    its biases `use_qkv_bias` (SarvamMoEConfig's attribute_map): read as transformers reads
    them, over the class defaults. 17,878,994,816: transformers 5.24's count of the model with
    64 routed experts, 2 shared and q/k/v biases (the rest the defaults)."""
    data = {"model_type": "sarvam_moe", "num_experts": 64, "num_shared_experts": 2,
            "use_qkv_bias": True}
    assert run(cli, "model", _file(tmp_path, data))["params"]["total"] == 17_878_994_816


def test_param2moe_reads_its_alias_names_over_the_class_defaults(cli, tmp_path):
    """Param2-MoE (transformers 5.25) written with its attribute_map's names: 32 routed
    experts, one shared, q/k/v biases; 8,845,155,968 is transformers 5.25's count of that
    model (the class defaults once silently won over the aliases: 17,151,124,096)."""
    data = {"model_type": "param2moe", "num_experts": 32, "num_shared_experts": 1,
            "use_qkv_bias": True}
    assert run(cli, "model", _file(tmp_path, data))["params"]["total"] == 8_845_155_968


@pytest.mark.parametrize("model_type, alias, total", [
    # transformers 5.24's count of the class default with 16 routed experts (set by the
    # canonical name there, by its alias here)
    ("hy_v3", "num_local_experts", 32_547_364_864),
    ("mimo_v2_flash", "num_local_experts", 24_862_071_232),
    ("solar_open", "num_local_experts", 18_072_604_672),
    ("glm_moe_dsa", "num_experts", 64_323_359_232),
])
def test_an_alias_is_not_overridden_by_the_default_of_its_canonical_name(cli, tmp_path,
                                                                          model_type, alias,
                                                                          total):
    data = {"model_type": model_type, alias: 16}
    assert run(cli, "model", _file(tmp_path, data))["params"]["total"] == total


def test_mimo_v2_flash_published_config_counts_as_transformers(cli, tmp_path):
    """XiaomiMiMo/MiMo-V2-Flash's config.json in the hub's spelling (reconstructed from public
    copies of it in other projects' tests): `hybrid_layer_pattern` and `moe_layer_freq`, which
    transformers 5.24 does not read (its derived default is the same pattern: layer 0 and every
    6th global, the first dense), `swa_num_key_value_heads` 8 (its 2 × 4), and
    `sliding_window_size` 128, which transformers makes a window of 129. 308,778,768,832:
    transformers' count of the model it builds from this file (the published 309B)."""
    data = {"model_type": "mimo_v2_flash", "vocab_size": 152576, "hidden_size": 4096,
            "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4,
            "head_dim": 192, "v_head_dim": 128, "swa_num_attention_heads": 64,
            "swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128,
            "partial_rotary_factor": 0.334, "rope_theta": 5000000, "swa_rope_theta": 10000,
            "sliding_window": 128, "sliding_window_size": 128,
            "hybrid_layer_pattern": [int(not (i == 0 or (i + 1) % 6 == 0)) for i in range(48)],
            "moe_layer_freq": [int(i != 0) for i in range(48)],
            "add_swa_attention_sink_bias": True, "add_full_attention_sink_bias": False,
            "intermediate_size": 16384, "n_routed_experts": 256, "num_experts_per_tok": 8,
            "moe_intermediate_size": 2048, "routed_scaling_factor": None,
            "max_position_embeddings": 262144, "attention_value_scale": 0.707}
    doc = run(cli, "model", _file(tmp_path, data), "--seq", "256")
    assert doc["params"]["total"] == 308_778_768_832
