"""Kolibri 1.1 (transformers 5.25 `models/kolibri1_1/`: Kolibri1_1Config and Kolibri1_1Model),
through the `indexed_attention` kind (`flopcalc/kinds/kolibri.py`)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, rotary_decoder, shortest_period

# Kolibri1_1Config's default kv_source_layers, among the indexed layers
_SOURCES = (0, 0, 0, 3, 4, 5, 5, 5, 5, 0)


def _kolibri1_1(c: Config) -> Raw:
    """Kolibri 1's layers (sandwich norms, per-head QK-norms, bias-free attention, RoPE on the
    window layers only; a bias-free fp32 router over SwiGLU experts with one shared expert)
    with every 5th layer `indexed_attention` (default), the indexer layers (`index_layers`,
    default the 1st, 3rd, 4th and 6th indexed layers) picking pools, the layers that read
    another's keys and values (`kv_source_layers`) and dense MLPs of
    `mlp_only_intermediate_size` on `mlp_only_layers` (default the first two)."""
    n = c.layers()
    kinds = c.per_layer("layer_types", n, default=None) or [
        "indexed_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
    for i, kind in enumerate(kinds):
        if kind not in ("indexed_attention", "sliding_attention"):
            raise FlopcalcError(f"{c.label}: layer_types[{i}] = {kind!r}: Kolibri 1.1's layers "
                                "are 'indexed_attention' or 'sliding_attention'")
    indexed = [i for i, k in enumerate(kinds) if k == "indexed_attention"]
    pools = c.layer_indices("index_layers", n, None)
    if pools is None:
        pools = [indexed[i] for i in (0, 2, 3, 5) if i < len(indexed)]
    if indexed and indexed[0] not in pools or not set(pools) <= set(indexed):
        raise FlopcalcError(f"{c.label}: index_layers must be indexed-attention layers, the "
                            "first of them included (transformers refuses this config too)")
    sources = c.per_layer("kv_source_layers", n, int, default=None)
    if sources is None:
        if len(indexed) > len(_SOURCES):
            raise FlopcalcError(f"{c.label}: {len(indexed)} indexed-attention layers need "
                                "kv_source_layers (its default covers 10)")
        sources = list(range(n))
        for layer, source in zip(indexed, _SOURCES):
            sources[layer] = indexed[source]
    for i, source in enumerate(sources):
        if not 0 <= source <= i or sources[source] != source or kinds[source] != kinds[i]:
            raise FlopcalcError(f"{c.label}: kv_source_layers[{i}] = {source} must name an "
                                "earlier layer of the same type that computes its own keys "
                                "and values")
    names = []
    for i, kind in enumerate(kinds):
        if kind == "sliding_attention":
            names.append("window")
        else:
            names.append("indexed" + ("_pool" if i in pools else "")
                         + ("_shared" if sources[i] != i else ""))
    dense = c.layer_indices("mlp_only_layers", n, [i for i in (0, 1) if i < n])
    raw: Raw = {**rotary_decoder(c, tie=False), "qk_norm": "per_head",
                "norm_placement": "sandwich", "layer_types": shortest_period(names),
                "head_dim": c("head_dim", 128, int)}
    raw["d_ff"] = c("mlp_only_intermediate_size", 3584, int) if dense else \
        c("moe_intermediate_size", 512, int)
    if "window" in names:
        raw["sliding_window"] = c("sliding_window", 513, int)
    if indexed:
        raw["indexed_attention"] = {
            "topk": c("index_topk", 2048, int), "pool_size": c("index_pool_size", 16384, int),
            "compression": c("index_compression", 16, int),
            "heads": c("index_num_heads", 12, int),
            "local_tokens": c("index_num_local_tokens", 128, int),
            "sink_tokens": c("index_num_sink_tokens", 8, int)}
    if len(dense) < n:
        raw["moe"] = {"experts": c("num_experts", 384, int),
                      "top_k": c("num_experts_per_tok", 6, int),
                      "d_ff": c("moe_intermediate_size", 512, int),
                      "dense_layers": sorted(set(dense))}
        if c("shared_expert_intermediate_size", 512, int):
            raw["moe"].update(shared_experts=1,
                              shared_d_ff=c("shared_expert_intermediate_size", 512, int))
    return raw


# Kolibri1_1Config's defaults (transformers 5.25), for keys a published file leaves out
DEFAULTS: dict[str, Raw] = {"kolibri1_1": {
    "vocab_size": 128_000, "hidden_size": 2560, "num_hidden_layers": 50,
    "num_attention_heads": 48, "num_key_value_heads": 4, "hidden_act": "silu",
    "max_position_embeddings": 262_144, "intermediate_size": 512}}
ALIASES = {"kolibri1_1": {"num_local_experts": "num_experts"}}
CONVERTERS = {"kolibri1_1": _kolibri1_1}
