"""More decoders of transformers 5.24 that the existing kinds say exactly, and the multimodal
wrappers around them (their language model counted, their towers named and left out, as
models/hf/multimodal.py does for its text-only wrappers). Each converter reads the keys its
class reads in `models/<type>/modeling_<type>.py`, with the configuration class's defaults.
tests/sweep/cases_hf_decoders3.py checks each against transformers (parameters on the meta
device at the default config and at variants, forward FLOPs with FlopCounterMode)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, layer_types, rotary_decoder
from .dense_layernorm import _cohere
from .encoders import _modernbert
from .multimodal import Wrapper, attach_tower, text_mapping, tied


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


# Wrappers (`*ForConditionalGeneration`) around the text models above: the language model is
# counted with the wrapper's LM head, tied by the wrapper's own `tie_word_embeddings` (False by
# default in both, as measured on the meta device); their towers are not read.
WRAPPERS: dict[str, Wrapper] = {
    # Aria: an Idefics3 vision tower and a cross-attention projector (AriaProjector)
    "aria": Wrapper("aria_text"),
    # Cohere Compass: a Qwen3-VL-style ViT with DeepStack mergers
    "cohere_compass": Wrapper("cohere_compass_text"),
}


def _unwrap(c: Config) -> Raw:
    """A wrapper's preset mapping: its language model, the towers named in the notes."""
    from . import from_hf_dict

    entry = WRAPPERS[c.model_type]
    data = text_mapping(c, entry)
    data["tie_word_embeddings"] = tied(c, entry, data)
    raw = from_hf_dict(data, f"{c.label} {entry.key}")
    for key in ("_name", "title", "source"):
        raw.pop(key, None)
    return attach_tower(c, raw, None, entry)


CONVERTERS = {"aria_text": _aria_text, "cohere_compass_text": _cohere_compass_text,
              "modernbert-decoder": _modernbert_decoder, "diffllama": _diffllama,
              **{name: _unwrap for name in WRAPPERS}}
DEFAULTS: dict[str, Raw] = {}
ALIASES: dict[str, dict[str, str]] = {}
REFUSED: dict[str, str] = {}
