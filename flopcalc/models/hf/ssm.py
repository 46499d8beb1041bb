"""State-space models: Mamba-2 (and, with the kinds for them, the hybrids built from it)."""

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


CONVERTERS = {"mamba2": _mamba2}

_YAML = "; describe an approximation in a YAML file if one will do"
REFUSED = {
    "rwkv": ("RWKV's time-mixing and channel-mixing blocks (receptance, a learned time decay, "
             "token shift) are not layer kinds flopcalc has" + _YAML),
    "recurrent_gemma": ("RecurrentGemma's Griffin recurrent blocks (a real-gated linear "
                        "recurrent unit with its convolution and gates, between local-attention "
                        "layers) are not a layer kind flopcalc has" + _YAML),
}
