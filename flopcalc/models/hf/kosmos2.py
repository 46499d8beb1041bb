"""Kosmos-2's language model (Peng et al. 2023, "Kosmos-2: Grounding Multimodal Large Language
Models to the World"; transformers 5.24 `models/kosmos2/modeling_kosmos2.py`,
Kosmos2TextForCausalLM inside Kosmos2ForConditionalGeneration): XGLM's pre-norm layers
(q, k, v, out_proj, fc1 and fc2 biased, LayerNorms, sinusoidal positions held as a buffer) with
Magneto's sub-LayerNorms (`inner_attn_ln` over the attention output before out_proj,
`ffn_layernorm` over the MLP's hidden activations before fc2: flopcalc's `sub_norms`), a final
LayerNorm, the head tied by `tie_word_embeddings` (in the wrapper: its own flag or the text
config's). The wrapper's CLIP-like
vision model and its image-to-text projection (latent queries with their cross-attention) are
not read: the notes say so.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw


def _kosmos_2_text_model(c: Config) -> Raw:
    if c("add_cross_attention", False, bool):
        raise FlopcalcError(f"{c.label}: add_cross_attention true gives every Kosmos-2 text layer "
                            "a cross-attention that flopcalc does not count; describe an "
                            "approximation in a YAML file if one will do")
    act = str(c("activation_function", "gelu", str))
    return {
        "n_layers": c("layers", expect=int),
        "d_model": c("embed_dim", expect=int),
        "n_heads": c("attention_heads", expect=int),
        "d_ff": c("ffn_dim", expect=int),
        "mlp": "plain",
        "activation": "relu" if act == "relu" else "silu" if act in ("silu", "swish") else "gelu",
        "bias": True,
        "norm": "layernorm",
        "sub_norms": True,
        "positions": "sinusoidal",
        "max_seq_len": c("max_position_embeddings", expect=int),
        "vocab_size": c("vocab_size", expect=int),
        "tie_embeddings": c("tie_word_embeddings", True, bool),
    }


CONVERTERS = {"kosmos_2_text_model": _kosmos_2_text_model}
# Kosmos2TextConfig's defaults (transformers 5.24), for keys a file leaves out
DEFAULTS = {"kosmos_2_text_model": {"vocab_size": 65037, "max_position_embeddings": 2048,
                                    "embed_dim": 2048, "layers": 24, "ffn_dim": 8192,
                                    "attention_heads": 32}}
