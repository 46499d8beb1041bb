"""Types that are a supported architecture under another name (flopcalc/models/hf/aliases.py):
the Llama, Mistral, Qwen, Gemma and OLMo relatives."""

from . import Case

# Tiny sizes keeping every feature (GQA with 2 KV heads, head_dim 16 ≠ d / heads for some).
LLAMA = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64)
PATTERN = {**LLAMA, "num_hidden_layers": 8, "sliding_window": 4}
BIAS = dict(attention_bias=True, mlp_bias=True)
TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
LENGTHS = (1, 6, 13)  # 6 and 13 pass the tiny windows (4)

CASES = [
    Case("gpt-sw3", shrink=dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=128),
         variants=(UNTIED, dict(n_inner=96, activation_function="relu"))),
    Case("exaone", shrink=LLAMA, variants=(TIED, BIAS, dict(num_key_value_heads=32))),
    # seeded: no attention_bias: transformers rejects qkv_bias apart from bias (its own key)
    Case("internlm3", shrink=LLAMA, variants=(dict(qkv_bias=True, bias=True), TIED),
         seeded_skip=("attention_bias",)),
    Case("iquestcoder", shrink=LLAMA, variants=(TIED, dict(num_key_value_heads=40))),
    Case("granite", shrink=LLAMA,
         variants=(dict(embedding_multiplier=12.0, attention_multiplier=0.015625,
                        residual_multiplier=0.22, logits_scaling=8.0), BIAS, TIED)),
    Case("smollm3", shrink={**PATTERN, "pad_token_id": 0}, lengths=LENGTHS,
         variants=(UNTIED, BIAS, dict(use_sliding_window=True, sliding_window=4096),
                   dict(use_sliding_window=True, sliding_window=4096, no_rope_layer_interval=2))),
    Case("ernie4_5", shrink=LLAMA, variants=(dict(use_bias=True), UNTIED)),
    Case("ministral", shrink=PATTERN, fix=dict(head_dim=128), lengths=LENGTHS,
         variants=(dict(sliding_window=None), TIED)),
    Case("ministral3", shrink=LLAMA, variants=(dict(sliding_window=4), TIED)),
    Case("cwm", shrink=PATTERN, lengths=LENGTHS, variants=(dict(mlp_bias=True), TIED)),
    Case("glm", shrink={**LLAMA, "pad_token_id": 0}, variants=(dict(attention_bias=False), TIED)),
    Case("seed_oss", shrink=LLAMA,
         variants=(dict(attention_out_bias=True), dict(mlp_bias=True),
                   dict(attention_bias=False), TIED)),
    Case("exaone4", shrink=PATTERN, lengths=LENGTHS,
         variants=(TIED, dict(sliding_window_pattern=2), dict(num_key_value_heads=8))),
    Case("hyperclovax", shrink=LLAMA,
         variants=(dict(use_post_norm=False), BIAS,
                   dict(embedding_multiplier=2.0, attention_multiplier=0.1, logits_scaling=0.5))),
    Case("olmo3", shrink=PATTERN, lengths=LENGTHS,
         variants=(dict(attention_bias=True), TIED, dict(num_key_value_heads=8))),
    Case("vaultgemma", shrink={**PATTERN, "num_hidden_layers": 4}, lengths=LENGTHS,
         variants=(UNTIED, dict(attention_bias=True))),
    Case("hunyuan_v1_dense", shrink=LLAMA, fix=dict(head_dim=128),
         variants=(dict(attention_bias=True), dict(num_key_value_heads=8), TIED)),
    # Helium's o_proj is d x d: its tiny copy keeps heads x head_dim = d.
    # seeded: no head_dim: its o_proj is d x d, so a head width other than d/heads builds but
    # cannot run
    Case("helium", shrink={**LLAMA, "head_dim": 16},
         variants=(dict(attention_bias=True), dict(mlp_bias=True), dict(num_key_value_heads=4)),
         seeded_skip=("head_dim",)),
    Case("glm4", shrink={**LLAMA, "pad_token_id": 0}, variants=(dict(attention_bias=False), TIED)),
    Case("arcee", shrink=LLAMA, variants=(BIAS, dict(num_key_value_heads=8), TIED)),
]

# Mixtures of experts under other names.
MOE = dict(LLAMA, moe_intermediate_size=32, num_experts_per_tok=2)
MLA = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=4, vocab_size=128, max_position_embeddings=64,
           kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
           moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2,
           n_shared_experts=1, n_group=1, topk_group=1, pad_token_id=0)

CASES += [
    Case("flex_olmo", shrink={**MOE, "num_experts": 4, "pad_token_id": 0},
         variants=(dict(attention_bias=True), TIED)),
    # transformers maps mistral4 to Mistral4ForCausalLM under image-text-to-text only.
    Case("mistral4", shrink=MLA, auto="image_text",
         variants=(dict(first_k_dense_replace=1), dict(q_lora_rank=None), TIED)),
    Case("sarvam_mla", shrink=MLA,
         variants=(dict(q_lora_rank=24), dict(first_k_dense_replace=0))),
    Case("glm4_moe_lite", shrink={**MLA, "num_hidden_layers": 3},
         variants=(dict(num_hidden_layers=3, mlp_layer_types=["sparse", "dense", "sparse"]),
                   dict(q_lora_rank=None))),
]
