"""Gated DeltaNet hybrids: Qwen3-Next and the Qwen3.5 text models (dense and MoE), three gated
DeltaNet layers to one gated attention by default.

The shrink keys hold widths only (hidden size, attention heads, experts), so that each variant's
linear-attention heads and widths, conv kernel, layer pattern, dense/MoE split, biases and tying
reach the real forward too; the default case keeps transformers' 16 key / 32 value heads of 128.
Qwen3.5's configs are multimodal wrappers: the keys go under `text_config`, and the saved file
nests them there, as a checkpoint's does; flopcalc counts the language model and the head as
Qwen3_5ForConditionalGeneration holds them (tied by the wrapper's flag, `top`), its vision tower
left out (`count="text"`). Lengths cover one token (a whole padded chunk of 64),
a chunk exactly, and lengths past it."""

from . import Case

_ATTN = dict(vocab_size=97, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16)
_EXPERTS = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24)
LENGTHS = (1, 5, 64, 70, 130)

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
    Case("qwen3_5", shrink={**_ATTN, "intermediate_size": 96}, text_config="text_config",
         variants=(
             dict(full_attention_interval=3, tie_word_embeddings=True, linear_conv_kernel_dim=2,
                  attention_bias=True, linear_num_key_heads=2, linear_num_value_heads=4,
                  linear_key_head_dim=8, linear_value_head_dim=12),
             # as many value heads as key heads, dk > dv
             dict(linear_num_key_heads=4, linear_num_value_heads=4, linear_key_head_dim=24,
                  linear_value_head_dim=6),
             # the wrapper's flag ties the head, whatever the text config's says
             {"top": {"tie_word_embeddings": True}}),
         lengths=LENGTHS, cache=True, count="text"),
    Case("qwen3_5_moe", shrink={**_ATTN, **_EXPERTS}, text_config="text_config",
         variants=(
             dict(full_attention_interval=2, linear_conv_kernel_dim=3, linear_num_key_heads=2,
                  linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=12),
             dict(linear_num_key_heads=1, linear_num_value_heads=4, linear_key_head_dim=12,
                  linear_value_head_dim=8, tie_word_embeddings=True,
                  shared_expert_intermediate_size=40),
             {"top": {"tie_word_embeddings": True}}),
         lengths=LENGTHS, cache=True, count="text"),
]
