"""Hybrids of linear-attention or short-convolution mixers with attention: Kimi Linear (Kimi
delta attention + latent attention, MoE), MiniMax-01 (lightning + softmax attention, MoE) and
LFM2 (gated short convolutions + attention, a gated MLP in every layer).

Each converter reads the keys its transformers 5.24 config class reads, with its defaults
(`configuration_kimi_linear.py`, `configuration_minimax.py`, `configuration_lfm2.py`), under
either name of an `attribute_map` pair (the checkpoint files use the aliases)."""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, shortest_period


def _first(c: Config, keys: tuple[str, ...], default: Any = ...) -> Any:
    """The value of the first of `keys` the config gives (an `attribute_map` pair: either name
    may be written), else `default`."""
    for key in keys:
        if c.has(key):
            return c(key)
    return c(keys[0], default)


def _activation(c: Config, default: str = "silu") -> str:
    act = str(c("hidden_act", default))
    return "gelu" if act.startswith("gelu") else "relu" if act == "relu" else "silu"


def _mapped(c: Config, kinds: list[str], table: dict[str, str]) -> list[str]:
    unknown = sorted({t for t in kinds if t not in table})
    if unknown:
        raise FlopcalcError(f"{c.label}: layer_types entries {', '.join(map(repr, unknown))} are "
                            f"not {' or '.join(sorted(table))} (model_type {c.model_type})")
    return [table[t] for t in kinds]


# --------------------------------------------------------------------------- Kimi Linear


def _kimi_layer_types(c: Config, n: int, linear: dict) -> list[str]:
    """KimiLinearConfig.__post_init__: an explicit `layer_types` wins; else the checkpoint's
    1-indexed `linear_attn_config` lists (`full_attn_layers`, `kda_layers`) when it gives both;
    else full attention on layers 4, 8, 12, ... (0-indexed: i > 0 and i % 4 == 0)."""
    if c.has("layer_types"):
        kinds = c.per_layer("layer_types", n)
    elif "full_attn_layers" in linear and "kda_layers" in linear:
        kinds = [""] * n
        for key, kind in (("full_attn_layers", "full_attention"),
                          ("kda_layers", "linear_attention")):
            layers = linear[key]
            if not isinstance(layers, list) or not all(type(i) is int and 1 <= i <= n
                                                       for i in layers):
                raise FlopcalcError(f"{c.label}: linear_attn_config.{key} must list layers 1 to "
                                    f"{n} (1-indexed, as the checkpoint writes them)")
            for i in layers:
                kinds[i - 1] = kind
        missing = [i + 1 for i, kind in enumerate(kinds) if not kind]
        if missing:
            raise FlopcalcError(f"{c.label}: linear_attn_config lists neither full_attn_layers "
                                f"nor kda_layers for layers {missing[:8]} (1-indexed); list "
                                "every layer in one of them")
    else:
        kinds = ["full_attention" if i and i % 4 == 0 else "linear_attention"
                 for i in range(n)]
    if len(kinds) != n:
        raise FlopcalcError(f"{c.label}: layer_types has {len(kinds)} entries for "
                            f"num_hidden_layers={n}")
    return _mapped(c, kinds, {"full_attention": "full", "linear_attention": "kda"})


def _kimi_linear(c: Config) -> Raw:
    """KimiLinearForCausalLM: KDA layers (`kimi_delta`, from `linear_attn_config` or the
    linear_* keys) and latent-attention layers without rotary positions; a dense gated MLP on
    the `mlp_layer_types` "dense" layers (the first `first_k_dense_replace`, default 1), a
    mixture of experts with shared experts on the others; the LM head is never tied
    (KimiLinearForCausalLM ties nothing, whatever tie_word_embeddings says)."""
    n = c.layers() if c.has("num_hidden_layers") else 27
    linear = c("linear_attn_config", {}, dict)
    kinds = _kimi_layer_types(c, n, linear)
    if c.has("mlp_layer_types"):
        mlp_kinds = c.per_layer("mlp_layer_types", n, choices=("dense", "sparse"))
    else:
        first = c("first_k_dense_replace", 1, int)
        mlp_kinds = ["dense" if i < first else "sparse" for i in range(n)]
    heads = c("num_attention_heads", 32)
    raw: Raw = {
        "n_layers": n,
        "d_model": c("hidden_size", 2304),
        "n_heads": heads,
        "n_kv_heads": None,  # latent attention decompresses K and V for every head
        "d_ff": c("intermediate_size", 9216),
        "mlp": "gated",
        "activation": _activation(c),
        "bias": {"qkv": bool(c("attention_bias", False)),
                 "attn_out": bool(c("attention_bias", False)), "mlp": False},
        "norm": "rmsnorm",
        "positions": "none",  # MLA without RoPE (NoPE); the k_rot slice is kept, unrotated
        "max_seq_len": _first(c, ("model_max_length", "max_position_embeddings"), 1_048_576),
        "vocab_size": c("vocab_size", 163_840),
        "tie_embeddings": False,
        "layer_types": shortest_period(kinds),
        "latent_attention": {
            "q_lora_rank": c("q_lora_rank", None), "kv_lora_rank": c("kv_lora_rank", 512),
            "qk_nope_head_dim": c("qk_nope_head_dim", 128),
            "qk_rope_head_dim": c("qk_rope_head_dim", 64),
            "v_head_dim": c("v_head_dim", 128)},
        "kimi_delta": {
            "num_heads": linear.get("num_heads", c("linear_num_heads", 32)),
            "head_dim": linear.get("head_dim", c("linear_head_dim", 128)),
            "short_conv_kernel_size": linear.get("short_conv_kernel_size",
                                                 c("linear_conv_kernel_dim", 4))},
    }
    if "sparse" in mlp_kinds:
        dense = [i for i, kind in enumerate(mlp_kinds) if kind == "dense"]
        moe: Raw = {
            "experts": _first(c, ("num_local_experts", "num_experts"), 256),
            "top_k": _first(c, ("num_experts_per_tok", "num_experts_per_token"), 8),
            "d_ff": c("moe_intermediate_size", 1024),
            "shared_experts": _first(c, ("n_shared_experts", "num_shared_experts"), 1)}
        if dense == list(range(len(dense))):
            moe["first_dense"] = len(dense)
        else:
            moe["dense_layers"] = dense
        raw["moe"] = moe
    return raw


# ------------------------------------------------------------------------------- MiniMax


def _minimax(c: Config) -> Raw:
    """MiniMaxForCausalLM: softmax attention and lightning attention layers (`layer_types`,
    default alternating from a softmax layer: full at even indices), both with head_dim (d/H
    when null); a mixture of experts of width intermediate_size on every layer, no shared
    expert. With `sliding_window` the softmax layers attend in that window (their mask; Hugging
    Face's MiniMaxCache still keeps every key)."""
    n = c.layers() if c.has("num_hidden_layers") else 32
    window = c("sliding_window", None)
    if c.has("layer_types"):
        kinds = c.per_layer("layer_types", n)
    else:
        kinds = ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(n)]
    names = _mapped(c, kinds, {"full_attention": "window" if window else "full",
                               "linear_attention": "lightning"})
    heads = c("num_attention_heads", 32)
    raw: Raw = {
        "n_layers": n,
        "d_model": c("hidden_size", 4096),
        "n_heads": heads,
        "n_kv_heads": (heads if c.data.get("num_key_value_heads") is None
                       else c.data["num_key_value_heads"]),
        "d_ff": c("intermediate_size", 14336),
        "mlp": "gated",
        "activation": _activation(c),
        "bias": False,
        "norm": "rmsnorm",
        "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", 131_072),
        "vocab_size": c("vocab_size", 32_000),
        "tie_embeddings": bool(c("tie_word_embeddings", False)),
        "layer_types": shortest_period(names),
        "lightning": {"block_size": c("block_size", 256)},
        "moe": {"experts": _first(c, ("num_local_experts", "num_experts"), 8),
                "top_k": c("num_experts_per_tok", 2), "d_ff": c("intermediate_size", 14336)},
    }
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    if "window" in names:
        raw["sliding_window"] = window
    return raw


# ---------------------------------------------------------------------------------- LFM2


def lfm2_ff_dim(c: Config) -> Any:
    """Lfm2MLP's width: intermediate_size (or the checkpoint's block_ff_dim); with
    block_auto_adjust_ff_dim int(2·I/3), then int(block_ffn_dim_multiplier·I) rounded up to a
    multiple of block_multiple_of (transformers 5.24's strict config refuses a null multiplier,
    so the modeling code's `is not None` test always passes)."""
    width = c("block_ff_dim", None)
    width = c("intermediate_size", 12288) if width is None else width
    if c("block_auto_adjust_ff_dim", True):
        width = int(c("block_ffn_dim_multiplier", 1.0) * int(2 * width / 3))
        m = c("block_multiple_of", 256)
        width = m * ((width + m - 1) // m)
    return width


def _lfm2(c: Config) -> Raw:
    """Lfm2ForCausalLM: gated short-conv layers and attention layers with QK-norm (per head),
    each with a gated SiLU MLP (w1, w3, w2); the layer types from `layer_types`, else attention
    on `full_attn_idxs` (null: every layer, transformers' default); the final norm is
    `embedding_norm`, the LM head tied unless `tie_embedding`/`tie_word_embeddings` say not.
    An LFM2 without attention layers builds, but transformers cannot run it with a cache."""
    n = c.layers() if c.has("num_hidden_layers") else 32
    if c.has("layer_types"):
        kinds = c.per_layer("layer_types", n)
    else:
        full = c.layer_indices("full_attn_idxs", n, list(range(n)))
        kinds = ["full_attention" if i in full else "conv" for i in range(n)]
    names = _mapped(c, kinds, {"full_attention": "full", "conv": "short_conv"})
    heads = c("num_attention_heads", 32)
    tie = c("tie_embedding", None)
    raw: Raw = {
        "n_layers": n,
        "d_model": c("hidden_size", 2560),
        "n_heads": heads,
        "n_kv_heads": (heads if c.data.get("num_key_value_heads") is None
                       else c.data["num_key_value_heads"]),
        "d_ff": lfm2_ff_dim(c),
        "mlp": "gated",
        "activation": "silu",  # Lfm2MLP applies F.silu whatever hidden_act says
        "bias": False,
        "norm": "rmsnorm",
        "qk_norm": "per_head",
        "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", 128_000),
        "vocab_size": c("vocab_size", 65_536),
        "tie_embeddings": bool(c("tie_word_embeddings", True) if tie is None else tie),
        "layer_types": shortest_period(names),
        "short_conv": {"conv_L_cache": c("conv_L_cache", 3), "conv_bias": bool(c("conv_bias",
                                                                                 False))},
    }
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    return raw


def _lfm2_moe(c: Config) -> Raw:
    """Lfm2MoeForCausalLM: LFM2's layers, a dense gated MLP of intermediate_size as it is (no
    ff-dim adjustment) on the first `num_dense_layers`, then Qwen3-MoE's sparse block
    (`num_experts` SwiGLU experts of moe_intermediate_size, top `num_experts_per_tok` by a
    bias-free sigmoid router; `expert_bias` is a buffer, no shared expert)
    (`lfm2_moe/modular_lfm2_moe.py`); `routed_scaling_factor` counts nothing."""
    raw = {**_lfm2(c), "d_ff": c("intermediate_size")}
    dense = c("num_dense_layers", expect=int)
    if dense < raw["n_layers"]:
        raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "first_dense": max(dense, 0)}
    return raw


# Lfm2MoeConfig's defaults (transformers 5.24) where they differ from LFM2's
DEFAULTS: dict[str, Raw] = {
    "lfm2_moe": {"vocab_size": 65536, "hidden_size": 2048, "intermediate_size": 7168,
                 "moe_intermediate_size": 1792, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "num_key_value_heads": 8,
                 "max_position_embeddings": 128_000, "tie_word_embeddings": True,
                 "num_dense_layers": 2, "num_experts_per_tok": 4, "num_experts": 32},
}

CONVERTERS = {"kimi_linear": _kimi_linear, "minimax": _minimax, "lfm2": _lfm2,
              "lfm2_moe": _lfm2_moe}
