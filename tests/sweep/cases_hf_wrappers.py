"""More multimodal wrappers whose language model flopcalc counts alone (models/hf/multimodal.py
`WRAPPERS`), and their nested text types saved on their own (`text_alone`): as
tests/sweep/cases_multimodal.py's `text_only` cases (parameters: the wrapper's language model
and LM head on the meta device, so its tying rule is checked; FLOPs: the text model, or the
shrunk wrapper, a tiny tower included, on text tokens where no causal-LM class takes the text
config) and tests/sweep/cases_wrapped_text.py's nested-type cases."""

from . import Case
from .cases_encoders import BART, SEQ2SEQ
from .cases_multimodal import LLAMA, QWEN_ROPE, VIT

TIED, UNTIED = {"tie_word_embeddings": True}, {"tie_word_embeddings": False}
TOP_TIED, TOP_UNTIED = {"top": TIED}, {"top": UNTIED}
HEAD16 = {**LLAMA, "head_dim": 16}

# tiny towers for the FLOP runs that build the whole wrapper (text tokens only: never run)
GLM4V_VISION = dict(depth=2, hidden_size=32, num_heads=4, intermediate_size=64, patch_size=4,
                    image_size=16, out_hidden_size=64)
HUNYUAN_VISION = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                      num_hidden_layers=2, out_hidden_size=64, patch_size=4)
PADDLE_VISION = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                     num_hidden_layers=2, patch_size=4, image_size=16)
OMNI_TOWERS = dict(vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4,
                                      patch_size=4, out_hidden_size=64,
                                      fullatt_block_indexes=[1]),
                   audio_config=dict(encoder_layers=2, d_model=32, encoder_attention_heads=4,
                                     encoder_ffn_dim=64, output_dim=64))
OMNI_MOE_TOWERS = dict(vision_config=dict(depth=2, hidden_size=32, intermediate_size=64,
                                          num_heads=4, patch_size=4, out_hidden_size=64,
                                          num_position_embeddings=16,
                                          deepstack_visual_indexes=[0]),
                       audio_config=dict(encoder_layers=2, d_model=32, encoder_attention_heads=4,
                                         encoder_ffn_dim=64, output_dim=64))
# Granite4Vision's Q-Former takes the tower's width with heads of 64
GRANITE_VISION = dict(vision_config=dict(hidden_size=64, intermediate_size=80,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         image_size=32, patch_size=8),
                      qformer_config=dict(num_hidden_layers=1, intermediate_size=64),
                      deepstack_layer_map=[[-1, 0]], downsample_rate="4/8")
# its default config does not build (no deepstack_layer_map, no downsample_rate): one
# projector (vision layer -1 into text layer 0), 4 queries per window of 8
GRANITE_MAP = {"deepstack_layer_map": [[-1, 0]], "downsample_rate": "4/8"}
EMU3_MAP = {"vocabulary_map": {"<image>": 3, "<|extra_200|>": 4,
                                "<|visual token 000000|>": 5}}
COSMOS_TEXT = {**HEAD16, **QWEN_ROPE}
COSMOS_TOP = {"vision_config": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, patch_size=4, num_patches=16),
              "projector_hidden_size": 64}
DSOCR_FIX = {"mlp_layer_types": ["dense"] + ["sparse"] * 31, "num_experts_per_tok": 6}
DSOCR_TEXT = {**LLAMA, "mlp_layer_types": ["dense", "sparse"], "n_routed_experts": 4,
              "num_experts_per_tok": 2, "moe_intermediate_size": 16, "n_shared_experts": 2}
DSOCR_TOP = {"vision_config": {"sam_config": dict(hidden_size=32, num_hidden_layers=2,
                                                  num_attention_heads=4, mlp_dim=64,
                                                  global_attn_indexes=[1], image_size=64,
                                                  patch_size=16, output_channels=16,
                                                  downsample_channels=[16, 32]),
                               "encoder_config": dict(hidden_size=32, intermediate_size=64,
                                                      num_hidden_layers=2,
                                                      num_attention_heads=4,
                                                      num_key_value_heads=2)}}
MODERNBERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                  intermediate_size=96, max_position_embeddings=64, local_attention=4,
                  pad_token_id=0, cls_token_id=1, sep_token_id=2, bos_token_id=1, eos_token_id=2)
GLM4V_TEXT = {**LLAMA, "rope_parameters": dict(rope_type="default", rope_theta=10000.0,
                                               partial_rotary_factor=0.5,
                                               mrope_section=[1, 1, 2])}
GLM4V_MOE_TEXT = {**GLM4V_TEXT, "n_routed_experts": 4, "num_experts_per_tok": 2,
                  "moe_intermediate_size": 16, "n_shared_experts": 1,
                  "first_k_dense_replace": 1}
HUNYUAN_TEXT = {**LLAMA, "head_dim": 16,
                "rope_parameters": dict(rope_type="default", rope_theta=10000.0,
                                        mrope_section=[2, 2, 2, 2])}
PADDLE_TEXT = {**HEAD16, **QWEN_ROPE}
OMNI_TEXT = {**LLAMA, **QWEN_ROPE}
OMNI_MOE_TEXT = {**LLAMA, **QWEN_ROPE, "num_experts": 4, "num_experts_per_tok": 2,
                 "moe_intermediate_size": 16}


def text_only(model_type: str, shrink: dict, variants: tuple = (TOP_UNTIED, TOP_TIED),
              **kw) -> Case:
    return Case(model_type, shrink=shrink, variants=variants, text_config="text_config",
                count="text", lengths=(5,), **kw)


def nested(model_type: str, wrapper: str, shrink: dict, top: dict, variants=(TIED,),
           **kw) -> Case:
    """A nested text type saved on its own, checked inside `wrapper` (its `top` keys: a tiny
    tower for the FLOP run)."""
    return Case(model_type, shrink=shrink, variants=variants, lengths=(5,), count="text",
                wrapper=wrapper, wrapper_keys=lambda text: dict(top), **kw)


CASES = [
    text_only("audioflamingo3", LLAMA, (TOP_TIED, TIED), wrapper_auto="seq2seq"),
    text_only("musicflamingo", LLAMA, (TOP_TIED, TIED), wrapper_auto="seq2seq"),
    text_only("lfm3_vl", {**HEAD16, "pad_token_id": 0}),
    # the image and audio codebooks' token ranges must fit the shrunk vocabulary
    # seeded: no vocab_size: transformers requires the audio token range inside it
    text_only("apertus1p5", {**LLAMA, "top": dict(
        image_token_offset=300, audio_token_offset=400, image_token_id=1, audio_token_id=2,
        vision_config=dict(codebook_size=100), audio_config=dict(codebook_size=100))},
              seeded_skip=("vocab_size",)),
    text_only("glm4v", {**GLM4V_TEXT, "top": {"vision_config": GLM4V_VISION}},
              (TOP_TIED, {**TIED, "num_key_value_heads": 4})),
    text_only("glm46v", {**GLM4V_TEXT, "top": {"vision_config": GLM4V_VISION}},
              (TOP_TIED, {"attention_bias": False})),
    text_only("glmga", {**GLM4V_TEXT, "top": {"vision_config": GLM4V_VISION}}, (TOP_TIED,)),
    text_only("glm4v_moe", {**GLM4V_MOE_TEXT, "top": {"vision_config": GLM4V_VISION}},
              (TIED, {"first_k_dense_replace": 0, "n_shared_experts": 2,
                      "attention_bias": False}, {"num_key_value_heads": 4})),
    text_only("hunyuan_vl", {**HUNYUAN_TEXT, "top": {"vision_config": HUNYUAN_VISION}},
              (TOP_UNTIED, {**TOP_UNTIED, "attention_bias": True}),
              fix={"head_dim": 128}),
    text_only("paddleocr_vl", {**PADDLE_TEXT, "top": {"vision_config": PADDLE_VISION}},
              (TOP_UNTIED, {**TOP_UNTIED, "use_bias": True})),
    text_only("qwen2_5_omni_thinker", {**OMNI_TEXT, "top": OMNI_TOWERS},
              (TOP_TIED, {"num_key_value_heads": 4})),
    text_only("qwen3_omni_moe_thinker", {**OMNI_MOE_TEXT, "top": OMNI_MOE_TOWERS},
              (TOP_TIED, {"head_dim": 16, "mlp_only_layers": [0]},
               {"decoder_sparse_step": 2, "attention_bias": True})),
    text_only("granite4_vision", {**LLAMA, "top": GRANITE_VISION},
              ({"top": {**GRANITE_MAP, **TIED}},
               {"attention_bias": True, "mlp_bias": True, "top": GRANITE_MAP}),
              fix={"top": GRANITE_MAP}),
    nested("qwen3_omni_moe_text", "qwen3_omni_moe_thinker", OMNI_MOE_TEXT, OMNI_MOE_TOWERS,
           (UNTIED, {"head_dim": 32})),
    nested("granite4_vision_text", "granite4_vision", LLAMA, GRANITE_VISION,
           (TIED, {"num_key_value_heads": 1})),
    # BART's tables tied by its own flag, the head by the wrapper's: every combination
    Case("florence2", shrink=BART, text_config="text_config", count="text", auto="seq2seq",
         wrapper_auto="image_text", lengths=SEQ2SEQ,
         variants=(TOP_UNTIED, TIED, UNTIED, {**UNTIED, **TOP_UNTIED},
                   {"decoder_attention_heads": 2, "encoder_ffn_dim": 128})),
    # its default config does not build without a vocabulary map (the image tokens' ids)
    text_only("emu3", {**LLAMA, "pad_token_id": 0},
              ({"top": {**EMU3_MAP, **TIED}},
               {"attention_bias": True, "mlp_bias": True, "top": EMU3_MAP}),
              fix={"top": EMU3_MAP}),
    nested("emu3_text_model", "emu3", {**LLAMA, "pad_token_id": 0}, EMU3_MAP,
           (TIED, {"num_key_value_heads": 4})),
    # seeded: no head_dim: its mrope_section must sum to half of it
    text_only("cosmos3_edge", {**COSMOS_TEXT, "top": COSMOS_TOP},
              (TOP_TIED, {"attention_bias": True, "mlp_bias": True, "hidden_act": "gelu"}),
              seeded_skip=("head_dim",)),
    # the wrapper never ties its head, whatever the text file's flag
    # seeded: no head_dim: its mrope_section must sum to half of it
    nested("cosmos3_edge_text", "cosmos3_edge", COSMOS_TEXT, COSMOS_TOP,
           ({"num_key_value_heads": 4}, TIED),
           seeded_skip=("head_dim",)),
    # its default config does not build: no mlp_layer_types, no num_experts_per_tok
    text_only("deepseek_ocr2", {**DSOCR_TEXT, "top": DSOCR_TOP},
              (TOP_TIED, {**DSOCR_FIX, "mlp_layer_types": ["sparse"] * 32, "n_shared_experts": 1,
                          "attention_bias": True, "mlp_bias": True, "head_dim": 7}),
              fix=DSOCR_FIX),
    nested("deepseek_ocr2_text", "deepseek_ocr2", DSOCR_TEXT, DSOCR_TOP,
           (TIED, {"mlp_layer_types": ["sparse"] * 32, "num_key_value_heads": 1}),
           fix=DSOCR_FIX),
    # a masked LM: parameters with its prediction head, FLOPs of ModernBertForMaskedLM
    Case("modernvbert", shrink={**MODERNBERT, "top": {"vision_config": VIT}},
         text_config="text_config", count="text", auto="masked_lm", wrapper_auto="masked_lm",
         lengths=(1, 9),
         variants=(TOP_TIED, {"norm_bias": True, "attention_bias": True, "mlp_bias": True,
                              "classifier_bias": True, "top": TIED},
                   {"decoder_bias": False}, {"global_attn_every_n_layers": 2})),
    nested("glm4v_text", "glm4v", GLM4V_TEXT, {"vision_config": GLM4V_VISION}),
    nested("glm4v_moe_text", "glm4v_moe", GLM4V_MOE_TEXT, {"vision_config": GLM4V_VISION},
           (TIED, {"first_k_dense_replace": 2})),
    nested("hunyuan_vl_text", "hunyuan_vl", HUNYUAN_TEXT, {"vision_config": HUNYUAN_VISION},
           (UNTIED,), fix={"head_dim": 128}),
    nested("paddleocr_vl_text", "paddleocr_vl", PADDLE_TEXT, {"vision_config": PADDLE_VISION},
           (UNTIED, {"use_bias": True})),
    nested("qwen2_5_omni_text", "qwen2_5_omni_thinker", OMNI_TEXT, OMNI_TOWERS,
           (TIED, UNTIED)),
]
