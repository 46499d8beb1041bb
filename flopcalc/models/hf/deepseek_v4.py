"""DeepSeek-V4 (transformers 5.24 `models/deepseek_v4/`: DeepseekV4Config and
DeepseekV4ForCausalLM), through the kinds of `flopcalc/kinds/deepseek_v4.py`."""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, rotary_decoder, shortest_period

_ATTENTION = {"sliding_attention": "window", "compressed_sparse_attention": "csa",
              "heavily_compressed_attention": "hca"}
_RATIOS = {0: "sliding_attention", 4: "compressed_sparse_attention",
           128: "heavily_compressed_attention"}  # the legacy compress_ratios' (transformers')
_MLP = ("hash_moe", "moe")


def _listed(c: Config, key: str, n: int, allowed: Any) -> list | None:
    """A per-layer list as DeepseekV4Config takes it: entries beyond the n layers are dropped
    (published files list the MTP layer's too), fewer than n is an error naming the first layer
    without one, and every entry must be one of `allowed`."""
    value = c(key, None, list)
    if value is None:
        return None
    for i, v in enumerate(value[:n]):
        if type(v) is bool or v not in allowed:
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:40] + "..."
            raise FlopcalcError(f"{c.label}: {key}[{i}] = {shown} is not one of "
                                f"{', '.join(map(repr, allowed))} (DeepSeek-V4's)")
    if len(value) < n:
        raise FlopcalcError(f"{c.label}: {key} has {len(value):,} entries, num_hidden_layers is "
                            f"{n:,}: layer {len(value)} has none (give one per layer)")
    return value[:n]


def _attention_types(c: Config, n: int) -> list[str]:
    """`layer_types`, else the legacy per-layer `compress_ratios` (0, 4, 128), else
    DeepseekV4Config's default: two heavily compressed layers, then heavily compressed and
    compressed sparse alternating."""
    listed = _listed(c, "layer_types", n, tuple(_ATTENTION))
    if listed is None:
        ratios = _listed(c, "compress_ratios", n, tuple(_RATIOS))
        if ratios is not None:
            listed = [_RATIOS[r] for r in ratios]
    if listed is None:
        listed = ["heavily_compressed_attention"] * min(n, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
            for i in range(max(n - 2, 0))]
    return listed


def _rates(c: Config, used: set[str]) -> dict[str, int]:
    """`compress_rates` (the legacy `compress_rate_csa` / `compress_rate_hca` override it, as
    the config class folds them in); a layer type in use needs its rate."""
    given = c("compress_rates", None, dict)
    rates = dict(given) if given is not None else {"compressed_sparse_attention": 4,
                                                   "heavily_compressed_attention": 128}
    for key, name in (("compress_rate_csa", "compressed_sparse_attention"),
                      ("compress_rate_hca", "heavily_compressed_attention")):
        if c.has(key):
            rates[name] = c(key, expect=int)
    out = {}
    for name in ("compressed_sparse_attention", "heavily_compressed_attention"):
        if name not in used:
            continue
        rate = rates.get(name)
        if type(rate) is not int or rate < 1:
            raise FlopcalcError(f"{c.label}: compress_rates['{name}'] must be a whole number "
                                f">= 1 for the {name} layers, got {rate!r}")
        out[name] = rate
    return out


def _deepseek_v4(c: Config) -> Raw:
    """DeepSeek-V4: per layer (`layer_types`, or `compress_ratios`) sliding, compressed sparse
    or heavily compressed attention with `q_lora_rank`, one K = V head of `head_dim`, a
    `sliding_window`, the grouped output (`o_groups`, `o_lora_rank`) and `hc_mult`
    hyper-connections; experts per `mlp_layer_types` (else the first `num_hash_layers`, default
    3, hash-routed): `n_routed_experts` of `moe_intermediate_size`, top `num_experts_per_tok`,
    and one shared expert of that width (transformers builds one whatever `n_shared_experts`
    says; `mlp_bias` biases it, never the routed experts). `num_key_value_heads`,
    `attention_bias` and the rotary settings count nothing. The `num_nextn_predict_layers`
    MTP modules are not built by transformers (its loader drops the checkpoint's mtp.*
    tensors) and are not counted: their form in DeepSeek's code is not in transformers."""
    n = c.layers()
    raw: Raw = rotary_decoder(c)
    raw.pop("d_ff")
    raw["n_kv_heads"] = None
    raw["head_dim"] = c("head_dim", expect=int)
    attention = _attention_types(c, n)
    rates = _rates(c, set(attention))
    mlp = _listed(c, "mlp_layer_types", n, _MLP)
    if mlp is None:
        hashed = c("num_hash_layers", 3, int)
        mlp = ["hash_moe"] * min(n, hashed) + ["moe"] * max(0, n - hashed)
    raw["layer_types"] = shortest_period([
        f"dsv4_{_ATTENTION[a]}" + ("_hash" if m == "hash_moe" else "")
        for a, m in zip(attention, mlp)])
    block: Raw = {"q_lora_rank": c("q_lora_rank", expect=int),
                  "o_groups": c("o_groups", expect=int),
                  "o_lora_rank": c("o_lora_rank", expect=int),
                  "hc_mult": c("hc_mult", expect=int),
                  "sliding_window": c("sliding_window", expect=int),
                  "hc_sinkhorn_iters": c("hc_sinkhorn_iters", 20, int)}
    if "compressed_sparse_attention" in rates:
        block.update(csa_rate=rates["compressed_sparse_attention"],
                     index_n_heads=c("index_n_heads", expect=int),
                     index_head_dim=c("index_head_dim", expect=int),
                     index_topk=c("index_topk", expect=int))
    if "heavily_compressed_attention" in rates:
        block["hca_rate"] = rates["heavily_compressed_attention"]
    raw["deepseek_v4"] = block
    mlp_bias = c("mlp_bias", False, bool)
    raw["bias"] = {"qkv": False, "attn_out": False, "mlp": mlp_bias}
    raw["moe"] = {"experts": c("n_routed_experts", expect=int),
                  "top_k": c("num_experts_per_tok", expect=int),
                  "d_ff": c("moe_intermediate_size", expect=int), "shared_experts": 1,
                  "expert_bias": False}
    mtp = c("num_nextn_predict_layers", 0, int)
    if mtp:
        raw["notes"] = (f"config.json declares {mtp} multi-token-prediction module"
                        f"{'s' if mtp > 1 else ''} (num_nextn_predict_layers), which "
                        "transformers does not build (its loader drops the checkpoint's mtp.* "
                        "tensors): not counted")
    return raw


# DeepseekV4Config's defaults (transformers 5.24), for keys a published file leaves out
DEFAULTS: dict[str, Raw] = {
    "deepseek_v4": {"vocab_size": 129_280, "hidden_size": 4096, "moe_intermediate_size": 2048,
                    "num_hidden_layers": 43, "num_attention_heads": 64, "head_dim": 512,
                    "q_lora_rank": 1024, "num_experts_per_tok": 6, "n_routed_experts": 256,
                    "max_position_embeddings": 1_048_576, "sliding_window": 128,
                    "o_groups": 8, "o_lora_rank": 1024, "hc_mult": 4, "index_n_heads": 64,
                    "index_head_dim": 128, "index_topk": 512, "num_nextn_predict_layers": 1,
                    "hidden_act": "silu", "tie_word_embeddings": False},
}

# DeepseekV4Config's attribute_map
ALIASES = {"deepseek_v4": {"num_local_experts": "n_routed_experts",
                           "intermediate_size": "moe_intermediate_size"}}

CONVERTERS = {"deepseek_v4": _deepseek_v4}
