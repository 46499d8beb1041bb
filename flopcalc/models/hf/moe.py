"""Mixtures of experts, each read the way its transformers class reads it
(`models/<type>/modeling_<type>.py` and `configuration_<type>.py`, transformers 5.24; 5.25 for
the types it added), with the config class's defaults (`DEFAULTS`, for a hand-written file that
leaves a key out); `ALIASES` is each config class's `attribute_map`, so a published file
written with the alias reads the same as a saved one. Where a type has a feature flopcalc cannot
say, the converter stops with a FlopcalcError naming it.

- Routed experts of the common shape: Mixtral, Qwen2-MoE and Qwen3-MoE, OLMoE, DeepSeek-V3 (and
  Kimi K2's checkpoints of it), gpt-oss.
- Of their own shape: DeepSeek-V2 and MiniCPM3 (latent attention), PhiMoE, DBRX, JetMoE
  (mixture of attention heads), Granite MoE (and its shared expert), GLM-4.5 (glm4_moe), ERNIE
  4.5 MoE, Hunyuan MoE, MiniMax-M2, dots.llm1, LongCat-Flash, EXAONE MoE, Hy3 (hy_v3),
  MiMo-V2-Flash, Solar Open, Sarvam MoE (GLM-4.5's classes); Youtu-LLM (latent attention,
  dense).
- transformers 5.25's: Param2-MoE (GLM-4.5's classes under another name) and MiniCPM5-MoE
  (gated attention with DeepSeek-V3's mixture); tests/pytorch/test_transformers_5_25_types.py
  checks them against transformers 5.25 when it is installed. Refused: Ergo (`REFUSED`).
"""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from ..spec import MAX_LAYERS
from .common import Config, Raw, bias, layer_types, qwen_window, rotary_decoder, shortest_period

def _mixtral(c: Config) -> Raw:
    raw = {**rotary_decoder(c), **layer_types(c)}
    raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("intermediate_size")}
    return raw


def _qwen_moe(c: Config, shared: bool) -> Raw:
    moe: Raw = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                "d_ff": c("moe_intermediate_size"), "every": c("decoder_sparse_step", 1),
                "dense_layers": list(c.layer_indices("mlp_only_layers", c.layers(), []))}
    if shared and c("shared_expert_intermediate_size", 0):
        moe.update(shared_experts=1, shared_d_ff=c("shared_expert_intermediate_size"),
                   shared_gate=True)
    elif shared:  # Qwen2MoeSparseMoeBlock builds shared_expert_gate d → 1 whatever the width
        moe.update(shared_gate=True)
    return {"moe": moe}


def _qwen2_moe(c: Config) -> Raw:
    # q/k/v biases follow `qkv_bias` (Qwen2MoeConfig, default true); o never has one.
    return {**rotary_decoder(c), **bias(c("qkv_bias", True)), **qwen_window(c),
            **_qwen_moe(c, True)}


def _qwen3_moe(c: Config) -> Raw:
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head",
            **qwen_window(c), **_qwen_moe(c, False)}


def _olmoe(c: Config) -> Raw:
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "all_heads"}
    raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("intermediate_size")}
    return raw


def _deepseek_v3(c: Config) -> Raw:
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn)}
    raw["n_kv_heads"] = None  # latent attention decompresses K and V for every head
    raw.pop("head_dim", None)
    raw["latent_attention"] = {
        "q_lora_rank": c("q_lora_rank", None), "kv_lora_rank": c("kv_lora_rank"),
        "qk_nope_head_dim": c("qk_nope_head_dim"), "qk_rope_head_dim": c("qk_rope_head_dim"),
        "v_head_dim": c("v_head_dim")}
    shared = c("n_shared_experts", 0)
    first, n = c("first_k_dense_replace", 0), raw["n_layers"]
    # No `every`: DeepseekV3DecoderLayer puts routed experts on every layer from
    # first_k_dense_replace on; a `moe_layer_freq` key is stored but never read. From
    # num_hidden_layers on, every layer is a dense MLP of intermediate_size: no moe block.
    if not (type(first) is int and type(n) is int and first >= n):
        raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "shared_experts": shared,
                      "first_dense": first}
    if c("num_nextn_predict_layers", 0):
        raw["mtp_layers"] = c("num_nextn_predict_layers")
    return raw


def _gpt_oss(c: Config) -> Raw:
    attn = c("attention_bias", True)
    raw = {**rotary_decoder(c), **bias(attn, attn, True), "attention_sinks": True,
           **layer_types(c, default_every=2)}
    raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok", None)
                  or c("experts_per_token"), "d_ff": c("intermediate_size"),
                  "router_bias": True}
    return raw


_CORE = {
    "mixtral": _mixtral, "qwen2_moe": _qwen2_moe, "qwen3_moe": _qwen3_moe, "olmoe": _olmoe,
    "deepseek_v3": _deepseek_v3, "gpt_oss": _gpt_oss,
    # Moonshot's Kimi K2 checkpoints name a type transformers 5.24 has no class for: their
    # remote code (moonshotai/Kimi-K2-Instruct, configuration_deepseek.py) is DeepSeek-V3's
    # config class and model under model_type kimi_k2, so they read as deepseek_v3.
    "kimi_k2": _deepseek_v3,
}

# DeepseekV3Config's own defaults (transformers 5.24) for the keys that size the model, so a
# hand-written file that leaves one out counts what transformers builds from it.
_CORE_DEFAULTS: dict[str, Raw] = {
    "deepseek_v3": {"vocab_size": 129_280, "hidden_size": 7168, "intermediate_size": 18_432,
                    "moe_intermediate_size": 2048, "num_hidden_layers": 61,
                    "num_attention_heads": 128, "num_key_value_heads": 128,
                    "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
                    "first_k_dense_replace": 3, "q_lora_rank": 1536, "kv_lora_rank": 512,
                    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                    "tie_word_embeddings": False, "max_position_embeddings": 4096},
}
_CORE_DEFAULTS["kimi_k2"] = _CORE_DEFAULTS["deepseek_v3"]


def _layers(c: Config, key: str = "num_hidden_layers", default: Any = ...) -> int:
    n = c(key, default, int)
    if n > MAX_LAYERS:
        raise FlopcalcError(f"{c.label}: {key}={n:,} is more than {MAX_LAYERS:,} layers; check "
                            "the number")
    return n


def _activation(name: Any) -> str:
    return "gelu" if str(name).startswith("gelu") else "silu"


def _latent(c: Config, q_rank: Any = None, kv_rank: int = 512, nope: int = 128, rope: int = 64,
            v: Any = 128) -> Raw:
    """DeepseekV2Attention's sizes: `q_lora_rank` null (or absent: saved files always write it)
    is a direct query projection d → h·(nope + rope)."""
    return {"q_lora_rank": c("q_lora_rank", q_rank), "kv_lora_rank": c("kv_lora_rank", kv_rank),
            "qk_nope_head_dim": c("qk_nope_head_dim", nope),
            "qk_rope_head_dim": c("qk_rope_head_dim", rope), "v_head_dim": c("v_head_dim", v)}


def _mla_decoder(c: Config, *, tie: bool = False) -> Raw:
    """The Llama-family keys of an MLA model: no KV-head count (every head's keys and values
    are decompressed) and no `head_dim` (DeepSeek's configs set it to qk_rope_head_dim)."""
    raw = rotary_decoder(c, tie=tie)
    raw["n_kv_heads"] = None
    raw.pop("head_dim", None)
    return raw


def _deepseek_v2(c: Config) -> Raw:
    """DeepSeek-V2 (V2-Lite: `q_lora_rank` null): latent attention (`attention_bias` on q_a,
    kv_a and o), a dense SwiGLU MLP on the first `first_k_dense_replace` layers and a mixture
    on the others: a router d → E without bias, E routed experts (never biased) and one shared
    MLP of n_shared_experts × moe_intermediate_size (`mlp_bias` on it and on the dense MLPs).
    `topk_method`, `n_group`, `topk_group` and `routed_scaling_factor` route, they count nothing
    (`deepseek_v2/modeling_deepseek_v2.py`)."""
    attn, mlp_bias = c("attention_bias", False), c("mlp_bias", False)
    shared = c("n_shared_experts", 2)
    if mlp_bias and not shared and c("first_k_dense_replace", 0) < _layers(c):
        raise FlopcalcError(f"{c.label}: n_shared_experts 0 with mlp_bias: transformers still "
                            "builds a 0-wide shared MLP whose down_proj keeps a d-wide bias in "
                            "every MoE layer, which flopcalc does not count; set mlp_bias false "
                            "or describe the model in a YAML file")
    raw = {**_mla_decoder(c), **bias(attn, attn, mlp_bias),
           "latent_attention": _latent(c, kv_rank=512, nope=128, rope=64, v=128)}
    raw["moe"] = {"experts": c("n_routed_experts", 64), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("moe_intermediate_size", 1407), "shared_experts": shared,
                  "first_dense": c("first_k_dense_replace", 0), "expert_bias": False}
    return raw


def _minicpm3(c: Config) -> Raw:
    """MiniCPM3: DeepSeek-V2's latent attention (q_a/kv_a/o biased by `attention_bias`) with a
    Llama MLP (`mlp_bias`), tied by default. Its scalings are multiplies without parameters
    (element-wise only): the embeddings × scale_emb (a buffer), each sublayer's output ×
    scale_depth/√L before its residual add; the final hidden states ÷ (d / dim_model_base)
    before the head, T·d multiplies that flopcalc does not list (its `logits` multiplier scales
    the T·V logits) (`minicpm3/modular_minicpm3.py`)."""
    attn = c("attention_bias", False)
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    return {**_mla_decoder(c, tie=True), **bias(attn, attn, c("mlp_bias", False)),
            "latent_attention": _latent(c, q_rank=None, kv_rank=256, nope=64, rope=32,
                                        v=d // heads),
            "multipliers": {"embedding": True, "attention": ["output"], "mlp": ["output"]}}


def _phimoe(c: Config) -> Raw:
    """Phi-3.5-MoE: Mixtral with LayerNorms (gain and bias), `attention_bias` on q, k, v, o,
    `lm_head_bias`, a window on every layer when `sliding_window` is set. Its sparsemixer
    router picks exactly two experts per token whatever `num_experts_per_tok` says (the top
    one, then the top of the rest; Gumbel-sampled in training) (`phimoe/modular_phimoe.py`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn), "norm": "layernorm", **layer_types(c)}
    if c("lm_head_bias", False):
        raw["lm_head_bias"] = 1
    raw["moe"] = {"experts": c("num_local_experts", 16), "top_k": 2,
                  "d_ff": c("intermediate_size", 6400)}
    return raw


def _dbrx(c: Config) -> Raw:
    """DBRX: fused Wqkv d → d + 2·kv·(d/h) (the queries d wide), out_proj d → d, no biases,
    LayerNorms without bias, rotary positions, a router d → E and E gated experts (w1, v1, w2,
    each E·f × d); never tied. `attn_config.clip_qkv` clamps q, k, v (element-wise)
    (`dbrx/modular_dbrx.py`)."""
    attn = Config(c("attn_config", {}, dict), f"{c.label} attn_config", c.model_type)
    ffn = Config(c("ffn_config", {}, dict), f"{c.label} ffn_config", c.model_type)
    act = ffn("ffn_act_fn", {}, dict).get("name", "silu")
    d, heads = c("d_model", 2048), c("n_heads", 16)
    return {"n_layers": c("n_layers", 24), "d_model": d, "n_heads": heads,
            "n_kv_heads": attn("kv_n_heads", 1), "mlp": "gated", "activation": _activation(act),
            "bias": False, "norm": "layernorm", "norm_bias": False, "positions": "rotary",
            "max_seq_len": c("max_seq_len", 2048), "vocab_size": c("vocab_size", 32000),
            "tie_embeddings": False, "d_ff": ffn("ffn_hidden_size", 3584),
            "moe": {"experts": ffn("moe_num_experts", 4), "top_k": ffn("moe_top_k", 1),
                    "d_ff": ffn("ffn_hidden_size", 3584)}}


def _jetmoe(c: Config) -> Raw:
    """JetMoE: every layer a mixture of attention heads (`moa`: each token's query and output
    projections are its top-k of E experts, kv_heads heads of kv_channels each, over shared
    keys and values d → kv·kv_channels, so k·kv query heads per token) and a mixture of SwiGLU
    experts (fused input_linear d → 2f, output_linear f → d), each with a bias-free router and
    one d-wide output bias; tied by default (`jetmoe/modular_jetmoe.py`)."""
    kv, top_k = c("num_key_value_heads", 16), c("num_experts_per_tok", 2)
    experts = c("num_local_experts", 8)
    return {"n_layers": _layers(c, default=12), "d_model": c("hidden_size", 2048),
            "n_heads": kv * top_k,
            "n_kv_heads": kv, "head_dim": c("kv_channels", 128),
            "d_ff": c("intermediate_size", 5632), "mlp": "gated",
            "activation": _activation(c("activation_function", "silu", str)), "bias": False,
            "norm": "rmsnorm", "positions": "rotary",
            "max_seq_len": c("max_position_embeddings", 4096),
            "vocab_size": c("vocab_size", 32000),
            "tie_embeddings": bool(c("tie_word_embeddings", True)),
            "layer_types": ["moa"], "moa": {"experts": experts, "top_k": top_k},
            "moe": {"experts": experts, "top_k": top_k, "d_ff": c("intermediate_size", 5632),
                    "output_bias": True}}


def _granitemoe(c: Config) -> Raw:
    """Granite MoE: Mixtral's experts (input_linear d → 2f, output_linear f → d), a bias-free
    router, `attention_bias` on q, k, v, o, no window; GraniteMoeShared adds a gated shared
    MLP of `shared_intermediate_size` (none when 0). Its multipliers are scalars (element-wise
    only): the embeddings × embedding_multiplier, each sublayer's output ×
    residual_multiplier, the logits ÷ logits_scaling; attention_multiplier replaces the score
    scaling (`granitemoe/modular_granitemoe.py`,
    `granitemoeshared/modular_granitemoeshared.py`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn),
           "multipliers": {"embedding": True, "logits": True, "attention": ["output"],
                           "mlp": ["output"]}}
    raw["moe"] = {"experts": c("num_local_experts", 8), "top_k": c("num_experts_per_tok", 2),
                  "d_ff": c("intermediate_size")}
    if c.model_type == "granitemoeshared" and c("shared_intermediate_size", 0):
        raw["moe"].update(shared_experts=1, shared_d_ff=c("shared_intermediate_size"))
    return raw


def _glm4_moe(c: Config) -> Raw:
    """GLM-4.5 (glm4_moe): q, k, v biased by `attention_bias` (o never), a per-head QK-norm
    when `use_qk_norm`, head_dim as transformers takes it (d // heads, floored, when the file
    has none), DeepSeek-V3's mixture (a router without bias, `n_shared_experts` fused shared
    experts) on the layers from `first_k_dense_replace` on, and `num_nextn_predict_layers`
    multi-token-prediction modules that transformers does not build (params.mtp). Partial
    rotary, `n_group`/`topk_group` and `routed_scaling_factor` count nothing
    (`glm4_moe/modeling_glm4_moe.py`)."""
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    raw = {**rotary_decoder(c), **bias(c("attention_bias", False)),
           "head_dim": c("head_dim", d // heads)}
    if c("use_qk_norm", False):
        raw["qk_norm"] = "per_head"
    raw["moe"] = {"experts": c("n_routed_experts", 128), "top_k": c("num_experts_per_tok", 8),
                  "d_ff": c("moe_intermediate_size", 1408),
                  "shared_experts": c("n_shared_experts", 1),
                  "first_dense": c("first_k_dense_replace", 1)}
    if c("num_nextn_predict_layers", 1):
        raw["mtp_layers"] = c("num_nextn_predict_layers", 1)
    return raw


def _ernie4_5_moe(c: Config) -> Raw:
    """ERNIE 4.5 MoE: `use_bias` on q, k, v, o, the dense and shared MLPs and the LM head (not
    on the routed experts); a mixture on layer i when (i + 1) % moe_layer_interval == 0 and
    moe_layer_start_index ≤ i ≤ moe_layer_end_index (-1: the last layer), a dense MLP of
    intermediate_size elsewhere; the router's e_score_correction_bias (E) is an nn.Parameter,
    so it counts; `moe_num_shared_experts` fused shared experts; tied by default
    (`ernie4_5_moe/modular_ernie4_5_moe.py`)."""
    use = c("use_bias", False)
    raw = {**rotary_decoder(c, tie=True), **bias(use, use, use)}
    if use:
        raw["lm_head_bias"] = 1
    n = _layers(c)
    start, end = c("moe_layer_start_index", 1, int), c("moe_layer_end_index", -1, int)
    interval = c("moe_layer_interval", 1, int)
    if interval < 1:
        raise FlopcalcError(f"{c.label}: moe_layer_interval must be at least 1, got {interval}")
    end = n - 1 if end == -1 else end
    routed = [(i + 1) % interval == 0 and start <= i <= end for i in range(n)]
    if any(routed):
        raw["moe"] = {"experts": c("moe_num_experts", 64), "top_k": c("moe_k", 6),
                      "d_ff": c("moe_intermediate_size", 1536),
                      "shared_experts": c("moe_num_shared_experts", 2), "router_bias": True,
                      "expert_bias": False,
                      "dense_layers": [i for i, r in enumerate(routed) if not r]}
    return raw


def _uniform(c: Config, key: str, default: int, n: int) -> Any:
    """A per-layer count that may be a list (Hunyuan's moe_topk): one value for every layer."""
    value = c(key, default)
    if isinstance(value, list):
        if len(set(map(str, value))) > 1:
            raise FlopcalcError(f"{c.label}: '{key}' differs between layers ({value[:8]}...); "
                                "flopcalc's moe block has one value for every MoE layer "
                                "(describe the model in a YAML file with the layers split)")
        if not value:
            raise FlopcalcError(f"{c.label}: '{key}' is an empty list")
        if len(value) < n:
            raise FlopcalcError(f"{c.label}: '{key}' lists {len(value)} values for {n} layers")
        value = value[0]
    return value


def _hunyuan_v1_moe(c: Config) -> Raw:
    """Hunyuan MoE (V1): Llama attention with a per-head QK-norm (`query_layernorm`,
    `key_layernorm`) and `attention_bias` on q, k, v, o; every layer a mixture whose routed
    experts and one shared MLP are all intermediate_size wide, a bias-free router (fp32).
    `moe_topk` may be a per-layer list (read when every layer has the same value); a list
    `num_experts` does not build in transformers 5.24 (Mixtral's experts take one count).
    `head_dim` null is d / heads (transformers cannot build it; published files set it)
    (`hunyuan_v1_moe/modular_hunyuan_v1_moe.py`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head"}
    n = _layers(c)
    if isinstance(c("num_experts", 1), list):
        raise FlopcalcError(f"{c.label}: a per-layer num_experts list does not build in "
                            "transformers 5.24 (HunYuanMoEV1Experts takes one count); give one "
                            "number")
    f = c("intermediate_size")
    raw["moe"] = {"experts": c("num_experts", 1), "top_k": _uniform(c, "moe_topk", 1, n),
                  "d_ff": f, "shared_experts": 1, "shared_d_ff": f}
    return raw


def _minimax_m2(c: Config) -> Raw:
    """MiniMax-M2: no biases, a QK-norm over all heads (q_norm of h·d_h, k_norm of h_kv·d_h,
    before the heads are split), Mixtral's experts of intermediate_size and a bias-free router
    (its e_score_correction_bias is a buffer); partial rotary (`rotary_dim`) counts nothing
    (`minimax_m2/modular_minimax_m2.py`)."""
    raw = {**rotary_decoder(c), "qk_norm": "all_heads"}
    raw["moe"] = {"experts": c("num_local_experts", 256), "top_k": c("num_experts_per_tok", 8),
                  "d_ff": c("intermediate_size", 1536)}
    # The published config declares multi-token-prediction modules (use_mtp, num_mtp_modules 3
    # of mtp_transformer_layers 1) that neither transformers nor any published source builds:
    # their shape is unknown, so they are named, not counted.
    modules = c("num_mtp_modules", 0, int) if c("use_mtp", False, bool) else 0
    if modules:
        layers = c("mtp_transformer_layers", 1, int)
        raw["notes"] = (f"{modules} multi-token-prediction module{'s' if modules > 1 else ''} "
                        f"(num_mtp_modules, {layers} transformer layer{'s' if layers > 1 else ''}"
                        " each) not counted: transformers does not build them and no published "
                        "source gives their shape")
    return raw


def _exaone_moe(c: Config) -> Raw:
    """K-EXAONE (exaone_moe): EXAONE 4's attention (per-head QK-norm, no biases; window layers
    but every `sliding_window_pattern`-th, or `layer_types`) in OLMoE's pre-norm layer, with
    DeepSeek-V3's mixture (a bias-free router whose e_score_correction_bias is a buffer,
    `num_shared_experts` fused shared experts of moe_intermediate_size) on the layers
    `mlp_layer_types` calls "sparse" (absent: from `first_k_dense_replace` on) and a dense MLP
    of intermediate_size elsewhere (`exaone_moe/modular_exaone_moe.py`). The mtp.* tensors of
    its checkpoints are not read by transformers and not counted."""
    raw = {**rotary_decoder(c), "qk_norm": "per_head"}
    n = _layers(c)
    window = c("sliding_window", None)
    if c.has("layer_types"):
        raw.update(layer_types(c))
    elif window is not None:
        every = c("sliding_window_pattern", 4, int)
        if every < 1:
            raise FlopcalcError(f"{c.label}: sliding_window_pattern must be at least 1, got "
                                f"{every}")
        kinds = ["window" if (i + 1) % every else "full" for i in range(n)]
        if "window" in kinds:
            raw.update(layer_types=shortest_period(kinds), sliding_window=window)
    kinds = mlp_layer_kinds(c, n)
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("num_experts", 64), "top_k": c("num_experts_per_tok", 8),
                      "d_ff": c("moe_intermediate_size", 1024),
                      "shared_experts": c("num_shared_experts", 1), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


def _dots1(c: Config) -> Raw:
    """dots.llm1: Qwen3's attention (per-head QK-norm, `attention_bias` on q, k, v, o; a window
    on the `sliding_attention` layers, which the config class derives from `max_window_layers`
    when a file has no `layer_types`) and DeepSeek-V3's MLP and mixture (dense on the first
    `first_k_dense_replace` layers, `n_shared_experts` fused shared experts). Its default
    expert counts are null, which transformers cannot build (`dots1/modular_dots1.py`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head"}
    window = c("sliding_window", None)
    if c.has("layer_types"):
        raw.update(layer_types(c))
    elif window is not None:
        first = c("max_window_layers", 62, int)
        kinds = ["window" if i >= first else "full" for i in range(_layers(c))]
        if "window" in kinds:
            raw.update(layer_types=shortest_period(kinds), sliding_window=window)
    raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("moe_intermediate_size", 1408),
                  "shared_experts": c("n_shared_experts"),
                  "first_dense": c("first_k_dense_replace", 0)}
    return raw


def _longcat_flash(c: Config) -> Raw:
    """LongCat-Flash: each of its `num_layers` layers is two pre-norm sublayer pairs (latent
    attention with a query rank, then a dense SwiGLU MLP of ffn_hidden_size) and a shortcut
    mixture that reads the first MLP's input and joins the residual after the second. Counted
    as 2·num_layers flopcalc layers: the even ones carry the mixture with the first MLP as its
    shared expert (the same input, its output added: the same tensors and matmuls), the odd
    ones the second MLP. The router (d → E + Z, `router_bias`) also scores zero_expert_num
    identity experts, for which transformers allocates unused gate/up rows; the routed
    experts' FLOPs are the expectation under uniform routing, moe_topk·E/(E + Z) computing
    experts per token (see kinds/moe.py). The MLA's scalings (√(d/r_q) on the queries,
    √(d/r_kv) on the key latent) are element-wise multiplies flopcalc does not list
    (`longcat_flash/modular_longcat_flash.py`)."""
    attn = c("attention_bias", False)
    n = _layers(c, "num_layers", 28)
    experts, zero = c("n_routed_experts", 512, int), c("zero_expert_num", 256, int)
    if not experts:
        raise FlopcalcError(f"{c.label}: n_routed_experts 0 (only zero-computation experts) "
                            "is a mixture flopcalc does not count; describe the model in a YAML "
                            "file")
    d_ff = c("ffn_hidden_size", 12288)
    return {"n_layers": 2 * n, "d_model": c("hidden_size", 6144),
            "n_heads": c("num_attention_heads", 64), "n_kv_heads": None, "d_ff": d_ff,
            "mlp": "gated", "activation": _activation(c("hidden_act", "silu", str)),
            **bias(attn, attn), "norm": "rmsnorm", "positions": "rotary",
            "max_seq_len": c("max_position_embeddings", 131072),
            "vocab_size": c("vocab_size", 131072),
            "tie_embeddings": bool(c("tie_word_embeddings", False)),
            "latent_attention": _latent(c, q_rank=1536, kv_rank=512, nope=128, rope=64, v=128),
            "moe": {"experts": experts, "top_k": c("moe_topk", 12),
                    "d_ff": c("expert_ffn_hidden_size", 2048), "shared_experts": 1,
                    "shared_d_ff": d_ff, "router_bias": bool(c("router_bias", False)),
                    "zero_experts": zero, "zero_expert_gate_up": zero > 0,
                    "dense_layers": list(range(1, 2 * n, 2))}}


def _hy_v3(c: Config) -> Raw:
    """Hy3 (hy_v3): Apertus's attention (a per-head QK-norm, `attention_bias` on q, k, v and
    o), Llama's MLP (`mlp_bias`) on the layers `mlp_layer_types` calls "dense" (absent: the
    first) and a mixture on the "sparse" ones: a bias-free router (fp32; its
    e_score_correction_bias is a buffer), `num_experts` routed experts of
    moe_intermediate_size (never biased) and one shared Llama MLP of
    num_shared_experts × moe_intermediate_size, which `HYV3MLP` widens to intermediate_size
    when that product is 0 (`intermediate_size or config.intermediate_size`). Never tied by
    default; the multi-token-prediction layer of its checkpoints is not built by transformers
    and not counted (`hy_v3/modular_hy_v3.py`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn, c("mlp_bias", False)), "qk_norm": "per_head"}
    n = c.layers()
    kinds = c.per_layer("mlp_layer_types", n, default=["dense"] + ["sparse"] * (n - 1),
                        choices=("dense", "sparse"))
    if "sparse" in kinds:
        f, shared = c("moe_intermediate_size", expect=int), c("num_shared_experts", 1, int)
        raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": f, "expert_bias": False, "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"],
                      # a 0-wide shared MLP falls back to intermediate_size in HYV3MLP
                      "shared_experts": shared or 1,
                      "shared_d_ff": f if shared else c("intermediate_size")}
    return raw


# HYV3Config's defaults (transformers 5.24) for the keys that size the model
_HY_V3_DEFAULTS: Raw = {
    "vocab_size": 120832, "hidden_size": 4096, "intermediate_size": 13312,
    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "num_experts": 192, "num_experts_per_tok": 8, "num_shared_experts": 1,
    "moe_intermediate_size": 1536}


def _mimo_v2_flash(c: Config) -> Raw:
    """MiMo-V2-Flash: Qwen2's attention with queries and keys `head_dim` wide and values
    `v_head_dim` wide, q, k, v biased by `attention_bias` (o never); its sliding layers
    (`layer_types`; absent, every layer but 0 and every 6th) hold twice the KV heads and a
    learned sink per head (`window_attention`); a dense MLP of intermediate_size on the
    `mlp_layer_types` "dense" layers (absent: the first), else DeepSeek-V3's routed experts
    without a shared expert (the router fp32, e_score_correction_bias a buffer). Partial
    rotary and `attention_value_scale` (a multiply on the values) count nothing; the
    checkpoints' `model.mtp.*` tensors are not read by transformers and not counted
    (`mimo_v2_flash/modular_mimo_v2_flash.py`)."""
    raw = {**rotary_decoder(c), **bias(c("attention_bias", False), False)}
    raw["v_head_dim"] = c("v_head_dim")
    n = c.layers()
    if c.has("sliding_window_size"):  # the reference attends to that many tokens plus itself
        c.data["sliding_window"] = c("sliding_window_size", expect=int) + 1
    if c.has("layer_types"):
        raw.update(layer_types(c))
    else:
        kinds = ["full" if i == 0 or (i + 1) % 6 == 0 else "window" for i in range(n)]
        if "window" in kinds:
            raw.update(layer_types=shortest_period(kinds), sliding_window=c("sliding_window"))
    if "window" in raw.get("layer_types", ()):
        kv = raw["n_kv_heads"]
        raw["window_attention"] = {"n_kv_heads": 2 * kv if type(kv) is int else kv,
                                   "sinks": True}
    kinds = c.per_layer("mlp_layer_types", n, default=["dense"] + ["sparse"] * (n - 1),
                        choices=("dense", "sparse"))
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


# MiMoV2FlashConfig's defaults (transformers 5.24: its own over Glm4MoeConfig's)
_MIMO_V2_FLASH_DEFAULTS: Raw = {
    "vocab_size": 152576, "hidden_size": 4096, "intermediate_size": 16384,
    "moe_intermediate_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 64,
    "num_key_value_heads": 4, "n_routed_experts": 256, "num_experts_per_tok": 8,
    "max_position_embeddings": 131072, "head_dim": 192, "v_head_dim": 128,
    "sliding_window": 129, "tie_word_embeddings": False}


def _solar_open(c: Config) -> Raw:
    """Solar Open: Llama's attention (q, k, v biased by `attention_bias`, o never) and GLM-4.5's
    mixture on every layer (a bias-free router whose e_score_correction_bias is a buffer,
    `n_shared_experts` fused shared experts of moe_intermediate_size; 0 builds 0-wide
    linears, no tensor); no dense MLP (its config has no intermediate_size)
    (`solar_open/modular_solar_open.py`)."""
    f = c("moe_intermediate_size", expect=int)
    raw = rotary_decoder(Config({**c.data, "intermediate_size": f}, c.label, c.model_type))
    raw.update(bias(c("attention_bias", False)))
    raw.pop("d_ff")
    raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": f, "shared_experts": c("n_shared_experts", 1)}
    return raw


# SolarOpenConfig's defaults (transformers 5.24: its own over Glm4MoeConfig's)
_SOLAR_OPEN_DEFAULTS: Raw = {
    "vocab_size": 196608, "hidden_size": 4096, "num_hidden_layers": 48,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 131072, "moe_intermediate_size": 1280,
    "num_experts_per_tok": 8, "n_shared_experts": 1, "n_routed_experts": 128,
    "tie_word_embeddings": False}


def _youtu(c: Config) -> Raw:
    """Youtu-LLM: DeepSeek-V3's latent attention (`attention_bias` on q_a, kv_a and o; sizes as
    DeepseekV3Config's defaults) with a dense Qwen3 MLP of intermediate_size on every layer, no
    experts; tied by default (`youtu/modular_youtu.py`)."""
    attn = c("attention_bias", False)
    return {**_mla_decoder(c, tie=True), **bias(attn, attn),
            # q_lora_rank: absent is the class default (DEFAULTS), null a direct projection
            "latent_attention": _latent(c, q_rank=None, kv_rank=512, nope=128, rope=64,
                                        v=128)}


# YoutuConfig's defaults (transformers 5.24: its own over DeepseekV3Config's)
_YOUTU_DEFAULTS: Raw = {
    "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 6144,
    "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 16,
    "max_position_embeddings": 131072, "tie_word_embeddings": True, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}


_OWN_SHAPE = {
    "deepseek_v2": _deepseek_v2, "minicpm3": _minicpm3, "phimoe": _phimoe, "dbrx": _dbrx,
    "jetmoe": _jetmoe, "granitemoe": _granitemoe, "granitemoeshared": _granitemoe,
    "glm4_moe": _glm4_moe, "ernie4_5_moe": _ernie4_5_moe, "hunyuan_v1_moe": _hunyuan_v1_moe,
    "minimax_m2": _minimax_m2, "dots1": _dots1, "longcat_flash": _longcat_flash,
    "exaone_moe": _exaone_moe, "hy_v3": _hy_v3, "mimo_v2_flash": _mimo_v2_flash,
    "solar_open": _solar_open, "youtu": _youtu,
    "sarvam_moe": _glm4_moe,  # GLM-4.5's classes under another config (as Param2-MoE)
}

# alias → canonical: each config class's `attribute_map` in transformers 5.24
_OWN_SHAPE_ALIASES: dict[str, dict[str, str]] = {
    "deepseek_v2": {"num_experts": "n_routed_experts"},
    "dbrx": {"num_attention_heads": "n_heads", "hidden_size": "d_model",
             "num_hidden_layers": "n_layers", "max_position_embeddings": "max_seq_len"},
    "jetmoe": {"head_dim": "kv_channels"},
    "glm4_moe": {"num_local_experts": "n_routed_experts",
                 "num_mtp_layers": "num_nextn_predict_layers"},
    "ernie4_5_moe": {"num_experts": "moe_num_experts", "num_experts_per_tok": "moe_k"},
    "hunyuan_v1_moe": {"num_experts_per_tok": "moe_topk", "num_local_experts": "num_experts"},
    "minimax_m2": {"num_experts": "num_local_experts"},
    "hy_v3": {"num_local_experts": "num_experts"},
    "mimo_v2_flash": {"num_local_experts": "n_routed_experts"},
    "solar_open": {"num_local_experts": "n_routed_experts"},
    # and the names of the original sarvamai/sarvam-30b config
    "sarvam_moe": {"num_local_experts": "n_routed_experts",
                   "num_mtp_layers": "num_nextn_predict_layers",
                   "num_experts": "n_routed_experts", "num_shared_experts": "n_shared_experts",
                   "use_qkv_bias": "attention_bias"},
    "dots1": {"num_local_experts": "n_routed_experts"},
    "longcat_flash": {"num_local_experts": "n_routed_experts", "num_experts_per_tok": "moe_topk",
                      "intermediate_size": "ffn_hidden_size",
                      "moe_intermediate_size": "expert_ffn_hidden_size"},
}


def mlp_layer_kinds(c: Config, n: int) -> list[str]:
    """Each layer's feed-forward, "dense" or "sparse", from `mlp_layer_types` (absent: the
    first `first_k_dense_replace` dense, default 1), checked against the layer count."""
    first = c("first_k_dense_replace", 1, int)
    kinds = c.texts("mlp_layer_types", ["dense" if i < first else "sparse" for i in range(n)])
    if len(kinds) != n or set(kinds) - {"dense", "sparse"}:
        raise FlopcalcError(f"{c.label}: mlp_layer_types must list 'dense' or 'sparse' for each "
                            f"of the {n} layers")
    return kinds


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
    n = c("num_hidden_layers", expect=int)
    kinds = mlp_layer_kinds(c, n)
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"),
                      "shared_experts": c("n_shared_experts", 1), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


# SarvamMoEConfig's defaults (transformers 5.24): GLM-4.5's classes build it
# (Glm4MoeForCausalLM), with its own sizes; its rotary covers the whole head (counts nothing)
_SARVAM_MOE_DEFAULTS: Raw = {
    "vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 8192,
    "num_hidden_layers": 19, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 64,
    "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "moe_intermediate_size": 1024, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "use_qk_norm": True,
    # under the published file's names (the aliases): a default under the canonical name would
    # win over a file's alias, while a file's canonical name still wins over these
    "num_experts": 128, "num_shared_experts": 1, "use_qkv_bias": False, "num_mtp_layers": 0}

# The config classes' defaults (transformers 5.25): Param2MoeConfig overrides GLM-4.5's sizes
# (its expert counts, biases and multi-token-prediction count under the aliases, so a file written
# with either name reads as transformers reads it).
_NEW_DEFAULTS: dict[str, Raw] = {
    "param2moe": {"vocab_size": 128000, "hidden_size": 2048, "intermediate_size": 9216,
                  "num_hidden_layers": 21, "num_attention_heads": 32, "num_key_value_heads": 8,
                  "head_dim": 64, "max_position_embeddings": 32768,
                  "tie_word_embeddings": True, "moe_intermediate_size": 2048,
                  "num_experts_per_tok": 6, "use_qk_norm": True, "first_k_dense_replace": 1,
                  # under the aliases, as Sarvam's: a file's alias is read, not overridden
                  "num_experts": 64, "num_shared_experts": 2, "use_qkv_bias": False,
                  "num_mtp_layers": 0},
    "minicpm5_moe": {"vocab_size": 130560, "hidden_size": 2048, "intermediate_size": 8192,
                     "num_hidden_layers": 28, "num_attention_heads": 32,
                     "num_key_value_heads": 2, "head_dim": 128,
                     "max_position_embeddings": 524288, "n_routed_experts": 160,
                     "num_experts_per_tok": 16, "moe_intermediate_size": 512,
                     "n_shared_experts": 1, "tie_word_embeddings": False},
}


# transformers 5.25's attribute_map of each
_NEW_ALIASES: dict[str, dict[str, str]] = {
    "param2moe": {"num_local_experts": "n_routed_experts",
                  "num_mtp_layers": "num_nextn_predict_layers",
                  "num_experts": "n_routed_experts", "num_shared_experts": "n_shared_experts",
                  "use_qkv_bias": "attention_bias"},
    "minicpm5_moe": {"num_local_experts": "n_routed_experts"},
}


CONVERTERS = {**_CORE, **_OWN_SHAPE, "param2moe": _glm4_moe, "minicpm5_moe": _minicpm5_moe}
DEFAULTS: dict[str, Raw] = {**_CORE_DEFAULTS, **_NEW_DEFAULTS, "hy_v3": _HY_V3_DEFAULTS,
                           "mimo_v2_flash": _MIMO_V2_FLASH_DEFAULTS,
                           "solar_open": _SOLAR_OPEN_DEFAULTS, "youtu": _YOUTU_DEFAULTS,
                           "sarvam_moe": _SARVAM_MOE_DEFAULTS}
ALIASES: dict[str, dict[str, str]] = {**_OWN_SHAPE_ALIASES, **_NEW_ALIASES}
