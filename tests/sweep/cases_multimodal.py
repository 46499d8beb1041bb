"""Multimodal wrappers (models/hf/multimodal.py and Llama 4's importer): the keys of each case are
its text model's (under `text_config`), and `top` holds the wrapper's own (`vision_config`,
projector keys, `tie_word_embeddings`).

Where flopcalc reads the tower, the parameter check is the whole wrapper on the meta device
(language model + tower + projector) at transformers' default config and at variants of the
tower, projector and tying; the FLOP check runs the shrunk wrapper (a tiny tower too) on text
tokens only, which is the text model (the towers' FLOPs on images: tests/pytorch/test_vision.py).
Elsewhere (`count="text"`) flopcalc counts the language model alone: its parameters against the
wrapper's language model and LM head (so the wrapper's tying rule is checked), its FLOPs against
the text model. A variant's `top` is replaced by the shrink's in the FLOP check (it still counts
in the parameter check at full size)."""

from . import Case
from .cases_sparse import llama4_all_experts

LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=512)
QWEN_ROPE = dict(rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                      mrope_section=[2, 3, 3]))
VIT = dict(hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=4,
           image_size=32, patch_size=8)
Q3V = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, patch_size=4,
           spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64,
           num_position_embeddings=16, deepstack_visual_indexes=[0])
Q3V_WIDE = {"top": {"vision_config": dict(depth=4, hidden_size=96, intermediate_size=200,
                                           num_heads=6, patch_size=14, spatial_merge_size=3,
                                           temporal_patch_size=1, in_channels=1,
                                           out_hidden_size=1024, num_position_embeddings=100,
                                           deepstack_visual_indexes=[1, 1, 7])}}
NEMOTRON_H = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=8, mamba_num_heads=8, mamba_head_dim=8,
                  n_groups=2, ssm_state_size=8, chunk_size=8, n_routed_experts=4,
                  moe_intermediate_size=16, moe_shared_expert_intermediate_size=24)
TIED, UNTIED = {"top": {"tie_word_embeddings": True}}, {"top": {"tie_word_embeddings": False}}


def _llama4_experts(config, batch: int, seq: int) -> int:
    return llama4_all_experts(config.text_config, batch, seq)


def tower(model_type: str, shrink: dict, variants: tuple = (), **kw) -> Case:
    return Case(model_type, shrink=shrink, variants=variants, text_config="text_config",
                auto="image_text", lengths=(5, 13), **kw)


def text_only(model_type: str, shrink: dict, variants: tuple = (UNTIED, TIED), **kw) -> Case:
    return Case(model_type, shrink=shrink, variants=variants, text_config="text_config",
                count="text", lengths=(5,), **kw)


CASES = [
    tower("llava", {**LLAMA, "top": {"vision_config": {"model_type": "clip_vision_model", **VIT}}},
          ({"top": {"vision_feature_layer": [-2, -5], "multimodal_projector_bias": False}},
           {"top": {"vision_config": {"model_type": "siglip_vision_model", **VIT},
                    "vision_feature_select_strategy": "full"}},
           {"top": {"vision_config": {"model_type": "pixtral", **VIT},
                    "vision_feature_select_strategy": "full", "vision_feature_layer": -1}},
           {"tie_word_embeddings": True}, TIED)),
    tower("paligemma", {**LLAMA, "head_dim": 16,
                        "top": {"vision_config": {"model_type": "siglip_vision_model", **VIT,
                                                  "vision_use_head": False},
                                "projection_dim": 64, "vocab_size": 512}},
          ({"top": {"projection_dim": 1024}},
           {"top": {"vision_config": {"model_type": "siglip_vision_model",
                                      "vision_use_head": True}}}, UNTIED)),
    tower("gemma3", {**LLAMA, "head_dim": 16, "sliding_window": 8,
                     "top": {"vision_config": {**VIT, "image_size": 64},
                             "mm_tokens_per_image": 16}},
          ({"top": {"vision_config": {"hidden_size": 1152, "intermediate_size": 4304,
                                      "num_hidden_layers": 27, "num_attention_heads": 16,
                                      "image_size": 896, "patch_size": 14,
                                      "vision_use_head": False}}}, UNTIED)),
    tower("shieldgemma2", {**LLAMA, "head_dim": 16, "sliding_window": 8,
                           "top": {"vision_config": {**VIT, "image_size": 64},
                                   "mm_tokens_per_image": 16}},
          ({"tie_word_embeddings": False}, {"top": {"mm_tokens_per_image": 64}})),
    tower("idefics3", {**LLAMA, "top": {"vision_config": VIT}},
          ({"top": {"scale_factor": 4}}, TIED)),
    tower("smolvlm", {**LLAMA, "top": {"vision_config": {**VIT, "image_size": 64},
                                       "scale_factor": 4}},
          ({"top": {"vision_config": {"image_size": 512, "patch_size": 16}}}, TIED)),
    tower("mistral3", {**LLAMA, "head_dim": 16,
                       "top": {"vision_config": {"model_type": "pixtral", **VIT,
                                                 "image_size": 128}}},
          ({"top": {"spatial_merge_size": 3, "multimodal_projector_bias": True}},
           {"top": {"vision_feature_layer": [-1, -2]}}, UNTIED)),
    tower("qwen2_vl", {**LLAMA, **QWEN_ROPE,
                       "top": {"vision_config": dict(depth=2, embed_dim=32, hidden_size=64,
                                                     num_heads=4, patch_size=4,
                                                     temporal_patch_size=2,
                                                     spatial_merge_size=2, mlp_ratio=3)}},
          ({"top": {"vision_config": {"depth": 4, "embed_dim": 256, "mlp_ratio": 3,
                                      "spatial_merge_size": 3, "temporal_patch_size": 1}}},
           {"tie_word_embeddings": True})),
    tower("qwen2_5_vl", {**LLAMA, **QWEN_ROPE,
                         "top": {"vision_config": dict(depth=3, hidden_size=32,
                                                       intermediate_size=56, num_heads=4,
                                                       patch_size=4, temporal_patch_size=2,
                                                       spatial_merge_size=2, out_hidden_size=64,
                                                       window_size=32,
                                                       fullatt_block_indexes=[1])}},
          ({"top": {"vision_config": {"fullatt_block_indexes": [0], "window_size": 56,
                                      "out_hidden_size": 1024, "in_channels": 1}}},
           {"tie_word_embeddings": True})),
    tower("internvl", {**LLAMA, "top": {"vision_config": VIT}},
          ({"top": {"vision_config": {"use_qk_norm": True, "norm_type": "rms_norm",
                                      "attention_bias": True, "use_mask_token": True,
                                      "use_mean_pooling": False,
                                      "use_absolute_position_embeddings": False},
                    "downsample_ratio": 0.25}}, UNTIED)),
    tower("llama4", dict(hidden_size=32, intermediate_size=12, intermediate_size_mlp=20,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=8, attention_chunk_size=4, floor_scale=3, vocab_size=64,
                         max_position_embeddings=64, num_local_experts=2,
                         interleave_moe_layer_step=2,
                         top={"vision_config": dict(hidden_size=48, intermediate_size=192,
                                                    num_hidden_layers=2, num_attention_heads=4,
                                                    image_size=32, patch_size=8,
                                                    vision_output_dim=96,
                                                    projector_input_dim=96,
                                                    projector_output_dim=96)}),
          ({"top": {"vision_config": {"hidden_size": 1408, "intermediate_size": 5632,
                                      "vision_output_dim": 4096, "image_size": 336,
                                      "num_hidden_layers": 4}}},
           {"tie_word_embeddings": True}),
          extra_flops=_llama4_experts,
          note="transformers computes every expert on every token; flopcalc counts top-k"),
    # the language model alone
    text_only("blip-2", dict(hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                             num_attention_heads=4, word_embed_proj_dim=64, vocab_size=512),
              ({"tie_word_embeddings": False},)),
    text_only("instructblip", dict(hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                                   num_attention_heads=4, word_embed_proj_dim=64,
                                   vocab_size=512), ({"tie_word_embeddings": False},)),
    text_only("cohere2_vision", {**LLAMA, "sliding_window": 8}),
    text_only("deepseek_vl", LLAMA), text_only("deepseek_vl_hybrid", LLAMA),
    text_only("fuyu", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, vocab_size=512)),
    text_only("glmasr", LLAMA), text_only("got_ocr2", LLAMA),
    text_only("granite_speech", LLAMA), text_only("granite_speech_plus", LLAMA),
    text_only("hyperclovax_vision_v2", LLAMA), text_only("idefics2", LLAMA),
    text_only("janus", LLAMA), text_only("lighton_ocr", {**LLAMA, "head_dim": 16}),
    text_only("llava_next", LLAMA), text_only("llava_next_video", LLAMA),
    text_only("llava_onevision", LLAMA), text_only("moss_transcribe_diarize",
                                                   {**LLAMA, "head_dim": 16}),
    text_only("omniasr", LLAMA), text_only("pp_chart2table", LLAMA),
    # Ovis2's untied head is the wrapper's hidden_size x vocab_size, which its class defaults
    # set apart from the text model's: only the tied head is checked
    # seeded: no tying: the untied head is the wrapper's width (see above)
    text_only("ovis2", LLAMA, (TIED,),
              seeded_skip=("tie_word_embeddings",)),
    text_only("qianfan_ocr", {**LLAMA, "head_dim": 16}), text_only("qwen2_audio", LLAMA),
    text_only("qwen3_asr", {**LLAMA, "head_dim": 16}), text_only("vibevoice_asr", LLAMA),
    text_only("video_llama_3", LLAMA), text_only("video_llava", LLAMA),
    text_only("vipllava", LLAMA), text_only("voxtral", LLAMA),
    text_only("lfm2_vl", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                              layer_types=["conv", "full_attention"])),
    text_only("exaone4_5", {**LLAMA, "sliding_window": 8}, (TIED,),
              fix={"model_type": "exaone4"}),
    # Qwen3-VL: deepstack mergers (a repeated index and one past the last layer: built, not
    # run), other merge, temporal patch, channels and position-table sizes
    tower("qwen3_vl", {**LLAMA, "head_dim": 16, **QWEN_ROPE, "top": {"vision_config": Q3V}},
          (Q3V_WIDE, UNTIED, TIED)),
    tower("cosmos3_omni", {**LLAMA, "head_dim": 16, **QWEN_ROPE, "top": {"vision_config": Q3V}},
          (Q3V_WIDE, TIED)),
    tower("qwen3_vl_moe", {**LLAMA, "head_dim": 16, **QWEN_ROPE, "num_experts": 4,
                           "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                           "top": {"vision_config": Q3V}}, (Q3V_WIDE, TIED)),
    # text types no causal-LM class takes: the FLOP check runs the wrapper, its tower shrunk
    text_only("glm_ocr", {**LLAMA, "head_dim": 16, **QWEN_ROPE,
                          "top": {"vision_config": dict(depth=2, hidden_size=32, num_heads=4,
                                                        image_size=16, patch_size=4,
                                                        out_hidden_size=64,
                                                        intermediate_size=64)}}),
    # seeded: no hidden_size: transformers requires the tower's out_hidden_size to equal it
    text_only("granite_docling", {**LLAMA, "pad_token_id": 0, "top": {"vision_config": {
        **VIT, "out_hidden_size": 64, "scale_factor": 2}}},
              seeded_skip=("hidden_size",)),
    text_only("minicpm_ocr", {**LLAMA, "head_dim": 16}),
    text_only("minicpmv4_6", {**LLAMA, "head_dim": 16}),
    text_only("nemo_speechlm", NEMOTRON_H), text_only("nemotron_h_omni", NEMOTRON_H),
    text_only("minicpmv4_7", {**LLAMA, "head_dim": 16}),
    text_only("kimi_k25", dict(hidden_size=64, intermediate_size=128, moe_intermediate_size=16,
                               num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=12,
                               qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
                               n_routed_experts=4, num_experts_per_tok=2, n_group=2,
                               topk_group=1, first_k_dense_replace=1, vocab_size=512)),
]
