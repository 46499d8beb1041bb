"""Linear-attention and short-convolution hybrids: Kimi Linear (KDA + MLA, MoE), MiniMax-01
(lightning + softmax attention, MoE), LFM2 (gated short conv + attention)."""

from . import Case

KIMI_CKPT = {"head_dim": 12, "num_heads": 2, "short_conv_kernel_size": 3,
             "full_attn_layers": [3, 6], "kda_layers": [1, 2, 4, 5]}  # 1-indexed

CASES = [
    # KDA pads to chunks of 64 (fixed in transformers): 70 is two chunks, 1 and 5 one each.
    Case("kimi_linear",
         shrink=dict(vocab_size=97, hidden_size=64, intermediate_size=96,
                     moe_intermediate_size=24, num_attention_heads=4, num_key_value_heads=4,
                     kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=12,
                     linear_head_dim=8, linear_num_heads=4, num_local_experts=8,
                     pad_token_id=0, bos_token_id=1, eos_token_id=2),
         variants=(
             # the checkpoint's form: linear_attn_config with 1-indexed layer lists; a query
             # rank, biases, two dense layers
             dict(num_hidden_layers=6, q_lora_rank=20, attention_bias=True,
                  first_k_dense_replace=2, linear_attn_config=KIMI_CKPT),
             # explicit patterns (a dense layer between MoE layers), 2 shared experts, top-3,
             # a 5-tap conv, tie_word_embeddings (Kimi ties nothing)
             dict(num_hidden_layers=4, layer_types=["full_attention", "linear_attention",
                                                    "linear_attention", "full_attention"],
                  mlp_layer_types=["sparse", "dense", "sparse", "sparse"], n_shared_experts=2,
                  num_experts_per_tok=3, linear_conv_kernel_dim=5, tie_word_embeddings=True),
             # KDA only, no MoE
             dict(num_hidden_layers=3, layer_types=["linear_attention"] * 3,
                  first_k_dense_replace=3),
         ),
         lengths=(1, 5, 70), cache=True),
    # Lightning attention runs blocks of block_size without padding: 37 is 16 + 16 + 5.
    Case("minimax",
         shrink=dict(vocab_size=97, hidden_size=64, intermediate_size=48, num_attention_heads=8,
                     block_size=16, num_local_experts=4),
         variants=(
             dict(head_dim=24, num_key_value_heads=1, num_experts_per_tok=1,
                  tie_word_embeddings=True),
             dict(num_hidden_layers=5, layer_types=["full_attention", "linear_attention",
                                                    "linear_attention", "full_attention",
                                                    "linear_attention"]),
             # MiniMax-Text-01's pattern: a softmax layer after every 7 lightning layers
             dict(num_hidden_layers=8, layer_types=["linear_attention"] * 7 + ["full_attention"],
                  num_key_value_heads=4),
             dict(num_hidden_layers=4, sliding_window=6),
         ),
         lengths=(1, 5, 16, 37), cache=True),
    # transformers' default LFM2 is all attention (full_attn_idxs null: every layer); the shrunk
    # copy puts attention on layers 1 and 3 only, the rest gated short convs (an all-conv LFM2
    # runs only without a cache, as here).
    Case("lfm2",
         shrink=dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                     num_key_value_heads=2, block_multiple_of=16, full_attn_idxs=[1, 3]),
         variants=(
             dict(num_hidden_layers=4, layer_types=["full_attention", "conv", "conv",
                                                    "full_attention"],
                  conv_bias=True, conv_L_cache=4, tie_word_embeddings=False,
                  block_auto_adjust_ff_dim=False),
             dict(num_hidden_layers=3, layer_types=["conv"] * 3, block_ffn_dim_multiplier=1.5),
             dict(num_hidden_layers=5, block_multiple_of=100, num_key_value_heads=1),
         ),
         lengths=(1, 2, 5, 13), cache=True),
    # LFM2-MoE: its default config has no layer_types, which its layers index (it does not
    # build): 8 layers, attention on 2 and 5. Variants: experts on every layer, untied, a conv
    # bias and a longer conv; no experts at all (every layer dense).
    Case("lfm2_moe",
         fix=dict(num_hidden_layers=8, layer_types=["conv", "conv", "full_attention", "conv",
                                                    "conv", "full_attention", "conv", "conv"]),
         shrink=dict(vocab_size=97, hidden_size=64, intermediate_size=96,
                     moe_intermediate_size=24, num_attention_heads=4, num_key_value_heads=2,
                     num_experts=4, num_experts_per_tok=2),
         variants=(dict(num_dense_layers=0, tie_word_embeddings=False, conv_bias=True,
                        conv_L_cache=4),
                   dict(num_dense_layers=8, num_key_value_heads=1)),
         lengths=(1, 5, 13)),
]
