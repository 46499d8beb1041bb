"""Multimodal wrappers and nested text types that were refused or unknown: Hy4-VL (`hy_v4_vl`,
`hy_v4_vl_text`), Molmo 2 (`molmo2`, `molmo2_text`), Chameleon (`chameleon`: its VQ-VAE image
tokenizer left out), Kosmos-2 (`kosmos-2`, `kosmos_2_text_model`), π0 (`pi0`: counted whole,
its forward one training step over a prefix given as embeddings), Unlimited-OCR
(`unlimited_ocr`, `unlimited_ocr_text`: DeepSeek-OCR 2's text model), ERNIE 4.5 VL MoE
(`ernie4_5_vl_moe`, `ernie4_5_vl_moe_text`: vision experts held beside the text experts),
Phi-4-multimodal (`phi4_multimodal`: Phi-3's layers).
Each as tests/sweep/cases_hf_wrappers.py's cases: parameters of the wrapper's language model
and LM head on the meta device (so its tying rule is checked), FLOPs of the text model, or of
the shrunk wrapper (a tiny tower included) on text tokens."""

from . import Case
from .cases_hf_dsv4 import HY_SHRINK
from .cases_hf_wrappers import DSOCR_TEXT

TIED, UNTIED = {"tie_word_embeddings": True}, {"tie_word_embeddings": False}
TOP_TIED, TOP_UNTIED = {"top": TIED}, {"top": UNTIED}

# Hy4's shrunk layers with the three-axis rotary sections HYV4VLTextConfig checks (they sum to
# qk_rope_head_dim / 2 = 2); a tiny HunYuan-VL tower whose output is the text width
HY_VL_TEXT = {**HY_SHRINK, "rope_parameters": dict(rope_type="default", rope_theta=10000.0,
                                                   mrope_section=[1, 1, 0])}
HY_VL_TOP = {"vision_config": dict(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                   num_hidden_layers=2, out_hidden_size=64, patch_size=4,
                                   max_image_size=64)}

# Molmo 2's shrunk text model (16 extra token rows); a tiny ViT and adapter whose output is the
# text width
MOLMO2_TEXT = dict(vocab_size=100, additional_vocab_size=16, hidden_size=64,
                   intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16)
MOLMO2_TOP = {"vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=4, head_dim=8,
                                    image_size=[16, 16], patch_size=4),
              "adapter_config": dict(hidden_size=32, num_attention_heads=4,
                                     num_key_value_heads=4, head_dim=8, intermediate_size=48,
                                     text_hidden_size=64, vision_feature_layer=[-1])}

# Kosmos-2's shrunk text model; a tiny vision model and 4 latent queries
KOSMOS_TEXT = dict(vocab_size=100, embed_dim=64, layers=2, ffn_dim=96, attention_heads=4,
                   max_position_embeddings=64)
KOSMOS_TOP = {"vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                    num_attention_heads=4, image_size=16, patch_size=4),
              "latent_query_num": 4}


def _kosmos_inputs(config, batch: int, seq: int) -> dict:
    """Text tokens, and the 4 image embeddings Kosmos2ForConditionalGeneration requires, given
    (no vision model run) in place of tokens 1-4 (a copy, no matmul): seq >= 5."""
    import torch

    torch.manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    mask = torch.zeros_like(ids)
    mask[:, 1:5] = 1
    return {"input_ids": ids, "image_embeds": torch.zeros(batch, 4, config.embed_dim),
            "image_embeds_position_mask": mask}

# π0 shrunk: a 2-layer Gemma backbone of 64 (1 KV head of 16) with a tiny SigLIP, an expert of
# 48 whose layers read the backbone's keys, 5 actions of 7, a state of 6
PI0 = {"vlm_config": dict(model_type="paligemma", projection_dim=64, image_token_id=97,
                          text_config=dict(model_type="gemma", hidden_size=64,
                                           intermediate_size=96, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=1,
                                           head_dim=16, vocab_size=97),
                          vision_config=dict(model_type="siglip_vision_model", hidden_size=32,
                                             intermediate_size=48, num_hidden_layers=2,
                                             num_attention_heads=4, patch_size=4,
                                             image_size=16, vision_use_head=False)),
       "dit_config": dict(model_type="gemma", hidden_size=48, intermediate_size=80,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                          head_dim=16),
       "chunk_size": 5, "max_action_dim": 7, "max_state_dim": 6}

# Unlimited-OCR's tiny SAM and CLIP encoders for the FLOP run (text tokens only: never run)
UOCR_TOP = {"vision_config": {"sam_config": dict(hidden_size=32, num_hidden_layers=2,
                                                 num_attention_heads=4, mlp_dim=64,
                                                 global_attn_indexes=[1], image_size=64,
                                                 patch_size=16, output_channels=16,
                                                 downsample_channels=[16, 32]),
                              "encoder_config": dict(hidden_size=32, intermediate_size=64,
                                                     num_hidden_layers=2,
                                                     num_attention_heads=4)}}

# ERNIE 4.5 VL MoE shrunk: 3 layers (the first dense), 4 text experts of 24 and 4 vision experts
# of 16, top 2, one shared expert; a tiny ViT (its output the text width)
ERNIE_VL = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=2, moe_num_experts=4, moe_k=2,
                moe_intermediate_size=[24, 16], moe_num_shared_experts=1,
                rope_parameters=dict(rope_type="default", rope_theta=500000.0,
                                     mrope_section=[3, 3, 2]))
ERNIE_VL_TOP = {"vision_config": dict(depth=2, hidden_size=32, intermediate_size=64,
                                      num_heads=4, patch_size=4)}

# Phi-4-multimodal's tiny encoders for the FLOP run (text tokens only: never run)
PHI4_TOWERS = {"vision_config": dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                     num_attention_heads=4, image_size=16, patch_size=4,
                                     crop_size=16),
               "audio_config": dict(hidden_size=32, intermediate_size=48, num_blocks=2,
                                    num_attention_heads=4, nemo_conv_channels=32,
                                    depthwise_seperable_out_channel=32, ext_pw_out_channel=32,
                                    time_reduction=8)}


def _pi0_inputs(config, batch: int, seq: int) -> dict:
    """One training step over a prefix of `seq` embeddings: PI0Model runs the backbone when
    pixel_values are given and uses `inputs_embeds` in place of embedding them (the tower does
    not run: flopcalc counts it only with --images), then the expert; a fixed timestep."""
    import torch

    torch.manual_seed(1)
    width = config.vlm_config.text_config.hidden_size
    return {"inputs_embeds": torch.randn(batch, seq, width),
            "pixel_values": torch.zeros(batch, 1, 3, 4, 4),
            "state": torch.randn(batch, config.max_state_dim),
            "timestep": torch.full((batch,), 0.5)}


def _molmo2_inputs(config, batch: int, seq: int) -> dict:
    """Text tokens, and the `mm_token_type_ids` Molmo 2 requires in training (all text)."""
    import torch

    torch.manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    return {"input_ids": ids, "mm_token_type_ids": torch.zeros_like(ids)}


def text_only(model_type: str, shrink: dict, variants: tuple, **kw) -> Case:
    return Case(model_type, shrink=shrink, variants=variants, text_config="text_config",
                count="text", lengths=(5,), **kw)


def nested(model_type: str, wrapper: str, shrink: dict, top: dict, variants: tuple,
           **kw) -> Case:
    """A nested text type saved on its own, checked inside `wrapper` (its `top` keys: a tiny
    tower for the FLOP run)."""
    return Case(model_type, shrink=shrink, variants=variants, lengths=(5,), count="text",
                wrapper=wrapper, wrapper_keys=lambda text: dict(top), **kw)


CASES = [
    text_only("hy_v4_vl", {**HY_VL_TEXT, "top": HY_VL_TOP},
              (TOP_TIED, {**TIED, "num_hidden_layers": 6,
                          "mlp_layer_types": ["dense", "dense", "sparse"] * 2,
                          "attention_bias": True},
               {"hc_mult": 2, "n_shared_experts": 2, "num_hidden_layers": 6,
                "indexer_types": ["full", "shared", "full", "full", "shared", "shared"]})),
    nested("hy_v4_vl_text", "hy_v4_vl", HY_VL_TEXT, HY_VL_TOP,
           (TIED, UNTIED, {"hc_mult": 1, "n_shared_experts": 0})),
    # never tied; OLMo 2's q/k norms over all heads and norms after the sublayers; no extra
    # rows; q, k, v biased
    text_only("molmo2", {**MOLMO2_TEXT, "top": MOLMO2_TOP},
              (TOP_TIED, {"qk_norm_type": "olmo", "norm_after": True},
               {"additional_vocab_size": 0, "attention_bias": True, "num_key_value_heads": 4}),
              inputs=_molmo2_inputs),
    nested("molmo2_text", "molmo2", MOLMO2_TEXT, MOLMO2_TOP,
           (TIED, {"qk_norm_type": "olmo", "additional_vocab_size": 300}),
           inputs=_molmo2_inputs),
    # the language model and head beside the VQ-VAE (not counted): GQA, biases, norms after
    # the sublayers, a tied head
    Case("chameleon", count="text", auto="image_text", wrapper_auto="image_text", lengths=(5,),
         shrink=dict(vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4,
                     vq_config=dict(base_channels=32, channel_multiplier=[1, 1],
                                    latent_channels=32, embed_dim=8, num_embeddings=16,
                                    resolution=16, num_res_blocks=1)),
         # its default config does not build without a vocabulary map (the image token's id)
         fix={"vocabulary_map": {"<image>": 3, "IMGIMGBA": 4}},
         variants=({"num_key_value_heads": 2, "attention_bias": True, "mlp_bias": True},
                   {"swin_norm": True, "tie_word_embeddings": True})),
    # tied when the wrapper's flag or the text config's is; a ReLU; no scaled embedding (a
    # multiply only)
    text_only("kosmos-2", {**KOSMOS_TEXT, "top": KOSMOS_TOP},
              ({**UNTIED, "top": {**KOSMOS_TOP, **UNTIED}},
               {**TIED, "top": {**KOSMOS_TOP, **UNTIED}},
               {"activation_function": "relu", "scale_embedding": False}),
              inputs=_kosmos_inputs),
    nested("kosmos_2_text_model", "kosmos-2", KOSMOS_TEXT, KOSMOS_TOP,
           (UNTIED, {"attention_heads": 2, "ffn_dim": 40}), inputs=_kosmos_inputs),
    # counted whole: the default config and other chunk, action and state widths; shrunk, an
    # expert of one layer with biases
    # no seeded variants: its sizes are all in the nested vlm_config and dit_config (no generic
    # key at the top level to draw)
    Case("pi0", auto="image_text", shrink=PI0, inputs=_pi0_inputs, lengths=(3, 9),
         variants=({"chunk_size": 9, "max_action_dim": 12, "max_state_dim": 3},), seeded=0),
    # as many KV heads as heads: its eager attention does not repeat grouped keys
    text_only("unlimited_ocr", {**DSOCR_TEXT, "num_key_value_heads": 4, "top": UOCR_TOP},
              (TOP_TIED, {"mlp_layer_types": ["sparse"] * 12, "n_shared_experts": 1,
                          "attention_bias": True, "mlp_bias": True})),
    nested("unlimited_ocr_text", "unlimited_ocr", {**DSOCR_TEXT, "num_key_value_heads": 4},
           UOCR_TOP, (TIED, {"first_k_dense_replace": 3, "sliding_window": 2})),
    # seeded: no width or heads: its 3-D RoPE sections need the default's head width
    text_only("ernie4_5_vl_moe", {**ERNIE_VL, "top": ERNIE_VL_TOP},
              (TOP_UNTIED, {"use_bias": True, "moe_num_shared_experts": 0,
                            "num_hidden_layers": 3,
                            "mlp_layer_types": ["sparse", "dense", "sparse"]}),
              seeded_skip=("hidden_size", "num_attention_heads")),
    # seeded: no width or heads: its 3-D RoPE sections need the default's head width
    nested("ernie4_5_vl_moe_text", "ernie4_5_vl_moe", ERNIE_VL, ERNIE_VL_TOP,
           (UNTIED, {"moe_intermediate_size": [40, 8], "moe_k": 1}),
           seeded_skip=("hidden_size", "num_attention_heads")),
    # a flat file: the text keys at the top level beside tiny image and audio encoders
    Case("phi4_multimodal", count="text", lengths=(5,), auto="causal_lm",
         wrapper_auto="causal_lm",
         shrink=dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, pad_token_id=0,
                     bos_token_id=1, eos_token_id=2, **PHI4_TOWERS),
         variants=({"tie_word_embeddings": True}, {"tie_word_embeddings": False,
                                                   "num_key_value_heads": 4})),
    Case("pi0", auto="image_text", inputs=_pi0_inputs, lengths=(4,),
         fix={**PI0, "dit_config": {**PI0["dit_config"], "num_hidden_layers": 1,
                                    "attention_bias": True}}),
]
