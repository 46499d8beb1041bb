"""Chameleon (Chameleon Team 2024, "Chameleon: Mixed-Modal Early-Fusion Foundation Models";
transformers 5.24 `models/chameleon/modeling_chameleon.py`, ChameleonForConditionalGeneration):
Llama's layers with QK-norms that are biased LayerNorms over all heads (`ChameleonLayerNorm`
of shape heads × head_dim: the statistics per head, a gain and a bias per element) in a model
of RMSNorms, `attention_bias` on q, k, v and o, `mlp_bias` on the SwiGLU, the norms after each
sublayer with `swin_norm` (the same tensors), the head tied by `tie_word_embeddings`.

Images reach the model as tokens of its own vocabulary: the VQ-VAE that turns pixels into them
(`ChameleonModel.vqmodel`, `vq_config`: a convolutional encoder with residual and attention
blocks, a codebook and two 1×1 convolutions) sits beside the language model, and is not read by
flopcalc nor counted: the notes say so, as for the other wrappers' towers.
"""

from __future__ import annotations

from .common import Config, Raw, bias, rotary_decoder


def _chameleon(c: Config) -> Raw:
    attn = c("attention_bias", False, bool)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, c("mlp_bias", False, bool)),
                "qk_norm": "all_heads", "qk_norm_form": "layernorm",
                "norm_placement": "post" if c("swin_norm", False, bool) else "pre"}
    cls = c.data.get("architectures")
    name = cls[0] if isinstance(cls, list) and cls and isinstance(cls[0], str) else "chameleon"
    own = raw.pop("notes", None)
    raw["notes"] = (f"{name}: the language model only; the VQ-VAE image tokenizer (vq_config) "
                    "of this model is not read by flopcalc and not counted"
                    + (f". {own}" if own else ""))
    return raw


CONVERTERS = {"chameleon": _chameleon}
# ChameleonConfig's defaults (transformers 5.24), for keys a file leaves out
DEFAULTS = {"chameleon": {"vocab_size": 65536, "hidden_size": 4096, "intermediate_size": 11008,
                          "num_hidden_layers": 32, "num_attention_heads": 32,
                          "num_key_value_heads": 32, "max_position_embeddings": 4096,
                          "hidden_act": "silu"}}
