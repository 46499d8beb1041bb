"""Decoders imported by flopcalc/models/hf/decoders4.py (types flopcalc refused until their
layer kinds existed), and their wrappers (the language model counted alone: `count="text"`)."""

from . import Case

SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64)
TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
LENGTHS = (1, 6, 13)

# Step 3.7: sliding layers with their own query head count (per_layer_config), heads gated by
# g_proj, the first 3 layers dense then a sigmoid-routed mixture with one shared expert
_STEP = dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
             share_expert_dim=40, num_hidden_layers=4, sliding_window=4,
             layer_types=["sliding_attention", "full_attention"] * 2,
             mlp_layer_types=["dense", "sparse", "sparse", "dense"],
             num_sliding_attention_heads=8, pad_token_id=0)
_STEP_VARIANTS = (
    dict(num_hidden_layers=6, layer_types=["sliding_attention"] * 3 + ["full_attention"] * 3,
         num_sliding_attention_heads=96, sliding_window=512, attention_bias=True,
         mlp_bias=True, tie_word_embeddings=True),
    dict(num_hidden_layers=5, mlp_layer_types=None, moe_layers_enum="1,3,4", share_expert_dim=0,
         num_attention_heads=32, num_key_value_heads=4, head_dim=64),
    dict(num_hidden_layers=4, layer_types=["full_attention", "sliding_attention"] * 2,
         num_sliding_attention_heads=16, sliding_window=128, num_nextn_predict_layers=1,
         n_routed_experts=16,
         num_experts_per_tok=3))
_STEP_VISION = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=56,
                    patch_size=14, max_position_embeddings=16)
CASES = [
    Case("step3p5", shrink={**SIZES, **_STEP}, lengths=LENGTHS, variants=_STEP_VARIANTS,
         fix=dict(pad_token_id=0), count="text", wrapper="step3p7",
         wrapper_keys=lambda text: {"vision_config": _STEP_VISION}),
    Case("step3p7", shrink={**SIZES, **_STEP, "top": {"vision_config": _STEP_VISION}}, variants=(
        {"top": TIED}, {"top": UNTIED, **TIED}, _STEP_VARIANTS[0]),
        text_config="text_config", count="text", lengths=(5,), fix=dict(pad_token_id=0)),
]

# Zamba: multi-head Mamba-1 in every layer, the one shared block (attention over the hidden state
# joined to the embeddings, a gated MLP) on the hybrid layers, tied only with the embeddings
_ZAMBA = dict(hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=4,
              vocab_size=128, max_position_embeddings=64, num_hidden_layers=5,
              attn_layer_period=2, attn_layer_offset=1, mamba_d_state=8, mamba_dt_rank="auto",
              layers_block_type=None, attention_hidden_size=None, attention_head_dim=None,
              pad_token_id=0)
CASES += [
    # seeded: no layer count: its layer pattern and shared-block ties are fixed by the default's
    Case("zamba", shrink=_ZAMBA, lengths=(1, 5, 9),
         variants=(UNTIED,
                   dict(n_mamba_heads=4, num_key_value_heads=8, attention_head_dim=64,
                        mamba_proj_bias=True, mamba_conv_bias=False, mamba_d_conv=3,
                        hidden_act="silu", intermediate_size=1000),
                   dict(num_hidden_layers=7, layers_block_type=[
                       "mamba", "hybrid", "mamba", "mamba", "hybrid", "hybrid", "mamba"],
                        mamba_expand=3, mamba_dt_rank=24, tie_word_embeddings=False)),
         seeded_skip=("num_hidden_layers",)),
]

# Bailing-hybrid (Ling): latent attention gated per head on the last layer of each group, Kimi
# delta attention with full-rank gates elsewhere, DeepSeek-V3's grouped routing
_BAILING = dict(vocab_size=97, hidden_size=64, intermediate_size=96, moe_intermediate_size=24,
                num_attention_heads=4, num_key_value_heads=4, head_dim=8, kv_lora_rank=16,
                qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=12, num_experts=8,
                num_experts_per_token=2, n_group=2, topk_group=1, num_hidden_layers=4,
                layer_group_size=2, layer_types=None, mlp_layer_types=None, pad_token_id=0,
                bos_token_id=1, eos_token_id=2)
CASES += [
    Case("bailing_hybrid", shrink=_BAILING, lengths=(1, 13, 70),
         variants=(
             # a query rank, biases, a dense layer between mixtures, tie (never honoured)
             dict(num_hidden_layers=6, q_lora_rank=20, attention_bias=True,
                  mlp_layer_types=["dense", "sparse", "dense", "sparse", "sparse", "sparse"],
                  tie_word_embeddings=True, num_shared_experts=2),
             # every third layer latent attention, no shared expert, a 3-tap conv, wider heads
             dict(num_hidden_layers=6, layer_group_size=3, num_shared_experts=0,
                  short_conv_kernel_size=3, head_dim=64, first_k_dense_replace=0,
                  kda_safe_gate=False),
             # explicit layer types: linear attention only
             dict(num_hidden_layers=3, layer_types=["linear_attention"] * 3,
                  mlp_layer_types=["dense"] * 3))),
]

# xLSTM: mLSTM blocks (chunks of chunk_size, the rest token by token) and gated feed-forwards;
# tie_word_embeddings is not honoured
_XLSTM = dict(vocab_size=97, hidden_size=64, num_hidden_layers=2, num_blocks=None,
              embedding_dim=None, num_heads=4, chunk_size=4, pad_token_id=0, bos_token_id=1,
              eos_token_id=2)
CASES += [
    Case("xlstm", shrink=_XLSTM, lengths=(1, 3, 4, 10),
         variants=(TIED,
                   # (weight_mode "fused" holds the same numbers; transformers 5.24 cannot
                   # initialise it: its _init_weights slices the fused gate bias wrongly)
                   dict(num_heads=2, qk_dim_factor=0.25, v_dim_factor=0.75, ffn_proj_factor=3.5,
                        ffn_round_up_to_multiple_of=32),
                   dict(num_blocks=6, hidden_size=1024, embedding_dim=1024, num_heads=16,
                        chunk_size=16))),
]

# Muse Spark: gated attention with weightless q/k norms, windows on 3 of 4 layers, a latent
# mixture with its norms, residual gates; the wrapper's towers left out (a tiny ViT and audio
# encoder for the FLOP run, the audio output as wide as the text model)
_MUSE = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             max_position_embeddings=64, sliding_window=4, num_local_experts=4,
             num_experts_per_tok=2, moe_intermediate_size=24, moe_hidden_size=32,
             layer_types=None, mlp_layer_types=None, layer_rope_theta=None, pad_token_id=0)
_MUSE_VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                    num_attention_heads=2, pos_emb_height=4, pos_emb_width=4,
                    max_position_embeddings=16)
_MUSE_AUDIO = dict(hidden_sizes=[8, 8, 8, 8], depths=[1, 1, 1, 1], out_hidden_size=64)
_MUSE_TOP = {"vision_config": _MUSE_VISION, "audio_config": _MUSE_AUDIO, "out_hidden_size": 32,
             "projector_hidden_size": 32}
_MUSE_VARIANTS = (
    dict(attention_bias=True, num_hidden_layers=6,
         mlp_layer_types=["dense", "sparse", "dense", "sparse", "sparse", "sparse"]),
    dict(num_hidden_layers=3, layer_types=["full_attention"] * 3, num_key_value_heads=4,
         moe_hidden_size=2048, num_experts_per_tok=3))
CASES += [
    # seeded: no hidden_size: transformers requires the audio encoder's output to equal it
    Case("muse_spark", shrink={**_MUSE, "top": _MUSE_TOP}, variants=_MUSE_VARIANTS + (
        {"top": {"tie_word_embeddings": True}},), text_config="text_config", count="text",
        lengths=(1, 5, 9),
         seeded_skip=("hidden_size",)),
    Case("muse_spark_text", shrink=_MUSE, variants=_MUSE_VARIANTS, lengths=(1, 5, 9),
         count="text", wrapper="muse_spark", wrapper_keys=lambda text: {
             **_MUSE_TOP,
             "audio_config": {**_MUSE_AUDIO, "out_hidden_size": text["hidden_size"]}}),
]
