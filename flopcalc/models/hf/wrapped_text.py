"""Nested text models of multimodal wrappers (models/hf/multimodal.py `WRAPPERS`) that are no
other type under another name: each is composed from the kinds other families use. Saved on
its own such a config builds the headless text model in transformers; flopcalc counts it with
the wrapper's LM head (tied by the file's `tie_word_embeddings`, whose default is the
wrapper's), as `multimodal.text_alone` does for the nested types that are another type."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder
from .decoders2 import _mlp_kinds


def _deepseek_ocr2_text(c: Config) -> Raw:
    """DeepSeek-OCR 2's language model (DeepSeek-V2-Lite without latent attention,
    `deepseek_ocr2/modeling_deepseek_ocr2.py`): Llama's attention with `attention_bias` on q, k,
    v and o and head_dim = hidden_size // num_attention_heads whatever the file says (its
    config's __post_init__ sets it); a SwiGLU of intermediate_size (`mlp_bias`) on the
    `mlp_layer_types` "dense" layers and, on the "sparse" ones, DeepSeek's mixture: a router
    without bias, `n_routed_experts` experts of moe_intermediate_size without biases, top
    `num_experts_per_tok`, and `n_shared_experts` fused into one SwiGLU (`mlp_bias`). The list
    is required: transformers cannot build the layers without it. `topk_method` and
    `routed_scaling_factor` count nothing."""
    attn, mlp = c("attention_bias", False), c("mlp_bias", False)
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, mlp), "head_dim": d // heads}
    if c.data.get("mlp_layer_types") is None:
        raise FlopcalcError(f"{c.label}: mlp_layer_types is missing; DeepSeek-OCR 2's text "
                            "model needs one 'dense' or 'sparse' per layer (transformers "
                            "cannot build its layers without it)")
    kinds = _mlp_kinds(c, [])
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("n_routed_experts", 64), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size", 1407),
                      "shared_experts": c("n_shared_experts", 2), "first_dense": 0,
                      "expert_bias": False,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


CONVERTERS = {"deepseek_ocr2_text": _deepseek_ocr2_text}
ALIASES = {"deepseek_ocr2_text": {"num_experts": "n_routed_experts"}}
