"""Multimodal wrappers (transformers 5.24 `*ForConditionalGeneration` with a nested language
model): one table, `WRAPPERS`, says for each wrapper `model_type` where its text model's config
is (`text_config`, or the wrapper's own keys in a flat file), the text type when the mapping
does not name one, which flag ties its LM head, and which vision tower it has. The text mapping
is imported by its own converter (`from_hf_dict`, so its defaults, aliases and checks apply);
the tower, where flopcalc reads it, becomes the `vision:` block (`kinds.vision`).

Tying, as measured on the meta device for every wrapper (save_pretrained writes the wrapper's
flag at the top level): `top`: the wrapper's `tie_word_embeddings` decides (its class default
when the file leaves it out; `or_text`: also true when the text config's is, as LlavaConfig's
`__post_init__` forwards it; `tied=None`: the text config's flag when the wrapper's is left
out or null, as PerceptionLMConfig's `__post_init__` fills it); `text`: the language model's
own flag (BLIP-2, InstructBLIP and Llama 4 hold a whole `*ForCausalLM`); `never`: the head is
never tied (Qwen2-Audio, Voxtral, the speech wrappers: their `_tied_weights_keys` is empty).

Towers (sources under transformers/models/): CLIP `clip/modeling_clip.py` (llava,
`llava/modeling_llava.py` LlavaMultiModalProjector), SigLIP `siglip/modeling_siglip.py`
(PaliGemma `paligemma/modeling_paligemma.py`, Gemma 3 `gemma3/modeling_gemma3.py`
Gemma3MultiModalProjector), Idefics3 / SmolVLM `idefics3/modeling_idefics3.py` (connector),
Pixtral `pixtral/modeling_pixtral.py` (Mistral 3 `mistral3/modeling_mistral3.py`, its patch
merger), Qwen2-VL `qwen2_vl/modeling_qwen2_vl.py`, Qwen2.5-VL `qwen2_5_vl/modeling_qwen2_5_vl.py`,
Llama 4 `llama4/modeling_llama4.py` (vision adapter, projector), InternVL
`internvl/modeling_internvl.py`. The closed forms are checked against the meta-device models
and FlopCounterMode (tests/sweep/cases_multimodal.py, tests/pytorch/test_vision.py).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ...records import dataclass
from ...errors import FlopcalcError
from .common import Config, Raw

Tower = Callable[[Config, Raw, Raw], Raw]  # (wrapper config, vision mapping, text preset) → block


@dataclass(frozen=True)
class Wrapper:
    """One wrapper type: its text model's default type and key, how its head ties, its tower
    builder (None: not read, the language model is counted alone) and the default vision type."""

    text_type: str
    tie: str = "top"  # "top" | "text" | "never"
    tied: Optional[bool] = False  # the wrapper's class default (None: the text config's flag)
    or_text: bool = False  # tied also when the text config's flag is true
    tower: Optional[Tower] = None
    vision_type: str = ""
    vision_default: Optional[Raw] = None  # the vision config when the file has none
    key: str = "text_config"
    flat: bool = False  # a file without text_config holds the text keys at its top level
    seq2seq: bool = False  # an encoder-decoder text model (its head tied apart, seq2seq_head)


# Text types whose counts are another type's (their transformers classes build the same
# tensors and run the same forward; the model-zoo sweep checks each, tests/sweep/).
SUBTYPES = {"qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2", "qwen3_vl_text": "qwen3",
            "glm_ocr_text": "glm4", "granite_docling_text": "llama",
            "qwen3_vl_moe_text": "qwen3_moe", "glm4v_text": "glm4", "glm4v_moe_text": "glm4_moe",
            "hunyuan_vl_text": "hunyuan_v1_dense", "paddleocr_vl_text": "ernie4_5",
            "qwen2_5_omni_text": "qwen2", "qwen3_omni_moe_text": "qwen3_moe",
            "granite4_vision_text": "granite", "emu3_text_model": "llama",
            "cosmos3_edge_text": "arcee", "hy_v4_vl_text": "hy_v4",
            "unlimited_ocr_text": "deepseek_ocr2_text"}


def _glm4v_text(data: Raw) -> Raw:
    # Glm4vTextAttention: head_dim = hidden_size // num_attention_heads whatever the file says,
    # q, k, v always biased, o never (glm4v/modeling_glm4v.py)
    d, heads = data.get("hidden_size", 4096), data.get("num_attention_heads", 32)
    if type(d) is not int or type(heads) is not int or heads < 1:
        return data  # the converter names the bad key
    return {**data, "head_dim": d // heads, "attention_bias": True}


def _glm4v_moe_text(data: Raw) -> Raw:
    # Glm4vMoeTextConfig: q, k, v biased by default, no QK-norm and no MTP modules (GLM-4.5's
    # `use_qk_norm` and `num_nextn_predict_layers` are not its keys; one in the file is kept as
    # the number of MTP modules the checkpoint holds and transformers does not build)
    return {"attention_bias": True, "num_nextn_predict_layers": 0,
            **{k: v for k, v in data.items() if k != "use_qk_norm"}}


def _qwen3_omni_moe_text(data: Raw) -> Raw:
    # Qwen3OmniMoeThinkerTextAttention: head_dim as the file gives it, else d // heads (its
    # config has no head_dim of its own), and never a window (its sliding_window is set to None)
    d, heads = data.get("hidden_size", 2048), data.get("num_attention_heads", 28)
    out = {k: v for k, v in data.items()
           if k not in ("use_sliding_window", "sliding_window", "layer_types")}
    if "head_dim" not in out and type(d) is int and type(heads) is int and heads > 0:
        out["head_dim"] = d // heads
    return out


def _cosmos3_edge_text(data: Raw) -> Raw:
    # Cosmos3EdgeTextConfig: head_dim 128 by default; its MLP is Arcee's (fc1, an activation,
    # fc2, biased by mlp_bias; the activation, relu2 by default, changes no count)
    return {"head_dim": 128, **data}


def _hy_v4_vl_text(data: Raw) -> Raw:
    # HYV4VLTextConfig: HYV4Config's model with its own defaults (78 layers of 6,144); its
    # three-axis rotary positions add no parameter
    return {"hidden_size": 6144, "intermediate_size": 18432, "moe_intermediate_size": 2048,
            "num_hidden_layers": 78, "num_attention_heads": 64, "q_lora_rank": 2048,
            "index_n_heads": 32, **data}


def _unlimited_ocr_text(data: Raw) -> Raw:
    # UnlimitedOcrTextConfig: DeepSeek-OCR 2's text model with its own defaults, the first
    # `first_k_dense_replace` (1) layers dense when mlp_layer_types is absent. Its reference
    # sliding window (the last sliding_window keys and every image and prompt token) is a mask:
    # the `full` count is what runs; `--attention causal` counts the causal pairs.
    out = {"vocab_size": 129280, "hidden_size": 1280, "intermediate_size": 6848,
           "num_hidden_layers": 12, "num_attention_heads": 10, "num_key_value_heads": 10,
           "max_position_embeddings": 32768, "moe_intermediate_size": 896,
           "num_experts_per_tok": 6, **data}
    n, first = out["num_hidden_layers"], out.pop("first_k_dense_replace", 1)
    if out.get("mlp_layer_types") is None and type(n) is int and type(first) is int and 0 < n:
        out["mlp_layer_types"] = ["sparse" if i >= first else "dense" for i in range(n)]
    return out


def _glm_ocr_text(data: Raw) -> Raw:
    # GlmOcrTextAttention: q, k, v and o never biased whatever the file says, head_dim the
    # file's or hidden_size // num_attention_heads (GLM-4's sandwich norms and fused gate_up
    # otherwise; glm_ocr/modeling_glm_ocr.py). Counted as Qwen2 before, its q/k/v biases
    # (h·hd + 2·kv·hd) stood in for the two extra norms (2·d) per layer: equal only where
    # kv = h/2, as at the default config.
    d, heads = data.get("hidden_size", 1024), data.get("num_attention_heads", 16)
    if type(d) is not int or type(heads) is not int or heads < 1:
        return data  # the converter names the bad key
    return {**data, "head_dim": data.get("head_dim") or d // heads, "attention_bias": False}


# Keys a nested text class fixes or defaults apart from the type it counts as (SUBTYPES).
FIXES: dict[str, Callable[[Raw], Raw]] = {"glm4v_text": _glm4v_text,
                                          "glm_ocr_text": _glm_ocr_text,
                                          "glm4v_moe_text": _glm4v_moe_text,
                                          "qwen3_omni_moe_text": _qwen3_omni_moe_text,
                                          "cosmos3_edge_text": _cosmos3_edge_text,
                                          "hy_v4_vl_text": _hy_v4_vl_text,
                                          "unlimited_ocr_text": _unlimited_ocr_text}


def as_subtype(data: Raw) -> Raw:
    """A nested text mapping as the type its counts are (SUBTYPES), its fixed keys set."""
    kind = data.get("model_type")
    if kind in FIXES:
        data = FIXES[kind](data)
    return {**data, "model_type": SUBTYPES.get(kind, kind)}

# The vision config classes' defaults (configuration_*.py), for keys a file leaves out.
VISION_DEFAULTS: dict[str, Raw] = {
    "clip_vision_model": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                              num_attention_heads=12, num_channels=3, image_size=224,
                              patch_size=32),
    "siglip_vision_model": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                num_attention_heads=12, num_channels=3, image_size=224,
                                patch_size=16, vision_use_head=True),
    "pixtral": dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                    num_attention_heads=16, num_channels=3, image_size=1024, patch_size=16),
    "idefics3_vision": dict(hidden_size=1152, intermediate_size=3072, num_hidden_layers=12,
                            num_attention_heads=16, num_channels=3, image_size=224,
                            patch_size=32),
    "qwen2_vl_vision": dict(depth=32, embed_dim=1280, hidden_size=3584, mlp_ratio=4,
                            num_heads=16, in_channels=3, patch_size=14, spatial_merge_size=2,
                            temporal_patch_size=2),
    "qwen2_5_vl_vision": dict(depth=32, hidden_size=3584, intermediate_size=3420, num_heads=16,
                              in_channels=3, patch_size=14, spatial_merge_size=2,
                              temporal_patch_size=2, window_size=112, out_hidden_size=3584,
                              fullatt_block_indexes=[7, 15, 23, 31]),
    "qwen3_vl_vision": dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16,
                            in_channels=3, patch_size=16, spatial_merge_size=2,
                            temporal_patch_size=2, out_hidden_size=3584,
                            num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24]),
    "llama4_vision_model": dict(hidden_size=768, num_hidden_layers=34, num_attention_heads=16,
                                num_channels=3, intermediate_size=5632, vision_output_dim=7680,
                                image_size=448, patch_size=14, pixel_shuffle_ratio=0.5,
                                projector_input_dim=4096, projector_output_dim=4096),
    "internvl_vision": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                            attention_bias=False, use_qk_norm=False, intermediate_size=4096,
                            norm_type="layer_norm", image_size=[448, 448], patch_size=[14, 14],
                            num_channels=3, use_mask_token=False,
                            use_absolute_position_embeddings=True, use_mean_pooling=True),
}
VISION_DEFAULTS["smolvlm_vision"] = VISION_DEFAULTS["idefics3_vision"]
VISION_DEFAULTS["qwen3_vl_moe_vision"] = VISION_DEFAULTS["qwen3_vl_vision"]
# Qwen3.5's: Qwen3-VL's without deepstack (Qwen3_5VisionConfig has no such key)
VISION_DEFAULTS["qwen3_5_vision"] = {k: v for k, v in VISION_DEFAULTS["qwen3_vl_vision"].items()
                                     if k != "deepstack_visual_indexes"}
VISION_DEFAULTS["qwen3_5_moe_vision"] = VISION_DEFAULTS["qwen3_5_vision"]


def _square(v: Config, key: str) -> int:
    value = v(key)
    if isinstance(value, list):
        if len(value) != 2 or value[0] != value[1]:
            raise FlopcalcError(f"{v.label}: {key} {value} is not square; flopcalc reads square "
                                "images and patches only")
        value = value[0]
    if type(value) is not int:
        raise v.wrong(key, value, int)
    return value


def _features(c: Config) -> tuple[int, bool]:
    """llava's vision_feature_layer (how many layers are concatenated) and whether the
    `default` strategy drops the first token."""
    layer = c("vision_feature_layer", -2)
    layers = len(layer) if isinstance(layer, list) else 1
    strategy = c("vision_feature_select_strategy", "default")
    if strategy not in ("default", "full"):
        raise FlopcalcError(f"{c.label}: vision_feature_select_strategy must be 'default' or "
                            f"'full', got {strategy!r}")
    return layers, strategy == "default"


def _vit(v: Config, **keys: Any) -> Raw:
    """The CLIP / SigLIP / Idefics3 ViT: LayerNorms, biases everywhere, a plain MLP."""
    return {"d_model": v("hidden_size"), "n_layers": v("num_hidden_layers"),
            "n_heads": v("num_attention_heads"), "d_ff": v("intermediate_size"),
            "patch": _square(v, "patch_size"), "image_size": _square(v, "image_size"),
            "channels": v("num_channels", 3), **keys}


def _clip(v: Config) -> Raw:
    # CLIPVisionEmbeddings: conv without bias, class embedding, N + 1 positions; pre/post LN
    return _vit(v, name="CLIP", cls_token=True, pre_norm="layernorm", post_norm="layernorm")


def _siglip(v: Config) -> Raw:
    # SiglipVisionEmbeddings: conv with bias, N positions; post LN; the pooling head by default
    return _vit(v, name="SigLIP", patch_bias=True, post_norm="layernorm",
                head=bool(v("vision_use_head", True)))


def _pixtral(v: Config, merge: int = 1) -> Raw:
    # PixtralVisionModel: conv without bias, ln_pre RMSNorm, RMSNorms, no biases, gated MLP,
    # 2D RoPE (no position table), all images in one sequence
    return {"name": "Pixtral", "d_model": v("hidden_size"), "n_layers": v("num_hidden_layers"),
            "n_heads": v("num_attention_heads"), "d_ff": v("intermediate_size"),
            "patch": v("patch_size"), "image_size": v("image_size"),
            "channels": v("num_channels", 3), "mlp": "gated", "norm": "rmsnorm",
            "qkv_bias": False, "out_bias": False, "mlp_bias": False, "position_table": False,
            "pre_norm": "rmsnorm", "attention": "batch", "merge": merge,
            "processor": "pixtral"}


def _llava(c: Config, v: Config, text: Raw) -> Raw:
    """LlavaForConditionalGeneration: CLIP, SigLIP or Pixtral, then linear_1 (d·layers → D) and
    linear_2 (D → D), biased when `multimodal_projector_bias`."""
    kind = v.model_type
    layers, drop = _features(c)
    bias, d_text = bool(c("multimodal_projector_bias", True)), text["d_model"]
    if kind == "clip_vision_model":
        block = _clip(v)
    elif kind == "siglip_vision_model":
        block = _siglip(v)
    else:  # pixtral-12b: the Pixtral processor, no spatial merge
        block = _pixtral(v)
    block.update(drop_first=drop, feature_layers=layers,
                 projector=[{"op": "linear", "out": d_text, "bias": bias},
                            {"op": "linear", "out": d_text, "bias": bias}])
    return block


def _paligemma(c: Config, v: Config, text: Raw) -> Raw:
    # PaliGemmaMultiModalProjector: Linear(d, projection_dim) with a bias
    return {**_siglip(v), "projector": [{"op": "linear", "out": c("projection_dim", 2048),
                                         "bias": True}]}


def _gemma3(c: Config, v: Config, text: Raw) -> Raw:
    # Gemma3MultiModalProjector: AvgPool2d to mm_tokens_per_image, RMSNorm, d x D (no bias);
    # <start_of_image> and <end_of_image> around the image tokens
    return {**_siglip(v), "markers": 2,
            "projector": [{"op": "pool", "tokens": c("mm_tokens_per_image", 256)},
                          {"op": "norm", "norm": "rmsnorm"},
                          {"op": "linear", "out": text["d_model"]}]}


def _idefics3(c: Config, v: Config, text: Raw) -> Raw:
    # Idefics3Connector: pixel shuffle by scale_factor, Linear(d·s², D) without bias; tiles
    name = "SmolVLM" if c.model_type == "smolvlm" else "Idefics3"
    s = c("scale_factor", 2)
    return {**_vit(v, name=name, patch_bias=True, post_norm="layernorm"), "processor": "tiles",
            "markers": 3, "projector": [{"op": "shuffle", "factor": s},
                                        {"op": "linear", "out": text["d_model"]}]}


def _mistral3(c: Config, v: Config, text: Raw) -> Raw:
    """Mistral3MultiModalProjector: RMSNorm(d), the patch merger (m x m patches concatenated,
    Linear(d·m², d) without bias), linear_1 (d·layers → D) and linear_2 (D → D)."""
    layers, _ = _features(Config({"vision_feature_layer": -1, **c.data}, c.label, c.model_type))
    m = c("spatial_merge_size", 2)
    bias, d, d_text = bool(c("multimodal_projector_bias", False)), v("hidden_size"), text["d_model"]
    first: Raw = {"op": "linear", "out": d_text, "bias": bias}
    if layers > 1:  # the norm and merger are d wide: such a config builds but cannot run
        first["input"] = d * layers
    return {**_pixtral(v, merge=m),
            "projector": [{"op": "norm", "norm": "rmsnorm"}, {"op": "shuffle", "factor": m},
                          {"op": "linear", "out": d}, first,
                          {"op": "linear", "out": d_text, "bias": bias}]}


def _qwen2_vl(c: Config, v: Config, text: Raw) -> Raw:
    """Qwen2VisionTransformerPretrainedModel: Conv3d (temporal_patch frames) without bias,
    LayerNorms, q/k/v and proj with biases, a plain MLP of embed_dim·mlp_ratio; the merger:
    LayerNorm, m x m patches concatenated, Linear(E·m², E·m²) and Linear(E·m², hidden_size),
    biased. `hidden_size` is the merger's output (the text width), `embed_dim` the tower's."""
    e, m = v("embed_dim"), v("spatial_merge_size", 2)
    return {"name": "Qwen2-VL", "d_model": e, "n_layers": v("depth"), "n_heads": v("num_heads"),
            "d_ff": int(e * v("mlp_ratio", 4)), "patch": v("patch_size"),
            "channels": v("in_channels", 3), "temporal_patch": v("temporal_patch_size", 2),
            "position_table": False, "merge": m, "processor": "qwen", "markers": 2,
            "projector": [{"op": "norm"}, {"op": "shuffle", "factor": m},
                          {"op": "linear", "out": e * m * m, "bias": True},
                          {"op": "linear", "out": v("hidden_size"), "bias": True}]}


def _qwen2_5_vl(c: Config, v: Config, text: Raw) -> Raw:
    """Qwen2_5_VisionTransformerPretrainedModel: as Qwen2-VL with RMSNorms, a gated MLP with
    biases, window attention (window_size pixels) but in fullatt_block_indexes, and the merger
    to out_hidden_size."""
    e, m = v("hidden_size"), v("spatial_merge_size", 2)
    return {"name": "Qwen2.5-VL", "d_model": e, "n_layers": v("depth"),
            "n_heads": v("num_heads"), "d_ff": v("intermediate_size"), "patch": v("patch_size"),
            "channels": v("in_channels", 3), "temporal_patch": v("temporal_patch_size", 2),
            "mlp": "gated", "norm": "rmsnorm", "position_table": False, "merge": m,
            "attention": "window", "window": v("window_size", 112),
            "full_blocks": list(v.ints("fullatt_block_indexes", [7, 15, 23, 31])),
            "processor": "qwen", "markers": 2,
            "projector": [{"op": "norm", "norm": "rmsnorm"}, {"op": "shuffle", "factor": m},
                          {"op": "linear", "out": e * m * m, "bias": True},
                          {"op": "linear", "out": v("out_hidden_size"), "bias": True}]}


# Qwen3-VL's and Qwen3.5's image processor as their published preprocessor_config.json set it
# (Qwen/Qwen3-VL-8B-Instruct, Qwen/Qwen3.5-27B: size shortest_edge 65536, longest_edge
# 16777216 pixels; the processor class's own defaults are Qwen2-VL's)
QWEN3_MIN_PIXELS, QWEN3_MAX_PIXELS = 65_536, 16_777_216


def _qwen3_vl(c: Config, v: Config, text: Raw) -> Raw:
    """Qwen3VLVisionModel (and Qwen3.5's, the same without deepstack): Conv3d with a bias,
    a learned table of num_position_embeddings rows resampled to each image's grid, LayerNorms,
    qkv and proj biased, a plain MLP (linear_fc1, linear_fc2, biased); the merger: LayerNorm(E),
    m x m patches concatenated, Linear(E·m², E·m²) and Linear(E·m², out_hidden_size), biased;
    one more merger per deepstack_visual_indexes entry with its LayerNorm after the
    concatenation (E·m² wide). `out_hidden_size` is the text width, `hidden_size` the tower's."""
    e, m = v("hidden_size"), v("spatial_merge_size", 2)
    out = v("out_hidden_size", 3584)
    merger = [{"op": "linear", "out": e * m * m, "bias": True},
              {"op": "linear", "out": out, "bias": True}]
    block: Raw = {"name": "Qwen3-VL" if "vl" in v.model_type else "Qwen3.5",
                  "d_model": e, "n_layers": v("depth"), "n_heads": v("num_heads"),
                  "d_ff": v("intermediate_size"), "patch": _square(v, "patch_size"),
                  "channels": v("in_channels", 3),
                  "temporal_patch": _square(v, "temporal_patch_size"), "patch_bias": True,
                  "positions": v("num_position_embeddings", 2304), "merge": m,
                  "processor": "qwen", "markers": 2, "min_pixels": QWEN3_MIN_PIXELS,
                  "max_pixels": QWEN3_MAX_PIXELS,
                  "projector": [{"op": "norm"}, {"op": "shuffle", "factor": m}, *merger]}
    if "vl" in v.model_type:  # Qwen3.5's tower has no deepstack mergers
        block["deepstack"] = list(v.ints("deepstack_visual_indexes", [8, 16, 24]))
        block["deepstack_projector"] = [{"op": "shuffle", "factor": m}, {"op": "norm"}, *merger]
    return block


def llama4_vision(c: Config, v: Config, text: Raw) -> Raw:
    """Llama4VisionModel: unfold + Linear (no bias), a class token appended, N + 1 positions,
    LayerNorms before and after, biased ViT layers; the vision adapter (pixel shuffle by
    1/pixel_shuffle_ratio, fc1: intermediate_size → projector_input_dim, fc2:
    projector_output_dim → itself, no biases) and the projector vision_output_dim → D (no bias);
    <|image_start|>, <|image|> and <|image_end|> around the tiles."""
    ratio = v("pixel_shuffle_ratio", 0.5)
    s = round(1 / ratio) if ratio else 0
    if s < 1 or abs(s * ratio - 1) > 1e-9:
        raise FlopcalcError(f"{v.label}: pixel_shuffle_ratio {ratio} is not 1/s for a whole s")
    pin, pout = v("projector_input_dim", 4096), v("projector_output_dim", 4096)
    return {**_vit(v, name="Llama 4", cls_token=True, drop_first=True, pre_norm="layernorm",
                   post_norm="layernorm"),
            "processor": "llama4", "markers": 3,
            "projector": [{"op": "shuffle", "factor": s},
                          {"op": "linear", "out": pin, "input": v("intermediate_size")},
                          {"op": "linear", "out": pout, "input": pout},
                          {"op": "linear", "out": text["d_model"],
                           "input": v("vision_output_dim", 7680)}]}


def _internvl(c: Config, v: Config, text: Raw) -> Raw:
    """InternVLVisionModel: conv with bias, a class token, N + 1 positions
    (use_absolute_position_embeddings), layer norms of norm_type, q/k/v biased by
    attention_bias, a biased output, QK-norms over the full width (use_qk_norm), layer scales,
    a final LayerNorm unless use_mean_pooling; the projector: pixel shuffle by
    1/downsample_ratio, LayerNorm, Linear(d·s², D) and Linear(D, D), biased; <img> and </img>
    around the tiles."""
    ratio = c("downsample_ratio", 0.5)
    s = round(1 / ratio) if ratio else 0
    if s < 1 or abs(s * ratio - 1) > 1e-9:
        raise FlopcalcError(f"{c.label}: downsample_ratio {ratio} is not 1/s for a whole s")
    _, drop = _features(Config({"vision_feature_layer": -1, **c.data}, c.label, c.model_type))
    norm = "rmsnorm" if v("norm_type", "layer_norm") == "rms_norm" else "layernorm"
    d_text = text["d_model"]
    return {"name": "InternViT", "d_model": v("hidden_size"),
            "n_layers": v("num_hidden_layers"), "n_heads": v("num_attention_heads"),
            "d_ff": v("intermediate_size"), "patch": _square(v, "patch_size"),
            "image_size": _square(v, "image_size"), "channels": v("num_channels", 3),
            "norm": norm, "qkv_bias": bool(v("attention_bias", False)),
            "qk_norm": bool(v("use_qk_norm", False)), "layer_scale": True, "patch_bias": True,
            "cls_token": True, "drop_first": drop, "mask_token": bool(v("use_mask_token", False)),
            "position_table": bool(v("use_absolute_position_embeddings", True)),
            "post_norm": None if v("use_mean_pooling", True) else "layernorm",
            "processor": "internvl", "markers": 2,
            "projector": [{"op": "shuffle", "factor": s}, {"op": "norm"},
                          {"op": "linear", "out": d_text, "bias": True},
                          {"op": "linear", "out": d_text, "bias": True}]}


_CLIP_L = dict(model_type="clip_vision_model", hidden_size=1024, intermediate_size=4096,
               num_hidden_layers=24, num_attention_heads=16, image_size=336, patch_size=14)
_T, _F = True, False
WRAPPERS: dict[str, Wrapper] = {
    # with a tower flopcalc reads
    "llava": Wrapper("llama", or_text=_T, tower=_llava, vision_type="clip_vision_model",
                     vision_default=_CLIP_L),
    "paligemma": Wrapper("gemma", tied=_T, tower=_paligemma, vision_type="siglip_vision_model",
                         vision_default=dict(model_type="siglip_vision_model", hidden_size=1152,
                                             intermediate_size=4096, num_hidden_layers=27,
                                             num_attention_heads=16, image_size=224,
                                             patch_size=14, vision_use_head=False)),
    "gemma3": Wrapper("gemma3_text", tied=_T, tower=_gemma3, vision_type="siglip_vision_model"),
    # Gemma 4's vision tower (2D rotary, pooling) and audio conformer are not kinds flopcalc
    # has: the language model is counted alone, and the note names both towers
    "gemma4": Wrapper("gemma4_text", tied=_T),
    "gemma4_unified": Wrapper("gemma4_unified_text", tied=_T),
    # Gemma 3n's MobileNet-v5 vision tower and USM audio conformer (with their embedders)
    # are not kinds flopcalc has: the language model (models/hf/gemma3n.py) is counted alone
    "gemma3n": Wrapper("gemma3n_text", tied=_T),
    "shieldgemma2": Wrapper("gemma3_text", or_text=_T, tower=_gemma3,
                            vision_type="siglip_vision_model"),
    "idefics3": Wrapper("llama", tower=_idefics3, vision_type="idefics3_vision"),
    "smolvlm": Wrapper("llama", tower=_idefics3, vision_type="smolvlm_vision"),
    "mistral3": Wrapper("mistral", tied=_T, tower=_mistral3, vision_type="pixtral",
                        vision_default=dict(model_type="pixtral", hidden_size=1024,
                                            intermediate_size=4096, num_hidden_layers=24,
                                            num_attention_heads=16, image_size=1540,
                                            patch_size=14)),
    # Mistral Large 4: Mistral 3's wrapper (Pixtral, its patch merger and projector) around
    # models/hf/mistral_large4.py's text model; the head untied by default
    "mistral_large4": Wrapper("mistral_large4_text", tower=_mistral3, vision_type="pixtral",
                              vision_default=dict(model_type="pixtral", hidden_size=2048,
                                                  intermediate_size=6144, num_hidden_layers=30,
                                                  num_attention_heads=16, image_size=1540,
                                                  patch_size=14)),
    "qwen2_vl": Wrapper("qwen2_vl_text", or_text=_T, tower=_qwen2_vl,
                        vision_type="qwen2_vl_vision", flat=True),
    "qwen2_5_vl": Wrapper("qwen2_5_vl_text", or_text=_T, tower=_qwen2_5_vl,
                          vision_type="qwen2_5_vl_vision", flat=True),
    "internvl": Wrapper("qwen2", tied=_T, tower=_internvl, vision_type="internvl_vision"),
    "qwen3_vl": Wrapper("qwen3_vl_text", tower=_qwen3_vl, vision_type="qwen3_vl_vision"),
    "qwen3_vl_moe": Wrapper("qwen3_vl_moe_text", tower=_qwen3_vl,
                            vision_type="qwen3_vl_moe_vision"),
    # Cosmos3-Omni: Qwen3-VL's tower and text model under another name (Cosmos3OmniConfig
    # reads any vision_config as qwen3_vl_vision)
    "cosmos3_omni": Wrapper("qwen3_vl_text", tower=_qwen3_vl, vision_type="qwen3_vl_vision"),
    # Qwen3.5's head ties by the wrapper's own flag (Qwen3_5ForConditionalGeneration), not the
    # text config's
    "qwen3_5": Wrapper("qwen3_5_text", flat=True, tower=_qwen3_vl, vision_type="qwen3_5_vision"),
    "qwen3_5_moe": Wrapper("qwen3_5_moe_text", flat=True, tower=_qwen3_vl,
                           vision_type="qwen3_5_moe_vision"),
    # the language model alone (their towers are not read)
    "aya_vision": Wrapper("cohere2", tied=_T), "blip-2": Wrapper("opt", tie="text"),
    "cohere2_vision": Wrapper("cohere2", tied=_T), 
    "deepseek_vl": Wrapper("llama", tied=_T), "deepseek_vl_hybrid": Wrapper("llama", tied=_T),
    "exaone4_5": Wrapper("exaone4"), "fast_vlm": Wrapper("qwen2", or_text=_T),
"fun_asr_nano": Wrapper("qwen3", tied=_T),
    "fuyu": Wrapper("persimmon"), "glm_ocr": Wrapper("glm_ocr_text", or_text=_T),
    "glmasr": Wrapper("llama", tied=_T), "got_ocr2": Wrapper("qwen2", tied=_T),
    "granite_docling": Wrapper("granite_docling_text", tied=_T),
    "granite_speech": Wrapper("granite", tied=_T),
    "granite_speech_plus": Wrapper("granite", tied=_T),
    "hyperclovax_vision_v2": Wrapper("hyperclovax", tied=_T), "idefics2": Wrapper("mistral"),
    "instructblip": Wrapper("opt", tie="text"), "instructblipvideo": Wrapper("opt", tie="text"),
    "janus": Wrapper("llama", tied=_T), "kimi_k25": Wrapper("deepseek_v3", tied=_T),
    "lfm2_vl": Wrapper("lfm2", tied=_T), "lighton_ocr": Wrapper("qwen3", tied=_T),
    "llava_next": Wrapper("llama"), "llava_next_video": Wrapper("llama", or_text=_T),
    "llava_onevision": Wrapper("qwen2", or_text=_T), "minicpm_ocr": Wrapper("qwen3_5_text",
                                                                           tied=_T),
    "minicpmv4_6": Wrapper("qwen3_5_text"), "minicpmv4_7": Wrapper("qwen3_5_text"),
    "moss_transcribe_diarize": Wrapper("qwen3", tied=_T),
    "nemo_speechlm": Wrapper("nemotron_h", tie="never"),
    "nemotron_h_omni": Wrapper("nemotron_h", tie="never"),
    "omniasr": Wrapper("llama", tie="never"), "ovis2": Wrapper("qwen2", tied=_T),
    "perception_lm": Wrapper("llama", tied=None), "pp_chart2table": Wrapper("qwen2", tied=_T),
    "qianfan_ocr": Wrapper("qwen3"), "qwen2_audio": Wrapper("qwen2", tie="never"),
    "qwen3_asr": Wrapper("qwen3", tied=_T),
    # transformers 5.25 (their text model an AutoModel of text_config, Qwen3 by default)
    "llava_onevision1_5": Wrapper("qwen3"), "ovis2_5": Wrapper("qwen3"),
    "vibevoice_asr": Wrapper("qwen2", tie="never"),
    "video_llama_3": Wrapper("qwen2", or_text=_T), "video_llava": Wrapper("llama"),
    "vipllava": Wrapper("llama"), "voxtral": Wrapper("llama", tie="never"),
    # their language model an AutoModel of text_config, the head never tied
    # (`_tied_weights_keys = None`)
    "audioflamingo3": Wrapper("qwen2", tie="never"), "musicflamingo": Wrapper("qwen2", tie="never"),
    "apertus1p5": Wrapper("apertus1p5_text"), "lfm3_vl": Wrapper("lfm3", tied=_T),
    # GLM-4.1V / 4.5V / 4.6V (glmga: GLM-4.6V's class under another name): Glm4vTextModel or an
    # AutoModel of text_config (glm46v holds glm4v_text or glm4v_moe_text)
    "glm4v": Wrapper("glm4v_text", or_text=_T), "glm46v": Wrapper("glm4v_text"),
    "glmga": Wrapper("glm4v_text"), "glm4v_moe": Wrapper("glm4v_moe_text", or_text=_T),
    "hunyuan_vl": Wrapper("hunyuan_vl_text", tied=_T, or_text=_T, flat=True),
    "paddleocr_vl": Wrapper("paddleocr_vl_text", tied=_T, or_text=_T, flat=True),
    "qwen2_5_omni_thinker": Wrapper("qwen2_5_omni_text"),
    "qwen3_omni_moe_thinker": Wrapper("qwen3_omni_moe_text"),
    "granite4_vision": Wrapper("granite4_vision_text"),
    # Florence-2: a DaViT tower and BART (an encoder-decoder) whose encoder reads the image
    # features before the text
    "florence2": Wrapper("bart", tied=_T, seq2seq=True),
    # Emu3: Llama beside the VQ-VAE that tokenizes images (vq_config)
    "emu3": Wrapper("emu3_text_model"),
    "cosmos3_edge": Wrapper("cosmos3_edge_text", tie="never"),  # `_tied_weights_keys = {}`
    # ModernVBERT (masked LM): a SigLIP tower and ModernBERT with its prediction head and
    # decoder, tied by the wrapper's flag
    "modernvbert": Wrapper("modernbert"),
    # DeepSeek-OCR 2: SAM and Qwen2 encoders, and models/hf/wrapped_text.py's text model
    "deepseek_ocr2": Wrapper("deepseek_ocr2_text"),
    # Hy4-VL: HunYuan-VL's tower (its patch merger of two convolutions and a newline vector)
    # around Hy4's language model (models/hf/hy_v4.py), the head untied by default
    "hy_v4_vl": Wrapper("hy_v4_vl_text"),
    # Molmo 2: a ViT and its pooling adapter (not read) around models/hf/wrapped_text.py's text
    # model, whose head is never tied
    "molmo2": Wrapper("molmo2_text", tie="never"),
    # Kosmos-2: a CLIP-like vision model and the latent-query projection (not read) around
    # models/hf/kosmos2.py's text model (a whole Kosmos2TextForCausalLM), tied when the
    # wrapper's flag (true by default) or the text config's is
    "kosmos-2": Wrapper("kosmos_2_text_model", tied=_T, or_text=_T),
    # Unlimited-OCR: DeepSeek-OCR 2's wrapper (SAM and CLIP encoders, not read) and text model
    "unlimited_ocr": Wrapper("unlimited_ocr_text"),
    # ERNIE 4.5 VL MoE: its ViT and resampler (not read) around models/hf/ernie4_5_vl.py's text
    # model, tied by the wrapper's flag (true by default)
    "ernie4_5_vl_moe": Wrapper("ernie4_5_vl_moe_text", tied=_T),
    # Phi-4-multimodal: Phi-3's layers in a flat file, its image and audio encoders (held in
    # the model's embed_tokens_extend) not read
    "phi4_multimodal": Wrapper("phi3", flat=True),
}


def tied(c: Config, entry: Wrapper, text: Raw) -> bool:
    """Whether transformers ties the wrapper's LM head (see the module docstring)."""
    own = bool(text.get("tie_word_embeddings", False))
    if entry.tie == "never":
        return False
    if entry.tie == "text":
        return own
    top = c("tie_word_embeddings", own if entry.tied is None else entry.tied, bool)
    return top or (entry.or_text and own)


def text_mapping(c: Config, entry: Wrapper) -> Raw:
    """The language model's config.json mapping, with its model_type."""
    text = c.data.get(entry.key)
    if text is None and entry.flat:  # Qwen2-VL's hub files: the text keys at the top level
        text = {k: v for k, v in c.data.items()
                if k not in ("model_type", "vision_config", "architectures")}
    if text is None:
        raise FlopcalcError(f"{c.label}: missing '{entry.key}' (the language model's config, "
                            f"needed for model_type {c.model_type})")
    if not isinstance(text, dict):
        raise c.wrong(entry.key, text, dict)
    return {"model_type": entry.text_type, **{k: v for k, v in text.items() if v is not None}}


def vision_config(c: Config, entry: Wrapper) -> Optional[Config]:
    """The vision config with its class's defaults (None: the file has none and the wrapper no
    default, so the tower is not counted)."""
    raw = c.data.get("vision_config")
    if raw is None:
        if entry.vision_default is None and entry.vision_type not in VISION_DEFAULTS:
            return None
        raw = entry.vision_default or {"model_type": entry.vision_type}
    if not isinstance(raw, dict):
        raise c.wrong("vision_config", raw, dict)
    kind = raw.get("model_type") or entry.vision_type
    if kind == c.model_type or c.model_type == "cosmos3_omni":
        # older Qwen3.5 files name the wrapper's type (Qwen3_5Config reads it as its vision
        # type); Cosmos3OmniConfig reads any vision_config as Qwen3-VL's
        kind = entry.vision_type
    if kind not in VISION_DEFAULTS:
        return None
    data = {**VISION_DEFAULTS[kind], **{k: v for k, v in raw.items() if v is not None}}
    return Config(data, f"{c.label} vision_config", kind)


def unwrap(c: Config) -> Raw:
    """The preset mapping of a wrapper config: its language model, and its tower's `vision`
    block where flopcalc reads it."""
    from . import from_hf_dict

    entry = WRAPPERS[c.model_type]
    data = text_mapping(c, entry)
    head = tied(c, entry, data)
    if entry.seq2seq:  # the text model ties its stacks' tables by its own flag
        data = as_subtype(data)
    else:
        data = {**as_subtype(data), "tie_word_embeddings": head}
    raw = from_hf_dict(data, f"{c.label} {entry.key}")
    for key in ("_name", "title", "source"):
        raw.pop(key, None)
    if entry.seq2seq:
        seq2seq_head(raw, head)
    return attach_tower(c, raw, entry.tower, entry)


def seq2seq_head(raw: Raw, head: bool) -> None:
    """Florence-2's head tied by the wrapper's flag to the BartModel's `shared` table, whose
    own flag ties its encoder's and decoder's tables to `shared`: tied inside, an untied head
    is one table more (shared + lm_head); untied inside, a tied head makes `shared` the head's
    (the encoder's and decoder's tables beside it, none unused)."""
    if raw.get("unused_token_tables"):  # untied inside: shared, encoder, decoder (+ lm_head)
        if head:
            raw["tie_embeddings"] = True
    else:
        raw["tie_embeddings"] = head


def attach_tower(c: Config, raw: Raw, build: Optional[Tower], entry: Wrapper) -> Raw:
    """`raw` (the language model's preset mapping) with the wrapper's `vision` block where
    flopcalc reads its tower, and notes saying what was counted."""
    v = vision_config(c, entry) if build is not None else None
    own = raw.pop("notes", None)
    cls = c.data.get("architectures")
    name = cls[0] if isinstance(cls, list) and cls and isinstance(cls[0], str) else c.model_type
    if v is not None and build is not None:
        if raw.get("architecture", "decoder-only") != "decoder-only":
            raise FlopcalcError(f"{c.label}: a vision tower feeds a decoder-only text model")
        raw["vision"] = build(c, v, raw)
        raw["notes"] = (f"{name}: the language model ({entry.key}), the {raw['vision']['name']} "
                        "vision tower and its projector (vision_config), all in params.total; "
                        "the tower's FLOPs are counted for the images given with --images")
    else:
        seen = [c.data.get(key) for key in ("vision_config", "audio_config", "vq_config")]
        kinds = [x.get("model_type") for x in seen if isinstance(x, dict)]
        what = " and ".join(k for k in kinds if isinstance(k, str) and k)
        towers = "encoders and projectors" if " and " in what else "encoder and projector"
        raw["notes"] = (f"{name}: the language model ({entry.key}) only; the "
                        f"{what + ' ' if what else ''}{towers} of this wrapper are "
                        "not read by flopcalc and not counted")
    if own:  # the language model's own note (an MTP module it could not count) stays
        raw["notes"] = f"{raw['notes']}. {own}"
    return raw


def language_model_only(c: Config, entry: Wrapper) -> Raw:
    """A wrapper whose towers flopcalc does not read: its language model (`entry.key`) with the
    wrapper's head, tied by the wrapper's flag, and notes naming the towers left out."""
    from . import from_hf_dict

    data = text_mapping(c, entry)
    data["tie_word_embeddings"] = tied(c, entry, data)
    raw = from_hf_dict(data, f"{c.label} {entry.key}")
    for key in ("_name", "title", "source"):
        raw.pop(key, None)
    return attach_tower(c, raw, None, entry)


def text_alone(c: Config) -> Raw:
    """A wrapper's nested text config saved on its own (`qwen2_vl_text`, ...): transformers
    builds only the headless `*TextModel` from it, so it is counted as the language model its
    wrapper holds, with the wrapper's LM head, tied when the file's `tie_word_embeddings` says
    so (absent: the wrapper class's default; never where the wrapper never ties)."""
    from . import from_hf_dict

    entry = WRAPPERS[TEXT_OF[c.model_type]]
    default = bool(entry.tied) if entry.tie == "top" else False
    tie = c("tie_word_embeddings", default, bool) and entry.tie != "never"
    data = {**as_subtype({**c.data, "model_type": c.model_type}), "tie_word_embeddings": tie}
    raw = from_hf_dict(data, c.label)
    for key in ("_name", "title", "source"):
        raw.pop(key, None)
    return raw


# each nested text type → the wrapper that holds it
TEXT_OF = {entry.text_type: name for name, entry in WRAPPERS.items()
           if entry.text_type in SUBTYPES}

CONVERTERS = {**{name: unwrap for name in WRAPPERS}, **{t: text_alone for t in TEXT_OF}}

# Llama 4's importer is models/hf/sparse.py (its text model); it takes the tower from here.
LLAMA4 = Wrapper("llama4_text", tie="text", tower=llama4_vision, vision_type="llama4_vision_model")
