"""Mamba-1 models: Mamba, Falcon-Mamba and Jamba (attention, Mamba-1 and mixtures of experts).

The shrink keys hold widths only, so that each variant's layer pattern, experts, biases, tying
and (for Mamba) mixer width reach the real forward too."""

from . import Case

MAMBA = dict(hidden_size=16, state_size=4, conv_kernel=3, time_step_rank=3, num_hidden_layers=2,
             vocab_size=64)

CASES = [
    Case("mamba", shrink=MAMBA,
         variants=(dict(num_hidden_layers=3, tie_word_embeddings=False, use_bias=True,
                        use_conv_bias=False),
                   dict(hidden_size=1024, expand=3, state_size=32, conv_kernel=2,
                        time_step_rank="auto"),
                   dict(hidden_size=512, intermediate_size=40, time_step_rank=7)),
         lengths=(1, 2, 3, 4, 9), cache=True),
    Case("falcon_mamba", shrink=MAMBA,
         variants=(dict(num_hidden_layers=3, tie_word_embeddings=False, use_bias=True),
                   # the published Falcon-Mamba-7B keeps intermediate_size 8192 beside expand 16
                   dict(hidden_size=4096, expand=16, intermediate_size=8192, state_size=16,
                        time_step_rank=256, num_hidden_layers=4, use_conv_bias=False)),
         lengths=(1, 2, 5, 9), cache=True),
    # Jamba's default: 32 layers, attention at i % 8 == 4, MoE (16 experts, top-2) at odd i.
    Case("jamba",
         shrink=dict(hidden_size=16, intermediate_size=24, num_attention_heads=4,
                     num_key_value_heads=2, mamba_d_state=4, mamba_d_conv=3, mamba_dt_rank=3,
                     vocab_size=64),
         variants=(dict(num_hidden_layers=9, attn_layer_period=3, attn_layer_offset=0,
                        expert_layer_period=3, expert_layer_offset=2, num_experts=8,
                        num_experts_per_tok=3, tie_word_embeddings=True, mamba_proj_bias=True,
                        mamba_conv_bias=False),
                   # offset 0 of 2: MoE on even layers, written as dense_layers
                   dict(num_hidden_layers=5, attn_layer_period=4, attn_layer_offset=2,
                        expert_layer_period=2, expert_layer_offset=0, num_experts=4,
                        mamba_expand=1),
                   dict(num_hidden_layers=5, num_experts=1, num_attention_heads=8,
                        num_key_value_heads=8, mamba_dt_rank="auto", attn_layer_period=2,
                        attn_layer_offset=1),
                   # MoE everywhere, one attention layer (the last), one KV head
                   dict(num_hidden_layers=6, expert_layer_period=1, expert_layer_offset=0,
                        attn_layer_period=6, attn_layer_offset=5, num_key_value_heads=1),
                   # no layer reaches the MoE offset: every layer dense
                   dict(num_hidden_layers=3, expert_layer_period=4, expert_layer_offset=3)),
         lengths=(1, 2, 3, 7), cache=True),
]
