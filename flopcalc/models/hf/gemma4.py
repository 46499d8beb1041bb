"""Gemma 4's text model (transformers 5.24 `models/gemma4/`: Gemma4TextConfig and
Gemma4TextModel), through the `gemma4` kind (`flopcalc/kinds/gemma4.py`); its multimodal
wrapper `gemma4` is in `multimodal.py`'s table."""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder, shortest_period

_KINDS = {"full_attention": "full", "sliding_attention": "window"}
# what a per_layer_config entry may override (Gemma4TextConfig.__post_init__ writes these two)
_OVERRIDES = {"head_dim": "global_head_dim", "num_key_value_heads": "global_kv_heads"}


def _gemma4_text(c: Config) -> Raw:
    """Gemma 3's layer (sandwich norms, per-head QK-norms, q/k/v/o biased by attention_bias)
    with Gemma 4's: full layers `global_head_dim` wide (default 512) with
    `num_global_key_value_heads` KV heads when `attention_k_eq_v` (keys as values), or the
    widths `per_layer_config` gives them (what save_pretrained writes instead); the last
    `num_kv_shared_layers` layers reuse K and V (with `use_double_wide_mlp`, a 2·intermediate
    MLP); `hidden_size_per_layer_input` > 0 adds per-layer inputs; `enable_moe_block` a mixture
    of `num_experts` (top `top_k_experts`, `moe_intermediate_size` wide) beside every MLP. As
    Gemma4TextConfig does, the layer types default to every 6th layer full and the last layer
    is made full whatever the list says."""
    n = c.layers()
    attn = c("attention_bias", False, bool)
    raw: Raw = {**rotary_decoder(c, tie=True), **bias(attn, attn), "norm_placement": "sandwich",
                "qk_norm": "per_head"}
    if c("use_bidirectional_attention", None) == "all":
        raise FlopcalcError(f"{c.label}: use_bidirectional_attention 'all' makes every layer "
                            "attend both ways (an encoder's mask over a decoder's stack), which "
                            "flopcalc does not count; describe it in a YAML file")
    listed = c.per_layer("layer_types", n, default=None)
    if listed is None:
        listed = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
    listed = [*listed[:-1], "full_attention"]  # transformers forces the last layer full
    for i, t in enumerate(listed):
        if t not in _KINDS:
            raise FlopcalcError(f"{c.label}: layer_types[{i}] = {t!r}: Gemma 4's layers are "
                                "'full_attention' or 'sliding_attention'")
    kinds = [_KINDS[t] for t in listed]
    shared = c("num_kv_shared_layers", 0, int)
    if not 0 <= shared <= n:
        raise FlopcalcError(f"{c.label}: num_kv_shared_layers={shared} must be between 0 and "
                            f"num_hidden_layers={n}")
    first = n - shared
    if 0 < shared < n and set(kinds[:first]) != set(kinds):
        raise FlopcalcError(f"{c.label}: the KV-shared layers (from layer {first}) include a "
                            "layer type no earlier layer computes keys and values for "
                            "(transformers refuses this config too)")
    raw["layer_types"] = shortest_period([("kv_shared_" if i >= first else "") + k
                                          for i, k in enumerate(kinds)])
    if "window" in kinds:
        raw["sliding_window"] = c("sliding_window", expect=int)
    block: Raw = {**_full_widths(c, kinds), "k_eq_v": c("attention_k_eq_v", False, bool)}
    if shared and c("use_double_wide_mlp", False, bool):
        block["double_wide_mlp"] = True
    p = c("hidden_size_per_layer_input", 0, int)
    if p:
        block["per_layer_width"] = p
        block["per_layer_vocab"] = c("vocab_size_per_layer_input", expect=int)
    raw["gemma4"] = block
    if c("enable_moe_block", False, bool):
        raw["moe"] = {"experts": c("num_experts", expect=int), "top_k": c("top_k_experts",
                                                                          expect=int),
                      "d_ff": c("moe_intermediate_size", expect=int)}
    return raw


def _full_widths(c: Config, kinds: list[str]) -> Raw:
    """The full layers' head width and KV heads: `per_layer_config` when the file has it
    (Gemma4TextConfig then ignores global_head_dim), else `global_head_dim` (default 512) and,
    with attention_k_eq_v, `num_global_key_value_heads`."""
    table = c("per_layer_config", None, dict)
    if table is None:
        out: Raw = {"global_head_dim": c("global_head_dim", 512, int)}
        if c("attention_k_eq_v", False, bool) and c.has("num_global_key_value_heads"):
            out["global_kv_heads"] = c("num_global_key_value_heads", expect=int)
        return out
    given: dict[int, Raw] = {}
    for key, entry in table.items():
        index = int(key) if isinstance(key, str) and key.isdigit() else -1
        if not 0 <= index < len(kinds) or not isinstance(entry, dict):
            raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}] must map a layer index "
                                f"(0..{len(kinds) - 1}) to that layer's settings")
        unknown = sorted(set(entry) - set(_OVERRIDES))
        if unknown:
            raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}] sets {unknown[0]!r}; "
                                f"flopcalc reads only {', '.join(_OVERRIDES)} there")
        for name, value in entry.items():
            if type(value) is not int or value < 1:
                raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}].{name} must be a "
                                    "positive whole number")
        given[index] = entry
    full = [i for i, k in enumerate(kinds) if k == "full"]
    for i, entry in given.items():
        if kinds[i] != "full" and entry:
            raise FlopcalcError(f"{c.label}: per_layer_config[{i}] gives sliding layer {i} "
                                "widths of its own; flopcalc counts one width for the sliding "
                                "layers and one for the full layers")
    wanted = [given.get(i, {}) for i in full]
    if any(w != wanted[0] for w in wanted):
        bad = next(i for i, w in zip(full, wanted) if w != wanted[0])
        raise FlopcalcError(f"{c.label}: per_layer_config[{bad}] differs from the other full "
                            "layers'; flopcalc counts one width for all the full layers")
    widths: Any = wanted[0] if wanted else {}
    return {_OVERRIDES[k]: v for k, v in widths.items()}


def _gemma4_unified_text(c: Config) -> Raw:
    """Gemma 4 Unified's text model (`models/gemma4_unified/`, Gemma4UnifiedTextModel): Gemma
    4's layers (full-layer widths, keys as values, KV sharing, double-wide MLPs) without
    per-layer inputs or a mixture of experts, whose keys its config class does not read."""
    data = {k: v for k, v in c.data.items()
            if k not in ("hidden_size_per_layer_input", "enable_moe_block")}
    return _gemma4_text(Config(data, c.label, c.model_type))


# Gemma4TextConfig's defaults (transformers 5.24), for keys a published file leaves out
DEFAULTS: dict[str, Raw] = {
    "gemma4_text": {"vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 30, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256,
                    "max_position_embeddings": 131_072, "sliding_window": 512,
                    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
                    "vocab_size_per_layer_input": 262_144,
                    "hidden_size_per_layer_input": 256},
    # Gemma4UnifiedTextConfig's
    "gemma4_unified_text": {"vocab_size": 262_144, "hidden_size": 2304,
                            "intermediate_size": 9216, "num_hidden_layers": 30,
                            "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                            "max_position_embeddings": 262_144, "sliding_window": 1024,
                            "hidden_activation": "gelu_pytorch_tanh",
                            "tie_word_embeddings": True},
}

CONVERTERS = {"gemma4_text": _gemma4_text, "gemma4_unified_text": _gemma4_unified_text}

_DRAFTER = ("{name} is a speculative drafter: it runs on the {target} model's last hidden "
            "states and its stored keys and values (pre_projection 2·backbone_hidden_size → "
            "hidden_size, post_projection back), not on token ids alone, which flopcalc does not "
            "count; describe an approximation in a YAML file if one will do")
REFUSED = {
    "gemma4_assistant": _DRAFTER.format(name="Gemma 4's assistant", target="Gemma 4"),
    "gemma4_unified_assistant": _DRAFTER.format(name="Gemma 4 Unified's assistant",
                                                target="Gemma 4 Unified"),
}
