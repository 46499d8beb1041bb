"""Ergo (transformers 5.25 `models/ergo/`: ErgoConfig and ErgoModel), through the `ergo` kind
(`flopcalc/kinds/ergo.py`: residual gates, a norm after every expert)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw


def _ergo(c: Config) -> Raw:
    """Sandwich-normed attention with per-head q/k norms, head width hidden_size /
    num_attention_heads, every `global_attention_every_n_layers`-th layer full (the others a
    window of `sliding_window`, transformers' name for the files' `local_attention_window`);
    plain ReLU² MLPs `first_dense_intermediate_size` wide on the `mlp_layer_types` 'dense'
    layers (default: the first `num_dense_blocks`), elsewhere `num_experts` ReLU² experts
    (top `num_experts_per_tok`, `moe_intermediate_size` wide) and one shared expert
    (`shared_intermediate_size`). The LM head is never tied (ErgoForCausalLM ties nothing)."""
    n = c.layers()
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    if heads < 1 or d % heads:
        raise FlopcalcError(f"{c.label}: hidden_size={d} must be a multiple of "
                            f"num_attention_heads={heads} (Ergo's head width is their ratio)")
    every = c("global_attention_every_n_layers", 4, int)
    if every < 1:
        raise FlopcalcError(f"{c.label}: global_attention_every_n_layers={every} must be at "
                            "least 1")
    kinds = c.per_layer("layer_types", n, default=None) or [
        "sliding_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    blocks = c("num_dense_blocks", 1, int)
    mlps = c.per_layer("mlp_layer_types", n, default=None) or [
        "dense" if i < blocks else "sparse" for i in range(n)]
    names = []
    for i, (kind, mlp) in enumerate(zip(kinds, mlps)):
        if kind not in ("sliding_attention", "full_attention"):
            raise FlopcalcError(f"{c.label}: layer_types[{i}] = {kind!r}: Ergo's layers are "
                                "'sliding_attention' or 'full_attention'")
        if mlp not in ("dense", "sparse"):
            raise FlopcalcError(f"{c.label}: mlp_layer_types[{i}] = {mlp!r}: Ergo's MLPs are "
                                "'dense' or 'sparse'")
        names.append(f"ergo_{'dense_' if mlp == 'dense' else ''}"
                     f"{'window' if kind == 'sliding_attention' else 'full'}")
    raw: Raw = {
        "n_layers": n, "d_model": d, "n_heads": heads,
        "n_kv_heads": c("num_key_value_heads", 8, int), "head_dim": d // heads,
        "d_ff": c("first_dense_intermediate_size", 32768, int), "mlp": "plain",
        "activation": "relu2", "bias": False, "norm": "rmsnorm",
        "norm_placement": "sandwich", "qk_norm": "per_head", "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", 524_288), "vocab_size": c("vocab_size"),
        "tie_embeddings": False, "layer_types": names, "ergo": {},
    }
    if "sliding_attention" in kinds:
        raw["ergo"]["window"] = c("sliding_window", 512, int)
    if "sparse" in mlps:
        raw["moe"] = {"experts": c("num_experts", 256, int),
                      "top_k": c("num_experts_per_tok", 8, int),
                      "d_ff": c("moe_intermediate_size", 4096, int), "shared_experts": 1,
                      "shared_d_ff": c("shared_intermediate_size", 8192, int)}
    return raw


# ErgoConfig's defaults (transformers 5.25), for keys a published file leaves out
DEFAULTS: dict[str, Raw] = {"ergo": {"vocab_size": 262_144, "hidden_size": 8192,
                                     "num_hidden_layers": 64, "num_attention_heads": 64}}
ALIASES = {"ergo": {"local_attention_window": "sliding_window"}}
CONVERTERS = {"ergo": _ergo}
