"""Decoders of transformers 5.24 (and 5.25) that are a known family's layers under another
name or with a twist the existing kinds already say: each converter reads the keys its class
reads in `models/<type>/modeling_<type>.py`, with the configuration class's defaults, and says
in its docstring what it counts and where the count follows transformers rather than the paper.
tests/sweep/cases_hf_decoders.py checks each against transformers (parameters on the meta
device at the default config and at variants, forward FLOPs with FlopCounterMode)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, layer_types, rotary_decoder, shortest_period
from .aliases import _granite_swa
from .dense_layernorm import _apertus, activation
from .linear_hybrids import _mapped
from .moe import _granitemoe


def _with(c: Config, **keys: object) -> Config:
    """`c` with `keys` set: a config class without a key the shared readers read (every layer
    a mixture: no dense width)."""
    return Config({**c.data, **keys}, c.label, c.model_type)


def _mlp_kinds(c: Config, default: list[str]) -> list[str]:
    """`mlp_layer_types`: "dense" or "sparse" per layer (absent: `default`)."""
    return c.per_layer("mlp_layer_types", c.layers(), default=default,
                       choices=("dense", "sparse"))


def _cohere2_moe(c: Config) -> Raw:
    """Cohere2-MoE: Cohere 2's parallel block (one norm feeding attention and the MLP side by
    side; an RMSNorm when `rms_norm_eps` is set, else Cohere's bias-free LayerNorm), `head_dim`
    as given, `attention_bias` on q, k, v and o; a dense SwiGLU of
    prefix_dense_intermediate_size (absent: intermediate_size) on the `mlp_layer_types`
    "dense" layers, Mixtral's experts of intermediate_size on the "sparse" ones with a
    bias-free router and `num_shared_experts` shared experts fused into one MLP of
    num_shared_experts × intermediate_size. Averaging the shared and routed outputs and
    `logit_scale` are element-wise (`cohere2_moe/modular_cohere2_moe.py`)."""
    attn = c("attention_bias", False)
    rms = c.has("rms_norm_eps")
    n = c.layers()
    f = c("intermediate_size", expect=int)
    raw: Raw = {"n_layers": n, "d_model": c("hidden_size"), "n_heads": c("num_attention_heads"),
                "n_kv_heads": c("num_key_value_heads", None), "vocab_size": c("vocab_size"),
                "max_seq_len": c("max_position_embeddings", None),
                "d_ff": c("prefix_dense_intermediate_size", None) or f, "mlp": "gated",
                "activation": activation(c("hidden_act", "silu", str)), **bias(attn, attn),
                "norm": "rmsnorm" if rms else "layernorm", "parallel_block": True,
                "parallel_norms": 1, "positions": "rotary",
                "tie_embeddings": bool(c("tie_word_embeddings", True)),
                **layer_types(c, default_every=4)}
    if not rms:
        raw["norm_bias"] = False
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    kinds = _mlp_kinds(c, ["sparse"] * n)
    if "sparse" in kinds:
        shared = c("num_shared_experts", 0, int)
        raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"), "d_ff": f,
                      "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
        if shared:
            raw["moe"].update(shared_experts=1, shared_d_ff=shared * f)
    return raw


def _afmoe(c: Config) -> Raw:
    """AFMoE (Arcee Trinity): Llama's attention with a per-head QK-norm and an output gate
    (a bias-free gate_proj d → h·hd, sigmoid, times the attention output: the count of
    Qwen3-Next's gated query projection), window layers but every
    `global_attn_every_n_layers`-th (the saved `layer_types`); sandwich norms around both
    sublayers; a dense SwiGLU of intermediate_size on the first `num_dense_layers`, then Qwen2-MoE's
    experts of moe_intermediate_size with a bias-free router, one shared MLP of
    num_shared_experts × moe_intermediate_size, and `expert_bias` (a d-free E-vector held as
    a parameter: the count of a router bias; it shifts the top-k choice, no product). The
    µP input scaling and route_scale are element-wise (`afmoe/modular_afmoe.py`)."""
    if c("attention_bias", False):
        raise FlopcalcError(f"{c.label}: attention_bias true biases AFMoE's q, k, v and o but "
                            "not its separate gate_proj, which flopcalc's gated attention would "
                            "bias too; set it false or describe the model in a YAML file")
    raw: Raw = {**rotary_decoder(c), "qk_norm": "per_head", "attention_gate": True,
                "norm_placement": "sandwich", **layer_types(c)}
    n, first = c.layers(), c("num_dense_layers", 1, int)
    if first < n:
        shared = c("num_shared_experts", 2, int)
        raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "first_dense": first,
                      "router_bias": True}
        if shared:
            raw["moe"].update(shared_experts=shared)
    return raw


def _nanochat(c: Config) -> Raw:
    """NanoChat: Qwen3's attention (`attention_bias` on q, k, v and o) with weightless RMSNorms
    everywhere (the layers' two, the per-head QK-norm, the final one, and one more on the
    embeddings before the first layer: no parameters, no products), a plain bias-free MLP of
    ReLU², an untied head by default. The final logit soft-capping is element-wise
    (`nanochat/modular_nanochat.py`)."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c, gated=False), **bias(attn, attn), "qk_norm": "per_head",
            "norm_affine": False, "activation": activation(c("hidden_act", "relu2", str))}


def _granitemoe_swa(c: Config) -> Raw:
    """Granite-MoE-SWA: GraniteMoeShared's layers (Mixtral's experts, a gated shared MLP of
    `shared_intermediate_size`, none when 0, the µP scalars) with GraniteSWA's attention: a
    learned sink per head in every layer and a window on the "sliding_attention" layers
    (absent: all but every 4th); `layer_rope_theta` 0 (NoPE) counts nothing
    (`granitemoe_swa/modular_granitemoe_swa.py`)."""
    moe = _granitemoe(c)
    if c("shared_intermediate_size", 0):
        moe["moe"].update(shared_experts=1, shared_d_ff=c("shared_intermediate_size"))
    return {**_granite_swa(c), "multipliers": moe["multipliers"], "moe": moe["moe"]}


def _mellum(c: Config) -> Raw:
    """Mellum: Qwen3-MoE's attention (a per-head QK-norm, `attention_bias` on q, k, v and o) with
    a window on the `layer_types` "sliding_attention" layers (absent: none), a dense SwiGLU of
    intermediate_size on the `mlp_layer_types` "dense" layers and Qwen3-MoE's experts of
    moe_intermediate_size (a bias-free router, no shared expert) on the "sparse" ones (absent:
    all). The mtp.* tensors of its checkpoints are neither built nor read by transformers and
    are not counted; RoPE per layer type counts nothing (`mellum/modular_mellum.py`)."""
    attn = c("attention_bias", False)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head",
                **layer_types(c)}
    kinds = _mlp_kinds(c, ["sparse"] * c.layers())
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("num_local_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"]}
    return raw


def _kolibri1(c: Config) -> Raw:
    """Kolibri 1: EXAONE 4's bias-free attention (a per-head QK-norm; RoPE on window layers
    only, which counts nothing) with windows on all layers but every 5th (the saved
    `layer_types`), GLM-4's sandwich norms around both sublayers, and in every layer
    DeepSeek-V3's mixture: a bias-free router (fp32; e_score_correction_bias a buffer),
    Qwen3-MoE's experts of moe_intermediate_size and one shared MLP of
    shared_expert_intermediate_size (`kolibri1/modular_kolibri1.py`)."""
    raw: Raw = {**rotary_decoder(_with(c, intermediate_size=c("moe_intermediate_size"))),
                "qk_norm": "per_head",
                "norm_placement": "sandwich", **layer_types(c)}
    raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("moe_intermediate_size")}
    if c("shared_expert_intermediate_size", 512, int):
        raw["moe"].update(shared_experts=1, shared_d_ff=c("shared_expert_intermediate_size"))
    return raw


def _flint(c: Config) -> Raw:
    """Flint: Qwen3-MoE's attention (a per-head QK-norm, `attention_bias` on q, k, v and o) with
    a learned sink per head and RoPE on its window layers only (no count), windows on the saved
    `layer_types`; Qwen3-MoE's layers (a dense SwiGLU of intermediate_size on `mlp_only_layers`
    and off every `decoder_sparse_step`-th layer) with a bias-free fp32 router and one ungated
    shared MLP of shared_expert_intermediate_size added to the routed experts
    (`flint/modular_flint.py`)."""
    attn = c("attention_bias", False)
    n = c.layers()
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head",
                "attention_sinks": True, **layer_types(c)}
    raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("moe_intermediate_size"), "every": c("decoder_sparse_step", 1),
                  "dense_layers": list(c.layer_indices("mlp_only_layers", n, [0, 1]))}
    if c("shared_expert_intermediate_size", 1024, int):
        raw["moe"].update(shared_experts=1, shared_d_ff=c("shared_expert_intermediate_size"))
    return raw


def _apertus1p5_text(c: Config) -> Raw:
    """Apertus 1.5's text model: Apertus (per-head QK-norm, xIELU MLP) with a larger vocabulary.
    An `output_vocab_size` below vocab_size prunes the head to fewer rows than the embedding,
    which flopcalc cannot say (one vocabulary for both) and refuses
    (`apertus1p5/modular_apertus1p5.py`)."""
    out = c("output_vocab_size", None)
    if out is not None and out != c("vocab_size"):
        raise FlopcalcError(f"{c.label}: output_vocab_size {out} differs from vocab_size: a head "
                            "narrower than the embedding table is not a shape flopcalc counts; "
                            "describe the model in a YAML file")
    return _apertus(c)


def _lfm3(c: Config) -> Raw:
    """LFM3: LFM2's layers (gated short convolutions of `conv_L_cache` taps and Qwen3-style
    attention with a per-head QK-norm and `attention_bias` on q, k, v and o) of three types,
    "conv", "full_attention" and "sliding_attention" (a window of `sliding_window`); the
    attention's output scaled per head by sigmoid(g_proj(x)), g_proj d → h, when
    `use_attention_gate`; norms after each sublayer too when `use_sandwich_norm`; LFM2-MoE's
    dense gated MLP of intermediate_size as given; the final norm is `embedding_norm`. RoPE per
    layer type counts nothing (`lfm3/modular_lfm3.py`)."""
    n = c.layers()
    default = ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0
               else "conv" for i in range(n)]
    kinds = c.per_layer("layer_types", n, default=default)
    names = _mapped(c, kinds, {"conv": "short_conv", "full_attention": "full",
                               "sliding_attention": "window"})
    attn = c("attention_bias", False)
    raw: Raw = {**rotary_decoder(c, tie=True), **bias(attn, attn), "qk_norm": "per_head",
                "layer_types": shortest_period(names),
                "short_conv": {"conv_L_cache": c("conv_L_cache", 7),
                               "conv_bias": bool(c("conv_bias", False))}}
    raw["activation"] = "silu"  # LFM2-MoE's MLP applies F.silu whatever hidden_act says
    if "window" in names:
        raw["sliding_window"] = c("sliding_window", 256)
    if c("use_attention_gate", True):
        raw["attention_gate"] = "head"
    if c("use_sandwich_norm", True):
        raw["norm_placement"] = "sandwich"
    return raw


def _laguna(c: Config) -> Raw:
    """Laguna: AFMoE's attention (a per-head QK-norm, `attention_bias` on q, k, v and o, RoPE
    and windows on the "sliding_attention" layers) whose output is scaled by softplus(g_proj(x)),
    g_proj bias-free: d → h per head when `gating` is true or "per-head" (the default), else
    d → h·hd per element; a dense SwiGLU of intermediate_size on the `mlp_layer_types` "dense"
    layers (absent: the first), Qwen3-MoE's experts of moe_intermediate_size elsewhere with a
    bias-free router, `e_score_correction_bias` (an E-vector held as a parameter: the count of
    a router bias) and one shared MLP of shared_expert_intermediate_size. Per-layer head counts
    (`num_attention_heads_per_layer`) that differ are refused: flopcalc's layers share one head
    count (`laguna/modular_laguna.py`)."""
    n = c.layers()
    heads = c.ints("num_attention_heads_per_layer", None)
    if heads is not None:
        heads = c.per_layer("num_attention_heads_per_layer", n, int)
        if len(set(heads)) > 1:
            raise FlopcalcError(f"{c.label}: num_attention_heads_per_layer differs between layers "
                                f"({sorted(set(heads))}): flopcalc's attention layers share one "
                                "head count; describe the model in a YAML file")
    attn = c("attention_bias", False)
    gating = c("gating", True)
    per_head = gating is True or gating == "per-head"
    if attn and not per_head:
        raise FlopcalcError(f"{c.label}: attention_bias with gating {gating!r}: Laguna's "
                            "per-element g_proj has no bias, flopcalc's per-element gate would "
                            "take q's; set attention_bias false or describe the model in a YAML "
                            "file")
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn), "qk_norm": "per_head",
                "attention_gate": "head" if per_head else True, **layer_types(c)}
    if heads:
        raw["n_heads"] = heads[0]
    kinds = _mlp_kinds(c, ["dense"] + ["sparse"] * (n - 1))
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"],
                      "router_bias": True}
        if c("shared_expert_intermediate_size", 512, int):
            raw["moe"].update(shared_experts=1,
                              shared_d_ff=c("shared_expert_intermediate_size"))
    return raw


def _axk1(c: Config) -> Raw:
    """A.X-K1: DeepSeek-V3's latent attention (always with a query latent; `attention_bias` on
    q_a, kv_a and o) and mixture (a bias-free router, its e_score_correction_bias a buffer,
    n_shared_experts fused shared experts of moe_intermediate_size) on the `mlp_layer_types`
    "sparse" layers, with an RMSNorm over the mixture's output (`post_mlp_layernorm`); a dense
    SwiGLU of intermediate_size on the "dense" ones (absent: the first). GLM-4-MoE-Lite's
    pre-norm layer (`axk1/modular_axk1.py`)."""
    attn = c("attention_bias", False)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn)}
    raw["n_kv_heads"] = None  # latent attention decompresses K and V for every head
    raw.pop("head_dim", None)
    raw["latent_attention"] = {
        "q_lora_rank": c("q_lora_rank"), "kv_lora_rank": c("kv_lora_rank"),
        "qk_nope_head_dim": c("qk_nope_head_dim"), "qk_rope_head_dim": c("qk_rope_head_dim"),
        "v_head_dim": c("v_head_dim")}
    kinds = _mlp_kinds(c, ["dense"] + ["sparse"] * (c.layers() - 1))
    if "sparse" in kinds:
        raw["moe"] = {"experts": c("n_routed_experts"), "top_k": c("num_experts_per_tok"),
                      "d_ff": c("moe_intermediate_size"),
                      "shared_experts": c("n_shared_experts", 1, int), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(kinds) if t == "dense"],
                      "output_norm": True}
    return raw


def _lara_mini(c: Config) -> Raw:
    """Lara-mini: Qwen3.5's gated DeltaNet on the "linear_attention" layers and Qwen3's
    ungated attention (a per-head QK-norm, `attention_bias` on q, k, v and o) on the
    "full_attention" and "sliding_attention" ones (a window of `sliding_window`); in every
    layer Qwen3-MoE's experts of moe_intermediate_size (a bias-free fp32 router) and one
    ungated shared SwiGLU of shared_expert_intermediate_size (`lara_mini/modular_lara_mini.py`)."""
    n = c.layers()
    pattern = ["linear_attention", "sliding_attention", "linear_attention", "full_attention",
               "sliding_attention"]
    kinds = c.per_layer("layer_types", n, default=[pattern[i % 5] for i in range(n)])
    names = _mapped(c, kinds, {"linear_attention": "gdn", "full_attention": "full",
                               "sliding_attention": "window"})
    attn = c("attention_bias", False)
    raw: Raw = {**rotary_decoder(_with(c, intermediate_size=c("moe_intermediate_size")),
                                 tie=True),
                **bias(attn, attn), "qk_norm": "per_head", "layer_types": shortest_period(names)}
    if "window" in names:
        raw["sliding_window"] = c("sliding_window", 512)
    if "gdn" in names:
        raw["gated_deltanet"] = {
            "n_key_heads": c("linear_num_key_heads"), "n_value_heads": c("linear_num_value_heads"),
            "key_head_dim": c("linear_key_head_dim"),
            "value_head_dim": c("linear_value_head_dim"),
            "d_conv": c("linear_conv_kernel_dim", 4)}
    raw["moe"] = {"experts": c("num_experts"), "top_k": c("num_experts_per_tok"),
                  "d_ff": c("moe_intermediate_size")}
    if c("shared_expert_intermediate_size", 512, int):
        raw["moe"].update(shared_experts=1, shared_d_ff=c("shared_expert_intermediate_size"))
    return raw


def _bitnet(c: Config) -> Raw:
    """BitNet b1.58: Llama (`attention_bias` on q, k, v and o; a gated MLP of ReLU² by default)
    with two sub-norms, an RMSNorm over the attention output before o_proj and one over the
    MLP's hidden product before down_proj (`sub_norms`); untied by default. Its weights are
    ternary in the released checkpoints (a quantization config), the count of parameters and
    FLOPs is that of the bf16 model transformers builds (`bitnet/modular_bitnet.py`)."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c), **bias(attn, attn), "sub_norms": True,
            "activation": activation(c("hidden_act", "relu2", str))}


CONVERTERS = {"bitnet": _bitnet, "lara_mini": _lara_mini, 
    "cohere2_moe": _cohere2_moe, "afmoe": _afmoe, "nanochat": _nanochat,
    "granitemoe_swa": _granitemoe_swa, "mellum": _mellum, "kolibri1": _kolibri1, "flint": _flint,
    "apertus1p5_text": _apertus1p5_text, "lfm3": _lfm3, "laguna": _laguna, "axk1": _axk1,
}
# The config classes' defaults (transformers 5.24) for keys a hand-written file may leave out
# where the converters' own fallbacks (head_dim d / heads, as many KV heads as heads) differ.
_GQA = {"head_dim": 128, "num_key_value_heads": 4}
DEFAULTS: dict[str, Raw] = {
    "mellum": _GQA, "kolibri1": _GQA, "flint": _GQA, "lfm3": _GQA, "lara_mini": _GQA,
    "laguna": {"head_dim": 128, "num_key_value_heads": 8}, "bitnet": {"num_key_value_heads": 5},
}
ALIASES: dict[str, dict[str, str]] = {
    "mellum": {"num_experts": "num_local_experts", "num_mtp_layers": "num_nextn_predict_layers"},
    "kolibri1": {"num_experts": "num_local_experts"},
    "flint": {"num_experts": "num_local_experts"},
    "axk1": {"num_local_experts": "n_routed_experts"},
}
_YAML = "; describe an approximation in a YAML file if one will do"


def _lacks(what: str) -> str:
    return f"{what} {'are' if ' and ' in what else 'is'} not a layer kind flopcalc has{_YAML}"


# Decoders of transformers 5.24 whose counts need a feature flopcalc lacks, named.
REFUSED: dict[str, str] = {
    "zaya": _lacks("ZAYA's convolutional compressed attention (CCA: depthwise and grouped "
                   "convolutions over q and k, current and delayed values), its MLP router and "
                   "learned residual scaling"),
    "glm5_next": _lacks("GLM-5-Next's hyper-connections (several residual streams and a "
                        "hyper-head), forget-gated linear attention and indexer"),
    "neomme": _lacks("NeoMME's exclusive self-attention (alpha per head), sigmoid-gated "
                     "output projection and low-rank embedding factorisation"),
    "inkling_text": _lacks("Inkling's relative-position logits (r_proj and a learned table), "
                           "short convolutions and learned global scales"),
    "inkling2_text": _lacks("Inkling 2's attention (relative-position bias, dynamic short "
                            "convolutions, L2-clipped and log-scaled queries and keys) and its "
                            "block attention residuals"),
    "dots3_note_text": _lacks("dots3's latent attention with a norm over the shared rotary "
                              "key, windows on latent attention and an indexer on some layers"),
    "blt": _lacks("The Byte Latent Transformer's local encoder and decoder with "
                  "cross-attention to patches, its global transformer and hashed n-gram "
                  "embeddings"),
    "axk2": _lacks("A.X-K2's gated RMSNorms (a low-rank gate MLP on every layer norm) and "
                   "gated latent-attention queries"),
}
