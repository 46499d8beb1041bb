"""Sparse and interleaved attention: DeepSeek-V3.2 and GLM-5 (latent attention with DeepSeek
sparse attention's lightning indexer; GLM-5's layers may reuse an earlier one's) and Llama 4's
text model (chunked RoPE layers interleaved with global NoPE layers, mixtures of experts
interleaved with dense layers)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder, shortest_period


def _dense_pattern(n: int, moe: list[bool]) -> Raw:
    """The `moe` block's layer keys for per-layer MoE flags: `first_dense` when the dense layers
    are a prefix, `every` when MoE falls on every n-th layer, else `dense_layers`."""
    k = moe.index(True)
    if moe == [False] * k + [True] * (n - k):
        return {"first_dense": k}
    every = k + 1  # the first MoE layer is the every-th
    if moe == [(i + 1) % every == 0 for i in range(n)]:
        return {"every": every}
    return {"dense_layers": [i for i, routed in enumerate(moe) if not routed]}


def _deepseek_v32(c: Config) -> Raw:
    """DeepseekV32ForCausalLM (transformers 5.24 `models/deepseek_v32/`): DeepSeek-V3's latent
    attention and experts, every layer with the lightning indexer (`index_n_heads`,
    `index_head_dim`, `index_topk`). The MLPs follow `mlp_layer_types` (default: the first
    `first_k_dense_replace` dense); `mlp_bias` and `moe_layer_freq` are not read by the class.
    `q_lora_rank` must be set (the indexer reads the query latent)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn)}
    raw["n_kv_heads"] = None  # latent attention decompresses K and V for every head
    raw.pop("head_dim", None)  # transformers points head_dim at qk_rope_head_dim
    raw["latent_attention"] = {
        "q_lora_rank": c("q_lora_rank", 1536), "kv_lora_rank": c("kv_lora_rank", 512),
        "qk_nope_head_dim": c("qk_nope_head_dim", 128),
        "qk_rope_head_dim": c("qk_rope_head_dim", 64), "v_head_dim": c("v_head_dim", 128)}
    raw["sparse_attention"] = {"index_n_heads": c("index_n_heads", 64),
                               "index_head_dim": c("index_head_dim", 128),
                               "index_topk": c("index_topk", 2048)}
    raw["layer_types"] = ["dsa"]
    n = c("num_hidden_layers")
    if c.has("mlp_layer_types"):
        kinds = c.per_layer("mlp_layer_types", c.layers(), choices=("dense", "sparse"))
        moe = [k == "sparse" for k in kinds]
    else:
        first = min(c("first_k_dense_replace", 3), n) if isinstance(n, int) else 0
        moe = [i >= first for i in range(n)] if isinstance(n, int) else []
    if any(moe):
        raw["moe"] = {"experts": c("n_routed_experts", 256), "top_k": c("num_experts_per_tok", 8),
                      "d_ff": c("moe_intermediate_size", 2048),
                      "shared_experts": c("n_shared_experts", 1), **_dense_pattern(n, moe)}
    if c("num_nextn_predict_layers", 0):
        raw["mtp_layers"] = c("num_nextn_predict_layers")
    return raw


def _glm_moe_dsa(c: Config) -> Raw:
    """GlmMoeDsaForCausalLM (GLM-5; transformers 5.24 `models/glm_moe_dsa/`): DeepSeek-V3.2's
    layers with GLM-5's defaults (`DEFAULTS`), and cross-layer sharing of the indexer's
    selection: `indexer_types[i]` "full" runs layer i's own indexer (`dsa`), "shared" has none
    and reuses the top-k of the last full layer before it (`dsa_shared`). Absent, the config
    class derives the list from `index_topk_pattern` (a string of F and S, or a list), else
    layer i is full when max(i − index_skip_topk_offset + 1, 0) is a multiple of
    `index_topk_freq` (defaults 2 and 1: every layer full). Layer 0 must be full: transformers
    raises on a shared layer with nothing to reuse."""
    raw = _deepseek_v32(c)
    n = c.layers()
    if c.has("indexer_types"):
        key = "indexer_types"
        kinds = c.per_layer(key, n)
    elif c.has("index_topk_pattern"):
        key = "index_topk_pattern"
        pattern = c(key)
        if isinstance(pattern, str):
            bad = [i for i, ch in enumerate(pattern) if ch not in "FS"]
            if bad:
                raise FlopcalcError(f"{c.label}: {key}[{bad[0]}] = {pattern[bad[0]]!r} must be "
                                    "F (full: the layer runs its indexer) or S (shared)")
            pattern = [{"F": "full", "S": "shared"}[ch] for ch in pattern]
        else:
            pattern = c.per_layer(key, n)
        if len(pattern) != n:
            raise FlopcalcError(f"{c.label}: {key} has {len(pattern):,} entries, "
                                f"num_hidden_layers is {n:,}: give one per layer")
        kinds = pattern
    else:
        freq = max(c("index_topk_freq", 1, int), 1)
        offset = c("index_skip_topk_offset", 2, int)
        key = "index_skip_topk_offset"
        kinds = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]
    bad = [i for i, k in enumerate(kinds) if k not in ("full", "shared")]
    if bad:
        raise FlopcalcError(f"{c.label}: {key}[{bad[0]}] = {kinds[bad[0]]!r} must be 'full' or "
                            "'shared'")
    if kinds[0] != "full":
        raise FlopcalcError(f"{c.label}: {key}[0] is 'shared', but the first layer has no "
                            "earlier selection to reuse (transformers raises); make it 'full'")
    raw["layer_types"] = shortest_period(["dsa" if k == "full" else "dsa_shared"
                                          for k in kinds])
    return raw


# GlmMoeDsaConfig's defaults (transformers 5.24) for the keys that size the model
_GLM_MOE_DSA_DEFAULTS: Raw = {
    "vocab_size": 154880, "hidden_size": 6144, "intermediate_size": 12288,
    "moe_intermediate_size": 2048, "num_hidden_layers": 78, "num_attention_heads": 64,
    "num_key_value_heads": 64, "n_shared_experts": 1, "n_routed_experts": 256,
    "kv_lora_rank": 512, "q_lora_rank": 2048, "qk_rope_head_dim": 64, "v_head_dim": 256,
    "qk_nope_head_dim": 192, "num_experts_per_tok": 8, "max_position_embeddings": 202752,
    "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 32,
    "first_k_dense_replace": 3, "tie_word_embeddings": False}


# (uses RoPE) → layer_types entry → flopcalc's layer kind (kinds/llama4_attention.py)
_LLAMA4_NAMES = {True: {"chunked_attention": "llama4_rope", "full_attention": "llama4_rope_full"},
                 False: {"full_attention": "llama4_nope",
                         "chunked_attention": "llama4_nope_chunked"}}


def _llama4_text(c: Config) -> Raw:
    """Llama4ForCausalLM (transformers 5.24 `models/llama4/`): layer i uses RoPE when
    `no_rope_layers[i]` is 1 (default: all but every `no_rope_layer_interval`-th), those layers
    attend in chunks of `attention_chunk_size` (`layer_types`) with a weightless L2 QK-norm when
    `use_qk_norm`, the NoPE layers globally with temperature tuning when
    `attn_temperature_tuning` (truthy: the published Scout file says 4, which transformers 5.24's
    strict config rejects and the model reads as true). MoE on `moe_layers` (default every
    `interleave_moe_layer_step`-th layer): `num_local_experts` experts of `intermediate_size`,
    top `num_experts_per_tok` (a sigmoid router), one shared expert of the same width; the other
    layers a dense MLP of `intermediate_size_mlp`."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn)}
    n = c("num_hidden_layers")
    raw["d_ff"] = c("intermediate_size_mlp", 16384)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return raw  # validation names the bad num_hidden_layers
    n = c.layers()
    interval = c("no_rope_layer_interval", 4, int)
    if interval < 1:
        raise FlopcalcError(f"{c.label}: no_rope_layer_interval must be at least 1, got "
                            f"{interval}")
    # an empty list is transformers' default too (`no_rope_layers if no_rope_layers else ...`)
    rope = (c.per_layer("no_rope_layers", n, int) if c("no_rope_layers", None) else None) or [
        int((i + 1) % interval != 0) for i in range(n)]
    # absent: transformers' default, 8192; an explicit null: no chunking, every layer global
    explicit_null = "attention_chunk_size" in c.data and c.data["attention_chunk_size"] is None
    chunk = None if explicit_null else c("attention_chunk_size", 8192, int)
    kinds = c.per_layer("layer_types", n, default=None) or [
        "chunked_attention" if r and chunk is not None else "full_attention" for r in rope]
    if len(rope) != n or len(kinds) != n:
        raise FlopcalcError(f"{c.label}: no_rope_layers and layer_types must have one entry per "
                            f"layer ({n})")
    bad = [(i, k) for i, k in enumerate(kinds) if k not in _LLAMA4_NAMES[True]]
    if bad:
        raise FlopcalcError(f"{c.label}: layer_types[{bad[0][0]}] is {bad[0][1]!r}; Llama 4's "
                            "layers are 'chunked_attention' or 'full_attention'")
    if chunk is None and "chunked_attention" in kinds:
        raise FlopcalcError(f"{c.label}: layer_types has chunked_attention layers but "
                            "attention_chunk_size is null; give the chunk")
    # RoPE (no_rope_layers) and the mask (layer_types) are independent in transformers; with
    # no chunked layer at all, llama4_rope without a chunk is already global
    names = [_LLAMA4_NAMES[bool(r)][k] if "chunked_attention" in kinds else
             ("llama4_rope" if r else "llama4_nope") for r, k in zip(rope, kinds)]
    raw["layer_types"] = shortest_period(names)
    raw["llama4_attention"] = {"attention_chunk": chunk if "chunked_attention" in kinds else None,
                               "l2_qk_norm": bool(c("use_qk_norm", True)),
                               "temperature_tuning": bool(c("attn_temperature_tuning", True))}
    step = c("interleave_moe_layer_step", 1, int)
    if step < 1:
        raise FlopcalcError(f"{c.label}: interleave_moe_layer_step must be at least 1, got {step}")
    listed = c.layer_indices("moe_layers", n, None)
    moe_at = set(listed) if listed is not None else set(range(step - 1, n, step))
    moe = [i in moe_at for i in range(n)]
    if any(moe):
        raw["moe"] = {"experts": c("num_local_experts", 16), "top_k": c("num_experts_per_tok", 1),
                      "d_ff": c("intermediate_size", 8192), "shared_experts": 1,
                      **_dense_pattern(n, moe)}
    return raw


def _llama4(c: Config) -> Raw:
    """Llama4ForConditionalGeneration: its language model (`text_config`, read as
    `llama4_text`), and its vision tower and projector (`vision_config`, models/hf/multimodal.py
    `llama4_vision`)."""
    text = c("text_config")
    if not isinstance(text, dict):
        raise FlopcalcError(f"{c.label}: text_config must be a mapping (the language model)")
    # an explicit null is kept: `attention_chunk_size: null` is no chunking (transformers 5.24
    # `Llama4TextConfig` then makes every layer "full_attention"), not the default 8192
    data = dict(text)
    if "tie_word_embeddings" not in data and c.has("tie_word_embeddings"):
        data["tie_word_embeddings"] = c("tie_word_embeddings")
    raw = _llama4_text(Config(data, c.label, "llama4_text"))
    from .multimodal import LLAMA4, attach_tower  # the vision tower and its projector

    return attach_tower(c, raw, LLAMA4.tower, LLAMA4)


# transformers' attribute_map and back-compatible keywords of the config classes.
ALIASES = {model_type: {"num_local_experts": "n_routed_experts",
                         "num_experts": "n_routed_experts"}
           for model_type in ("deepseek_v32", "glm_moe_dsa")}

CONVERTERS = {"deepseek_v32": _deepseek_v32, "glm_moe_dsa": _glm_moe_dsa,
              "llama4_text": _llama4_text, "llama4": _llama4}
DEFAULTS = {"glm_moe_dsa": _GLM_MOE_DSA_DEFAULTS}

REFUSED: dict[str, str] = {}
