"""Decoders imported by flopcalc/models/hf/decoders2.py: each a known family's layers under
another name or with a twist the existing kinds say."""

from . import Case

SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64)
NO_HEAD_DIM = {k: v for k, v in SIZES.items() if k != "head_dim"}
TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
LENGTHS = (1, 6, 13)

CASES = [
    # Command A-like: windows on 3 of 4 layers, 2 dense prefix layers of their own width, a
    # shared expert averaged in; RMSNorm instead of LayerNorm
    Case("cohere2_moe", shrink={**SIZES, "num_hidden_layers": 6, "sliding_window": 4,
                                "num_experts": 4, "num_experts_per_tok": 2,
                                "mlp_layer_types": None, "layer_types": None},
         lengths=LENGTHS,
         variants=(dict(first_k_dense_replace=2, prefix_dense_intermediate_size=4000,
                        num_shared_experts=2, attention_bias=True),
                   dict(rms_norm_eps=1e-6, num_key_value_heads=8, tie_word_embeddings=False),
                   dict(mlp_layer_types=["dense", "sparse"] * 20, num_shared_experts=1))),
]

_MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24)
CASES += [
    # Trinity-like: 3 window layers per full one, one dense layer, 2 shared experts
    # seeded: no attention_bias: flopcalc refuses it (the bias is on q, k, v, o but not the gate,
    # which its gated attention would bias too)
    Case("afmoe", shrink={**SIZES, **_MOE, "num_hidden_layers": 5, "sliding_window": 4,
                          "layer_types": None}, lengths=LENGTHS,
         variants=(dict(num_dense_layers=0, num_shared_experts=0, tie_word_embeddings=True),
                   dict(num_dense_layers=3, num_shared_experts=1, num_key_value_heads=4,
                        global_attn_every_n_layers=2, mup_enabled=True)),
         seeded_skip=("attention_bias",)),
]
CASES += [
    Case("nanochat", shrink=NO_HEAD_DIM,
         variants=(dict(attention_bias=True, num_key_value_heads=2, tie_word_embeddings=True),
                   dict(hidden_act="gelu", intermediate_size=1000))),
]
CASES += [
    Case("granitemoe_swa", shrink={**NO_HEAD_DIM, "num_hidden_layers": 5, "sliding_window": 4,
                                   "num_local_experts": 4, "num_experts_per_tok": 2,
                                   "layer_types": None, "layer_rope_theta": None},
         lengths=LENGTHS,
         variants=(dict(shared_intermediate_size=1024, attention_bias=True),
                   dict(layer_types=["sliding_attention", "full_attention"] * 16,
                        num_key_value_heads=4, tie_word_embeddings=False))),
]
CASES += [
    Case("mellum", shrink={**SIZES, **_MOE, "num_hidden_layers": 4, "sliding_window": 4,
                           "layer_types": ["sliding_attention", "full_attention"] * 2,
                           "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"]},
         lengths=LENGTHS,
         variants=(dict(attention_bias=True, tie_word_embeddings=True, num_key_value_heads=8),
                   dict(layer_types=["sliding_attention"] * 3 + ["full_attention"] * 25,
                        mlp_layer_types=["dense"] * 2 + ["sparse"] * 26, num_mtp_layers=1))),
]
CASES += [
    Case("kolibri1", shrink={**SIZES, **_MOE, "num_hidden_layers": 5, "sliding_window": 4,
                             "shared_expert_intermediate_size": 40, "layer_types": None},
         lengths=LENGTHS,
         variants=(dict(shared_expert_intermediate_size=2048, tie_word_embeddings=True,
                        num_key_value_heads=8),
                   dict(layer_types=["sliding_attention", "full_attention"] * 25,
                        head_dim=64))),
]
CASES += [
    Case("flint", shrink={**SIZES, **_MOE, "num_hidden_layers": 5, "sliding_window": 4,
                          "shared_expert_intermediate_size": 40, "layer_types": None,
                          "mlp_only_layers": [0, 1]},
         lengths=LENGTHS,
         variants=(dict(shared_expert_intermediate_size=0, attention_bias=True,
                        mlp_only_layers=[2], tie_word_embeddings=True),
                   dict(decoder_sparse_step=2, num_key_value_heads=8))),
]
CASES += [
    Case("apertus1p5_text", shrink=SIZES,
         variants=(dict(attention_bias=True, num_key_value_heads=8), TIED)),
]
CASES += [
    # conv, window, full layers; gated per head, sandwich norms (the defaults)
    Case("lfm3", shrink={**SIZES, "num_hidden_layers": 6, "sliding_window": 4,
                         "layer_types": None, "conv_L_cache": 3, "pad_token_id": 0,
                         "bos_token_id": 1, "eos_token_id": 2}, lengths=LENGTHS,
         variants=(dict(use_attention_gate=False, use_sandwich_norm=False, conv_bias=True,
                        attention_bias=True, tie_word_embeddings=False),
                   dict(num_key_value_heads=16, conv_L_cache=4))),
]
CASES += [
    Case("laguna", shrink={**SIZES, **_MOE, "num_hidden_layers": 4, "sliding_window": 4,
                           "shared_expert_intermediate_size": 40,
                           "layer_types": ["sliding_attention", "full_attention"] * 2,
                           "mlp_layer_types": None, "num_attention_heads_per_layer": None},
         lengths=LENGTHS,
         variants=(dict(gating="per-element", shared_expert_intermediate_size=0,
                        tie_word_embeddings=True),
                   dict(attention_bias=True, num_attention_heads=16,
                        num_attention_heads_per_layer=[32] * 40))),
]
_MLA = dict(q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8,
            v_head_dim=12, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
            n_group=1, topk_group=1)
CASES += [
    # latent attention decompresses K and V for every head: as many KV heads as heads
    Case("axk1", shrink={**NO_HEAD_DIM, **_MLA, "num_hidden_layers": 3, "num_key_value_heads": 4,
                         "mlp_layer_types": None},
         lengths=LENGTHS,
         variants=(dict(mlp_layer_types=["dense", "sparse"] * 30 + ["sparse"],
                        n_shared_experts=2, attention_bias=True),
                   dict(first_k_dense_replace=3, tie_word_embeddings=True))),
]
_GDN = dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
            linear_value_head_dim=8, linear_conv_kernel_dim=4)
CASES += [
    # the released period of 5: DeltaNet, window, DeltaNet, full, window
    Case("lara_mini", shrink={**SIZES, **_GDN, "num_experts": 4, "num_experts_per_tok": 2,
                              "moe_intermediate_size": 24, "shared_expert_intermediate_size": 40,
                              "num_hidden_layers": 5, "sliding_window": 4, "layer_types": None},
         lengths=LENGTHS,
         variants=(dict(shared_expert_intermediate_size=0, attention_bias=True,
                        tie_word_embeddings=False),
                   dict(layer_types=["linear_attention", "full_attention"] * 17,
                        num_key_value_heads=8))),
]
CASES += [
    Case("bitnet", shrink=NO_HEAD_DIM,
         variants=(dict(attention_bias=True, tie_word_embeddings=True),
                   dict(num_key_value_heads=20, hidden_act="silu", intermediate_size=1000))),
]
