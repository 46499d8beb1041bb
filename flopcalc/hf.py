"""Import a Hugging Face `config.json` (a local file; nothing is fetched) as a flopcalc config.

The result is a plain mapping in the preset schema, validated like any YAML preset, so
`flopcalc show config.json` prints a preset that reloads to the same numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .errors import FlopcalcError


def _gpt2(c: dict[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    d = get("n_embd")
    n_inner = c.get("n_inner")
    return {
        "n_layers": get("n_layer"),
        "d_model": d,
        "n_heads": get("n_head"),
        # GPT-2's MLP width defaults to 4·n_embd when n_inner is null or absent.
        "d_ff": 4 * d if n_inner is None and isinstance(d, int) else n_inner,
        "mlp": "plain",
        "activation": "relu" if c.get("activation_function") == "relu" else "gelu",
        "bias": {"qkv": True, "attn_out": True, "mlp": True},
        "norm": "layernorm",
        "positions": "learned",
        "max_seq_len": get("n_positions"),
        "vocab_size": get("vocab_size"),
        "tie_embeddings": c.get("tie_word_embeddings", True),
    }


def _llama_family(model_type: str) -> Callable[[dict[str, Any], Callable[..., Any]], dict[str, Any]]:
    """Llama, Mistral, Qwen2 and Gemma share one block: RMSNorm, gated MLP, rotary positions."""

    def convert(c: dict[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
        if model_type == "qwen2":
            bias = {"qkv": True, "attn_out": False, "mlp": False}  # Qwen2: q/k/v bias only
        else:
            attn = bool(c.get("attention_bias", False))
            bias = {"qkv": attn, "attn_out": attn, "mlp": bool(c.get("mlp_bias", False))}
        act = c.get("hidden_activation") or c.get("hidden_act") or "silu"
        raw = {
            "n_layers": get("num_hidden_layers"),
            "d_model": get("hidden_size"),
            "n_heads": get("num_attention_heads"),
            # Absent or null means multi-head attention; any other value (0 included) is
            # passed on for validation rather than silently replaced.
            "n_kv_heads": (get("num_attention_heads") if c.get("num_key_value_heads") is None
                           else c["num_key_value_heads"]),
            "d_ff": get("intermediate_size"),
            "mlp": "gated",
            "activation": "gelu" if str(act).startswith("gelu") else "silu",
            "bias": bias,
            "norm": "rmsnorm",
            "positions": "rotary",
            "max_seq_len": get("max_position_embeddings"),
            "vocab_size": get("vocab_size"),
            # Gemma ties its LM head to the embedding by default; the others do not.
            "tie_embeddings": c.get("tie_word_embeddings", model_type == "gemma"),
        }
        if c.get("head_dim") is not None:
            raw["head_dim"] = c["head_dim"]
        return raw

    return convert


CONVERTERS: dict[str, Callable[[dict[str, Any], Callable[..., Any]], dict[str, Any]]] = {
    "gpt2": _gpt2,
    "llama": _llama_family("llama"),
    "mistral": _llama_family("mistral"),
    "qwen2": _llama_family("qwen2"),
    "gemma": _llama_family("gemma"),
}


def read_hf_config(path: Path) -> dict[str, Any]:
    """The preset-schema mapping for a config.json file."""
    from .registry import read_text

    text = read_text(path, "config.json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FlopcalcError(f"{path}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise FlopcalcError(f"{path}: a config.json is a JSON object ({{...}}), not "
                            f"{type(data).__name__}")
    return from_hf_dict(data, str(path))


def from_hf_dict(data: dict[str, Any], label: str) -> dict[str, Any]:
    model_type = data.get("model_type")
    supported = ", ".join(CONVERTERS)
    if model_type not in CONVERTERS:
        what = f"model_type '{model_type}'" if model_type else "no model_type"
        raise FlopcalcError(f"{label}: {what} is not supported; supported: {supported}")

    def get(key: str) -> Any:
        if key not in data:
            raise FlopcalcError(f"{label}: missing '{key}' (needed for model_type {model_type})")
        return data[key]

    raw = CONVERTERS[model_type](data, get)
    name = data.get("_name_or_path") or Path(label).parent.name or model_type
    raw = {
        "title": f"{name} (Hugging Face {model_type} config)",
        "source": f"Hugging Face config.json: {label}",
        "architecture": "decoder-only",
        **raw,
    }
    return raw
