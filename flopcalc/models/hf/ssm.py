"""State-space and recurrent models: Mamba-2 (and, with the kinds for them, the hybrids built
from it), RWKV-4 (`_rwkv`, the `rwkv` kind)."""

from __future__ import annotations

from .common import Config, Raw


def mamba2_block(c: Config, *, heads: str, head_dim: str, state: str, groups: str, conv: str,
                 chunk: str, bias: str, conv_bias: str, out_bias: str | None = None,
                 norm: bool = True) -> Raw:
    """The `mamba2` block from a config's Mamba-2 keys (their names differ by family)."""
    block: Raw = {"n_heads": c(heads), "head_dim": c(head_dim), "d_state": c(state),
                  "n_groups": c(groups, 1), "d_conv": c(conv, 4), "chunk_size": c(chunk, 256),
                  "bias": bool(c(bias, False)), "conv_bias": bool(c(conv_bias, True)),
                  "gated_norm": norm}
    if out_bias is not None:
        block["out_bias"] = bool(c(out_bias, False))
    return block


def _mamba2(c: Config) -> Raw:
    """Mamba2ForCausalLM: embeddings, layers of an RMSNorm and a Mamba-2 mixer (no MLP), a final
    RMSNorm and the head (untied by default). transformers checks hidden_size·expand =
    num_heads·head_dim; the mixer's width is num_heads·head_dim."""
    return {
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "norm": "rmsnorm",
        "positions": "none",
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", False)),
        "layer_types": ["mamba2"],
        "mamba2": mamba2_block(c, heads="num_heads", head_dim="head_dim", state="state_size",
                               groups="n_groups", conv="conv_kernel", chunk="chunk_size",
                               bias="use_bias", conv_bias="use_conv_bias"),
    }


def _rwkv(c: Config) -> Raw:
    """RwkvForCausalLM (RWKV-4): embeddings, a LayerNorm on them (layer 0's `pre_ln`), layers
    of a LayerNorm and an RWKV block (time mixing at `attention_hidden_size`, default d; a
    LayerNorm; channel mixing at `intermediate_size`, default 4d), `ln_out` and the head
    (untied by default). `context_length` is the context it was trained at; no position
    table. `rescale_every` halves the hidden states in inference (element-wise)."""
    d = c("hidden_size", kind=int)
    return {
        "n_layers": c.layers(), "d_model": d, "norm": "layernorm", "positions": "none",
        "max_seq_len": c("context_length", None), "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", False)), "embedding_norm": True,
        "layer_types": ["rwkv"],
        "rwkv": {"attention_hidden_size": c("attention_hidden_size", None) or d,
                 "intermediate_size": c("intermediate_size", None) or 4 * d},
    }


# RwkvConfig's defaults (transformers 5.24) for the keys that size the model
_RWKV_DEFAULTS: Raw = {"vocab_size": 50277, "context_length": 1024, "hidden_size": 4096,
                       "num_hidden_layers": 32, "tie_word_embeddings": False}

CONVERTERS = {"mamba2": _mamba2, "rwkv": _rwkv}
DEFAULTS = {"rwkv": _RWKV_DEFAULTS}
ALIASES = {"rwkv": {"max_position_embeddings": "context_length"}}

_YAML = "; describe an approximation in a YAML file if one will do"
REFUSED = {
    "recurrent_gemma": ("RecurrentGemma's Griffin recurrent blocks (a real-gated linear "
                        "recurrent unit with its convolution and gates, between local-attention "
                        "layers) are not a layer kind flopcalc has" + _YAML),
}
