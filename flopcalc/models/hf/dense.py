"""Dense decoders: GPT-2, the Llama family (Llama, Mistral, Qwen2/3, Gemma 1-3, OLMo 2, Phi-3)
and GPT-NeoX."""

from __future__ import annotations

from .common import Config, Raw, bias, layer_types, qwen_window, rotary_decoder


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
    return {**rotary_decoder(c), **bias(attn, attn, c("mlp_bias", False))}


def _mistral(c: Config) -> Raw:
    return {**rotary_decoder(c), **layer_types(c)}


def _qwen2(c: Config) -> Raw:
    return {**rotary_decoder(c), **bias(True), **qwen_window(c)}  # Qwen2: q/k/v bias only


def _qwen3(c: Config) -> Raw:
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head", **qwen_window(c)}


def _gemma_core(c: Config) -> Raw:
    """Gemma 1-3 share `attention_bias` on q, k, v and o (`gemma/modeling_gemma.py`
    GemmaAttention)."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c, tie=True), **bias(attn, attn)}


def _gemma(c: Config) -> Raw:
    return _gemma_core(c)


def _gemma2(c: Config) -> Raw:
    return {**_gemma_core(c), "norm_placement": "sandwich", **layer_types(c, default_every=2)}


def _gemma3_text(c: Config) -> Raw:
    return {**_gemma_core(c), "norm_placement": "sandwich", "qk_norm": "per_head",
            **layer_types(c, default_every=6)}


def _olmo2(c: Config) -> Raw:
    attn = c("attention_bias", False)
    # OLMo 2 normalises each sublayer's output (no input norm) and q/k over all heads.
    return {**rotary_decoder(c), **bias(attn, attn), "norm_placement": "post",
            "qk_norm": "all_heads"}


def _phi3(c: Config) -> Raw:
    return {**rotary_decoder(c), **layer_types(c)}


def _gpt_neox(c: Config) -> Raw:
    parallel = c("use_parallel_residual", True)
    raw = {**rotary_decoder(c, gated=False), **bias(c("attention_bias", True),
                                                      c("attention_bias", True), True),
           "norm": "layernorm", "activation": "gelu", "n_kv_heads": None}
    if parallel:
        raw.update(parallel_block=True, parallel_norms=2)
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

CONVERTERS = {
    "gpt2": _gpt2, "llama": _llama, "mistral": _mistral, "qwen2": _qwen2, "qwen3": _qwen3,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3_text, "olmo2": _olmo2,
    "phi3": _phi3, "gpt_neox": _gpt_neox,
}
