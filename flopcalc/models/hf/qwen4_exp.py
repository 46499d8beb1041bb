"""Qwen4-Exp (transformers 5.24 `models/qwen4_exp/`): the text model `qwen4_exp_text`
(Qwen4ExpForCausalLM) and the wrapper `qwen4_exp` (Qwen4ExpForConditionalGeneration: its language
model and head, tied by the wrapper's own flag; the Qwen3.5-style vision tower named and left
out), through the kinds of `flopcalc/kinds/qwen4_exp.py`.

Every layer is a gated DeltaNet (`linear_attention`) or QSA attention (`indexed_attention`;
the published files' `full_attention` means the same, as Qwen4ExpTextConfig rewrites it) per
`layer_types` (absent: every `full_attention_interval`-th, 4 by default), with Qwen3-Next's
mixture of experts (a sigmoid-gated shared expert), all inside gated hyper-connections, and the
hashed n-gram embeddings on the linear layers `ple_layer_ids` names (one-indexed). The
attention layers need the five `indexer_*` keys: transformers cannot build them without (its
default config does not build), and neither is counted here.
"""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, bias, shortest_period
from .gated_deltanet import _experts, gdn_block
from .multimodal import Wrapper, language_model_only

# Qwen4ExpTextConfig's defaults (transformers 5.24), for the keys a file may leave out
_TEXT: Raw = {
    "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "hidden_act": "silu",
    "max_position_embeddings": 32768, "tie_word_embeddings": False, "attention_bias": False,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512,
    "hc_count": 4, "hc_lowrank": 320, "ple_conv_kernel_size": 4, "ngram_size": 3,
    "heads_per_ngram": 8, "ngram_vocab_size_base": 20_000_000,
    "make_ngram_vocab_size_divisible_by": 128,
}
_TYPES = {"linear_attention": "gdn", "indexed_attention": "qsa", "full_attention": "qsa"}
_INDEXER = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
            "indexer_compress_ratio")


def _mixers(c: Config, n: int) -> list[str]:
    """Each layer's mixer, "gdn" or "qsa": `layer_types` (exactly one entry per layer, each
    named with its index when wrong), else every `full_attention_interval`-th layer QSA."""
    value = c("layer_types", None, list)
    if value is None:
        every = c("full_attention_interval", 4, int)
        if every < 1:
            raise FlopcalcError(f"{c.label}: full_attention_interval must be at least 1, got "
                                f"{every}")
        return ["gdn" if (i + 1) % every else "qsa" for i in range(n)]
    for i, v in enumerate(value[:n]):
        if type(v) is not str or v not in _TYPES:
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:40] + "..."
            raise FlopcalcError(f"{c.label}: layer_types[{i}] = {shown} is not one of "
                                f"{', '.join(map(repr, _TYPES))} (Qwen4-Exp's)")
    if len(value) < n:
        raise FlopcalcError(f"{c.label}: layer_types has {len(value):,} entries, "
                            f"num_hidden_layers is {n:,}: layer {len(value)} has none (give one "
                            "per layer)")
    if len(value) > n:
        raise FlopcalcError(f"{c.label}: layer_types has {len(value):,} entries, "
                            f"num_hidden_layers is {n:,}: layer_types[{n}] names no layer (give "
                            "one per layer)")
    return [_TYPES[v] for v in value]


def _ple_layers(c: Config, mixers: list[str]) -> list[int]:
    """The PLE layers' indices from 0, in order (`ple_layer_ids`: one-indexed, repeats
    dropped as the config class drops them; each must name a linear-attention layer)."""
    ids = c("ple_layer_ids", [], list)
    n = len(mixers)
    for i, v in enumerate(ids):
        if type(v) is not int or not 1 <= v <= n:
            raise FlopcalcError(f"{c.label}: ple_layer_ids[{i}] = {v!r} is not a layer id "
                                f"(one-indexed, 1..{n})")
        if mixers[v - 1] != "gdn":
            raise FlopcalcError(f"{c.label}: ple_layer_ids[{i}] = {v} names an attention layer; "
                                "Qwen4-Exp's n-gram embeddings go on linear_attention layers "
                                "only (transformers raises)")
    return sorted({v - 1 for v in ids})


def _indexer(c: Config) -> dict[str, Any]:
    given = {k: c(k, None, int) for k in _INDEXER}
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise FlopcalcError(f"{c.label}: Qwen4-Exp's attention layers need the QSA indexer keys; "
                            f"missing {', '.join(missing)} (transformers cannot build them "
                            "without)")
    bad = [k for k, v in given.items() if v <= 0]
    if bad:
        raise FlopcalcError(f"{c.label}: {bad[0]} must be positive, got {given[bad[0]]}")
    if given["indexer_kv_heads"] != 1:
        raise FlopcalcError(f"{c.label}: indexer_kv_heads must be 1 (Qwen4-Exp's QSA has one key "
                            f"head), got {given['indexer_kv_heads']}")
    if given["indexer_budget"] % given["indexer_compress_ratio"]:
        raise FlopcalcError(f"{c.label}: indexer_budget {given['indexer_budget']} must be a "
                            f"multiple of indexer_compress_ratio "
                            f"{given['indexer_compress_ratio']}")
    return {k: v for k, v in given.items() if k != "indexer_kv_heads"}


def _text(c: Config) -> Raw:
    """Qwen4ExpForCausalLM's preset mapping (see the module docstring)."""
    c = Config({**_TEXT, **{k: v for k, v in c.data.items() if v is not None}}, c.label,
               c.model_type)
    n = c.layers()
    mixers = _mixers(c, n)
    ple = _ple_layers(c, mixers)
    names = []
    for i, m in enumerate(mixers):
        names.append(f"q4x_gdn_ple@{ple.index(i)}" if i in ple else f"q4x_{m}")
    attn = c("attention_bias", expect=bool)
    act = str(c("hidden_act"))
    if (c("output_gate_type", None) or act) not in ("silu", "sigmoid"):
        raise FlopcalcError(f"{c.label}: Qwen4-Exp's output gate is silu or sigmoid, got "
                            f"{c('output_gate_type', None) or act!r}")
    block: Raw = {"hc_count": c("hc_count", expect=int), "hc_lowrank": c("hc_lowrank", expect=int)}
    if "qsa" in mixers:
        block.update(_indexer(c))
    if ple:
        eos = c("eos_token_id", None)
        if eos is None or eos == []:
            raise FlopcalcError(f"{c.label}: ple_layer_ids needs eos_token_id (the n-gram "
                                "embeddings pad their context with it; transformers raises)")
        for key in ("ple_conv_kernel_size", "ngram_size", "heads_per_ngram",
                    "ngram_vocab_size_base", "make_ngram_vocab_size_divisible_by"):
            block[key] = c(key, expect=int)
        block["ple_embed_dim"] = c("ple_embed_dim", c("hidden_size"), int)
    raw: Raw = {
        "n_layers": n, "d_model": c("hidden_size"), "n_heads": c("num_attention_heads"),
        "n_kv_heads": c("num_key_value_heads"), "head_dim": c("head_dim"),
        "mlp": "gated", "activation": "gelu" if act.startswith("gelu") else "silu",
        **bias(attn, attn),
        # the streams' gated residuals hold the layers' norms, the mixer the final one
        "norm": "none", "final_norm": False,
        "qk_norm": "per_head", "attention_gate": True, "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", None), "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings")),
        "layer_types": shortest_period(names),
        "moe": _experts(c),
        "qwen4_exp": block,
    }
    if "gdn" in mixers:
        raw["gated_deltanet"] = gdn_block(c)
    return raw


WRAPPERS: dict[str, Wrapper] = {"qwen4_exp": Wrapper("qwen4_exp_text", flat=True)}


def _unwrap(c: Config) -> Raw:
    """Qwen4ExpForConditionalGeneration: the language model (`text_config`) and its head, tied
    by the wrapper's flag; the vision tower named in the notes."""
    return language_model_only(c, WRAPPERS[c.model_type])


CONVERTERS = {"qwen4_exp_text": _text, "qwen4_exp": _unwrap}
