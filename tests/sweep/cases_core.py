"""The core types (flopcalc/models/hf/dense.py, moe.py, encoders.py, gated_deltanet.py and the
wrappers of multimodal.py without a case elsewhere): GPT-2, GPT-NeoX, the Llama family (Llama,
Mistral, Qwen2/3, Gemma 1-3, OLMo 2, Phi-3), the mixtures of experts (Mixtral, Qwen2/3-MoE,
OLMoE, DeepSeek-V3, gpt-oss), the Qwen3.5 text models, BERT and T5, and five wrappers whose
language model alone is counted.

A variant's keys that the shrink also sets are overridden by it in the FLOP check (they still
count in the parameter check at full size), so where a head split or an expert count is the
variant's point, the shrink leaves it out or a second case with another shrink checks it.
Windows of 4 are shorter than the longer lengths (6, 7, 13: not multiples of a window); the
gated DeltaNet lengths are 1, 5, a whole chunk of 64 and 70.

transformers 5.24's default configs of aya_vision (SigLIP with 1152 / 14 heads), fast_vlm and
perception_lm (timm towers: timm is not a test dependency) and fun_asr_nano (a text config
passed as a mapping loses the class's text defaults, so the adaptor width no longer matches)
do not build: `fix` gives each a tower (or the text sizes) that does. flopcalc reads none of
these towers, so which one is built changes nothing counted."""

from . import Case

TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
LENGTHS = (1, 6, 13)  # 6 and 13 pass the windows of 4
# widths only: each case adds its head split
SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, vocab_size=128,
             max_position_embeddings=64)
GQA = dict(SIZES, num_attention_heads=4, num_key_value_heads=2)
# multi-query, head_dim 24 ≠ d / heads: the second case of a type, for its FLOPs
MQA = dict(SIZES, num_attention_heads=4, num_key_value_heads=1, head_dim=24)
MQ = "multi-query, head_dim ≠ d / heads"
GPT = dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=128)
BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)
T5 = dict(vocab_size=128, d_model=64, d_kv=16, d_ff=96, num_layers=2, num_heads=4,
          relative_attention_num_buckets=8, relative_attention_max_distance=16,
          decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def alternate(n: int, first: str = "sliding_attention", second: str = "full_attention") -> list:
    return [first if i % 2 == 0 else second for i in range(n)]


# ------------------------------------------------------------------------------ dense
CASES = [
    Case("gpt2", shrink=GPT,
         variants=(UNTIED, dict(n_inner=96, activation_function="relu"),
                   dict(scale_attn_by_inverse_layer_idx=True, reorder_and_upcast_attn=True))),
    # parallel (the default: two norms), sequential, without attention biases, tied
    Case("gpt_neox", shrink=dict(SIZES, num_attention_heads=4), lengths=(1, 7),
         variants=(dict(use_parallel_residual=False), dict(attention_bias=False), TIED)),
    Case("llama", shrink=GQA,
         variants=(dict(attention_bias=True, mlp_bias=True), TIED, dict(head_dim=96))),
    Case("llama", shrink=MQA, lengths=(7,), variants=(dict(attention_bias=True),),
         note=MQ),
    # every layer slides by default (sliding_window 4096)
    Case("mistral", shrink={**GQA, "sliding_window": 4}, lengths=LENGTHS,
         variants=(dict(sliding_window=None), TIED, dict(head_dim=64))),
    Case("mistral", shrink={**MQA, "sliding_window": 4}, lengths=(6,), note=MQ),
    # q/k/v biases; windows on the layers from max_window_layers on
    Case("qwen2", shrink=GQA, lengths=LENGTHS,
         variants=(dict(use_sliding_window=True, sliding_window=4, max_window_layers=1),
                   TIED, dict(num_key_value_heads=4))),
    Case("qwen2", shrink=MQA, lengths=(7,), note=MQ),
    Case("qwen3", shrink=GQA, lengths=LENGTHS,
         variants=(dict(use_sliding_window=True, sliding_window=4, max_window_layers=1),
                   dict(attention_bias=True, **TIED), dict(head_dim=64))),
    Case("qwen3", shrink=MQA, lengths=(7,), note=MQ),
    # Gemma: head_dim 256 by default (shrunk to 16), tied; 2B is multi-query
    Case("gemma", shrink={**GQA, "head_dim": 16},
         variants=(UNTIED, dict(attention_bias=True), dict(num_key_value_heads=1))),
    Case("gemma", shrink=MQA, lengths=(7,), note=MQ),
    # Gemma 2: window and full layers alternate; soft-capping is element-wise
    Case("gemma2", shrink={**GQA, "head_dim": 16, "num_hidden_layers": 4, "sliding_window": 4},
         lengths=LENGTHS,
         variants=(UNTIED, dict(attention_bias=True, attn_logit_softcapping=None,
                                final_logit_softcapping=None),
                   dict(num_hidden_layers=4, layer_types=["full_attention", "full_attention",
                                                          "sliding_attention",
                                                          "full_attention"]))),
    # Gemma 3: five window layers to one full; per-head q/k norms
    Case("gemma3_text",
         shrink={**GQA, "head_dim": 16, "num_hidden_layers": 6, "sliding_window": 4},
         lengths=LENGTHS,
         variants=(UNTIED, dict(attention_bias=True),
                   dict(num_hidden_layers=6, layer_types=alternate(6)))),
    # OLMo 2: norms after each sublayer, q/k normed over all heads
    Case("olmo2", shrink=GQA,
         variants=(dict(attention_bias=True), TIED, dict(num_key_value_heads=8))),
    Case("olmo2", shrink=MQA, lengths=(7,), note=MQ),
    # Phi-3: fused qkv and gate-up projections; Phi-4-mini's partial rotary and tying
    Case("phi3", shrink={**GQA, "pad_token_id": 0}, lengths=LENGTHS,
         variants=(dict(sliding_window=4), dict(partial_rotary_factor=0.75, **TIED),
                   dict(num_key_value_heads=8))),
    Case("phi3", shrink={**MQA, "pad_token_id": 0}, lengths=(7,), note=MQ),
]

# ---------------------------------------------------------------------- mixtures of experts
EXPERTS = dict(GQA, intermediate_size=32)

CASES += [
    # experts left to each config: 8, top-2 by default
    Case("mixtral", shrink=EXPERTS, lengths=LENGTHS,
         variants=(dict(num_local_experts=4, num_experts_per_tok=1, sliding_window=4),
                   dict(num_local_experts=3, num_experts_per_tok=3, **TIED),
                   dict(head_dim=32))),
    Case("olmoe", shrink={**EXPERTS, "num_experts": 8, "num_experts_per_tok": 2},
         variants=(dict(attention_bias=True, clip_qkv=8.0), dict(norm_topk_prob=True, **TIED))),
    Case("olmoe", shrink={**EXPERTS, "num_experts": 3, "num_experts_per_tok": 3}, lengths=(6,),
         note="every expert picked (top-3 of 3)"),
    # shared expert with its gate; dense layers by decoder_sparse_step and mlp_only_layers
    Case("qwen2_moe", lengths=LENGTHS,
         shrink={**GQA, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24,
                 "num_experts": 4, "num_experts_per_tok": 2},
         variants=(dict(decoder_sparse_step=2, qkv_bias=False),
                   dict(mlp_only_layers=[0], use_sliding_window=True, sliding_window=4,
                        max_window_layers=1, **TIED),
                   dict(num_experts=6, num_experts_per_tok=1))),
    # a 0-wide shared expert: transformers still builds and runs its gate
    Case("qwen2_moe", lengths=(6,),
         shrink={**MQA, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 0,
                 "num_experts": 3, "num_experts_per_tok": 1},
         note="multi-query; a 0-wide shared expert (its gate still runs)"),
    Case("qwen3_moe", lengths=LENGTHS,
         shrink={**GQA, "head_dim": 16, "moe_intermediate_size": 16, "num_experts": 4,
                 "num_experts_per_tok": 2},
         variants=(dict(decoder_sparse_step=2, attention_bias=True),
                   dict(mlp_only_layers=[1], use_sliding_window=True, sliding_window=4,
                        max_window_layers=1, norm_topk_prob=True, **TIED))),
    Case("qwen3_moe", lengths=(6,),
         shrink={**MQA, "moe_intermediate_size": 16, "num_experts": 3,
                 "num_experts_per_tok": 3}, note="multi-query; top-3 of 3 experts"),
    # latent attention, shared experts, groups of experts, dense-first layers; shrunk to three
    # layers, the default (first_k_dense_replace 3) is dense throughout, the variants are not
    Case("deepseek_v3", lengths=(1, 6),
         shrink=dict(SIZES, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
                     moe_intermediate_size=16, q_lora_rank=16, kv_lora_rank=12,
                     qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, n_routed_experts=8,
                     num_experts_per_tok=2, n_group=2, topk_group=1),
         variants=(dict(q_lora_rank=None, first_k_dense_replace=1, attention_bias=True),
                   dict(n_shared_experts=2, first_k_dense_replace=0, num_nextn_predict_layers=0,
                        **TIED),
                   dict(n_shared_experts=0, first_k_dense_replace=2))),
    # attention sinks, biases everywhere, window and full layers alternating, a router bias
    Case("gpt_oss", lengths=LENGTHS,
         shrink={**EXPERTS, "head_dim": 16, "num_hidden_layers": 4, "num_local_experts": 4,
                 "num_experts_per_tok": 2, "sliding_window": 4},
         variants=(dict(attention_bias=False, **TIED),
                   dict(num_hidden_layers=4, layer_types=["full_attention", "sliding_attention",
                                                          "sliding_attention",
                                                          "full_attention"]))),
    Case("gpt_oss", lengths=(6,),
         shrink={**MQA, "intermediate_size": 32, "num_local_experts": 3,
                 "num_experts_per_tok": 1, "sliding_window": 4},
         note="multi-query; top-1 of 3 experts"),
]

# --------------------------------------------------------------- Qwen3.5 text (gated DeltaNet)
_ATTN = dict(vocab_size=97, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16)
_DELTA = dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
              linear_value_head_dim=12)
DELTA_LENGTHS = (1, 5, 64, 70)

CASES += [
    Case("qwen3_5_text", shrink={**_ATTN, **_DELTA, "intermediate_size": 96},
         lengths=DELTA_LENGTHS, cache=True,
         variants=(dict(full_attention_interval=2, attention_bias=True, linear_conv_kernel_dim=3,
                        **TIED),
                   dict(layer_types=["full_attention", "linear_attention", "linear_attention",
                                     "full_attention"], num_hidden_layers=4))),
    Case("qwen3_5_moe_text", lengths=DELTA_LENGTHS, cache=True,
         shrink={**_ATTN, **_DELTA, "num_experts": 4, "num_experts_per_tok": 2,
                 "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24},
         variants=(dict(full_attention_interval=2, linear_conv_kernel_dim=2, **TIED),
                   dict(attention_bias=True))),
]

# ---------------------------------------------------------------------- encoders, seq2seq
CASES += [
    Case("bert", auto="masked_lm", shrink=BERT, lengths=(1, 7),
         variants=(UNTIED, dict(type_vocab_size=1, hidden_act="relu"))),
    # T5 (relu), T5 v1.1 / Flan (gated-gelu, untied), a deeper decoder
    Case("t5", auto="seq2seq", shrink=T5, lengths=(1, 6),
         variants=(dict(feed_forward_proj="gated-gelu", **UNTIED),
                   dict(num_decoder_layers=3, d_kv=24))),
]

# ------------------------------------------------------------- wrappers: the language model
WRAP = dict(GQA, vocab_size=512)
VIT = dict(hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=4,
           image_size=32, patch_size=8)
CLIP = {"model_type": "clip_vision_model", **VIT}
# PerceptionLM's projector reads the timm tower's model_args["embed_dim"]
PLM_VISION = {**CLIP, "model_args": {"embed_dim": 48}}
# Aya Vision 8B's SigLIP (transformers' default has 14 heads of 1152, which SigLIP rejects)
AYA_VISION = dict(model_type="siglip_vision_model", hidden_size=1152, intermediate_size=4304,
                  num_hidden_layers=27, num_attention_heads=16, image_size=364, patch_size=14,
                  vision_use_head=False)
# FunAsrNanoConfig's text defaults (its SubConfigSpec init_kwargs)
FUN_ASR_TEXT = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                    num_attention_heads=16, num_key_value_heads=8,
                    max_position_embeddings=40960, tie_word_embeddings=True)
FUN_ASR_AUDIO = dict(num_mel_bins=16, hidden_size=32, num_attention_heads=4,
                     intermediate_size=48, num_hidden_layers=3,
                     num_timestamp_prediction_layers=1)
STAND_IN = "a CLIP tower stands in for the timm one (not read: the language model is counted)"
# FastVlmConfig's text defaults (FastVLM-7B)
FAST_VLM_TEXT = dict(hidden_size=3584, vocab_size=152128, intermediate_size=18944,
                     num_attention_heads=28, num_key_value_heads=4, num_hidden_layers=28)


def wrapped(model_type: str, shrink: dict, variants: tuple, **kw) -> Case:
    return Case(model_type, shrink=shrink, variants=variants, text_config="text_config",
                count="text", lengths=(5,), **kw)


CASES += [
    wrapped("instructblipvideo", dict(hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                                      num_attention_heads=4, word_embed_proj_dim=64,
                                      vocab_size=512), (UNTIED,)),
    wrapped("aya_vision", {**WRAP, "sliding_window": 8, "top": {"vision_config": CLIP}},
            ({"top": {"vision_config": AYA_VISION, "tie_word_embeddings": False}},),
            fix={"top": {"vision_config": AYA_VISION}}),
    wrapped("fast_vlm", {**WRAP, "top": {"vision_config": CLIP}},
            # FastVlmConfig ties when either flag is true
            (TIED, {"top": {"vision_config": CLIP, "tie_word_embeddings": True}},
             {**TIED, "top": {"vision_config": CLIP, "tie_word_embeddings": False}}),
            fix={**FAST_VLM_TEXT, "top": {"vision_config": CLIP}}, note=STAND_IN),
    wrapped("perception_lm",
            {**WRAP, "top": {"vision_config": PLM_VISION}},
            # the wrapper's flag when set, else the text config's
            (TIED, {"top": {"vision_config": PLM_VISION, "tie_word_embeddings": True}},
             {**TIED, "top": {"vision_config": PLM_VISION, "tie_word_embeddings": False}}),
            fix={"top": {"vision_config": PLM_VISION}}, note=STAND_IN),
    # seeded: no hidden_size: transformers requires the adaptor's width to equal it
    wrapped("fun_asr_nano",
            {**WRAP, "top": {"adaptor_config": {"hidden_size": 64, "intermediate_size": 16},
                             "audio_config": FUN_ASR_AUDIO}},
            ({**UNTIED, "top": {"tie_word_embeddings": False}},), fix=FUN_ASR_TEXT,
            seeded_skip=("hidden_size",)),
]
