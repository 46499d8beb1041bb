"""π0.5 (transformers 5.25 `pi05`, PI05ForConditionalGeneration) and π0 (5.24 `pi0`,
PI0ForConditionalGeneration): vision-language-action models.

Its backbone is PaliGemma's model without a head (`PI05Model.vlm`, an AutoModel of
`vlm_config`: the SigLIP tower, the projector and Gemma's layers, prompt and images attending
bidirectionally), counted as the `paligemma` wrapper reads it (models/hf/multimodal.py) with no
LM head; beside it the flow-matching action expert of `dit_config` (Gemma-shaped layers with
adaptive norms), its action and time projections: the `action_expert` block
(`kinds.action_expert`, where the forward's convention is stated: one denoising step of
`chunk_size` action tokens after the prefix). A config without `vlm_config` or `dit_config`
takes PI05Config's defaults (PaliGemma 3B's backbone, a 300M-parameter Gemma expert). π0's
expert is a whole GemmaModel with plain norms, a token table of the backbone's vocabulary that
it never reads, and a robot-state token (`kinds.action_expert`, style pi0); its defaults are
π0.5's.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw

# PI05Config.sub_configs_defaults (configuration_pi05.py; PI0Config's are the same)
VLM = {"model_type": "paligemma", "projection_dim": 2048, "image_token_id": 257152,
       "text_config": {"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 18,
                       "intermediate_size": 16384, "num_attention_heads": 8,
                       "num_key_value_heads": 1, "vocab_size": 257152, "head_dim": 256},
       "vision_config": {"model_type": "siglip_vision_model", "intermediate_size": 4304,
                         "hidden_size": 1152, "patch_size": 14, "image_size": 224,
                         "num_hidden_layers": 27, "num_attention_heads": 16,
                         "vision_use_head": False}}
DIT = {"model_type": "gemma", "hidden_size": 1024, "num_hidden_layers": 18,
       "intermediate_size": 4096, "num_attention_heads": 8, "num_key_value_heads": 1,
       "head_dim": 256}


def _sub(c: Config, key: str, default: Raw) -> Config:
    raw = c(key, default, dict)
    return Config(raw, f"{c.label} {key}", str(raw.get("model_type") or default["model_type"]))


def _pi05(c: Config) -> Raw:
    return _vla(c, "pi05")


def _pi0(c: Config) -> Raw:
    return _vla(c, "pi0")


def _vla(c: Config, style: str) -> Raw:
    """The backbone as `paligemma` without a head, and the action expert's block. The expert's
    layer i reads the keys and values of backbone layer i (transformers concatenates them in
    one cache), so it may not have more layers, nor keys of another shape."""
    from .multimodal import unwrap

    vlm, dit = _sub(c, "vlm_config", VLM), _sub(c, "dit_config", DIT)
    if vlm.model_type != "paligemma":
        raise FlopcalcError(f"{vlm.label}: model_type must be paligemma (π0.5's backbone), got "
                            f"{vlm.model_type!r}")
    raw = unwrap(vlm)
    # PaliGemmaModel: no LM head. PI05Config sets the backbone's use_bidirectional_attention,
    # which flopcalc's decoder layers (causal) do not take: the default `full` count is what
    # transformers computes; the `causal` figure counts the prefix's pairs as causal (below)
    raw.update(head="none", tie_embeddings=True)
    heads, kv = dit("num_attention_heads", expect=int), dit("num_key_value_heads", expect=int)
    d = dit("hidden_size", expect=int)
    head_dim = dit("head_dim", d // heads if heads > 0 else 0, int)
    expert = {"hidden_size": d, "num_hidden_layers": dit.layers(),
              "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
              "intermediate_size": dit("intermediate_size", expect=int),
              "chunk_size": c("chunk_size", 50, int),
              "max_action_dim": c("max_action_dim", 32, int),
              "attention_bias": dit("attention_bias", False, bool), "style": style}
    if style == "pi0":  # PI0Config sizes the expert's table by the backbone's vocabulary
        expert.update(max_state_dim=c("max_state_dim", 32, int), vocab_size=raw["vocab_size"])
    backbone = (raw["n_layers"], raw.get("n_kv_heads") or raw["n_heads"],
                raw.get("head_dim") or raw["d_model"] // raw["n_heads"])
    if expert["num_hidden_layers"] > backbone[0] or (kv, head_dim) != backbone[1:]:
        raise FlopcalcError(
            f"{dit.label}: the action expert's layer i attends to the backbone's layer-i keys: "
            f"it needs at most {backbone[0]} layers and {backbone[1]} key/value heads of "
            f"{backbone[2]} (got {expert['num_hidden_layers']} layers, {kv} heads of "
            f"{head_dim}); make dit_config match vlm_config.text_config")
    raw["action_expert"] = expert
    name = "π0.5" if style == "pi05" else "π0"
    raw["notes"] = (f"{raw.get('notes', '')}. {name}: no LM head; the action expert and its "
                    "projections (dit_config) in params.total, its forward one denoising step "
                    "of chunk_size actions after the prefix").lstrip(". ")
    return raw


CONVERTERS = {"pi05": _pi05, "pi0": _pi0}
