"""Mistral Large 4 (transformers 5.24 `models/mistral_large4/`): GLM-5's DeepSeek-sparse latent
attention and DeepSeek-V3's experts, read through `kinds/direct_sparse_latent.py` (no query
latent, learned softmax scalings, NoPE layers, layers reusing an earlier layer's latent, the
learned rotary scaling). The wrapper `mistral_large4` (Pixtral tower and Mistral 3's projector)
is read in models/hf/multimodal.py; its text config here."""

from __future__ import annotations

from ...errors import FlopcalcError
from ...kinds.direct_sparse_latent import layer_name
from .common import Config, Raw, shortest_period
from .sparse import _glm_moe_dsa


def _rotary_frequencies(c: Config) -> int:
    """The inverse frequencies of the rotary embedding (its learned `alpha` has one each):
    ⌈dim/2⌉ for dim = qk_rope_head_dim · partial_rotary_factor (`torch.arange(0, dim, 2)`)."""
    rope = c("qk_rope_head_dim", 64, int)
    params = c("rope_parameters", None) or {}
    factor = params.get("partial_rotary_factor", 1.0) if isinstance(params, dict) else 1.0
    dim = int(rope * factor)
    return (dim + 1) // 2


def _mistral_large4_text(c: Config) -> Raw:
    """MistralLarge4TextModel with the wrapper's LM head (transformers has no causal-LM class
    of the text config alone). Layer i: RoPE when `no_rope_layers[i]` is 1 (default: all but
    every `no_rope_layer_interval`-th, 4), its own latent when `kv_source_layers[i]` is i (an
    earlier index: that layer's latent, which must be its own source), an indexer when
    `indexer_types[i]` is "full" (GLM-5's keys and defaults, see sparse.py `_glm_moe_dsa`).
    MLPs by `mlp_layer_types` (default: `first_k_dense_replace` dense, 1). The head's logit
    softcapping is element-wise; a published file's `num_nextn_predict_layers` is not built by
    transformers (its draft head is not loaded) and not counted."""
    data = {**c.data, "q_lora_rank": 1}  # the GLM reader checks a rank; none is read here
    raw = _glm_moe_dsa(Config(data, c.label, c.model_type))
    raw["latent_attention"]["q_lora_rank"] = None
    raw.pop("mtp_layers", None)
    n = c.layers()
    period = raw["layer_types"]
    indexer = [k == "dsa" for k in period * (n // len(period))]
    interval = c("no_rope_layer_interval", 4, int)
    if interval < 1:
        raise FlopcalcError(f"{c.label}: no_rope_layer_interval must be at least 1, got "
                            f"{interval}")
    rope = (c.per_layer("no_rope_layers", n, int) if c.has("no_rope_layers")
            else [int((i + 1) % interval != 0) for i in range(n)])
    source = (c.per_layer("kv_source_layers", n, int) if c.has("kv_source_layers")
              else list(range(n)))
    for i, s in enumerate(source):
        if not 0 <= s <= i or source[s] != s:
            raise FlopcalcError(f"{c.label}: kv_source_layers[{i}] = {s} must name layer {i} "
                                "itself or an earlier layer that is its own source")
        if s != i and bool(rope[s]) != bool(rope[i]):
            # transformers reads the latent the last storing layer of the same kind (RoPE or
            # NoPE) left; a source of the other kind would not be the one attended over
            raise FlopcalcError(f"{c.label}: kv_source_layers[{i}] = {s}, but no_rope_layers "
                                f"differs between layers {s} and {i}; share latents between "
                                "layers of the same kind")
    raw["layer_types"] = shortest_period([
        layer_name(bool(rope[i]), source[i] == i, indexer[i], lerope=i == 0)
        for i in range(n)])
    raw["learned_rope"] = {"frequencies": _rotary_frequencies(c)}
    return raw


# MistralLarge4TextConfig's defaults (transformers 5.24) for the keys that size the model
_DEFAULTS: Raw = {
    "vocab_size": 204800, "hidden_size": 6144, "intermediate_size": 24576,
    "moe_intermediate_size": 6144, "num_hidden_layers": 72, "num_attention_heads": 64,
    "num_key_value_heads": 64, "n_shared_experts": 1, "n_routed_experts": 128,
    "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 64,
    "num_experts_per_tok": 4, "max_position_embeddings": 1048576, "index_topk": 2048,
    "index_head_dim": 128, "index_n_heads": 32, "first_k_dense_replace": 1,
    "tie_word_embeddings": False}

CONVERTERS = {"mistral_large4_text": _mistral_large4_text}
DEFAULTS = {"mistral_large4_text": _DEFAULTS}
ALIASES = {"mistral_large4_text": {"num_local_experts": "n_routed_experts",
                                    "num_experts": "n_routed_experts"}}
