"""Classic decoders (transformers 5.24, each counted as the class `AutoModelForCausalLM`
builds): GPT-1 (`openai-gpt`), GPT-Neo, XGLM, BioGPT and CTRL. Each converter reads the keys
its config and model classes read (`models/<type>/configuration_<type>.py`,
`modeling_<type>.py`), with their defaults; `ALIASES` are the config classes' `attribute_map`.
Scalar multiplies of the embeddings (XGLM's, BioGPT's and CTRL's √d) are neither parameters
nor matmuls.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, shortest_period


def _act(name: str) -> str:
    """An activation's flopcalc family: ReLU, SiLU/Swish, else a GELU (gelu, gelu_new)."""
    return "relu" if name == "relu" else "silu" if name in ("silu", "swish") else "gelu"


def _openai_gpt(c: Config) -> Raw:
    """OpenAIGPTLMHeadModel (Radford et al. 2018, "Improving Language Understanding by
    Generative Pre-Training"; `openai/modeling_openai.py`): post-norm blocks (ln_1 after the
    attention's residual add, ln_2 after the MLP's), no final norm, a learned position table
    of n_positions rows, an MLP 4·n_embd wide (fixed: no n_inner key) with `afn`, biases
    everywhere, the head tied to the token table."""
    d = c("n_embd")
    return {
        "n_layers": c("n_layer"),
        "d_model": d,
        "n_heads": c("n_head"),
        "d_ff": 4 * d,
        "mlp": "plain",
        "activation": _act(str(c("afn", "gelu"))),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("n_positions"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }


_NEO_KINDS = {"global": "full", "local": "window"}


def _gpt_neo(c: Config) -> Raw:
    """GPTNeoForCausalLM (`gpt_neo/modeling_gpt_neo.py`): GPT-2's pre-norm blocks with q, k, v
    without biases (out_proj and the MLP with), a learned position table, and
    `attention_types` ([[["global", "local"], 12]]: the pattern repeated 12 times) naming each
    layer global or local; a local layer attends to the last `window_size` positions, itself
    included (its mask keeps i − j < window_size), as a sliding window does."""
    d = c("hidden_size")
    types = c("attention_types", [[["global", "local"], 12]], list)
    kinds = []
    for pattern, times in types:
        kinds += [_NEO_KINDS[t] for t in pattern] * times
    n = c.layers("num_layers")
    if len(kinds) != n:  # GPTNeoConfig.validate_architecture refuses it too
        raise FlopcalcError(f"{c.label}: attention_types names {len(kinds):,} layers, "
                            f"num_layers is {n:,}: give one kind per layer")
    raw: Raw = {
        "n_layers": c("num_layers"),
        "d_model": d,
        "n_heads": c("num_heads"),
        "d_ff": c("intermediate_size", 4 * d),
        "mlp": "plain",
        "activation": _act(str(c("activation_function", "gelu_new"))),
        "bias": {"qkv": False, "attn_out": True, "mlp": True},
        "norm": "layernorm",
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }
    if "window" in kinds:
        raw.update(layer_types=shortest_period(kinds), sliding_window=c("window_size", 256))
    return raw


def _xglm(c: Config) -> Raw:
    """XGLMForCausalLM (Lin et al. 2021, "Few-shot Learning with Multilingual Language
    Models"; `xglm/modeling_xglm.py`): pre-norm layers with q, k, v, o, fc1 and fc2 biased, a
    final LayerNorm, sinusoidal positions held as a buffer (no parameter), the head tied."""
    return {
        "n_layers": c("num_layers"),
        "d_model": c("d_model"),
        "n_heads": c("attention_heads"),
        "d_ff": c("ffn_dim"),
        "mlp": "plain",
        "activation": _act(str(c("activation_function", "gelu"))),
        "bias": True,
        "norm": "layernorm",
        "positions": "sinusoidal",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }


def _biogpt(c: Config) -> Raw:
    """BioGptForCausalLM (Luo et al. 2022, "BioGPT"; `biogpt/modeling_biogpt.py`): XGLM's
    layers with a learned position table of max_position_embeddings + 2 rows (its ids start
    at 2) and an `output_projection` head, tied unless tie_word_embeddings is false."""
    return {
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": _act(str(c("hidden_act", "gelu"))),
        "bias": True,
        "norm": "layernorm",
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings"),
        "position_offset": 2,
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }


def _ctrl(c: Config) -> Raw:
    """CTRLLMHeadModel (Keskar et al. 2019, "CTRL"; `ctrl/modeling_ctrl.py`): pre-norm layers
    (Wq, Wk, Wv, dense, and a ReLU MLP of width dff, all biased), a final LayerNorm,
    sinusoidal positions held as a buffer, and a head tied to the token table with its own
    vocabulary-sized bias."""
    return {
        "n_layers": c("n_layer"),
        "d_model": c("n_embd"),
        "n_heads": c("n_head"),
        "d_ff": c("dff"),
        "mlp": "plain",
        "activation": "relu",
        "bias": True,
        "norm": "layernorm",
        "positions": "sinusoidal",
        "max_seq_len": c("n_positions"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "lm_head_bias": 1,
    }


CONVERTERS = {"openai-gpt": _openai_gpt, "gpt_neo": _gpt_neo, "xglm": _xglm,
              "biogpt": _biogpt, "ctrl": _ctrl}

_GPT_ALIASES = {"max_position_embeddings": "n_positions", "hidden_size": "n_embd",
                "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
ALIASES = {
    "openai-gpt": _GPT_ALIASES,
    "ctrl": _GPT_ALIASES,
    "gpt_neo": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
    "xglm": {"num_attention_heads": "attention_heads", "hidden_size": "d_model",
             "num_hidden_layers": "num_layers"},
}


def _gpt_neox_japanese(c: Config) -> Raw:
    """GPTNeoXJapaneseForCausalLM (`gpt_neox_japanese/modeling_gpt_neox_japanese.py`):
    sequential pre-norm layers (LayerNorms with biases), a fused qkv and a dense output without
    biases but for the last layer's attention (`dense_bias`, d: the layer type
    `full_out_bias`), an MLP hidden_size·intermediate_multiple_size wide without biases,
    rotary positions on `partial_rotary_factor` of each head (no parameter), a final
    LayerNorm, and the `embed_out` head tied unless tie_word_embeddings is false."""
    d, n = c("hidden_size"), c.layers()
    return {
        "n_layers": n,
        "d_model": d,
        "n_heads": c("num_attention_heads"),
        "d_ff": int(d * c("intermediate_multiple_size", 4)),
        "mlp": "plain",
        "activation": _act(str(c("hidden_act", "gelu"))),
        "bias": False,
        "norm": "layernorm",
        "positions": "rotary",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "layer_types": ["full"] * (n - 1) + ["full_out_bias"],
    }


CONVERTERS["gpt_neox_japanese"] = _gpt_neox_japanese
