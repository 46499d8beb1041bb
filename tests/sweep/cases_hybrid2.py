"""Hybrids built on Mamba-2: Bamba, Nemotron-H, Falcon-H1, Granite 4.0-H, Zamba2.

The shrink keys hold sizes only (widths, heads, states, groups, chunks of 8 so that the lengths
1, 5 and 13 are not multiples of a chunk); the layer patterns, biases, tying, latent experts,
shared blocks and norms are the variants', so that each is also run shrunk. Bamba and Granite
default to Mamba-2 in every layer, where transformers' generate fails (DynamicCache's
get_seq_length wants an attention layer), so `fix` gives them one attention layer for the cache
check; a variant runs the all-Mamba default. Zamba2's shrunk copies run five layers of which
three are hybrid (its 54-layer default takes minutes on CPU), its variants the blocks, adapters,
tying, biases and key/value heads over them; the full-size patterns are checked for parameters."""

from . import Case

CASES = [
    # seeded: no hidden_size: mamba_n_heads must divide mamba_expand x hidden_size
    Case("bamba",
         shrink=dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                     num_attention_heads=4, num_key_value_heads=2, mamba_n_heads=8,
                     mamba_d_state=8, mamba_n_groups=2, mamba_chunk_size=8),
         fix=dict(attn_layer_indices=[1]),
         variants=(dict(attn_layer_indices=None, tie_word_embeddings=True),
                   dict(attn_layer_indices=[0, 2], attention_bias=True, mlp_bias=True,
                        mamba_proj_bias=True, mamba_conv_bias=False, mamba_d_conv=3,
                        head_dim=16)),
         lengths=(1, 5, 8, 13), cache=True,
         seeded_skip=("hidden_size",)),
    Case("nemotron_h",
         shrink=dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=8, mamba_num_heads=8, mamba_head_dim=8,
                     n_groups=2, ssm_state_size=8, chunk_size=8, n_routed_experts=4,
                     moe_intermediate_size=16, moe_shared_expert_intermediate_size=24),
         variants=(dict(hybrid_override_pattern="MEM*EM-", use_bias=True, use_conv_bias=False,
                        conv_kernel=3, mlp_bias=True, tie_word_embeddings=True,
                        num_experts_per_tok=3),
                   dict(layers_block_type=["moe", "linear_attention", "full_attention", "moe"],
                        moe_latent_size=8, mlp_bias=True),
                   dict(hybrid_override_pattern="M-M*-M-", num_key_value_heads=4)),
         lengths=(1, 5, 8, 13), cache=True),
    Case("falcon_h1",
         shrink=dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, mamba_d_ssm=48,
                     mamba_n_heads=6, mamba_d_state=8, mamba_n_groups=2, mamba_chunk_size=8),
         variants=(dict(mamba_rms_norm=True, mamba_proj_bias=True, projectors_bias=True,
                        attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
                        head_dim=16),
                   dict(mamba_d_ssm=None, mamba_d_conv=3, num_hidden_layers=3)),
         lengths=(1, 5, 8, 13), cache=True),
    Case("granitemoehybrid",
         shrink=dict(vocab_size=97, hidden_size=32, intermediate_size=16,
                     shared_intermediate_size=24, num_attention_heads=4, num_key_value_heads=2,
                     mamba_n_heads=8, mamba_d_state=8, mamba_n_groups=2, mamba_chunk_size=8),
         fix=dict(num_hidden_layers=3, layer_types=["mamba", "attention", "mamba"]),
         variants=(dict(layer_types=None, position_embedding_type="rope",
                        tie_word_embeddings=True),
                   dict(layer_types=["linear_attention", "full_attention", "linear_attention"],
                        num_hidden_layers=3, num_local_experts=0, attention_bias=True,
                        mamba_proj_bias=True, mamba_conv_bias=False),
                   dict(num_local_experts=6, num_experts_per_tok=3, mamba_d_conv=3)),
         lengths=(1, 5, 8, 13), cache=True),
    Case("zamba2",
         shrink=dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                     n_mamba_heads=4, mamba_d_state=8, mamba_ngroups=2, chunk_size=8,
                     adapter_rank=4, num_hidden_layers=5,
                     layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"]),
         variants=(dict(layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"],
                        num_hidden_layers=5, num_mem_blocks=2, use_shared_attention_adapter=True,
                        use_mem_rope=True),
                   dict(layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"],
                        num_hidden_layers=5, num_mem_blocks=2, tie_word_embeddings=False,
                        add_bias_linear=True, num_key_value_heads=2),
                   dict(layers_block_type=["hybrid", "mamba", "hybrid"], num_hidden_layers=3,
                        num_mem_blocks=3, hidden_act="silu", mamba_d_conv=3)),
         lengths=(1, 5, 8, 13), cache=True),
]
