"""Mixtures of experts: Mixtral, Qwen2-MoE and Qwen3-MoE, OLMoE, DeepSeek-V3, gpt-oss."""

from __future__ import annotations

from .common import Config, Raw, bias, layer_types, qwen_window, rotary_decoder


def _mixtral(c: Config) -> Raw:
    raw = {**rotary_decoder(c), **layer_types(c)}
    raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("intermediate_size")}
    return raw


def _qwen_moe(c: Config, shared: bool) -> Raw:
    moe: Raw = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                "d_ff": c("moe_intermediate_size"), "every": c("decoder_sparse_step", 1),
                "dense_layers": list(c.layer_indices("mlp_only_layers", c.layers(), []))}
    if shared and c("shared_expert_intermediate_size", 0):
        moe.update(shared_experts=1, shared_d_ff=c("shared_expert_intermediate_size"),
                   shared_gate=True)
    elif shared:  # Qwen2MoeSparseMoeBlock builds shared_expert_gate d → 1 whatever the width
        moe.update(shared_gate=True)
    return {"moe": moe}


def _qwen2_moe(c: Config) -> Raw:
    # q/k/v biases follow `qkv_bias` (Qwen2MoeConfig, default true); o never has one.
    return {**rotary_decoder(c), **bias(c("qkv_bias", True)), **qwen_window(c),
            **_qwen_moe(c, True)}


def _qwen3_moe(c: Config) -> Raw:
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head",
            **qwen_window(c), **_qwen_moe(c, False)}


def _olmoe(c: Config) -> Raw:
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "all_heads"}
    raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("intermediate_size")}
    return raw


def _deepseek_v3(c: Config) -> Raw:
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn)}
    raw["n_kv_heads"] = None  # latent attention decompresses K and V for every head
    raw.pop("head_dim", None)
    raw["latent_attention"] = {
        "q_lora_rank": c("q_lora_rank", None), "kv_lora_rank": c("kv_lora_rank"),
        "qk_nope_head_dim": c("qk_nope_head_dim"), "qk_rope_head_dim": c("qk_rope_head_dim"),
        "v_head_dim": c("v_head_dim")}
    shared = c("n_shared_experts", 0)
    first, n = c("first_k_dense_replace", 0), raw["n_layers"]
    # No `every`: DeepseekV3DecoderLayer puts routed experts on every layer from
    # first_k_dense_replace on; a `moe_layer_freq` key is stored but never read. From
    # num_hidden_layers on, every layer is a dense MLP of intermediate_size: no moe block.
    if not (type(first) is int and type(n) is int and first >= n):
        raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "shared_experts": shared,
                      "first_dense": first}
    if c("num_nextn_predict_layers", 0):
        raw["mtp_layers"] = c("num_nextn_predict_layers")
    return raw


def _gpt_oss(c: Config) -> Raw:
    attn = c("attention_bias", True)
    raw = {**rotary_decoder(c), **bias(attn, attn, True), "attention_sinks": True,
           **layer_types(c, default_every=2)}
    raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok", None)
                  or c("experts_per_token"), "d_ff": c("intermediate_size"),
                  "router_bias": True}
    return raw


CONVERTERS = {
    "mixtral": _mixtral, "qwen2_moe": _qwen2_moe, "qwen3_moe": _qwen3_moe, "olmoe": _olmoe,
    "deepseek_v3": _deepseek_v3, "gpt_oss": _gpt_oss,
    # Moonshot's Kimi K2 checkpoints name a type transformers 5.24 has no class for: their
    # remote code (moonshotai/Kimi-K2-Instruct, configuration_deepseek.py) is DeepSeek-V3's
    # config class and model under model_type kimi_k2, so they read as deepseek_v3.
    "kimi_k2": _deepseek_v3,
}

# DeepseekV3Config's own defaults (transformers 5.24) for the keys that size the model, so a
# hand-written file that leaves one out counts what transformers builds from it.
DEFAULTS: dict[str, Raw] = {
    "deepseek_v3": {"vocab_size": 129_280, "hidden_size": 7168, "intermediate_size": 18_432,
                    "moe_intermediate_size": 2048, "num_hidden_layers": 61,
                    "num_attention_heads": 128, "num_key_value_heads": 128,
                    "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
                    "first_k_dense_replace": 3, "q_lora_rank": 1536, "kv_lora_rank": 512,
                    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                    "tie_word_embeddings": False, "max_position_embeddings": 4096},
}
DEFAULTS["kimi_k2"] = DEFAULTS["deepseek_v3"]
