"""Gemma 4 (transformers `models/gemma4/`, flopcalc `kinds/gemma4.py`): the text model at its
default config (per-layer inputs on, full layers 512 wide) and with each feature the config
turns on, and the multimodal wrapper counting its language model alone.

The shrink keeps every feature: six layers alternating window and full (so that KV-shared
layers at the end find both types computed before them), a 512-row per-layer table, full
layers at their default 512 width, and four experts of which two are picked per token when a
variant enables the mixture."""

from . import Case

LAYERS6 = ["sliding_attention", "full_attention"] * 3
SHRINK = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, vocab_size=512, vocab_size_per_layer_input=512,
              sliding_window=4, layer_types=LAYERS6, num_experts=4, top_k_experts=2,
              moe_intermediate_size=32)
# Gemma 4 26B A4B's mixture (128 experts, top 8, 704 wide) beside the MLP, at the default sizes
MOE = dict(enable_moe_block=True, num_experts=128, top_k_experts=8, moe_intermediate_size=704)
TIED, UNTIED = {"top": {"tie_word_embeddings": True}}, {"top": {"tie_word_embeddings": False}}

# Gemma 4 Unified's text model: the same layers without per-layer inputs or experts
UNIFIED = {k: v for k, v in SHRINK.items()
           if k not in ("vocab_size_per_layer_input", "num_experts", "top_k_experts",
                        "moe_intermediate_size")}

CASES = [
    Case("gemma4_text", shrink=SHRINK, lengths=(5, 13), variants=(
        # keys as values on the full layers, with their own KV heads (Gemma 4 31B's form)
        dict(attention_k_eq_v=True, num_global_key_value_heads=1),
        dict(attention_k_eq_v=True, num_global_key_value_heads=2, global_head_dim=128),
        # KV sharing in the last 4 layers, and their MLPs twice as wide (E2B's form)
        dict(num_kv_shared_layers=4),
        dict(num_kv_shared_layers=4, use_double_wide_mlp=True),
        MOE,
        dict(**MOE, attention_k_eq_v=True, num_global_key_value_heads=1,
             hidden_size_per_layer_input=0),
        # no per-layer inputs, an untied head, biases on q, k, v and o
        dict(hidden_size_per_layer_input=0, tie_word_embeddings=False),
        dict(attention_bias=True, hidden_size_per_layer_input=64),
        dict(num_hidden_layers=12, use_bidirectional_attention="vision"),
    )),
    Case("gemma4", shrink=SHRINK, text_config="text_config", count="text", lengths=(5,),
         variants=(UNTIED, TIED, dict(num_kv_shared_layers=4, use_double_wide_mlp=True),
                   dict(MOE, attention_k_eq_v=True, num_global_key_value_heads=1))),
    Case("gemma4_unified_text", shrink=UNIFIED, lengths=(5, 13), variants=(
        dict(attention_k_eq_v=True, num_global_key_value_heads=1),
        dict(num_kv_shared_layers=4, use_double_wide_mlp=True),
        dict(attention_bias=True, tie_word_embeddings=False, global_head_dim=128),
    )),
    Case("gemma4_unified", shrink=UNIFIED, text_config="text_config", count="text",
         lengths=(5,), variants=(UNTIED, TIED, dict(num_kv_shared_layers=4,
                                                     use_double_wide_mlp=True))),
    # the cache after a real generate, with KV-shared layers (which keep none of their own);
    # a window of 16 does not bind at these lengths (transformers' sliding layers keep w − 1
    # keys after a generate, flopcalc's cache bound is w: kinds/masks.py)
    Case("gemma4_text", shrink={**SHRINK, "sliding_window": 16, "num_kv_shared_layers": 2,
                                "use_double_wide_mlp": True}, lengths=(7,), cache=True),
]
