"""Gated DeltaNet hybrids: Qwen3-Next and the Qwen3.5 text models (dense and MoE); OLMo Hybrid
(`_olmo_hybrid`: OLMo 3's attention between gated DeltaNet layers).

Three gated DeltaNet layers to one gated-attention layer by default (`full_attention_interval`
4, or an explicit `layer_types`), each followed by an MLP (Qwen3.5) or a Qwen2-MoE-style mixture
of experts with a sigmoid-gated shared expert (Qwen3-Next on the layers `decoder_sparse_step`
and `mlp_only_layers` pick, Qwen3.5-MoE on every layer). Attention is gated (`q_proj` twice as
wide), with per-head QK RMSNorms and partial rotary positions.

Qwen3.5 checkpoints are multimodal: the `config.json` of model_type `qwen3_5` / `qwen3_5_moe` nests
the language model under `text_config` (model_type `qwen3_5_text` / `qwen3_5_moe_text`, read
here); the wrapper is read in models/hf/multimodal.py, as Qwen3_5ForConditionalGeneration
builds it: the head tied by the wrapper's own `tie_word_embeddings`, the vision tower named and
left out. Keys a config leaves out take the transformers 5.24 config class's defaults.

Multi-token prediction: the checkpoints ship `mtp.*` tensors that transformers does not load
(`_keys_to_ignore_on_load_unexpected`); vLLM's `qwen3_next_mtp.py` / `qwen3_5_mtp.py` build them
as DeepSeek-V3's module (two RMSNorms, a bias-free 2d → d `fc`, one full-attention decoder
layer with the model's MLP or MoE, a final norm; embedding and head shared), so they count as
`mtp_layers` (params.mtp, outside params.total). Their number is `num_nextn_predict_layers`
(Qwen3-Next) or `mtp_num_hidden_layers` (Qwen3.5). Qwen3-Next's published config has no key
and its checkpoint one module, so an absent key is 1 there, as vLLM reads it; Qwen3.5's
published configs write theirs, and the types that embed its text model (MiniCPM-V 4.6, ...)
write none, so an absent key is 0 there.
"""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from .common import Config, Raw, bias, shortest_period

# transformers 5.24's defaults (configuration_qwen3_next.py, configuration_qwen3_5.py,
# configuration_qwen3_5_moe.py): the keys a hand-written config.json may leave out.
_LINEAR = {"linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
           "linear_num_key_heads": 16, "linear_num_value_heads": 32, "head_dim": 256,
           "hidden_act": "silu", "max_position_embeddings": 32768, "attention_bias": False,
           "tie_word_embeddings": False, "num_attention_heads": 16}
_DEFAULTS: dict[str, Raw] = {
    "qwen3_next": {**_LINEAR, "vocab_size": 151936, "hidden_size": 2048,
                   "intermediate_size": 5632, "num_hidden_layers": 48, "num_key_value_heads": 2,
                   "decoder_sparse_step": 1, "moe_intermediate_size": 512,
                   "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10,
                   "num_experts": 512, "mlp_only_layers": []},
    "qwen3_5_text": {**_LINEAR, "vocab_size": 248320, "hidden_size": 4096,
                     "intermediate_size": 12288, "num_hidden_layers": 32,
                     "num_key_value_heads": 4},
    "qwen3_5_moe_text": {**_LINEAR, "vocab_size": 248320, "hidden_size": 2048,
                         "num_hidden_layers": 40, "num_key_value_heads": 2,
                         "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                         "num_experts_per_tok": 8, "num_experts": 256},
}
_MIXERS = {"linear_attention": "gdn", "full_attention": "full"}


def _text(c: Config, text_type: str) -> Config:
    """The language model's keys: `text_config` when nested, else the file's own, over the
    config class's defaults."""
    data, label = c.data, c.label
    inner = data.get("text_config")
    if inner is not None:
        if not isinstance(inner, dict):
            raise c.wrong("text_config", inner, dict)
        data, label = inner, f"{c.label} text_config"
    given = {k: v for k, v in data.items() if v is not None}
    return Config({**_DEFAULTS[text_type], **given}, label, c.model_type)


def _mixers(c: Config) -> list[str]:
    """Each layer's mixer: `layer_types` as given, else linear attention but on every
    `full_attention_interval`-th layer ((i + 1) % interval == 0 is full)."""
    n = c.layers()
    if c.has("layer_types"):
        types = c.per_layer("layer_types", n, choices=tuple(_MIXERS))
        return [_MIXERS[t] for t in types]
    every = c("full_attention_interval", 4, int)
    if every < 1:
        raise FlopcalcError(f"{c.label}: full_attention_interval must be at least 1, got "
                            f"{every}")
    return ["gdn" if (i + 1) % every else "full" for i in range(n)]


def _core(c: Config) -> Raw:
    """What the three share: the gated attention, the gated DeltaNet block, norms, head."""
    mixers = _mixers(c)
    attn = bool(c("attention_bias"))
    act = str(c("hidden_act"))
    raw: Raw = {
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "n_kv_heads": c("num_key_value_heads"),
        "head_dim": c("head_dim"),
        "mlp": "gated",
        "activation": "gelu" if act.startswith("gelu") else "silu",
        **bias(attn, attn),
        "norm": "rmsnorm",  # (1 + w)·x/rms: zero-centred, the same tensors and work
        "qk_norm": "per_head",
        "attention_gate": True,
        "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", None),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings")),
        "layer_types": shortest_period(mixers),
    }
    if "gdn" in mixers:
        raw["gated_deltanet"] = gdn_block(c)
    return raw


def gdn_block(c: Config) -> Raw:
    """The gated DeltaNet mixer's sizes, as Qwen3.5's and Qwen4-Exp's configs name them."""
    return {"n_key_heads": c("linear_num_key_heads"),
            "n_value_heads": c("linear_num_value_heads"),
            "key_head_dim": c("linear_key_head_dim"),
            "value_head_dim": c("linear_value_head_dim"), "d_conv": c("linear_conv_kernel_dim")}


def _mtp(c: Config, raw: Raw, key: str, absent: int) -> Raw:
    """`raw` with its multi-token-prediction modules (`absent`: their number when the file
    has no `key`; see the module docstring). flopcalc counts a module's layer as a copy of the
    model's last layer: where that is not a full-attention layer the modules are named in the
    notes instead."""
    n = c(key, absent, int)
    if n < 0:
        raise FlopcalcError(f"{c.label}: {key} must be 0 or more, got {n}")
    if n and _mixers(c)[-1] == "full":
        raw["mtp_layers"] = n
    elif n:
        raw["notes"] = (f"{n} multi-token-prediction module{'s' if n > 1 else ''} ({key}) not "
                        "counted: each holds a full-attention layer, and this model's last "
                        "layer, which flopcalc copies for it, is a gated DeltaNet layer")
    return raw


def _experts(c: Config, **where: Any) -> Raw:
    """Qwen3-Next's sparse MoE block: routed experts and one shared expert behind a sigmoid
    gate d → 1 (built whatever the shared width)."""
    shared = c("shared_expert_intermediate_size", expect=int)
    moe: Raw = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                "d_ff": c("moe_intermediate_size"), "shared_gate": True, **where}
    if shared:
        moe.update(shared_experts=1, shared_d_ff=shared)
    return moe


def _qwen3_next(c: Config) -> Raw:
    """Qwen3NextForCausalLM: a layer's FFN is the MoE block iff i ∉ mlp_only_layers,
    num_experts > 0 and (i + 1) % decoder_sparse_step == 0, else the dense MLP of
    intermediate_size (modeling_qwen3_next.py Qwen3NextDecoderLayer)."""
    c = _text(c, "qwen3_next")
    raw = _core(c)
    n, every = c("num_hidden_layers", expect=int), c("decoder_sparse_step", expect=int)
    if every < 1:
        raise FlopcalcError(f"{c.label}: decoder_sparse_step must be at least 1, got {every}")
    dense = sorted(set(c.layer_indices("mlp_only_layers", n)))
    routed = [i not in dense and (i + 1) % every == 0 for i in range(n)]
    if c("num_experts", expect=int) <= 0 or not any(routed):
        return _mtp(c, {**raw, "d_ff": c("intermediate_size")}, "num_nextn_predict_layers", 1)
    raw["moe"] = _experts(c, every=every, dense_layers=dense)
    if not all(routed):
        raw["d_ff"] = c("intermediate_size")
    return _mtp(c, raw, "num_nextn_predict_layers", 1)


def _qwen3_5(c: Config) -> Raw:
    """Qwen3_5ForCausalLM: a dense MLP of intermediate_size on every layer."""
    c = _text(c, "qwen3_5_text")
    return _mtp(c, {**_core(c), "d_ff": c("intermediate_size")}, "mtp_num_hidden_layers", 0)


def _qwen3_5_moe(c: Config) -> Raw:
    """Qwen3_5MoeForCausalLM: the MoE block on every layer (the text config has no
    decoder_sparse_step, mlp_only_layers or dense intermediate_size)."""
    c = _text(c, "qwen3_5_moe_text")
    return _mtp(c, {**_core(c), "moe": _experts(c)}, "mtp_num_hidden_layers", 0)


def _olmo_hybrid(c: Config) -> Raw:
    """OlmoHybridForCausalLM (transformers 5.24 `models/olmo_hybrid/`): OLMo 3's attention
    (q, k, v, o biased by `attention_bias`, a QK RMSNorm over all heads, no window) on the
    `layer_types` "full_attention" layers (absent: every 4th, (i + 1) % 4 == 0, and the last
    when that names none), a gated DeltaNet elsewhere with q, k, v, a, b and g as separate
    bias-free projections (the same tensors as Qwen3-Next's fused in_proj_qkvz and in_proj_ba),
    a bias-free conv over q, k and v, A_log, dt_bias and a gated RMSNorm of a value head; a
    SwiGLU MLP of intermediate_size in every layer. Linear heads default to
    num_attention_heads, key heads to int(0.75·d / key heads) wide and value heads to twice
    that. OLMo 3's attention layers norm each sublayer's output, the linear layers their input:
    the same two d-wide RMSNorms per layer either way, so every count is the same as the
    pre-norm layers flopcalc describes. `linear_allow_neg_eigval` doubles β (element-wise)."""
    attn = c("attention_bias", False)
    n = c.layers()
    if c.has("layer_types"):
        types = c.per_layer("layer_types", n, choices=tuple(_MIXERS))
        mixers = [_MIXERS[t] for t in types]
    else:
        mixers = ["full" if i % 4 == 3 else "gdn" for i in range(n)]
        if "full" not in mixers:
            mixers[-1] = "full"
    heads = c("num_attention_heads", expect=int)
    kv = c("num_key_value_heads", None) or heads
    key_heads = c("linear_num_key_heads", None) or heads
    key_dim = c("linear_key_head_dim", None) or int(0.75 * c("hidden_size", expect=int)
                                                    / key_heads)
    raw: Raw = {
        "n_layers": n, "d_model": c("hidden_size"), "n_heads": heads, "n_kv_heads": kv,
        "d_ff": c("intermediate_size"), "mlp": "gated",
        "activation": "gelu" if str(c("hidden_act", "silu")).startswith("gelu") else "silu",
        **bias(attn, attn), "norm": "rmsnorm", "qk_norm": "all_heads", "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", None), "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", False)),
        "layer_types": shortest_period(mixers),
    }
    if "gdn" in mixers:
        raw["gated_deltanet"] = {
            "n_key_heads": key_heads,
            "n_value_heads": c("linear_num_value_heads", None) or heads,
            "key_head_dim": key_dim,
            "value_head_dim": c("linear_value_head_dim", None) or 2 * key_dim,
            "d_conv": c("linear_conv_kernel_dim", 4)}
    return raw


# OlmoHybridConfig's defaults (transformers 5.24) for the keys that size the model
_OLMO_HYBRID_DEFAULTS: Raw = {
    "vocab_size": 100352, "hidden_size": 3840, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 30, "max_position_embeddings": 65536,
    "tie_word_embeddings": False, "linear_conv_kernel_dim": 4}


# the wrappers `qwen3_5` and `qwen3_5_moe` are read in models/hf/multimodal.py (their text
# configs here)
CONVERTERS = {"qwen3_next": _qwen3_next, "qwen3_5_text": _qwen3_5,
              "qwen3_5_moe_text": _qwen3_5_moe, "olmo_hybrid": _olmo_hybrid}
DEFAULTS = {"olmo_hybrid": _OLMO_HYBRID_DEFAULTS}
