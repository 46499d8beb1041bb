"""More decoders of transformers 5.24 that the existing kinds say exactly, and the multimodal
wrappers around them (their language model counted, their towers named and left out, as
models/hf/multimodal.py does for its text-only wrappers). Each converter reads the keys its
class reads in `models/<type>/modeling_<type>.py`, with the configuration class's defaults.
tests/sweep/cases_hf_decoders3.py checks each against transformers (parameters on the meta
device at the default config and at variants, forward FLOPs with FlopCounterMode)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, layer_types, rotary_decoder, shortest_period
from .dense_layernorm import _cohere
from .encoders import _modernbert
from .linear_hybrids import _mapped
from .multimodal import Wrapper, language_model_only


def _aria_text(c: Config) -> Raw:
    """Aria's text model: Llama's attention (`attention_bias` on q, k, v and o) and in every
    layer a mixture: a bias-free router d → moe_num_experts (top-k softmax over the picked
    logits), routed SwiGLU experts of intermediate_size without biases, and
    moe_num_shared_experts shared experts fused into one gated MLP of
    moe_num_shared_experts × intermediate_size with `mlp_bias`; untied by default
    (`aria/modeling_aria.py` AriaTextMoELayer). The routed experts are always SiLU-gated while
    the shared MLP follows `hidden_act`: another activation is refused, as flopcalc's experts
    share one."""
    act = c("hidden_act", "silu", str)
    if act != "silu":
        raise FlopcalcError(f"{c.label}: hidden_act {act!r}: Aria's routed experts are always "
                            "SiLU-gated and only its shared experts follow hidden_act, while "
                            "flopcalc's experts share one activation; set it to 'silu' or "
                            "describe the model in a YAML file")
    attn = c("attention_bias", False)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, c("mlp_bias", False))}
    shared = c("moe_num_shared_experts", 2, int)
    raw["moe"] = {"experts": c("moe_num_experts", 8), "top_k": c("moe_topk", 2),
                  "d_ff": c("intermediate_size"), "expert_bias": False}
    if shared:
        raw["moe"]["shared_experts"] = shared
    return raw


def _cohere_compass_text(c: Config) -> Raw:
    """Cohere Compass's text model (North): Command R7B's parallel block (one bias-free
    LayerNorm feeding attention and a bias-free SwiGLU side by side, `attention_bias` on q, k,
    v and o, head_dim = d / heads whatever a file says) with a window of `sliding_window` on
    the `layer_types` "sliding_attention" layers only (absent: every layer full); RoPE per
    layer type, NoPE layers included, counts nothing; `logit_scale` is element-wise; tied by
    default (`cohere_compass/modeling_cohere_compass.py`)."""
    raw = {**_cohere(c), **(layer_types(c) if c.has("layer_types") else {})}
    raw.pop("head_dim", None)
    raw.pop("qk_norm", None)
    return raw


def _modernbert_decoder(c: Config) -> Raw:
    """ModernBERT-decoder (`modernbert_decoder/modeling_modernbert_decoder.py`): ModernBERT's
    layers and head (q, k, v and Wo with `attention_bias`, a gated MLP Wi d → 2f and Wo f → d
    with `mlp_bias`, LayerNorms with `norm_bias`, an embedding norm in place of layer 0's
    attention norm, the head dense d × d with `classifier_bias`, its norm and the decoder with
    `decoder_bias`), run causally: the "sliding_attention" layers (absent `layer_types`: all
    but every `global_attn_every_n_layers`-th from layer 0, default 3) see a window of
    local_attention // 2 keys, as the config halves it."""
    raw = _modernbert(c)
    types = ["window" if kind == "local" else "full" for kind in raw["layer_types"]]
    raw.pop("local_attention", None)
    raw.update(architecture="decoder-only", layer_types=types)
    if "window" in types:
        local = c("local_attention", 128, int)
        if local < 2:
            raise FlopcalcError(f"{c.label}: local_attention {local} leaves a window of "
                                f"{local // 2} keys on the sliding_attention layers; give 2 or "
                                "more")
        raw["sliding_window"] = local // 2
    return raw


def _diffllama(c: Config) -> Raw:
    """DiffLlama: Llama (`attention_bias` on q, k, v and o, untied by default) with
    differential attention in every layer (`kinds.differential`: the scores and value product
    computed twice, 4 λ vectors of head_dim per layer, a weightless norm over head pairs);
    transformers needs an even number of KV heads (`diffllama/modeling_diffllama.py`)."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn), "layer_types": ["differential"]}


def _beam(c: Config) -> Raw:
    """Beam: Qwen3's attention (a per-head QK-norm, `attention_bias` on q, k, v and o) with a
    sigmoid output gate per element from a bias-free gate_proj d → h·hd plus one learned bias
    per head (`kinds.gate_bias`); windows of `sliding_window` on the "sliding_attention" layers
    (absent `layer_types`: all but every 6th and the last); sandwich norms around both
    sublayers; a dense SwiGLU of intermediate_size on the `mlp_layer_types` "dense" layers
    (absent: the first 3), elsewhere DeepSeek-V3's grouped sigmoid routing (a bias-free fp32
    router, e_score_correction_bias a buffer) over num_experts experts of moe_intermediate_size,
    no shared expert. The depth-scaled residual adds, the full layers' position-dependent query
    scaling (NoPE there), routed_scaling_factor and the final logit soft-capping are
    element-wise (`beam/modeling_beam.py`)."""
    n = c.layers()
    default = ["sliding_attention" if (i + 1) % 6 and i < n - 1 else "full_attention"
               for i in range(n)]
    kinds = c.per_layer("layer_types", n, default=default)
    names = _mapped(c, kinds, {"full_attention": "full_gate_bias",
                               "sliding_attention": "window_gate_bias"})
    attn = c("attention_bias", False)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head",
                "attention_gate": True, "norm_placement": "sandwich",
                "layer_types": shortest_period(names)}
    if "window_gate_bias" in names:
        raw["sliding_window"] = c("sliding_window", 512, int)
    mlp = c.per_layer("mlp_layer_types", n, default=["dense"] * min(3, n) + ["sparse"] * (n - 3))
    bad = [i for i, t in enumerate(mlp) if t not in ("dense", "sparse")]
    if bad:
        raise FlopcalcError(f"{c.label}: mlp_layer_types[{bad[0]}] = {mlp[bad[0]]!r} must be "
                            "'dense' or 'sparse'")
    if "sparse" in mlp:
        raw["moe"] = {"experts": c("num_experts", 256, int), "top_k": c("num_experts_per_tok", 8),
                      "d_ff": c("moe_intermediate_size", 2560), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(mlp) if t == "dense"]}
    return raw


def _minimax_m3_vl_text(c: Config) -> Raw:
    """MiniMax-M3's text model: bias-free q, k, v and o with a per-head Gemma-style QK-norm
    (partial RoPE counts nothing), and per `mlp_layer_types` (absent: the legacy
    `moe_layer_freq`, else every layer "sparse") a dense fused SwiGLU of
    dense_intermediate_size or a mixture: a bias-free sigmoid router (e_score_correction_bias a
    buffer), num_local_experts experts of intermediate_size and one shared MLP of
    shared_intermediate_size. The clamped SwiGLU and routed_scaling_factor are element-wise.
    Layers of type "minimax_m3_sparse" (a lightning indexer choosing key blocks, and its cache)
    are refused: flopcalc has no such kind (`minimax_m3_vl/modular_minimax_m3_vl.py`)."""
    n = c.layers()
    sparse = c("sparse_attention_config", {}, dict).get("sparse_attention_freq")
    default = (["minimax_m3_sparse" if f else "full_attention" for f in sparse]
               if isinstance(sparse, list) else ["full_attention"] * n)
    kinds = c.per_layer("layer_types", n, default=default)
    odd = [i for i, t in enumerate(kinds) if t != "full_attention"]
    if odd:
        raise FlopcalcError(f"{c.label}: layer_types[{odd[0]}] = {kinds[odd[0]]!r}: MiniMax-M3's "
                            "sparse attention (a lightning indexer picking key blocks) is not a "
                            "layer kind flopcalc has; describe an approximation in a YAML file")
    freq = c("moe_layer_freq", None, list)
    mlp = c.per_layer("mlp_layer_types", n, default=(
        ["sparse" if f else "dense" for f in freq] if freq is not None else ["sparse"] * n))
    bad = [i for i, t in enumerate(mlp) if t not in ("dense", "sparse")]
    if bad:
        raise FlopcalcError(f"{c.label}: mlp_layer_types[{bad[0]}] = {mlp[bad[0]]!r} must be "
                            "'dense' or 'sparse'")
    raw: Raw = {**rotary_decoder(c), "qk_norm": "per_head", "activation": "silu",
                "d_ff": c("dense_intermediate_size", 12288, int)}
    if "sparse" in mlp:
        raw["moe"] = {"experts": c("num_local_experts", 128, int),
                      "top_k": c("num_experts_per_tok", 4), "d_ff": c("intermediate_size"),
                      "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(mlp) if t == "dense"]}
        if c("shared_intermediate_size", 3072, int):
            raw["moe"].update(shared_experts=1, shared_d_ff=c("shared_intermediate_size"))
    return raw


def _doge(c: Config) -> Raw:
    """Doge (SmallDoge): Llama with a per-head QK-norm, `attention_bias` on q, k, v, o and
    dt_proj, and dynamic-mask attention in every layer (`kinds.dynamic_mask`: dt_proj and A per
    KV head, the layer's two residual scales); a gated MLP with `mlp_bias`; untied by default.
    `sliding_window` is not read by DogeAttention (no window). `is_moe` (the cross-domain
    mixture of product-key experts) is refused (`doge/modeling_doge.py`)."""
    if c("is_moe", False):
        raise FlopcalcError(f"{c.label}: is_moe true: Doge's cross-domain mixture of "
                            "product-key experts (embedding tables of experts picked through "
                            "two key halves) is not a kind flopcalc has; set it false or "
                            "describe an approximation in a YAML file")
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn, c("mlp_bias", False)),
            "qk_norm": "per_head", "layer_types": ["dynamic_mask"]}


# Wrappers (`*ForConditionalGeneration`) around the text models above: the language model is
# counted with the wrapper's LM head, tied by the wrapper's own `tie_word_embeddings` (False by
# default in all, as measured on the meta device); their towers are not read.
WRAPPERS: dict[str, Wrapper] = {
    # Aria: an Idefics3 vision tower and a cross-attention projector (AriaProjector)
    "aria": Wrapper("aria_text"),
    # Cohere Compass: a Qwen3-VL-style ViT with DeepStack mergers
    "cohere_compass": Wrapper("cohere_compass_text"),
    # MiniMax-M3: a ViT and a two-path projector; tied also when the text config's flag is
    # (MiniMaxM3VLConfig.__post_init__ forwards it)
    "minimax_m3_vl": Wrapper("minimax_m3_vl_text", or_text=True),
}


def _unwrap(c: Config) -> Raw:
    """A wrapper's preset mapping: its language model, the towers named in the notes."""
    return language_model_only(c, WRAPPERS[c.model_type])


CONVERTERS = {"aria_text": _aria_text, "cohere_compass_text": _cohere_compass_text,
              "modernbert-decoder": _modernbert_decoder, "diffllama": _diffllama,
              "beam": _beam, "minimax_m3_vl_text": _minimax_m3_vl_text,
              "doge": _doge,
              **{name: _unwrap for name in WRAPPERS}}
# The config classes' defaults (transformers 5.24) for keys a hand-written file may leave out
# where the converters' own fallbacks (head_dim d / heads, as many KV heads as heads) differ.
DEFAULTS: dict[str, Raw] = {"beam": {"head_dim": 128, "num_key_value_heads": 8},
                            "minimax_m3_vl_text": {"head_dim": 128, "num_key_value_heads": 4,
                                                   "intermediate_size": 3072}}
ALIASES: dict[str, dict[str, str]] = {}
_YAML = "; describe an approximation in a YAML file if one will do"
# Types of transformers 5.24 whose model holds parts flopcalc has no kind for, named.
REFUSED: dict[str, str] = {
    "evolla": ("Evolla's model holds a SaProt protein encoder, a sequence-compressor resampler "
               "and gated cross-attention aligners in its decoder layers, which flopcalc does "
               "not count" + _YAML),
}
