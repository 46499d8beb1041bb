"""Dense decoders of their own shape (transformers 5.24): parallel blocks (Phi, GPT-J, CodeGen,
Cohere, Falcon, StableLM), LayerNorm models with plain MLPs (StarCoder2, Persimmon, Nemotron,
GPT-BigCode, OPT, BLOOM, MPT), ALiBi (BLOOM, MPT, Falcon), parameter-free LayerNorm (OLMo) and
xIELU (Apertus).

Each converter reads the keys its class reads in `models/<type>/modeling_<type>.py` (the
configuration class's defaults where a key is absent). Where transformers computes something
flopcalc does not count the converter says so in one line naming the missing feature.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, layer_types

# transformers' ACT2FN names → flopcalc's activations (only --elementwise reads them).
_ACTIVATIONS = {"relu": "relu", "relu2": "relu2", "xielu": "xielu", "silu": "silu",
                "swish": "silu"}


def activation(name: str) -> str:
    """gelu, gelu_new, gelu_pytorch_tanh, gelu_fast... are GELU; relu, relu2, silu, xielu."""
    return _ACTIVATIONS.get(name, "gelu" if name.startswith("gelu") else "silu")


def _sizes(c: Config, *, layers: str = "num_hidden_layers", d: str = "hidden_size",
           heads: str = "num_attention_heads", ff: str | None = "intermediate_size",
           positions: str | None = "max_position_embeddings", kv: str | None = None) -> Raw:
    raw: Raw = {"n_layers": c(layers), "d_model": c(d), "n_heads": c(heads),
                "vocab_size": c("vocab_size")}
    if ff is not None:
        raw["d_ff"] = c(ff)
    if positions is not None:
        raw["max_seq_len"] = c(positions)
    # None: multi-head attention (transformers fills the config's KV heads in the same way).
    raw["n_kv_heads"] = c(kv, None) if kv is not None else None
    return raw


def _head_dim(c: Config) -> Raw:
    """`getattr(config, "head_dim", d / heads)`: a head_dim the file gives is used."""
    return {"head_dim": c("head_dim")} if c.has("head_dim") else {}


def _phi(c: Config) -> Raw:
    """Phi-1/1.5/2: one LayerNorm feeding attention and the MLP side by side, biases on every
    projection, an LM head with its own bias (kept when tied), a per-head q/k LayerNorm when
    `qk_layernorm` (`phi/modeling_phi.py`). Partial rotary changes no count."""
    raw = {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "plain",
           "activation": activation(c("hidden_act", "gelu_new", str)), "bias": True,
           "norm": "layernorm", "parallel_block": True, "parallel_norms": 1,
           "positions": "rotary", "tie_embeddings": bool(c("tie_word_embeddings", False)),
           "lm_head_bias": 1}
    if c("qk_layernorm", False):
        raw["qk_norm"] = "per_head"
    return raw


def _gptj(c: Config) -> Raw:
    """GPT-J and CodeGen: GPT-2's names; q, k, v and out without biases (CodeGen fuses q, k, v
    into one d → 3d, the same count), a biased MLP (`n_inner`, default 4d), one LayerNorm for
    the parallel attention and MLP, an LM head with its own bias (`gptj/modeling_gptj.py`,
    `codegen/modeling_codegen.py`). `rotary_dim` changes no count."""
    d = c("n_embd", expect=int)
    return {**_sizes(c, layers="n_layer", d="n_embd", heads="n_head", ff=None,
                     positions="n_positions"),
            "d_ff": c("n_inner", 4 * d), "mlp": "plain",
            "activation": activation(c("activation_function", "gelu_new", str)),
            **bias(False, False, True), "norm": "layernorm", "parallel_block": True,
            "parallel_norms": 1, "positions": "rotary",
            "tie_embeddings": bool(c("tie_word_embeddings", False)), "lm_head_bias": 1}


def _cohere(c: Config) -> Raw:
    """Command R: one bias-free LayerNorm feeding attention and a gated MLP side by side,
    `attention_bias` on q, k, v, o, and with `use_qk_norm` a bias-free LayerNorm per head whose
    gain is per (head, dim): the widths of a norm over all heads (`cohere/modeling_cohere.py`).
    `logit_scale` is element-wise."""
    attn = c("attention_bias", False)
    raw = {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "gated",
           "activation": activation(c("hidden_act", "silu", str)), **bias(attn, attn),
           "norm": "layernorm", "norm_bias": False, "parallel_block": True,
           "parallel_norms": 1, "positions": "rotary",
           "tie_embeddings": bool(c("tie_word_embeddings", True))}
    if c("use_qk_norm", False):
        raw["qk_norm"] = "all_heads"
    return raw


def _cohere2(c: Config) -> Raw:
    """Command R7B / A: Cohere without QK-norm, window layers but every 4th (the config's
    `layer_types`, or its former `sliding_window_pattern`); global layers have no RoPE (no
    count). The config sets head_dim = d / heads whatever a file says."""
    raw = {**_cohere(c), **layer_types(c, default_every=4)}
    raw.pop("head_dim", None)
    raw.pop("qk_norm", None)
    return raw


def _falcon(c: Config) -> Raw:
    """Falcon (`falcon/modeling_falcon.py`): a fused q, k, v of (2·kv + h)·hd with the new
    decoder architecture (Falcon-40B/180B), d + 2·hd with `multi_query` (7B: one K/V head),
    else 3d; `parallel_attn` blocks with `num_ln_in_parallel_attn` LayerNorms (default 2 with
    the new architecture, else 1), or sequential blocks with 2; `bias` on every projection;
    ALiBi (`alibi`) or rotary positions."""
    heads = c("num_attention_heads", expect=int)
    new, parallel = c("new_decoder_architecture", False), c("parallel_attn", True)
    norms = c("num_ln_in_parallel_attn", None) or (2 if new else 1)
    if new and not parallel:
        raise FlopcalcError(f"{c.label}: new_decoder_architecture with parallel_attn false "
                            "does not run in transformers (FalconDecoderLayer has no ln_attn); "
                            "set parallel_attn true")
    if parallel and norms == 2 and not new:
        raise FlopcalcError(f"{c.label}: num_ln_in_parallel_attn 2 without "
                            "new_decoder_architecture does not run in transformers "
                            "(FalconDecoderLayer reads input_layernorm); set it to 1")
    kv = c("num_kv_heads", heads) if new else 1 if c("multi_query", True) else heads
    d = c("hidden_size", expect=int)
    raw = {**_sizes(c, ff=None), "n_kv_heads": kv, "d_ff": c("ffn_hidden_size", 4 * d),
           "mlp": "plain", "activation": activation(c("activation", "gelu", str)),
           "bias": bool(c("bias", False)), "norm": "layernorm",
           "positions": "alibi" if c("alibi", False) else "rotary",
           "tie_embeddings": bool(c("tie_word_embeddings", True))}
    if parallel:
        raw.update(parallel_block=True, parallel_norms=norms)
    return raw


def _starcoder2(c: Config) -> Raw:
    """StarCoder2: LayerNorm, a plain MLP, `use_bias` on every projection, GQA, a
    `sliding_window` on every layer when set (`starcoder2/modeling_starcoder2.py`)."""
    window = c("sliding_window", None)
    raw = {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "plain",
           "activation": activation(c("hidden_act", "gelu_pytorch_tanh", str)),
           "bias": bool(c("use_bias", True)), "norm": "layernorm", "positions": "rotary",
           "tie_embeddings": bool(c("tie_word_embeddings", True))}
    if window is not None:
        raw["sliding_window"] = window
    return raw


def _stablelm(c: Config) -> Raw:
    """StableLM: LayerNorm, a gated MLP, q/k/v biases under `use_qkv_bias` (o never, d x d),
    GQA, `use_parallel_residual` (one norm for both) or sequential blocks, and with
    `qk_layernorm` a bias-free LayerNorm of each head's width for every query and key head
    (`StableLmLayerNormPerHead`: the widths of a norm over all heads)."""
    raw = {**_sizes(c, kv="num_key_value_heads"), "mlp": "gated",
           "activation": activation(c("hidden_act", "silu", str)),
           **bias(c("use_qkv_bias", False)), "norm": "layernorm", "positions": "rotary",
           "tie_embeddings": bool(c("tie_word_embeddings", False))}
    raw["n_kv_heads"] = c("num_key_value_heads", 32)  # StableLmConfig's own default, not heads
    if c("use_parallel_residual", False):
        raw.update(parallel_block=True, parallel_norms=1)
    if c("qk_layernorm", False):
        raw.update(qk_norm="all_heads", qk_norm_bias=False)
    return raw


def _persimmon(c: Config) -> Raw:
    """Persimmon: multi-head attention with a fused q, k, v and biases everywhere, a plain
    ReLU² MLP, and with `qk_layernorm` (default true) a q and a k LayerNorm of one head's
    width shared by the heads (`persimmon/modeling_persimmon.py`)."""
    raw = {**_sizes(c), "mlp": "plain", "activation": activation(c("hidden_act", "relu2", str)),
           "bias": True, "norm": "layernorm", "positions": "rotary",
           "tie_embeddings": bool(c("tie_word_embeddings", False))}
    if c("qk_layernorm", True):
        raw["qk_norm"] = "per_head"
    return raw


def _nemotron(c: Config) -> Raw:
    """Nemotron (3/4): LayerNorm1P (a LayerNorm with bias whose gain is weight + 1), a plain
    ReLU² MLP under `mlp_bias`, `attention_bias` on q, k, v, o (`nemotron/modeling_nemotron.py`).
    Its default `num_key_value_heads` is null, which transformers cannot build; null is taken as
    multi-head attention."""
    attn = c("attention_bias", False)
    return {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "plain",
            "activation": activation(c("hidden_act", "relu2", str)),
            **bias(attn, attn, c("mlp_bias", False)), "norm": "layernorm",
            "positions": "rotary", "tie_embeddings": bool(c("tie_word_embeddings", False))}


def _apertus(c: Config) -> Raw:
    """Apertus: RMSNorm, QK-norm per head, `attention_bias` on q, k, v, o, a plain MLP without
    biases (`mlp_bias` is not read) whose xIELU has two learned scalars
    (`apertus/modeling_apertus.py`, `activations.py` XIELUActivation)."""
    attn = c("attention_bias", False)
    return {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "plain",
            "activation": activation(c("hidden_act", "xielu", str)), **bias(attn, attn),
            "norm": "rmsnorm", "qk_norm": "per_head", "positions": "rotary",
            "tie_embeddings": bool(c("tie_word_embeddings", False))}


def _olmo(c: Config) -> Raw:
    """OLMo (1): LayerNorms without any parameters (`OlmoLayerNorm`: F.layer_norm with no
    weight or bias), a gated MLP, `attention_bias` on q, k, v, o. `clip_qkv` clamps (element-
    wise)."""
    attn = c("attention_bias", False)
    return {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "gated",
            "activation": activation(c("hidden_act", "silu", str)), **bias(attn, attn),
            "norm": "layernorm", "norm_affine": False, "positions": "rotary",
            "tie_embeddings": bool(c("tie_word_embeddings", False))}


def _gpt_bigcode(c: Config) -> Raw:
    """GPT-BigCode (SantaCoder, StarCoder 1): GPT-2 with one K/V head when `multi_query`
    (c_attn d → d + 2·hd) (`gpt_bigcode/modeling_gpt_bigcode.py`)."""
    if c("add_cross_attention", False):
        raise FlopcalcError(f"{c.label}: add_cross_attention (cross-attention in a decoder "
                            "without an encoder) is not counted by flopcalc; remove it or "
                            "describe the model in a YAML file")
    d = c("n_embd", expect=int)
    heads = c("n_head", expect=int)
    return {**_sizes(c, layers="n_layer", d="n_embd", heads="n_head", ff=None,
                     positions="n_positions"),
            "n_kv_heads": 1 if c("multi_query", True) else heads, "d_ff": c("n_inner", 4 * d),
            "mlp": "plain",
            "activation": activation(c("activation_function", "gelu_pytorch_tanh", str)),
            "bias": True, "norm": "layernorm", "positions": "learned",
            "tie_embeddings": bool(c("tie_word_embeddings", True))}


def _opt(c: Config) -> Raw:
    """OPT: learned positions in a table of max_position_embeddings + 2 rows (the offset of
    `OPTLearnedPositionalEmbedding`), `enable_bias` on every projection, a plain MLP of
    `ffn_dim`, LayerNorms before (`do_layer_norm_before`) or after each sublayer, with or
    without parameters (`layer_norm_elementwise_affine`), a final norm only before-norm and
    unless `_remove_final_layer_norm`, and a token table and head `word_embed_proj_dim` wide
    with project_in/project_out (OPT-350M) (`opt/modeling_opt.py`)."""
    pre = c("do_layer_norm_before", True)
    raw = {**_sizes(c, ff="ffn_dim"), "mlp": "plain",
           "activation": activation(c("activation_function", "relu", str)),
           "bias": bool(c("enable_bias", True)), "norm": "layernorm",
           "norm_affine": bool(c("layer_norm_elementwise_affine", True)),
           "norm_placement": "pre" if pre else "post",
           "final_norm": bool(pre and not c("_remove_final_layer_norm", False)),
           "positions": "learned", "position_offset": 2,
           "tie_embeddings": bool(c("tie_word_embeddings", True))}
    if c.has("word_embed_proj_dim"):
        raw["embed_dim"] = c("word_embed_proj_dim")
    return raw


def _bloom(c: Config) -> Raw:
    """BLOOM: ALiBi, a LayerNorm on the embeddings, fused q, k, v and every projection biased,
    a plain GELU MLP of 4d (`bloom/modeling_bloom.py`). BloomConfig's default is a toy (64 wide,
    2 layers)."""
    d = c("hidden_size", expect=int)
    return {**_sizes(c, layers="n_layer", heads="n_head", ff=None, positions=None),
            "d_ff": 4 * d, "mlp": "plain", "activation": "gelu", "bias": True,
            "norm": "layernorm", "embedding_norm": True, "positions": "alibi",
            "tie_embeddings": bool(c("tie_word_embeddings", True))}


def _mpt(c: Config) -> Raw:
    """MPT: ALiBi, multi-head attention, no biases, LayerNorms without bias, a plain GELU MLP
    of 4d: transformers 5.24 reads none of expansion_ratio, no_bias, learned_pos_emb, norm_type
    or attn_config's attn_type, qk_ln and alibi (`mpt/modeling_mpt.py`). `logit_scale` is
    element-wise."""
    d = c("d_model", expect=int)
    return {**_sizes(c, layers="n_layers", d="d_model", heads="n_heads", ff=None,
                     positions="max_seq_len"),
            "d_ff": 4 * d, "mlp": "plain", "activation": "gelu", "bias": False,
            "norm": "layernorm", "norm_bias": False, "positions": "alibi",
            "tie_embeddings": bool(c("tie_word_embeddings", True))}


def _jais2(c: Config) -> Raw:
    """Jais 2: LayerNorm (with bias) before each sublayer, a plain ReLU² MLP under `mlp_bias`,
    `attention_bias` on q, k, v, o, GQA (`jais2/modeling_jais2.py`)."""
    attn = c("attention_bias", True)
    return {**_sizes(c, kv="num_key_value_heads"), **_head_dim(c), "mlp": "plain",
            "activation": activation(c("hidden_act", "relu2", str)),
            **bias(attn, attn, c("mlp_bias", True)), "norm": "layernorm",
            "positions": "rotary", "tie_embeddings": bool(c("tie_word_embeddings", False))}


CONVERTERS = {
    "jais2": _jais2,
    "phi": _phi, "gptj": _gptj, "codegen": _gptj, "cohere": _cohere, "cohere2": _cohere2,
    "falcon": _falcon, "starcoder2": _starcoder2, "stablelm": _stablelm,
    "persimmon": _persimmon, "nemotron": _nemotron, "apertus": _apertus, "olmo": _olmo,
    "gpt_bigcode": _gpt_bigcode, "opt": _opt, "bloom": _bloom, "mpt": _mpt,
}
