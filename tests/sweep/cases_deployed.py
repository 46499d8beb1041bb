"""Families people deploy that transformers 5.24 has and flopcalc once refused or did not read:
Hy3 (hy_v3), GLM-5 (glm_moe_dsa, with its shared-selection layers), MiMo-V2-Flash, OLMo
Hybrid, Solar Open, Youtu-LLM, Sarvam MoE and GraniteSWA through the kinds flopcalc had; RWKV-4
and RecurrentGemma through the kinds added for them (flopcalc/kinds/rwkv.py, rglru.py).

Tiny sizes keep every feature: GQA, dense and sparse layers in one model, shared experts (a
0-wide one that transformers widens), windows shorter than the longer length, biases, tying."""

from . import Case

TIED = dict(tie_word_embeddings=True)

CASES = [
    # 4 experts of 16, top-2; d 32 with 4 query heads of 8 and 2 KV heads; 3 layers (the first
    # dense by default)
    Case("hy_v3",
         shrink=dict(hidden_size=32, intermediate_size=48, moe_intermediate_size=16,
                     num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=8, num_experts=4, num_experts_per_tok=2, vocab_size=64,
                     max_position_embeddings=64),
         lengths=(1, 6),
         variants=(dict(num_hidden_layers=3, mlp_layer_types=["sparse", "dense", "sparse"],
                        num_shared_experts=2, attention_bias=True, mlp_bias=True, **TIED),
                   dict(num_shared_experts=0, num_key_value_heads=64))),
]

# latent attention as DeepSeek-V3.2's sweep case (q rank 16, kv rank 12, heads of 8 + 4 / 6), an
# indexer of 3 heads of 8 and top-3 (lengths below and above it); 4 layers, the first 3 dense
CASES.append(
    Case("glm_moe_dsa",
         shrink=dict(hidden_size=32, intermediate_size=24, moe_intermediate_size=8,
                     num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
                     q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4,
                     v_head_dim=6, index_n_heads=3, index_head_dim=8, index_topk=3,
                     n_routed_experts=4, num_experts_per_tok=2, vocab_size=64,
                     max_position_embeddings=64),
         variants=(dict(num_hidden_layers=4, indexer_types=["full", "shared", "shared", "full"],
                        first_k_dense_replace=1, attention_bias=True, **TIED),
                   dict(num_hidden_layers=4, index_topk_pattern="FSFS",
                        mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                        n_shared_experts=2),
                   dict(num_hidden_layers=5, index_topk_freq=2, index_skip_topk_offset=1,
                        first_k_dense_replace=2, num_nextn_predict_layers=1)),
         lengths=(1, 3, 4, 13), cache=True,
         note="the eager path scores every key (the top-k only masks): --attention full"))

# q/k heads of 12, values of 8 (v_head_dim below head_dim); 2 KV heads on full layers, 4 on
# the sliding ones (with sinks); 6 layers: full, 4 sliding, full; window 4 below the longer
# length (the cache is checked in tests/pytorch/test_deployed_families.py, with a window longer
# than the generated text: transformers keeps window − 1 tokens, flopcalc the window); 4 experts of 16, top-2, the first layer dense
CASES.append(
    Case("mimo_v2_flash",
         shrink=dict(hidden_size=32, intermediate_size=48, moe_intermediate_size=16,
                     num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=12, v_head_dim=8, n_routed_experts=4, num_experts_per_tok=2,
                     sliding_window=4, vocab_size=64, max_position_embeddings=64),
         lengths=(1, 6),
         variants=(dict(num_hidden_layers=6,
                        layer_types=["sliding_attention", "full_attention"] * 3,
                        mlp_layer_types=["sparse", "dense", "sparse", "sparse", "dense",
                                         "sparse"],
                        attention_bias=True, **TIED),
                   dict(num_hidden_layers=3, num_key_value_heads=8, v_head_dim=64))))

# OLMo 3's attention (4 heads of 8, 2 KV heads) between gated DeltaNet layers (2 key heads of
# 8, 4 value heads of 12); 4 layers, the 4th attention by default; lengths across the
# DeltaNet's 64-token chunk
CASES.append(
    Case("olmo_hybrid",
         shrink=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, linear_num_key_heads=2,
                     linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=12,
                     vocab_size=64, max_position_embeddings=128, pad_token_id=1,
                     eos_token_id=2),
         lengths=(1, 5, 64, 70), cache=True,
         variants=(dict(num_hidden_layers=4,
                        layer_types=["full_attention", "linear_attention", "full_attention",
                                     "linear_attention"],
                        attention_bias=True, linear_conv_kernel_dim=3, **TIED),
                   dict(num_hidden_layers=3, linear_num_key_heads=6,
                        linear_allow_neg_eigval=False))))

# RWKV-4: time mixing 24 wide, channel mixing 40, d 32, 3 layers
CASES.append(
    Case("rwkv",
         shrink=dict(hidden_size=32, num_hidden_layers=3, attention_hidden_size=24,
                     intermediate_size=40, vocab_size=64, context_length=64),
         lengths=(1, 6),
         variants=(dict(attention_hidden_size=None, intermediate_size=None, **TIED),
                   dict(num_hidden_layers=2, attention_hidden_size=64))))

# RecurrentGemma (Griffin): d 32, 4 heads (gate blocks of 6 at an LRU width of 24), 3 layers
# (recurrent, recurrent, attention), a window of 4 below the longer length, 2 KV heads
CASES.append(
    Case("recurrent_gemma",
         shrink=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                     num_attention_heads=4, num_key_value_heads=2, lru_width=24,
                     attention_window_size=4, vocab_size=64),
         lengths=(1, 6),
         variants=(dict(num_hidden_layers=4, block_types=["attention", "recurrent"],
                        attention_bias=True, conv1d_width=3, tie_word_embeddings=False),
                   dict(num_hidden_layers=5, lru_width=None, num_key_value_heads=1))))

# Solar Open: d 32, 4 query heads of 8, 2 KV heads; every layer 4 experts of 16, top-2, one
# shared expert
CASES.append(
    Case("solar_open",
         shrink=dict(hidden_size=32, moe_intermediate_size=16, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                     n_routed_experts=4, num_experts_per_tok=2, vocab_size=64,
                     max_position_embeddings=64),
         lengths=(1, 6),
         variants=(dict(n_shared_experts=2, attention_bias=True, **TIED),
                   dict(n_shared_experts=0, num_key_value_heads=64))))

# Youtu-LLM: latent attention as DeepSeek-V3.2's case (q rank 16, kv rank 12, heads of 8 + 4 /
# 6) over a dense MLP
CASES.append(
    Case("youtu",
         shrink=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4, q_lora_rank=16,
                     kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
                     vocab_size=64, max_position_embeddings=64),
         lengths=(1, 6),
         variants=(dict(q_lora_rank=None, attention_bias=True,
                        tie_word_embeddings=False),)))

# Sarvam MoE (GLM-4.5's classes): d 32, 4 query heads of 8, 2 KV heads, QK-norm; 3 layers,
# the first dense, then 4 experts of 16, top-2, one shared
CASES.append(
    Case("sarvam_moe",
         shrink=dict(hidden_size=32, intermediate_size=48, moe_intermediate_size=16,
                     num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=8, n_routed_experts=4, num_experts_per_tok=2, vocab_size=64,
                     max_position_embeddings=64),
         lengths=(1, 6),
         variants=(dict(first_k_dense_replace=2, n_shared_experts=2, use_qk_norm=False,
                        attention_bias=True, **TIED),)))

# GraniteSWA: d 32, 4 query heads of 8, 2 KV heads, sinks on every layer; 4 layers (full,
# then 3 sliding by default), a window of 4 below the longer length
CASES.append(
    Case("granite_swa",
         shrink=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, sliding_window=4,
                     vocab_size=64, max_position_embeddings=64, bos_token_id=1,
                     eos_token_id=2),
         lengths=(1, 6),
         variants=(dict(num_hidden_layers=4,
                        layer_types=["sliding_attention", "full_attention"] * 2,
                        attention_bias=True, mlp_bias=True, tie_word_embeddings=False),)))
