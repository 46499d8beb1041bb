"""Gated DeltaNet hybrids: Qwen3-Next and the Qwen3.5 text models (dense and MoE), three gated
DeltaNet layers to one gated attention by default.

The shrink keys hold widths only (hidden size, attention heads, experts), so that each variant's
linear-attention heads and widths, conv kernel, layer pattern, dense/MoE split, biases and tying
reach the real forward too; the default case keeps transformers' 16 key / 32 value heads of 128.
Qwen3.5's configs are multimodal wrappers: the keys go under `text_config`, and the saved file
nests them there, as a checkpoint's does; flopcalc counts the whole
Qwen3_5ForConditionalGeneration (the language model, the head tied by the wrapper's flag, `top`,
and the vision tower with its merger), built on the meta device; the FLOP check runs the shrunk
wrapper (a tiny tower) on text tokens. Lengths cover one token (a whole padded chunk of 64),
a chunk exactly, and lengths past it."""

from . import Case

_ATTN = dict(vocab_size=97, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16)
_EXPERTS = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24)
LENGTHS = (1, 5, 64, 70, 130)
# Qwen3.5's tower, shrunk (its merger ends at the text width, 64)
_VISION = {"top": {"vision_config": dict(depth=2, hidden_size=32, intermediate_size=64,
                                         num_heads=4, patch_size=4, spatial_merge_size=2,
                                         temporal_patch_size=2, out_hidden_size=64,
                                         num_position_embeddings=16)}}
# another tower at full size: merge 3, one frame, one channel, a 10 x 10 position table
_WIDE = {"top": {"vision_config": dict(depth=3, hidden_size=96, intermediate_size=200,
                                       num_heads=6, patch_size=8, spatial_merge_size=3,
                                       temporal_patch_size=1, in_channels=1,
                                       num_position_embeddings=100, out_hidden_size=512)}}

CASES = [
    Case("qwen3_next", shrink={**_ATTN, **_EXPERTS, "intermediate_size": 96},
         variants=(
             # dk = dv, a kernel of 3, q/k/v/o biases, attention every 2nd layer, dense MLPs on
             # layer 1 and every odd layer (decoder_sparse_step 2), tied embeddings
             dict(linear_num_key_heads=4, linear_num_value_heads=8, linear_key_head_dim=16,
                  linear_value_head_dim=16, linear_conv_kernel_dim=3, attention_bias=True,
                  full_attention_interval=2, mlp_only_layers=[1], decoder_sparse_step=2,
                  tie_word_embeddings=True),
             # three value heads per key head, dk ≠ dv, a kernel of 5, an explicit pattern
             # starting with attention, no experts at full size (dense MLP everywhere)
             dict(linear_num_key_heads=1, linear_num_value_heads=3, linear_key_head_dim=20,
                  linear_value_head_dim=8, linear_conv_kernel_dim=5, num_experts=0,
                  num_hidden_layers=4,
                  layer_types=["full_attention", "linear_attention", "linear_attention",
                               "full_attention"]),
             # a 0-wide shared expert: transformers still builds and runs its gate
             dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                  linear_value_head_dim=12, shared_expert_intermediate_size=0)),
         lengths=LENGTHS, cache=True),
    Case("qwen3_5", shrink={**_ATTN, "intermediate_size": 96, **_VISION},
         text_config="text_config", auto="image_text",
         variants=(
             dict(full_attention_interval=3, tie_word_embeddings=True, linear_conv_kernel_dim=2,
                  attention_bias=True, linear_num_key_heads=2, linear_num_value_heads=4,
                  linear_key_head_dim=8, linear_value_head_dim=12),
             # as many value heads as key heads, dk > dv
             dict(linear_num_key_heads=4, linear_num_value_heads=4, linear_key_head_dim=24,
                  linear_value_head_dim=6),
             # the wrapper's flag ties the head, whatever the text config's says
             {"top": {"tie_word_embeddings": True}}, _WIDE),
         lengths=LENGTHS, cache=True),
    Case("qwen3_5_moe", shrink={**_ATTN, **_EXPERTS, **_VISION}, text_config="text_config",
         auto="image_text",
         variants=(
             dict(full_attention_interval=2, linear_conv_kernel_dim=3, linear_num_key_heads=2,
                  linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=12),
             dict(linear_num_key_heads=1, linear_num_value_heads=4, linear_key_head_dim=12,
                  linear_value_head_dim=8, tie_word_embeddings=True,
                  shared_expert_intermediate_size=40),
             {"top": {"tie_word_embeddings": True}}, _WIDE),
         lengths=LENGTHS, cache=True),
]
