"""Dense decoders of their own shape (flopcalc/models/hf/dense_layernorm.py): parallel blocks, LayerNorm
models, ALiBi, parameter-free norms, learned positions with an offset, embedding projections."""

from . import Case

SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             vocab_size=128, max_position_embeddings=64)
GPT = dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=128)
TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
LENGTHS = (1, 6, 13)

CASES = [
    Case("phi", shrink=SIZES,
         variants=(dict(qk_layernorm=True), TIED, dict(num_key_value_heads=2))),
    Case("gptj", shrink={**GPT, "rotary_dim": 8}, variants=(dict(n_inner=1000), TIED)),
    Case("codegen", shrink={**GPT, "rotary_dim": 8, "n_ctx": 64},
         variants=(dict(n_inner=1000), TIED)),
    Case("cohere", shrink={**SIZES, "num_key_value_heads": 2},
         variants=(dict(use_qk_norm=True), dict(attention_bias=True), UNTIED)),
    Case("cohere2", shrink={**SIZES, "num_hidden_layers": 8, "sliding_window": 4,
                            "num_key_value_heads": 2}, lengths=LENGTHS,
         variants=(dict(attention_bias=True), UNTIED)),
    # Falcon's layouts: 7B (multi-query, one norm, parallel: the default), 40B (the new
    # decoder architecture, 8 KV heads, two norms), 180B (new architecture, one norm), RW-1B
    # (ALiBi, multi-head, sequential, biases, untied), multi-head parallel with a wider MLP.
    Case("falcon", shrink=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                               vocab_size=128, max_position_embeddings=64),
         variants=(dict(new_decoder_architecture=True, num_kv_heads=2, hidden_size=8192,
                        num_attention_heads=128),
                   dict(new_decoder_architecture=True, num_kv_heads=2, hidden_size=8192,
                        num_attention_heads=128, num_ln_in_parallel_attn=1),
                   dict(alibi=True, multi_query=False, parallel_attn=False, bias=True,
                        tie_word_embeddings=False),
                   dict(alibi=True, parallel_attn=True),
                   dict(multi_query=False, ffn_hidden_size=96))),
    Case("starcoder2", shrink={**SIZES, "num_key_value_heads": 2}, lengths=LENGTHS,
         variants=(dict(use_bias=False), dict(sliding_window=4), UNTIED)),
    Case("stablelm", shrink={**SIZES, "num_key_value_heads": 2},
         variants=(dict(qk_layernorm=True), dict(use_qkv_bias=True),
                   dict(use_parallel_residual=True), dict(num_key_value_heads=8), TIED)),
    Case("persimmon", shrink=SIZES, variants=(dict(qk_layernorm=False), TIED)),
    Case("nemotron", shrink={**SIZES, "num_key_value_heads": 2}, fix=dict(num_key_value_heads=48),
         variants=(dict(attention_bias=True, mlp_bias=True), dict(num_key_value_heads=8),
                   dict(head_dim=64), TIED)),
    Case("apertus", shrink={**SIZES, "num_key_value_heads": 2},
         variants=(dict(attention_bias=True), dict(num_key_value_heads=8), TIED)),
    Case("olmo", shrink={**SIZES, "num_key_value_heads": 2},
         variants=(dict(attention_bias=True), dict(clip_qkv=8.0), TIED)),
    Case("gpt_bigcode", shrink=GPT,
         variants=(dict(multi_query=False), dict(n_inner=96), UNTIED)),
    # OPT: 125M-like (the default), 350M-like (norms after each sublayer, no final norm, a
    # 32-wide embedding projected to d and back), without norm parameters or biases, untied,
    # without the final norm.
    Case("opt", shrink=dict(hidden_size=64, ffn_dim=96, num_hidden_layers=2,
                            num_attention_heads=4, vocab_size=128, max_position_embeddings=64),
         variants=(dict(do_layer_norm_before=False, word_embed_proj_dim=32),
                   dict(layer_norm_elementwise_affine=False, enable_bias=False),
                   UNTIED, dict(_remove_final_layer_norm=True))),
    Case("bloom", shrink=dict(hidden_size=64, n_layer=2, n_head=4, vocab_size=128),
         variants=(UNTIED, dict(n_head=16, hidden_size=512))),
    Case("mpt", shrink=dict(d_model=64, n_heads=4, n_layers=2, vocab_size=128, max_seq_len=64),
         variants=(UNTIED, dict(expansion_ratio=2, no_bias=False))),
]

CASES += [
    Case("jais2", shrink={**SIZES, "num_key_value_heads": 2},
         variants=(dict(attention_bias=False, mlp_bias=False), dict(num_key_value_heads=2),
                   TIED)),
]
