"""Hy4 (transformers 5.24 `models/hy_v4/`: HYV4Config and HYV4ForCausalLM), through the kinds
of `flopcalc/kinds/hy_v4.py`. Hy4-VL's language model (`hy_v4_vl`, `hy_v4_vl_text`) is this
model with its own defaults (models/hf/multimodal.py); its HunYuan-VL tower is not read."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder, shortest_period


def _listed(c: Config, key: str, n: int, allowed: tuple[str, ...], longer: bool = False
            ) -> list[str] | None:
    """A per-layer list, each entry one of `allowed` (named with its index); fewer entries than
    layers is an error naming the first layer without one, more an error naming the first
    entry without a layer unless `longer` (HYV4Config refuses another length of layer_types
    and mlp_layer_types; the model reads only the first num_hidden_layers indexer_types)."""
    value = c(key, None, list)
    if value is None:
        return None
    for i, v in enumerate(value[:n]):
        if type(v) is not str or v not in allowed:
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:40] + "..."
            raise FlopcalcError(f"{c.label}: {key}[{i}] = {shown} is not one of "
                                f"{', '.join(map(repr, allowed))} (Hy4's)")
    if len(value) < n:
        raise FlopcalcError(f"{c.label}: {key} has {len(value):,} entries, num_hidden_layers is "
                            f"{n:,}: layer {len(value)} has none (give one per layer)")
    if len(value) > n and not longer:
        raise FlopcalcError(f"{c.label}: {key} has {len(value):,} entries, num_hidden_layers is "
                            f"{n:,}: {key}[{n}] names no layer (give one per layer)")
    return value[:n]


def _hy_v4(c: Config) -> Raw:
    """Hy4: every layer DeepSeek sparse attention (latent attention with `q_lora_rank`,
    `kv_lora_rank`, `qk_nope_head_dim` + `qk_rope_head_dim`, `v_head_dim`; the lightning
    indexer of `index_n_heads` × `index_head_dim`, top `index_topk`, on the layers
    `indexer_types` says "full", else the last full layer's selection: by default layer 0 and
    every 4th from 1) with an output gate and sinks, `attention_bias` on q_a, kv_a and o; a
    dense MLP of `intermediate_size` or a mixture (`n_routed_experts` of
    `moe_intermediate_size`, top `num_experts_per_tok`, `n_shared_experts` fused shared) per
    `mlp_layer_types` (default: the first dense); `hc_mult` independent hyper-connections and
    the hyper-head."""
    n = c.layers()
    attn = c("attention_bias", False, bool)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn)}
    raw["n_kv_heads"] = None
    raw.pop("head_dim", None)  # HYV4Config points head_dim at qk_rope_head_dim
    raw["latent_attention"] = {
        "q_lora_rank": c("q_lora_rank", expect=int), "kv_lora_rank": c("kv_lora_rank", expect=int),
        "qk_nope_head_dim": c("qk_nope_head_dim", expect=int),
        "qk_rope_head_dim": c("qk_rope_head_dim", expect=int),
        "v_head_dim": c("v_head_dim", expect=int)}
    raw["sparse_attention"] = {"index_n_heads": c("index_n_heads", expect=int),
                               "index_head_dim": c("index_head_dim", expect=int),
                               "index_topk": c("index_topk", expect=int)}
    _listed(c, "layer_types", n, ("indexed_attention",))
    indexers = _listed(c, "indexer_types", n, ("full", "shared"), longer=True) or [
        "full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]
    if indexers[0] != "full":
        raise FlopcalcError(f"{c.label}: indexer_types[0] is 'shared', but the first layer has "
                            "no earlier selection to reuse (transformers raises); make it 'full'")
    mlp = _listed(c, "mlp_layer_types", n, ("dense", "sparse")) or (
        ["dense"] * min(1, n) + ["sparse"] * max(n - 1, 0))
    raw["layer_types"] = shortest_period([
        "hy_dsa" + ("_shared" if k == "shared" else "") + ("_dense" if m == "dense" else "")
        for k, m in zip(indexers, mlp)])
    raw["hyper_connections"] = {"hc_mult": c("hc_mult", expect=int)}
    if "sparse" in mlp:
        shared = c("n_shared_experts", 1, int)
        raw["moe"] = {"experts": c("n_routed_experts", expect=int),
                      "top_k": c("num_experts_per_tok", expect=int),
                      "d_ff": c("moe_intermediate_size", expect=int), "shared_experts": shared}
    if "dense" not in mlp:
        raw.pop("d_ff")
    return raw


# HYV4Config's defaults (transformers 5.24), for keys a published file leaves out
DEFAULTS: dict[str, Raw] = {
    "hy_v4": {"vocab_size": 120_832, "hidden_size": 2816, "intermediate_size": 6912,
              "moe_intermediate_size": 768, "num_hidden_layers": 34, "num_attention_heads": 32,
              "max_position_embeddings": 262_144, "n_routed_experts": 256,
              "n_shared_experts": 1, "num_experts_per_tok": 8, "q_lora_rank": 1536,
              "kv_lora_rank": 512, "qk_nope_head_dim": 192, "qk_rope_head_dim": 64,
              "v_head_dim": 256, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16,
              "hc_mult": 4, "hidden_act": "silu", "tie_word_embeddings": False},
}

ALIASES = {"hy_v4": {"num_local_experts": "n_routed_experts"}}

CONVERTERS = {"hy_v4": _hy_v4}
