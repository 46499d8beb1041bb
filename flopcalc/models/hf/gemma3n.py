"""Gemma 3n's text model (transformers 5.24 `models/gemma3n/`: Gemma3nTextConfig and
Gemma3nTextModel), through the `gemma3n` kind (`flopcalc/kinds/gemma3n.py`: AltUp, LAuReL,
per-layer inputs, activation sparsity, KV sharing); its multimodal wrapper `gemma3n` is in
`multimodal.py`'s table (the language model counted, its audio and vision towers named as left
out)."""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder

_KINDS = {"full_attention": "full", "sliding_attention": "window"}


def _gemma3n_text(c: Config) -> Raw:
    """Gemma 3's layer (sandwich norms, per-head QK-norms, q/k/v/o biased by attention_bias)
    in Gemma 3n's: `altup_num_inputs` AltUp streams, a LAuReL block of `laurel_rank`,
    per-layer inputs `hidden_size_per_layer_input` wide from a `vocab_size_per_layer_input`
    table, `intermediate_size` one width or one per layer, `activation_sparsity_pattern` one
    value per layer (default: the first 10 of more than 10 layers sparse), the last
    `num_kv_shared_layers` layers reusing K and V. As Gemma3nTextConfig does, the layer types
    default to every 5th layer full (the last layer is not forced full, as Gemma 4's is)."""
    n = c.layers()
    attn = c("attention_bias", False, bool)
    raw: Raw = {**rotary_decoder(c, tie=True), **bias(attn, attn), "norm_placement": "sandwich",
                "qk_norm": "per_head"}
    widths = c("intermediate_size")
    if isinstance(widths, list):
        widths = c.per_layer("intermediate_size", n, int)
    elif type(widths) is int:
        widths = [widths] * n
    else:
        raise c.wrong("intermediate_size", widths, int)
    listed = c.per_layer("layer_types", n, default=None)
    if listed is None:
        listed = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention"
                  for i in range(n)]
    for i, t in enumerate(listed):
        if t not in _KINDS:
            raise FlopcalcError(f"{c.label}: layer_types[{i}] = {t!r}: Gemma 3n's layers are "
                                "'full_attention' or 'sliding_attention'")
    kinds = [_KINDS[t] for t in listed]
    shared = c("num_kv_shared_layers", 15, int)
    first = n - shared
    if shared and not 0 < shared < n:
        raise FlopcalcError(f"{c.label}: num_kv_shared_layers={shared} must be 0 or between 1 "
                            f"and num_hidden_layers−1={n - 1} (some earlier layer computes the "
                            "keys and values the shared layers read)")
    if shared and set(kinds[:first]) != set(kinds):
        raise FlopcalcError(f"{c.label}: the KV-shared layers (from layer {first}) include a "
                            "layer type no earlier layer computes keys and values for "
                            "(transformers refuses this config too)")
    sparse = _sparsity(c, n)
    raw["d_ff"] = widths[0]
    raw["layer_types"] = [f"gemma3n_{'shared_' if i >= first else ''}{k}@{i}"
                          for i, k in enumerate(kinds)]
    block: Raw = {"streams": c("altup_num_inputs", 4, int),
                  "laurel_rank": c("laurel_rank", 64, int),
                  "per_layer_width": c("hidden_size_per_layer_input", 256, int),
                  "per_layer_vocab": c("vocab_size_per_layer_input", 262_144, int),
                  "correct_scale": c("altup_correct_scale", True, bool)}
    if "window" in kinds:
        block["window"] = c("sliding_window", 512, int)
    if any(w != widths[0] for w in widths):
        block["d_ff"] = widths
    if any(sparse):
        block["sparse"] = sparse
    raw["gemma3n"] = block
    return raw


def _sparsity(c: Config, n: int) -> list[bool]:
    """Which layers' MLP gates pass the Gaussian top-k (activation_sparsity_pattern > 0)."""
    value: Any = c("activation_sparsity_pattern", None)
    if value is None:
        return [i < 10 for i in range(n)] if n > 10 else [False] * n
    if not isinstance(value, list) or len(value) != n or not all(
            type(v) in (int, float) and 0 <= v < 1 for v in value):
        raise FlopcalcError(f"{c.label}: activation_sparsity_pattern must list one sparsity in "
                            f"[0, 1) per layer ({n} entries), as Gemma3nTextConfig requires")
    return [v > 0 for v in value]


# Gemma3nTextConfig's defaults (transformers 5.24), for keys a published file leaves out
DEFAULTS: dict[str, Raw] = {
    "gemma3n_text": {"vocab_size": 262_400, "hidden_size": 2048, "intermediate_size": 16_384,
                     "num_hidden_layers": 35, "num_attention_heads": 8,
                     "num_key_value_heads": 2, "head_dim": 256,
                     "max_position_embeddings": 32_768, "sliding_window": 512,
                     "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True},
}

CONVERTERS = {"gemma3n_text": _gemma3n_text}
