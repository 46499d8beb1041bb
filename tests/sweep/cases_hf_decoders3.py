"""Decoders imported by flopcalc/models/hf/decoders3.py, and their wrappers (the language model
counted alone: `count="text"`, as tests/sweep/cases_multimodal.py's text-only wrappers)."""

from . import Case

SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64)
NO_HEAD_DIM = {k: v for k, v in SIZES.items() if k != "head_dim"}
TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
TOP_TIED, TOP_UNTIED = {"top": TIED}, {"top": UNTIED}
LENGTHS = (1, 6, 13)


def text_only(model_type: str, shrink: dict, variants: tuple = (TOP_TIED, TOP_UNTIED),
              **kw) -> Case:
    return Case(model_type, shrink=shrink, variants=variants, text_config="text_config",
                count="text", lengths=(5,), **kw)


_ARIA = dict(moe_num_experts=4, moe_topk=2, moe_num_shared_experts=2)
CASES = [
    # Aria: 8 experts top-2 and 2 shared by default; biases on attention and the shared MLP
    Case("aria_text", shrink={**SIZES, **_ARIA}, lengths=LENGTHS,
         variants=(dict(attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
                   dict(moe_num_experts=6, moe_topk=3, moe_num_shared_experts=0,
                        num_key_value_heads=8, head_dim=64),
                   dict(moe_num_shared_experts=1, intermediate_size=1000,
                        num_key_value_heads=4))),
    text_only("aria", {**SIZES, **_ARIA},
              (TOP_TIED, {"top": UNTIED, **TIED}, dict(attention_bias=True, mlp_bias=True))),
]
# transformers 5.24's default config does not build (CohereCompassRotaryEmbedding reads RoPE
# parameters per layer type, the class default has none); a published file gives them
_ROPE = dict(rope_type="default", rope_theta=10000.0)
COMPASS_FIX = dict(rope_parameters=dict(full_attention=_ROPE, sliding_attention=_ROPE))
CASES += [
    # North (Cohere Compass): every layer full by default; windows and NoPE per layer type
    Case("cohere_compass_text", shrink={**NO_HEAD_DIM, "num_hidden_layers": 4,
                                        "sliding_window": 4},
         lengths=LENGTHS, fix=COMPASS_FIX,
         variants=(dict(attention_bias=True, tie_word_embeddings=False),
                   dict(num_hidden_layers=4, layer_types=["sliding_attention"] * 3
                        + ["full_attention"], num_key_value_heads=8, hidden_act="gelu"))),
    text_only("cohere_compass", {**NO_HEAD_DIM, "num_hidden_layers": 4, "sliding_window": 4},
              fix=COMPASS_FIX,
              variants=(TOP_TIED, {"top": UNTIED, **TIED},
                        dict(num_hidden_layers=4, attention_bias=True,
                             layer_types=["sliding_attention", "full_attention"] * 2))),
]
CASES += [
    # ModernBERT-decoder: windows of local_attention // 2 on 2 of 3 layers, the masked-LM head
    Case("modernbert-decoder", shrink={**NO_HEAD_DIM, "num_hidden_layers": 4,
                                       "local_attention": 8, "layer_types": None,
                                       "pad_token_id": 0},
         lengths=LENGTHS,
         variants=(dict(attention_bias=True, mlp_bias=True, norm_bias=True,
                        classifier_bias=True, decoder_bias=False),
                   dict(tie_word_embeddings=False, hidden_activation="silu",
                        global_attn_every_n_layers=2, local_attention=64),
                   dict(layer_types=["full_attention"] * 22))),
]
CASES += [
    # DiffLlama: two attention calls per layer (the scores and AV twice); even KV heads
    # seeded: no KV heads: transformers requires an even number (it splits V along KV heads)
    Case("diffllama", shrink=SIZES, lengths=LENGTHS,
         variants=(dict(attention_bias=True, tie_word_embeddings=True, num_key_value_heads=8),
                   dict(head_dim=96, num_key_value_heads=16, intermediate_size=1000)),
         seeded_skip=("num_key_value_heads",)),
]
_BEAM = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=24, n_group=2,
             topk_group=1)
CASES += [
    # Beam: gated attention with a bias per head, windows on 5 of 6 layers and the last full,
    # the first 3 layers dense, grouped sigmoid routing
    Case("beam", shrink={**SIZES, **_BEAM, "num_hidden_layers": 5, "sliding_window": 4,
                         "layer_types": None, "mlp_layer_types": None, "pad_token_id": 0},
         lengths=LENGTHS,
         variants=(dict(attention_bias=True, tie_word_embeddings=True),
                   dict(num_hidden_layers=4, layer_types=["sliding_attention", "full_attention"] * 2,
                        mlp_layer_types=["dense", "sparse", "dense", "sparse"],
                        num_key_value_heads=4, head_dim=64))),
]
_M3 = dict(num_local_experts=4, num_experts_per_tok=2, dense_intermediate_size=80,
           shared_intermediate_size=40, rotary_dim=8)
CASES += [
    # MiniMax-M3 without its sparse (indexer) layers: every layer a mixture with a shared MLP
    Case("minimax_m3_vl_text", shrink={**SIZES, **_M3, "num_hidden_layers": 4}, lengths=LENGTHS,
         variants=(dict(num_hidden_layers=4, mlp_layer_types=["dense", "sparse"] * 2,
                        tie_word_embeddings=True),
                   dict(shared_intermediate_size=0, num_key_value_heads=8, head_dim=64))),
    text_only("minimax_m3_vl", {**SIZES, **_M3, "mlp_layer_types": ["dense", "sparse"]},
              (TOP_TIED, {"top": UNTIED, **TIED})),
]
CASES += [
    # Doge: dynamic-mask attention (dt_proj over the values, A per KV head), residual scales
    Case("doge", shrink=NO_HEAD_DIM, lengths=LENGTHS,
         variants=(dict(attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
                   dict(num_key_value_heads=2, intermediate_size=1000, keep_window_size=4,
                        sliding_window=8))),
]
