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


def _molmo2_text(c: Config) -> Raw:
    """Molmo 2's language model (`molmo2/modeling_molmo2.py`, Molmo2TextModel, and the
    wrapper's head): OLMo 2's attention with q, k, v biased by `attention_bias` (o never), its
    q/k RMSNorms per head (`qk_norm_type` "qwen3") or over all heads ("olmo"), a SwiGLU; the
    norms before each sublayer, or after it with `norm_after` (OLMo 2's placement: the same
    tensors). The token table holds `vocab_size` + `additional_vocab_size` rows (the
    checkpoint's extra table concatenated on load), the head `vocab_size` outputs, never tied
    (Molmo2ForConditionalGeneration ties nothing). Which layers scale their rotary positions
    (`rope_scaling_layers`) changes no count."""
    attn = c("attention_bias", False, bool)
    kind = c("qk_norm_type", "qwen3", str)
    if kind not in ("qwen3", "olmo"):
        raise FlopcalcError(f"{c.label}: qk_norm_type {kind[:40]!r} is not 'qwen3' or 'olmo' "
                            "(Molmo 2's; transformers refuses any other)")
    return {**rotary_decoder(c), **bias(attn), "tie_embeddings": False,
            "qk_norm": "per_head" if kind == "qwen3" else "all_heads",
            "norm_placement": "post" if c("norm_after", False, bool) else "pre",
            "extra_token_rows": c("additional_vocab_size", 128, int)}


CONVERTERS = {"deepseek_ocr2_text": _deepseek_ocr2_text, "molmo2_text": _molmo2_text}
ALIASES = {"deepseek_ocr2_text": {"num_experts": "n_routed_experts"},
           "molmo2_text": {"qkv_bias": "attention_bias", "layer_norm_eps": "rms_norm_eps"}}
# Molmo2TextConfig's defaults (transformers 5.24), for keys a file leaves out
DEFAULTS = {"molmo2_text": {"hidden_size": 4096, "num_attention_heads": 32,
                            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
                            "num_hidden_layers": 36, "intermediate_size": 12288,
                            "max_position_embeddings": 36864, "hidden_act": "silu"}}
