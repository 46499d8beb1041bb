"""ERNIE 4.5 VL MoE's language model (transformers 5.24
`models/ernie4_5_vl_moe/modeling_ernie4_5_vl_moe.py`, Ernie4_5_VLMoeTextModel inside
Ernie4_5_VLMoeForConditionalGeneration): ERNIE 4.5 MoE's layers with modality-isolated experts.
Each "sparse" layer of `mlp_layer_types` (default: all but the first) holds two mixtures of
`moe_num_experts` experts, top `moe_k`, each with its own router and score-correction bias (a
parameter): text experts `moe_intermediate_size[0]` wide, which text tokens run, and vision
experts `moe_intermediate_size[1]` wide, which only image and video tokens run (`moe.idle_d_ff`:
held, in params.total, never run by a text token); `moe_num_shared_experts` fused shared experts
of the text width that every token runs. `use_bias` on q, k, v, o, the dense and shared MLPs
(not on the routed experts, nor on the head, unlike ERNIE 4.5 MoE's); a dense MLP of
intermediate_size elsewhere; the head tied by default. The wrapper's vision tower and its
resampler are not read: the notes say so.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder
from .decoders2 import _mlp_kinds


def _ernie4_5_vl_moe_text(c: Config) -> Raw:
    use = c("use_bias", False, bool)
    raw: Raw = {**rotary_decoder(c, tie=True), **bias(use, use, use)}
    n = c.layers()
    kinds = _mlp_kinds(c, ["dense"] + ["sparse"] * (n - 1))
    widths = c.ints("moe_intermediate_size", [1536, 512])
    if len(widths) != 2:
        raise FlopcalcError(f"{c.label}: moe_intermediate_size must be [text, vision] widths, "
                            f"got {len(widths)} entries")
    if "sparse" in kinds:
        shared = c("moe_num_shared_experts", 2, int)
        raw["moe"] = {"experts": c("moe_num_experts", 64, int), "top_k": c("moe_k", 6, int),
                      "d_ff": widths[0], "shared_experts": shared, "router_bias": True,
                      "expert_bias": False, "idle_d_ff": widths[1],
                      "dense_layers": [i for i, k in enumerate(kinds) if k == "dense"]}
    if "dense" not in kinds:
        raw.pop("d_ff")
    return raw


CONVERTERS = {"ernie4_5_vl_moe_text": _ernie4_5_vl_moe_text}
ALIASES = {"ernie4_5_vl_moe_text": {"num_experts": "moe_num_experts",
                                    "num_experts_per_tok": "moe_k"}}
# Ernie4_5_VLMoeTextConfig's defaults (transformers 5.24), for keys a file leaves out
DEFAULTS = {"ernie4_5_vl_moe_text": {"vocab_size": 103424, "hidden_size": 2560,
                                     "intermediate_size": 12288, "num_hidden_layers": 28,
                                     "num_attention_heads": 20, "num_key_value_heads": 4,
                                     "max_position_embeddings": 131072, "hidden_act": "silu"}}
