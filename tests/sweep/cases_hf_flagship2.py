"""Flagship families once refused: Mistral Large 4 (`mistral_large4_text` and its wrapper
`mistral_large4`: kinds/direct_sparse_latent.py).

Tiny sizes keep every feature: NoPE layers, layers reading an earlier layer's latent (of each
kind), layers reusing the previous indexer's selection, dense and sparse MLPs, biases, tying,
lengths below and above the indexer's top-k."""

from . import Case

# 4 layers (the default NoPE interval 4 makes the last NoPE), 4 heads, latent 12, rotary 4 of
# 12-wide keys, values 6; an indexer of 3 heads of 8 keeping the top 3; 4 experts of 8, top-2.
# The shrink is applied over each variant, so every variant's lists are 4 layers long (and say
# so, for the parameter check at the default widths).
ML4 = dict(hidden_size=32, intermediate_size=24, moe_intermediate_size=8, num_hidden_layers=4,
           num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=12, qk_nope_head_dim=8,
           qk_rope_head_dim=4, v_head_dim=6, index_n_heads=3, index_head_dim=8, index_topk=3,
           n_routed_experts=4, num_experts_per_tok=2, vocab_size=64,
           max_position_embeddings=64)
ML4_VARIANTS = (
    # RoPE layers: 1 reads layer 0's latent, 2 its own; the NoPE layer 3 its own; indexers on
    # 0 and 2 only
    dict(num_hidden_layers=4, kv_source_layers=[0, 0, 2, 3],
         indexer_types=["full", "shared", "full", "shared"], attention_bias=True,
         tie_word_embeddings=True),
    # NoPE layers 0-1 (1 reads 0's latent), RoPE layers 2-3 (3 reads 2's); MoE on 1 and 3
    dict(num_hidden_layers=4, no_rope_layers=[0, 0, 1, 1], kv_source_layers=[0, 0, 2, 2],
         mlp_layer_types=["dense", "sparse", "dense", "sparse"], n_shared_experts=2),
    # the schedule GLM-5 names: every second layer runs its indexer, all MoE, NoPE every 3rd
    dict(index_topk_freq=2, index_skip_topk_offset=1, first_k_dense_replace=0,
         no_rope_layer_interval=3),
)
VISION = dict(model_type="pixtral", hidden_size=48, intermediate_size=80, num_hidden_layers=2,
              num_attention_heads=4, image_size=128, patch_size=8)

CASES = [
    Case("mistral_large4_text", shrink=ML4, variants=ML4_VARIANTS, lengths=(1, 3, 4, 13),
         count="text", wrapper="mistral_large4",
         wrapper_keys=lambda text: {"vision_config": VISION},
         note="the eager path scores every key (the top-k only masks): --attention full"),
    Case("mistral_large4", shrink={**ML4, "top": {"vision_config": VISION}},
         variants=(ML4_VARIANTS[0], {**ML4_VARIANTS[1], "top": {"spatial_merge_size": 4}},
                   {"top": {"tie_word_embeddings": True, "multimodal_projector_bias": True}}),
         text_config="text_config", auto="image_text", lengths=(1, 5, 13),
         note="the Pixtral tower and projector counted (their FLOPs on images: --images)"),
]
