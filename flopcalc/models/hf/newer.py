"""Types transformers 5.25 added whose text models are kinds flopcalc has: Param2-MoE (GLM-4.5's
classes under another name), MiniCPM5-MoE (gated attention with DeepSeek-V3's mixture), and the
wrappers LLaVA-OneVision-1.5 and Ovis2.5 (their Qwen3 language model; models/hf/multimodal.py).

Each converter reads the keys its transformers 5.25 class reads (`models/<type>/modular_<type>.py`)
with the config class's defaults (`DEFAULTS`, for a hand-written file that leaves one out);
tests/test_torch_hf_new_types.py checks them against transformers 5.25 when it is installed.
Not imported (their layers are not kinds flopcalc has): `ergo` (a norm after every routed and
shared expert, E x d of them), `kolibri1_1` (weightless indexed attention over pools of keys,
K/V shared across layers) and `pi05` (a vision-language-action model: PaliGemma with
bidirectional attention and a flow-matching action expert, not a text generator).
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder
from .moe_zoo import _glm4_moe, mlp_layer_kinds


def _minicpm5_moe(c: Config) -> Raw:
    """MiniCPM5MoeForCausalLM: Llama's attention (q, k, v, o biased by `attention_bias`, no
    QK-norm) whose `q_gate_proj` (d → 2·h·d_h) also yields a sigmoid gate on the attention
    output (as Qwen3-Next's), DeepSeek-V3's mixture (a bias-free router whose
    e_score_correction_bias is a buffer, `n_shared_experts` fused shared experts of
    moe_intermediate_size) on the layers `mlp_layer_types` calls "sparse", a dense MLP of
    intermediate_size on the "dense" ones (absent: the first `first_k_dense_replace`, default 1)
    (`minicpm5_moe/modular_minicpm5_moe.py`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn), "attention_gate": True}
    n = c("num_hidden_layers", kind=int)
    kinds = mlp_layer_kinds(c, n)
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"),
                      "shared_experts": c("n_shared_experts", 1), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


# The config classes' defaults (transformers 5.25): Param2MoeConfig overrides GLM-4.5's sizes
# (its multi-token-prediction count under the alias, so a file's canonical key still wins).
DEFAULTS: dict[str, Raw] = {
    "param2moe": {"vocab_size": 128000, "hidden_size": 2048, "intermediate_size": 9216,
                  "num_hidden_layers": 21, "num_attention_heads": 32, "num_key_value_heads": 8,
                  "head_dim": 64, "max_position_embeddings": 32768,
                  "tie_word_embeddings": True, "moe_intermediate_size": 2048,
                  "num_experts_per_tok": 6, "n_shared_experts": 2, "n_routed_experts": 64,
                  "use_qk_norm": True, "num_mtp_layers": 0, "first_k_dense_replace": 1,
                  "attention_bias": False},
    "minicpm5_moe": {"vocab_size": 130560, "hidden_size": 2048, "intermediate_size": 8192,
                     "num_hidden_layers": 28, "num_attention_heads": 32,
                     "num_key_value_heads": 2, "head_dim": 128,
                     "max_position_embeddings": 524288, "n_routed_experts": 160,
                     "num_experts_per_tok": 16, "moe_intermediate_size": 512,
                     "n_shared_experts": 1, "tie_word_embeddings": False},
}

CONVERTERS = {"param2moe": _glm4_moe, "minicpm5_moe": _minicpm5_moe}

_YAML = "; describe an approximation in a YAML file if one will do"
REFUSED = {
    "ergo": ("Ergo's RMSNorm after every routed expert (num_experts x hidden_size weights) and "
             "after its shared expert is not a layer kind flopcalc has" + _YAML),
    "kolibri1_1": ("Kolibri 1.1's indexed attention (weightless pools of index_pool_size keys "
                   "scored by index_num_heads heads, layers reading other layers' keys and "
                   "values through kv_source_layers) is not a layer kind flopcalc has" + _YAML),
    "pi05": ("π0.5 is a vision-language-action model (PaliGemma with bidirectional attention "
             "and a flow-matching action expert), not a text generator flopcalc counts" + _YAML),
}

# transformers 5.25's attribute_map of each
ALIASES: dict[str, dict[str, str]] = {
    "param2moe": {"num_local_experts": "n_routed_experts",
                  "num_mtp_layers": "num_nextn_predict_layers",
                  "num_experts": "n_routed_experts", "num_shared_experts": "n_shared_experts",
                  "use_qkv_bias": "attention_bias"},
    "minicpm5_moe": {"num_local_experts": "n_routed_experts"},
}
