"""Types that are a supported architecture under another name (transformers 5.24): the Llama,
Mistral, Qwen, Gemma and OLMo relatives whose tensors and matmuls are those of a type flopcalc
already reads, up to which keys say so (a bias flag under another name, a layer pattern
derived in the config class, scalar multipliers that are neither parameters nor FLOPs).

Each converter reads the keys its transformers class reads (`models/<type>/modeling_<type>.py`
and `configuration_<type>.py`), with the config class's defaults. `ALIASES` is every config
class's `attribute_map` (alias → the canonical name `save_pretrained` writes), for the types
imported anywhere in this package, plus the back-compatible keywords a config class renames:
`from_hf_dict` puts each pair under both names, so a published file written with the alias
(EXAONE 3's `num_layers`, InternLM3's `qkv_bias`) reads the same as a saved one.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from ..spec import MAX_LAYERS
from .common import Config, Raw, bias, layer_types, rotary_decoder, shortest_period
from .dense import _gpt2, _llama, _olmo2
from .moe import _deepseek_v3, _olmoe


def _every_nth_full(c: Config, n: int, first: bool = False) -> Raw:
    """Window layers but every n-th full: (i + 1) % n == 0, or i % n == 0 when `first` (the
    first layer full, as CWM), where the config class derives its `layer_types` so and a file
    may lack them."""
    if c.has("layer_types"):
        return layer_types(c)
    window = c("sliding_window", None)
    if window is None:
        return {}
    if not first:
        return {"sliding_window": window, "global_every": n}
    layers = c("num_hidden_layers", expect=int)
    return {"sliding_window": window,
            "layer_types": ["full" if i % n == 0 else "window" for i in range(layers)]}


def _granite(c: Config) -> Raw:
    """GraniteForCausalLM: Llama with `embedding_multiplier`, `attention_multiplier` (the
    attention scale), `residual_multiplier` and `logits_scaling`, scalars that are neither
    parameters nor matmuls (`granite/modeling_granite.py`)."""
    return _llama(c)


def _granite_swa(c: Config) -> Raw:
    """GraniteSWA (granite-swash): Granite with a learned sink per head in every layer (the
    eager path rescales the output by sigmoid(logsumexp − sink): element-wise) and a window of
    `sliding_window` on the `layer_types` "sliding_attention" layers (absent: all but every
    4th, i % 4 == 0 full); `layer_rope_theta` 0 makes a layer NoPE, which counts nothing
    (`granite_swa/modular_granite_swa.py`)."""
    raw = {**_llama(c), "attention_sinks": True}
    window = c("sliding_window", None)
    if c.has("layer_types"):
        return {**raw, **layer_types(c)}
    kinds = ["full" if i % 4 == 0 else "window" for i in range(c.layers())]
    if window is None or "window" not in kinds:
        return raw
    return {**raw, "layer_types": shortest_period(kinds), "sliding_window": window}


def _smollm3(c: Config) -> Raw:
    """SmolLM3: Llama (q, k, v, o under `attention_bias`, the MLP under `mlp_bias`, tied by
    default) whose NoPE layers (`no_rope_layers`, every `no_rope_layer_interval`-th) slide over
    `sliding_window` when `use_sliding_window` (`smollm3/configuration_smollm3.py`; the
    attention takes the window only for a `sliding_attention` layer when `use_sliding_window`)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c, tie=True), **bias(attn, attn, c("mlp_bias", False))}
    window = c("sliding_window", None)
    if not c("use_sliding_window", False) or window is None:
        return raw
    n = c.layers()
    if c.has("layer_types"):
        kinds = ["window" if t == "sliding_attention" else "full"
                 for t in c.per_layer("layer_types", n)]
    else:
        interval = c("no_rope_layer_interval", 4, int)
        if interval < 1:
            raise FlopcalcError(f"{c.label}: no_rope_layer_interval must be at least 1")
        rope = c.per_layer("no_rope_layers", n, int,
                           [int((i + 1) % interval != 0) for i in range(n)])
        kinds = ["full" if has_rope else "window" for has_rope in rope]
    if "window" in kinds:
        raw.update(layer_types=kinds, sliding_window=window)
    return raw


def _ernie4_5(c: Config) -> Raw:
    """ERNIE 4.5 (dense): Llama whose one `use_bias` is on q, k, v, o and the MLP; tied by
    default (`ernie4_5/modeling_ernie4_5.py`)."""
    use = c("use_bias", False)
    return {**rotary_decoder(c, tie=True), **bias(use, use, use)}


def _mistral_like(c: Config) -> Raw:
    """Ministral, Ministral 3: Mistral, with `layer_types` (every layer a window layer when
    `sliding_window` is set)."""
    return {**rotary_decoder(c), **layer_types(c)}


def _cwm(c: Config) -> Raw:
    """CWM: Llama without attention biases, `mlp_bias`, window layers but every 4th full
    starting with layer 0 (`cwm/configuration_cwm.py`)."""
    return {**rotary_decoder(c), **bias(False, False, c("mlp_bias", False)),
            **_every_nth_full(c, 4, first=True)}


def _glm(c: Config) -> Raw:
    """GLM (GLM-4-0414's predecessor): q/k/v biased by `attention_bias` (default true), o never
    (`glm/modeling_glm.py` GlmAttention); the fused gate_up (d → 2f) counts as gate and up.
    Partial rotary changes no count."""
    return {**rotary_decoder(c), **bias(c("attention_bias", True))}


def _seed_oss(c: Config) -> Raw:
    """Seed-OSS: three flags, `attention_bias` (q, k, v), `attention_out_bias` (o) and
    `mlp_bias` (`seed_oss/modeling_seed_oss.py`)."""
    return {**rotary_decoder(c), **bias(c("attention_bias", True),
                                        c("attention_out_bias", False), c("mlp_bias", False))}


def _exaone4(c: Config) -> Raw:
    """EXAONE 4: norms on each sublayer's output (`post_attention_layernorm`,
    `post_feedforward_layernorm`, as OLMo 2), QK-norm per head, no biases; the layer kinds from
    `layer_types` when given (then `sliding_window_pattern` is unused, as in transformers'
    Exaone4Config, and EXAONE-4.0-32B's file writes it as "LLLG"), else window layers but
    every `sliding_window_pattern`-th: a whole number n, or a string of L (local) and G
    (global) repeated from layer 0 with the last layer global, as the config documents it."""
    raw = {**rotary_decoder(c), "norm_placement": "post", "qk_norm": "per_head"}
    if c.has("layer_types") or c("sliding_window", None) is None:
        return {**raw, **_every_nth_full(c, 4)}
    pattern = c("sliding_window_pattern", 4)
    if type(pattern) is int:
        if pattern < 1:
            raise FlopcalcError(f"{c.label}: sliding_window_pattern must be at least 1, got "
                                f"{pattern}")
        return {**raw, **_every_nth_full(c, pattern)}
    if type(pattern) is not str or not pattern or set(pattern) - {"L", "G"} \
            or len(pattern) > MAX_LAYERS:
        raise FlopcalcError(f"{c.label}: sliding_window_pattern must be a whole number or a "
                            "string of L (local) and G (global), e.g. 'LLLG'")
    n = c.layers()
    kinds = ["window" if pattern[i % len(pattern)] == "L" and i < n - 1 else "full"
             for i in range(n)]
    return {**raw, "sliding_window": c("sliding_window"), "layer_types": kinds}


def _hyperclovax(c: Config) -> Raw:
    """HyperCLOVA X: Llama with Granite's scalar multipliers, and with `use_post_norm` a norm
    after each sublayer too (`post_norm1`, `post_norm2`: a sandwich)."""
    attn = c("attention_bias", False)
    raw = {**rotary_decoder(c), **bias(attn, attn, c("mlp_bias", False))}
    if c("use_post_norm", True):
        raw["norm_placement"] = "sandwich"
    return raw


def _olmo3(c: Config) -> Raw:
    """OLMo 3: OLMo 2 with window layers but every 4th (`olmo3/configuration_olmo3.py`)."""
    return {**_olmo2(c), **_every_nth_full(c, 4)}


def _vaultgemma(c: Config) -> Raw:
    """VaultGemma: Gemma 2 without its post-norms (only `input_layernorm` and
    `pre_feedforward_layernorm`), `attention_bias` on q, k, v, o, alternating window layers;
    its soft-caps are element-wise."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c, tie=True), **bias(attn, attn), **layer_types(c, default_every=2)}


def _hunyuan_v1_dense(c: Config) -> Raw:
    """Hunyuan dense: Llama with a per-head QK-norm (`query_layernorm`, `key_layernorm` of
    head_dim) and `attention_bias` on q, k, v, o. Its default `head_dim` is null, which
    transformers 5.24 cannot build; d / heads is taken (the published configs set it)."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head"}


def _helium(c: Config) -> Raw:
    """Helium: q/k/v under `attention_bias`, o never biased and d x d, the MLP under
    `mlp_bias` (`helium/modeling_helium.py`)."""
    return {**rotary_decoder(c), **bias(c("attention_bias", False), False,
                                        c("mlp_bias", False))}


def _glm4(c: Config) -> Raw:
    """GLM-4 (0414): GLM with a norm after each sublayer too (`post_self_attn_layernorm`,
    `post_mlp_layernorm`: a sandwich)."""
    return {**_glm(c), "norm_placement": "sandwich"}


def _arcee(c: Config) -> Raw:
    """Arcee (AFM): Llama with a two-matrix MLP (up, down) and ReLU² (`arcee/modeling_arcee.py`
    ArceeMLP)."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c, gated=False), **bias(attn, attn, c("mlp_bias", False)),
            "activation": "relu2"}


def _flex_olmo(c: Config) -> Raw:
    """FlexOlmo: OLMoE with OLMo 2's norms on each sublayer's output (QK-norm over all heads,
    `attention_bias` on q, k, v, o) (`flex_olmo/modeling_flex_olmo.py`)."""
    return {**_olmoe(c), "norm_placement": "post"}


def _glm4_moe_lite(c: Config) -> Raw:
    """GLM-4.7-Flash (glm4_moe_lite): DeepSeek-V3's latent attention and experts, dense on the
    layers `mlp_layer_types` names "dense" (default: the first only)."""
    raw = _deepseek_v3(c)
    n = c.layers()
    kinds = c.per_layer("mlp_layer_types", n, default=["dense"] + ["sparse"] * (n - 1))
    raw["moe"] = {**raw["moe"], "first_dense": 0,
                  "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


# Defaults of config classes that a published file may leave out and that differ from what the
# converter would assume (head_dim 128 rather than d / heads).
DEFAULTS: dict[str, Raw] = {
    # GraniteSWAConfig's own sizes (transformers 5.24)
    "granite_swa": {"vocab_size": 100352, "hidden_size": 2560, "intermediate_size": 8192,
                    "num_hidden_layers": 24, "num_attention_heads": 20,
                    "num_key_value_heads": 4, "max_position_embeddings": 8192,
                    "tie_word_embeddings": True, "sliding_window": 128},
    "ernie4_5": {"head_dim": 128},
    "seed_oss": {"head_dim": 128},
    "helium": {"head_dim": 128},
    "glm": {"head_dim": 128},
    "glm4": {"head_dim": 128},
}

CONVERTERS = {
    "gpt-sw3": _gpt2,  # GPT2LMHeadModel, GPT2Config
    "exaone": _llama,  # LlamaForCausalLM; its files use the aliases below
    "internlm3": _llama,  # LlamaForCausalLM; qkv_bias and bias are aliases
    "iquestcoder": _llama,  # LlamaForCausalLM
    "granite": _granite, "granite_swa": _granite_swa,
    "smollm3": _smollm3,
    "ernie4_5": _ernie4_5,
    "ministral": _mistral_like,
    "ministral3": _mistral_like,
    "cwm": _cwm,
    "glm": _glm,
    "seed_oss": _seed_oss,
    "exaone4": _exaone4,
    "hyperclovax": _hyperclovax,
    "olmo3": _olmo3,
    "vaultgemma": _vaultgemma,
    "hunyuan_v1_dense": _hunyuan_v1_dense,
    "helium": _helium,
    "glm4": _glm4,
    "arcee": _arcee,
    "flex_olmo": _flex_olmo,
    "mistral4": _deepseek_v3,  # Mistral4ForCausalLM: latent attention + DeepSeek's MoE
    "sarvam_mla": _deepseek_v3,  # DeepseekV3ForCausalLM
    "glm4_moe_lite": _glm4_moe_lite,
}

_GPT2 = {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
         "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
_T5 = {"hidden_size": "d_model", "num_attention_heads": "num_heads",
       "num_hidden_layers": "num_layers", "head_dim": "d_kv"}

# alias → canonical (transformers 5.24 `attribute_map`;
# tests/pytorch/test_aliases_and_bug_configs.py checks them against the config classes).
# Falcon's and Bloom's `n_embed` is a keyword their `__post_init__` renames to hidden_size.
ALIASES: dict[str, dict[str, str]] = {
    "gpt2": _GPT2, "gpt-sw3": _GPT2, "gpt_bigcode": _GPT2,
    "gptj": _GPT2, "codegen": _GPT2,
    "t5": _T5, "mt5": _T5,
    "mixtral": {"num_experts": "num_local_experts"},
    "gpt_oss": {"num_experts": "num_local_experts"},
    "qwen3_moe": {"num_experts": "num_local_experts"},
    "qwen3_vl_moe_text": {"num_experts": "num_local_experts"},
    "olmoe": {"num_local_experts": "num_experts"},
    "flex_olmo": {"num_local_experts": "num_experts"},
    "deepseek_v3": {"num_local_experts": "n_routed_experts",
                    "num_mtp_layers": "num_nextn_predict_layers"},
    "kimi_k2": {"num_local_experts": "n_routed_experts",
                "num_mtp_layers": "num_nextn_predict_layers"},
    "mistral4": {"num_local_experts": "n_routed_experts"},
    "sarvam_mla": {"num_local_experts": "n_routed_experts",
                   "num_mtp_layers": "num_nextn_predict_layers",
                   "num_experts": "n_routed_experts", "num_shared_experts": "n_shared_experts"},
    "glm4_moe_lite": {"num_local_experts": "n_routed_experts",
                      "head_dim": "qk_rope_head_dim"},
    "exaone": {"num_layers": "num_hidden_layers", "layer_norm_epsilon": "rms_norm_eps",
               "activation_function": "hidden_act"},
    "internlm3": {"qkv_bias": "attention_bias", "bias": "mlp_bias"},
    "bloom": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
              "n_embed": "hidden_size"},
    "falcon": {"n_embed": "hidden_size"},
    "mpt": {"num_attention_heads": "n_heads", "hidden_size": "d_model",
            "num_hidden_layers": "n_layers"},
}
