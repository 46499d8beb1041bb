"""A wrapper's nested text type saved on its own (models/hf/multimodal.py `text_alone`):
`qwen2_vl_text`, `qwen2_5_vl_text`, `qwen3_vl_text`, `qwen3_vl_moe_text`, `glm_ocr_text`,
`granite_docling_text` (every `*_text` type of transformers 5.24 whose wrapper flopcalc reads).
transformers builds only the headless text model from such a file, so the check builds the
wrapper around it (`Case.wrapper`, the head tied by the text file's flag, else the wrapper
class's default) and compares its language model and LM head; FLOPs run the shrunk wrapper,
a tiny tower included, on text tokens."""

from . import Case
from .cases_multimodal import LLAMA, Q3V, QWEN_ROPE, VIT

TIED, UNTIED = {"tie_word_embeddings": True}, {"tie_word_embeddings": False}


def text(model_type: str, wrapper: str, shrink: dict, vision: dict, variants=(TIED,),
         width: str = "out_hidden_size") -> Case:
    """The case of a nested text type; the tower's output (`width`) is the text width, as the
    wrapper's config class checks."""
    def keys(text_config: dict) -> dict:
        return {"vision_config": {**vision, width: text_config["hidden_size"]}}

    return Case(model_type, shrink=shrink, variants=variants, lengths=(5,), count="text",
                wrapper=wrapper, wrapper_keys=keys)


CASES = [
    text("qwen2_vl_text", "qwen2_vl", {**LLAMA, **QWEN_ROPE},
         dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, patch_size=4,
              temporal_patch_size=2, spatial_merge_size=2, mlp_ratio=3),
         # tied; a window on the layers from max_window_layers on
         (TIED, dict(use_sliding_window=True, sliding_window=8, max_window_layers=1)),
         width="hidden_size"),
    text("qwen2_5_vl_text", "qwen2_5_vl", {**LLAMA, **QWEN_ROPE},
         dict(depth=3, hidden_size=32, intermediate_size=56, num_heads=4, patch_size=4,
              temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=64,
              window_size=32, fullatt_block_indexes=[1])),
    text("qwen3_vl_text", "qwen3_vl", {**LLAMA, "head_dim": 16, **QWEN_ROPE}, Q3V,
         (TIED, dict(num_key_value_heads=1, attention_bias=True))),
    text("qwen3_vl_moe_text", "qwen3_vl_moe",
         {**LLAMA, "head_dim": 16, **QWEN_ROPE, "num_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 16}, Q3V, (UNTIED,)),
    text("glm_ocr_text", "glm_ocr", {**LLAMA, "head_dim": 16, **QWEN_ROPE},
         dict(depth=2, hidden_size=32, num_heads=4, image_size=16, patch_size=4,
              out_hidden_size=64, intermediate_size=64)),
    text("granite_docling_text", "granite_docling", {**LLAMA, "pad_token_id": 0},
         {**VIT, "out_hidden_size": 64, "scale_factor": 2}, (UNTIED,)),
]
