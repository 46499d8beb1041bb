"""Mamba-1 models: Mamba, Falcon-Mamba and Jamba (attention, Mamba-1 and mixtures of experts)."""

from __future__ import annotations

from math import ceil
from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, shortest_period


def _rank(value: Any, d: Any) -> Any:
    """time_step_rank / mamba_dt_rank: "auto" is ⌈d/16⌉ (as the configs' __post_init__)."""
    if value == "auto" and isinstance(d, int) and not isinstance(d, bool):
        return ceil(d / 16)
    return value


def _mamba(c: Config, dt_norms: str = "none") -> Raw:
    """MambaForCausalLM / FalconMambaForCausalLM: embeddings, layers of an RMSNorm and a Mamba-1
    mixer (no MLP), a final RMSNorm and the head (tied by default). The mixer's width is
    `intermediate_size` when the config gives it (the published Falcon-Mamba-7B config says 8192
    beside expand 16, and transformers keeps 8192), else int(expand·hidden_size)."""
    d = c("hidden_size")
    inner = c("intermediate_size", None)
    if inner is None and isinstance(d, int):
        inner = int(c("expand", 2) * d)
    return {
        "n_layers": c("num_hidden_layers"),
        "d_model": d,
        "norm": "rmsnorm",
        "positions": "none",
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "layer_types": ["mamba1"],
        "mamba1": {"d_inner": inner, "d_state": c("state_size", 16), "d_conv": c("conv_kernel", 4),
                   "dt_rank": _rank(c("time_step_rank", "auto"), d),
                   "bias": bool(c("use_bias", False)),
                   "conv_bias": bool(c("use_conv_bias", True)), "dt_norms": dt_norms},
    }


def _falcon_mamba(c: Config) -> Raw:
    """Falcon-Mamba: Mamba with weightless RMSNorms on dt, B and C (buffers, no parameters)."""
    return _mamba(c, "weightless")


def _jamba(c: Config) -> Raw:
    """JambaForCausalLM: layer i is attention when i % attn_layer_period == attn_layer_offset,
    else Mamba-1 (with weighted dt/B/C RMSNorms); its feed-forward block is a mixture of experts
    when i % expert_layer_period == expert_layer_offset and num_experts > 1, else a SwiGLU MLP
    of the same width. Attention has no position encoding and no biases; every layer has two
    RMSNorms. The period/offset rule becomes `every` when offset = period − 1 (MoE on layers
    with (i + 1) % period == 0), else the dense layers are listed."""
    d, n = c("hidden_size"), c("num_hidden_layers")
    heads = c("num_attention_heads")
    act = c("hidden_act", "silu")
    raw: Raw = {
        "n_layers": n,
        "d_model": d,
        "n_heads": heads,
        "n_kv_heads": heads if c.data.get("num_key_value_heads") is None
        else c.data["num_key_value_heads"],
        "d_ff": c("intermediate_size"),
        "mlp": "gated",
        "activation": "gelu" if str(act).startswith("gelu") else "silu",
        "bias": False,
        "norm": "rmsnorm",
        "positions": "none",
        "max_seq_len": c("max_position_embeddings", None),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", False)),
    }
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    if not isinstance(n, int) or isinstance(n, bool):
        return raw  # validation names the bad n_layers
    n = c.layers()  # the layer lists below are built one entry per layer: bounded first
    a_period, a_offset = c("attn_layer_period", 8), c("attn_layer_offset", 4)
    e_period, e_offset = c("expert_layer_period", 2), c("expert_layer_offset", 1)
    for key, period, offset in (("attn_layer", a_period, a_offset),
                                ("expert_layer", e_period, e_offset)):
        if not (isinstance(period, int) and isinstance(offset, int) and 0 <= offset < period):
            raise FlopcalcError(f"{c.label}: {key}_offset={offset!r} must be at least 0 and "
                                f"less than {key}_period={period!r} (as transformers checks)")
    kinds = ["full" if i % a_period == a_offset else "mamba1" for i in range(n)]
    raw["layer_types"] = shortest_period(kinds)
    raw["mamba1"] = {"d_inner": c("mamba_expand", 2, int) * d if isinstance(d, int) else None,
                     "d_state": c("mamba_d_state", 16), "d_conv": c("mamba_d_conv", 4),
                     "dt_rank": _rank(c("mamba_dt_rank", "auto"), d),
                     "bias": bool(c("mamba_proj_bias", False)),
                     "conv_bias": bool(c("mamba_conv_bias", True)), "dt_norms": "weighted"}
    experts = c("num_experts", None) or c("num_local_experts", 16)
    routed = [i for i in range(n) if i % e_period == e_offset]
    if isinstance(experts, int) and experts > 1 and routed:
        moe: Raw = {"experts": experts, "top_k": c("num_experts_per_tok", 2),
                    "d_ff": c("intermediate_size")}
        if e_offset == e_period - 1:
            moe["every"] = e_period
        else:
            moe["dense_layers"] = [i for i in range(n) if i % e_period != e_offset]
        raw["moe"] = moe
    return raw


CONVERTERS = {"mamba": _mamba, "falcon_mamba": _falcon_mamba, "jamba": _jamba}
