"""Import a Hugging Face `config.json` (a local file; nothing is fetched) as a flopcalc config.

Each supported `model_type` has a converter that reads the keys its transformers model class
reads, with the same defaults, and returns a plain mapping in the preset schema; that mapping is
validated like any YAML preset, so `flopcalc show config.json` prints a preset that reloads to
the same numbers. Where a config has no `layer_types`, the sliding-window layers are derived as
transformers derives them (see `_layer_types`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import FlopcalcError

Raw = dict[str, Any]


class Config:
    """A config.json mapping with lookups that name the file and key when one is missing."""

    def __init__(self, data: Raw, label: str, model_type: str):
        self.data, self.label, self.model_type = data, label, model_type

    def __call__(self, key: str, default: Any = ...) -> Any:
        """The value of `key`; `default` when absent or null (if a default is given)."""
        value = self.data.get(key)
        if value is None:
            if default is ...:
                raise FlopcalcError(f"{self.label}: missing '{key}' (needed for model_type "
                                    f"{self.model_type})")
            return default
        return value

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None


# ------------------------------------------------------------------------------ shared parts

_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "window",
                "chunked_attention": "chunked"}


def _layer_types(c: Config, default_every: int | None = None) -> Raw:
    """The attention-kind keys. An explicit `layer_types` list is taken as it is; otherwise
    Gemma 2 and gpt-oss alternate window and full layers starting with a window layer, Gemma 3
    makes every `sliding_window_pattern`-th layer full (default 6), and Mistral/Mixtral slide
    every layer when `sliding_window` is set."""
    window = c("sliding_window", None)
    if c.has("layer_types"):
        kinds = [_LAYER_TYPES.get(t, t) for t in c("layer_types")]
        out: Raw = {"layer_types": _shortest_period(kinds)}
        if "window" in kinds:
            out["sliding_window"] = window
        if "chunked" in kinds:
            out["attention_chunk"] = c("attention_chunk_size")
        return out
    if window is None:
        return {}
    if default_every is not None:
        every = c("sliding_window_pattern", default_every)
        return {"sliding_window": window, "global_every": every}
    return {"sliding_window": window}


def _shortest_period(kinds: list) -> list:
    """The shortest pattern that repeats to the whole list (the list itself if none does), so
    that `show` prints [window, full] rather than 36 entries."""
    n = len(kinds)
    for p in range(1, n):
        if n % p == 0 and kinds == kinds[:p] * (n // p):
            return kinds[:p]
    return kinds


def _qwen_window(c: Config) -> Raw:
    """Qwen2/Qwen3 (and their MoE): a window only when `use_sliding_window`, on the layers from
    `max_window_layers` on."""
    if c.has("layer_types"):
        return _layer_types(c)
    if not c("use_sliding_window", False) or c("sliding_window", None) is None:
        return {}
    n, first = c("num_hidden_layers"), c("max_window_layers", 28)
    kinds = ["window" if i >= first else "full" for i in range(n)]
    if "window" not in kinds:
        return {}
    return {"sliding_window": c("sliding_window"), "layer_types": kinds}


def _rotary_decoder(c: Config, *, tie: bool = False, gated: bool = True) -> Raw:
    """The keys the Llama family shares: RMSNorm, a gated MLP, rotary positions."""
    act = c("hidden_activation", None) or c("hidden_act", "silu")
    raw: Raw = {
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        # Absent or null means multi-head attention; any other value (0 included) is passed on
        # for validation rather than silently replaced.
        "n_kv_heads": (c("num_attention_heads") if c.data.get("num_key_value_heads") is None
                       else c.data["num_key_value_heads"]),
        "d_ff": c("intermediate_size"),
        "mlp": "gated" if gated else "plain",
        "activation": "gelu" if str(act).startswith("gelu") else "silu",
        "bias": False,
        "norm": "rmsnorm",
        "positions": "rotary",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", tie)),
    }
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    return raw


def _bias(qkv: bool, out: bool = False, mlp: bool = False) -> Raw:
    return {"bias": {"qkv": bool(qkv), "attn_out": bool(out), "mlp": bool(mlp)}}


# ---------------------------------------------------------------------------------- dense


def _gpt2(c: Config) -> Raw:
    d = c("n_embd")
    return {
        "n_layers": c("n_layer"),
        "d_model": d,
        "n_heads": c("n_head"),
        # GPT-2's MLP width defaults to 4·n_embd when n_inner is null or absent.
        "d_ff": c("n_inner", 4 * d if isinstance(d, int) else None),
        "mlp": "plain",
        "activation": "relu" if c("activation_function", "") == "relu" else "gelu",
        "bias": True,
        "norm": "layernorm",
        "positions": "learned",
        "max_seq_len": c("n_positions"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }


def _llama(c: Config) -> Raw:
    attn = c("attention_bias", False)
    return {**_rotary_decoder(c), **_bias(attn, attn, c("mlp_bias", False))}


def _mistral(c: Config) -> Raw:
    return {**_rotary_decoder(c), **_layer_types(c)}


def _qwen2(c: Config) -> Raw:
    return {**_rotary_decoder(c), **_bias(True), **_qwen_window(c)}  # Qwen2: q/k/v bias only


def _qwen3(c: Config) -> Raw:
    attn = c("attention_bias", False)
    return {**_rotary_decoder(c), **_bias(attn, attn), "qk_norm": "per_head", **_qwen_window(c)}


def _gemma(c: Config) -> Raw:
    return _rotary_decoder(c, tie=True)


def _gemma2(c: Config) -> Raw:
    return {**_rotary_decoder(c, tie=True), "norm_placement": "sandwich",
            **_layer_types(c, default_every=2)}


def _gemma3_text(c: Config) -> Raw:
    return {**_rotary_decoder(c, tie=True), "norm_placement": "sandwich", "qk_norm": "per_head",
            **_layer_types(c, default_every=6)}


def _olmo2(c: Config) -> Raw:
    attn = c("attention_bias", False)
    # OLMo 2 normalises each sublayer's output (no input norm) and q/k over all heads.
    return {**_rotary_decoder(c), **_bias(attn, attn), "norm_placement": "post",
            "qk_norm": "all_heads"}


def _phi3(c: Config) -> Raw:
    return {**_rotary_decoder(c), **_layer_types(c)}


def _gpt_neox(c: Config) -> Raw:
    parallel = c("use_parallel_residual", True)
    raw = {**_rotary_decoder(c, gated=False), **_bias(c("attention_bias", True),
                                                      c("attention_bias", True), True),
           "norm": "layernorm", "activation": "gelu", "n_kv_heads": None}
    if parallel:
        raw.update(parallel_block=True, parallel_norms=2)
    return raw


def _bert(c: Config) -> Raw:
    return {
        "architecture": "encoder-only",
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": "relu" if c("hidden_act", "gelu") == "relu" else "gelu",
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "token_types": c("type_vocab_size", 2),
        "embedding_norm": True,
        "head": "masked-lm",  # BertForMaskedLM, the published checkpoints' own head
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }


def _t5(c: Config) -> Raw:
    proj = str(c("feed_forward_proj", "relu"))
    gated = proj.startswith("gated-")
    act = proj.removeprefix("gated-")
    return {
        "architecture": "encoder-decoder",
        "n_encoder_layers": c("num_layers"),
        "n_layers": c("num_decoder_layers", c("num_layers")),
        "d_model": c("d_model"),
        "n_heads": c("num_heads"),
        "head_dim": c("d_kv"),
        "d_ff": c("d_ff"),
        "mlp": "gated" if gated else "plain",
        "activation": "relu" if act == "relu" else "gelu",
        "bias": False,
        "norm": "rmsnorm",
        "positions": "relative",
        "relative_buckets": c("relative_attention_num_buckets", 32),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "share_encoder_embeddings": True,
    }


# ------------------------------------------------------------------------ mixtures of experts


def _mixtral(c: Config) -> Raw:
    raw = {**_rotary_decoder(c), **_layer_types(c)}
    raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("intermediate_size")}
    return raw


def _qwen_moe(c: Config, shared: bool) -> Raw:
    moe: Raw = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                "d_ff": c("moe_intermediate_size"), "every": c("decoder_sparse_step", 1),
                "dense_layers": list(c("mlp_only_layers", []))}
    if shared and c("shared_expert_intermediate_size", 0):
        moe.update(shared_experts=1, shared_d_ff=c("shared_expert_intermediate_size"),
                   shared_gate=True)
    return {"moe": moe}


def _qwen2_moe(c: Config) -> Raw:
    return {**_rotary_decoder(c), **_bias(True), **_qwen_window(c), **_qwen_moe(c, True)}


def _qwen3_moe(c: Config) -> Raw:
    attn = c("attention_bias", False)
    return {**_rotary_decoder(c), **_bias(attn, attn), "qk_norm": "per_head",
            **_qwen_window(c), **_qwen_moe(c, False)}


def _olmoe(c: Config) -> Raw:
    attn = c("attention_bias", False)
    raw = {**_rotary_decoder(c), **_bias(attn, attn), "qk_norm": "all_heads"}
    raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("intermediate_size")}
    return raw


def _deepseek_v3(c: Config) -> Raw:
    attn = c("attention_bias", False)
    raw = {**_rotary_decoder(c), **_bias(attn, attn)}
    raw["n_kv_heads"] = None  # latent attention decompresses K and V for every head
    raw.pop("head_dim", None)
    raw["latent_attention"] = {
        "q_lora_rank": c("q_lora_rank", None), "kv_lora_rank": c("kv_lora_rank"),
        "qk_nope_head_dim": c("qk_nope_head_dim"), "qk_rope_head_dim": c("qk_rope_head_dim"),
        "v_head_dim": c("v_head_dim")}
    shared = c("n_shared_experts", 0)
    raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("moe_intermediate_size"), "shared_experts": shared,
                  "first_dense": c("first_k_dense_replace", 0), "every": c("moe_layer_freq", 1)}
    if c("num_nextn_predict_layers", 0):
        raw["mtp_layers"] = c("num_nextn_predict_layers")
    return raw


def _gpt_oss(c: Config) -> Raw:
    attn = c("attention_bias", True)
    raw = {**_rotary_decoder(c), **_bias(attn, attn, True), "attention_sinks": True,
           **_layer_types(c, default_every=2)}
    raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok", None)
                  or c("experts_per_token"), "d_ff": c("intermediate_size"),
                  "router_bias": True}
    return raw


# transformers' defaults for keys a published config may leave out (Gemma 3's multimodal
# config.json gives only the text model's non-default sizes: Gemma3TextConfig supplies the rest).
DEFAULTS: dict[str, Raw] = {
    "gemma3_text": {"vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256,
                    "max_position_embeddings": 131_072, "sliding_window": 4096,
                    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True},
}

CONVERTERS: dict[str, Callable[[Config], Raw]] = {
    "gpt2": _gpt2, "llama": _llama, "mistral": _mistral, "qwen2": _qwen2, "qwen3": _qwen3,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3_text, "olmo2": _olmo2,
    "phi3": _phi3, "gpt_neox": _gpt_neox, "bert": _bert, "t5": _t5,
    "mixtral": _mixtral, "qwen2_moe": _qwen2_moe, "qwen3_moe": _qwen3_moe, "olmoe": _olmoe,
    "deepseek_v3": _deepseek_v3, "gpt_oss": _gpt_oss,
}


def from_hf_dict(data: Raw, label: str) -> Raw:
    """The preset-schema mapping for a config.json mapping, with its `_name`: the file's stem,
    else the name in `_name_or_path`, else the model type."""
    model_type = data.get("model_type")
    if model_type == "gemma3" and isinstance(data.get("text_config"), dict):
        # The multimodal Gemma 3 config nests its language model; count that.
        data = {"model_type": "gemma3_text", **data["text_config"],
                "architectures": data.get("architectures")}
        model_type = "gemma3_text"
    if model_type not in CONVERTERS:
        what = f"model_type '{model_type}'" if model_type else "no model_type"
        raise FlopcalcError(f"{label}: {what} is not supported; supported: "
                            f"{', '.join(sorted(CONVERTERS))} (or describe the model in a YAML "
                            "file: flopcalc show gpt2 prints an example)")
    data = {**DEFAULTS.get(model_type, {}), **{k: v for k, v in data.items() if v is not None}}
    raw = CONVERTERS[model_type](Config(data, label, model_type))
    architectures = data.get("architectures")
    kind = architectures[0] if isinstance(architectures, list) and architectures and isinstance(
        architectures[0], str) else model_type
    stem = Path(label).stem
    origin = str(data.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    name = stem if stem not in ("config", "stdin") else origin or str(model_type)
    return {"_name": name,
            "title": f"{kind} (Hugging Face {model_type} config)",
            "source": f"Hugging Face config.json: {label}",
            "architecture": raw.pop("architecture", "decoder-only"),
            **{k: v for k, v in raw.items() if v is not None or k == "n_kv_heads"}}
