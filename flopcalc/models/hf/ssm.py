"""State-space and recurrent models: Mamba-2 (and, with the kinds for them, the hybrids built
from it), RWKV-4 (`_rwkv`, the `rwkv` kind), RecurrentGemma (`_recurrent_gemma`: Griffin's
`rglru` blocks between local-attention layers)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import NO_CONTEXT, Config, Raw, shortest_period


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
    d = c("hidden_size", expect=int)
    return {
        "n_layers": c.layers(), "d_model": d, "norm": "layernorm", "positions": "none",
        "max_seq_len": c("context_length", None), "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", False)), "embedding_norm": True,
        "layer_types": ["rwkv"],
        "rwkv": {"attention_hidden_size": c("attention_hidden_size", None) or d,
                 "intermediate_size": c("intermediate_size", None) or 4 * d},
    }


def _recurrent_gemma(c: Config) -> Raw:
    """RecurrentGemmaForCausalLM (Griffin): layer i's temporal block follows `block_types`
    repeated over the layers (default recurrent, recurrent, attention): Griffin's recurrent
    block (`rglru`: `lru_width`, default d; gate blocks of `num_attention_heads`;
    `conv1d_width` taps) or local attention over `attention_window_size` keys (heads of
    d // heads, `num_key_value_heads` default the heads, q/k/v biased by `attention_bias`, o
    always); every layer a gated GELU MLP of intermediate_size // 2 with biases; RMSNorms, tied
    by default. No position table and no stated context. The embedding scale and the logits'
    soft-cap are element-wise."""
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    n = c.layers()
    blocks = c.texts("block_types", ["recurrent", "recurrent", "attention"])
    bad = [i for i, t in enumerate(blocks) if t not in ("recurrent", "attention")]
    if bad or not blocks:
        raise FlopcalcError(f"{c.label}: block_types[{bad[0] if bad else 0}] must be "
                            "'recurrent' or 'attention' (a pattern repeated over the layers)")
    kinds = [{"recurrent": "rglru", "attention": "window"}[t]
             for t in (blocks * (n // len(blocks) + 1))[:n]]
    raw: Raw = {
        "n_layers": n, "d_model": d, "n_heads": heads,
        "n_kv_heads": c("num_key_value_heads", None) or heads, "head_dim": d // heads,
        "d_ff": c("intermediate_size", expect=int) // 2, "mlp": "gated", "activation": "gelu",
        "bias": {"qkv": bool(c("attention_bias", False)), "attn_out": True, "mlp": True},
        "norm": "rmsnorm", "positions": "rotary", "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "layer_types": shortest_period(kinds), "notes": NO_CONTEXT,
    }
    if "window" in kinds:
        raw["sliding_window"] = c("attention_window_size")
    if "rglru" in kinds:
        raw["rglru"] = {"lru_width": c("lru_width", None) or d, "n_heads": heads,
                        "conv1d_width": c("conv1d_width", 4)}
    return raw


# RecurrentGemmaConfig's defaults (transformers 5.24) for the keys that size the model
_RECURRENT_GEMMA_DEFAULTS: Raw = {
    "num_hidden_layers": 26, "vocab_size": 256000, "hidden_size": 2560,
    "intermediate_size": 7680, "num_attention_heads": 10, "attention_window_size": 2048,
    "conv1d_width": 4, "tie_word_embeddings": True}

# RwkvConfig's defaults (transformers 5.24) for the keys that size the model
_RWKV_DEFAULTS: Raw = {"vocab_size": 50277, "context_length": 1024, "hidden_size": 4096,
                       "num_hidden_layers": 32, "tie_word_embeddings": False}

CONVERTERS = {"mamba2": _mamba2, "rwkv": _rwkv, "recurrent_gemma": _recurrent_gemma}
DEFAULTS = {"rwkv": _RWKV_DEFAULTS, "recurrent_gemma": _RECURRENT_GEMMA_DEFAULTS}
ALIASES = {"rwkv": {"max_position_embeddings": "context_length"},
           "recurrent_gemma": {"sliding_window": "attention_window_size"}}

