"""Decoders of transformers 5.24 that flopcalc refused until their layer kinds existed: each
converter reads the keys its class reads in `models/<type>/modeling_<type>.py`, with the
configuration class's defaults, and says in its docstring what it counts.
tests/sweep/cases_decoder_leftovers.py checks each against transformers (parameters on the meta
device at the default config and at variants, forward FLOPs with FlopCounterMode)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, layer_types, rotary_decoder, shortest_period
from .multimodal import Wrapper, attach_tower, text_mapping, tied


def _mtp_note(c: Config) -> Raw:
    mtp = c("num_nextn_predict_layers", 0, int)
    if not mtp:
        return {}
    return {"notes": (f"config.json declares {mtp} multi-token-prediction module"
                      f"{'s' if mtp > 1 else ''} (num_nextn_predict_layers), which transformers "
                      "does not build (its loader drops the checkpoint's extra layers): not "
                      "counted")}


def _step_heads(c: Config, kinds: list[str]) -> tuple[int, int | None]:
    """(the full layers' query heads, the sliding layers' or None) from `per_layer_config` (the
    overrides transformers builds each layer from; absent: num_sliding_attention_heads on the
    sliding layers, else the legacy attention_other_setting's num_attention_heads; null: none)."""
    heads = c("num_attention_heads", 64, int)
    per = c("per_layer_config", None, dict)
    if per is None and "per_layer_config" in c.data:
        per = {}  # written as null: transformers builds every layer from the global keys
    if per is None:
        other = c("attention_other_setting", {}, dict).get("num_attention_heads", heads)
        window = c("num_sliding_attention_heads", other, int)
        per = {i: {"num_attention_heads": window} for i, t in enumerate(kinds) if t == "window"}
    counts: list[int] = [heads] * len(kinds)
    for key, keys in per.items():
        index = int(key) if str(key).isdigit() else -1
        if not 0 <= index < len(kinds):
            raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}] names no layer of "
                                f"num_hidden_layers={len(kinds)}; give layer indices")
        if not isinstance(keys, dict):
            raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}] must be a mapping of keys")
        odd = sorted(set(keys) - {"num_attention_heads"})
        if odd:
            raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}] overrides {odd[0]!r}: "
                                "flopcalc reads per-layer query head counts only; describe the "
                                "model in a YAML file")
        value = keys.get("num_attention_heads", heads)
        if type(value) is not int or value < 1:
            raise FlopcalcError(f"{c.label}: per_layer_config[{key!r}].num_attention_heads "
                                f"{value!r} must be a whole number of heads, 1 or more")
        counts[index] = value
    by_kind: dict[str, set[int]] = {}
    for kind, n in zip(kinds, counts):
        by_kind.setdefault(kind, set()).add(n)
    for kind, seen in by_kind.items():
        if len(seen) > 1:
            first = next(i for i, t in enumerate(kinds) if t == kind and counts[i] != min(seen))
            raise FlopcalcError(f"{c.label}: per_layer_config[{first}] gives a head count its "
                                f"layer type's other layers do not ({sorted(seen)}): flopcalc's "
                                "layers of one type share one head count; describe the model "
                                "in a YAML file")
    full = next(iter(by_kind.get("full", {heads})))
    window = by_kind.get("window")
    return full, (next(iter(window)) if window else None)


def _step3p5(c: Config) -> Raw:
    """Step 3.7's text model (`step3p5`, Step3p7TextModel in `step3p7/modular_step3p7.py`):
    Laguna's attention (a per-head QK-norm, `attention_bias` on q, k, v and o, g_proj d → h
    bias-free whose sigmoid scales each head) with `per_layer_config`'s query head counts, by
    default `num_sliding_attention_heads` on the "sliding_attention" layers (windows of
    `sliding_window`; the KV heads and head_dim are the model's); a dense SwiGLU of
    intermediate_size with `mlp_bias` on the `mlp_layer_types` "dense" layers (absent: the
    first 3, or those the legacy `moe_layers_enum` leaves out), elsewhere a bias-free sigmoid
    router (its e_score_correction_bias a buffer), n_routed_experts bias-free experts of
    moe_intermediate_size and one shared SwiGLU of share_expert_dim with `mlp_bias`. The SwiGLU
    clamps (`swiglu_limits`), the router scaling and RoPE per layer type are element-wise; the
    `num_nextn_predict_layers` MTP layers are not built."""
    n = c.layers()
    kinds_raw = layer_types(c) if c.has("layer_types") else {}
    listed = c.per_layer("layer_types", n) if c.has("layer_types") else ["full_attention"] * n
    kinds = ["window" if t == "sliding_attention" else "full" for t in listed]
    odd = [i for i, t in enumerate(listed) if t not in ("full_attention", "sliding_attention")]
    if odd:
        raise FlopcalcError(f"{c.label}: layer_types[{odd[0]}] = {listed[odd[0]]!r} must be "
                            "'full_attention' or 'sliding_attention'")
    attn, mlp_bias = c("attention_bias", False), c("mlp_bias", False)
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, mlp_bias), "qk_norm": "per_head",
                "attention_gate": "head", **kinds_raw, "activation": "silu",
                "head_dim": c("head_dim", 128, int)}
    full, window = _step_heads(c, kinds)
    raw["n_heads"] = full
    if window is not None and window != full:
        raw["window_attention"] = {"n_heads": window}
    enum = c("moe_layers_enum", None)
    if enum is not None and not c.has("mlp_layer_types"):
        items = enum.split(",") if isinstance(enum, str) else enum
        try:
            moe = {int(i) for i in items if str(i).strip()}
        except (TypeError, ValueError):
            raise FlopcalcError(f"{c.label}: moe_layers_enum {enum!r} must list layer indices "
                                "(a comma-separated text or a list)") from None
        default = ["sparse" if i in moe else "dense" for i in range(n)]
    else:
        default = ["dense"] * min(3, n) + ["sparse"] * (n - 3)
    mlp = c.per_layer("mlp_layer_types", n, default=default, choices=("dense", "sparse"))
    if "sparse" in mlp:
        raw["moe"] = {"experts": c("n_routed_experts", 288, int),
                      "top_k": c("num_experts_per_tok", 8, int),
                      "d_ff": c("moe_intermediate_size", 1280, int), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(mlp) if t == "dense"],
                      "expert_bias": False}
        if c("share_expert_dim", 1280, int):
            raw["moe"].update(shared_experts=1, shared_d_ff=c("share_expert_dim"))
    raw.update(_mtp_note(c))
    return raw


def _zamba(c: Config) -> Raw:
    """ZambaForCausalLM (`zamba/modeling_zamba.py`): every layer an RMSNorm and Zamba's
    multi-head Mamba-1 mixer (n_mamba_heads heads of mamba_expand·d / n_mamba_heads channels,
    each with its own x_proj and dt_proj slice: the same tensors and FLOPs as one Mamba-1 mixer
    of mamba_expand·d channels, `kinds.mamba1`), no MLP; a "hybrid" layer first runs the one
    shared transformer block (`kinds.shared_block` without adapters: an RMSNorm over the hidden
    state joined to the embeddings, 2d wide, bias-free q, k, v reading 2d in heads of
    attention_head_dim (default 2d / heads), o back to d, an RMSNorm, a gated MLP of
    intermediate_size) and adds its output through a per-layer linear d → d to the Mamba input.
    `layers_block_type` (absent: two Mamba layers, a hybrid, then a hybrid wherever
    i % attn_layer_period == attn_layer_offset over the rest); the block is one set of tensors
    only when tie_word_embeddings is (transformers ties it by `_tied_weights_keys`). No
    positions. An attention_hidden_size other than 2d builds but cannot run (its norm reads the
    2d-wide join): refused."""
    d, n = c("hidden_size", 3712, int), c.layers()
    listed = c("layers_block_type", None) or c("layer_types", None)
    if listed is None:
        period, offset = c("attn_layer_period", 6, int), c("attn_layer_offset", 4, int)
        listed = ["linear_attention", "linear_attention", "hybrid"] + [
            "hybrid" if i % period == offset else "linear_attention" for i in range(n - 3)]
    if not isinstance(listed, list) or not listed:
        raise FlopcalcError(f"{c.label}: layers_block_type must be a list of layer types")
    bad = [i for i, t in enumerate(listed) if t not in ("linear_attention", "mamba", "hybrid")]
    if bad:
        raise FlopcalcError(f"{c.label}: layers_block_type[{bad[0]}] = {listed[bad[0]]!r} must "
                            "be 'mamba' ('linear_attention') or 'hybrid'")
    types = ["mamba1+shared@0" if t == "hybrid" else "mamba1" for t in listed]
    width = c("attention_hidden_size", 2 * d, int)
    if width != 2 * d:
        raise FlopcalcError(f"{c.label}: attention_hidden_size {width} is not 2·hidden_size = "
                            f"{2 * d}: Zamba's shared block normalises the hidden state joined "
                            "to the embeddings (2d wide) over attention_hidden_size, which "
                            "transformers cannot run; set it to 2·hidden_size or leave it out")
    heads, mamba_heads = c("num_attention_heads", 16, int), c("n_mamba_heads", 2, int)
    inner = c("mamba_expand", 2, int) * d
    if mamba_heads < 1 or inner % mamba_heads:
        raise FlopcalcError(f"{c.label}: mamba_expand·hidden_size = {inner} is not divisible by "
                            f"n_mamba_heads={mamba_heads}")
    if heads < 1:
        raise FlopcalcError(f"{c.label}: num_attention_heads {heads} must be 1 or more")
    tie = bool(c("tie_word_embeddings", True))
    rank = c("mamba_dt_rank", "auto")
    act = str(c("hidden_act", "gelu"))
    raw: Raw = {"n_layers": len(types), "d_model": d, "norm": "rmsnorm", "positions": "none",
                "max_seq_len": c("max_position_embeddings", 4096),
                "vocab_size": c("vocab_size", 32000), "tie_embeddings": tie,
                "activation": "gelu" if act.startswith("gelu") else "silu",
                "layer_types": shortest_period(types),
                "mamba1": {"d_inner": inner, "d_state": c("mamba_d_state", 16),
                           "d_conv": c("mamba_d_conv", 4),
                           "dt_rank": -(-d // 16) if rank == "auto" else rank,
                           "bias": bool(c("mamba_proj_bias", False)),
                           "conv_bias": bool(c("mamba_conv_bias", True)), "dt_norms": "none"}}
    if "hybrid" in listed:
        raw["shared_block"] = {
            "n_heads": heads, "n_kv_heads": c("num_key_value_heads", heads),
            "head_dim": c("attention_head_dim", 2 * d // heads),
            "d_ff": c("intermediate_size", 14848), "adapter_rank": 0, "tied": tie}
    return raw


def _bailing_hybrid(c: Config) -> Raw:
    """BailingHybridForCausalLM (Ling's hybrid, `bailing_hybrid/modular_bailing_hybrid.py`):
    `layer_types` (absent: the last of every `layer_group_size` layers "full_attention", the
    rest "linear_attention") of DeepSeek-V3's latent attention with rotary keys and a per-head
    output gate (g_proj d → h, `kinds.head_gate`), or Kimi delta attention with full-rank
    forget and output gates (f_proj and g_proj d → h·head_dim, `kinds.kimi_delta`), its heads
    num_attention_heads × head_dim and its conv of short_conv_kernel_size taps (a saved file's
    linear_num_heads, linear_head_dim and linear_conv_kernel_dim, which transformers then
    reads); a dense SwiGLU
    of intermediate_size on the `mlp_layer_types` "dense" layers (absent: the first
    `first_k_dense_replace`), elsewhere DeepSeek-V3's mixture (a bias-free router, its
    e_score_correction_bias a buffer, n_shared_experts fused shared experts of
    moe_intermediate_size). The head is never tied (`_tied_weights_keys` is empty); the
    `num_nextn_predict_layers` MTP layers are not built."""
    n = c.layers()
    group = c("layer_group_size", 6, int)
    if group < 1:
        raise FlopcalcError(f"{c.label}: layer_group_size {group} must be 1 or more")
    default = ["full_attention" if (i + 1) % group == 0 else "linear_attention"
               for i in range(n)]
    listed = c.per_layer("layer_types", n, default=default,
                         choices=("full_attention", "linear_attention"))
    kinds = ["full" if t == "full_attention" else "kda" for t in listed]
    first = c("first_k_dense_replace", 2, int)
    mlp = c.per_layer("mlp_layer_types", n,
                      default=["dense" if i < first else "sparse" for i in range(n)],
                      choices=("dense", "sparse"))
    heads, attn = c("num_attention_heads", 32, int), bool(c("attention_bias", False))
    act = str(c("hidden_act", "silu"))
    raw: Raw = {
        "n_layers": n, "d_model": c("hidden_size", 2560), "n_heads": heads, "n_kv_heads": None,
        "d_ff": c("intermediate_size", 6144), "mlp": "gated",
        "activation": "gelu" if act.startswith("gelu") else "silu",
        **bias(attn, attn), "norm": "rmsnorm", "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", 262144),
        "vocab_size": c("vocab_size", 157184), "tie_embeddings": False,
        "layer_types": shortest_period(kinds)}
    if "full" in kinds:
        raw["attention_gate"] = "head"
        raw["latent_attention"] = {
            "q_lora_rank": c("q_lora_rank", None), "kv_lora_rank": c("kv_lora_rank", 512),
            "qk_nope_head_dim": c("qk_nope_head_dim", 128),
            "qk_rope_head_dim": c("qk_rope_head_dim", 64), "v_head_dim": c("v_head_dim", 128)}
    if "kda" in kinds:
        # __post_init__ copies head_dim, num_attention_heads and short_conv_kernel_size into the
        # linear_* keys before DeepseekV3Config's sets head_dim to qk_rope_head_dim, and a saved
        # file's linear_* keys (written then) are set after it: read those first
        raw["kimi_delta"] = {
            "num_heads": c("linear_num_heads", heads, int),
            "head_dim": c("linear_head_dim", c("head_dim", 128, int), int),
            "short_conv_kernel_size": c("linear_conv_kernel_dim",
                                        c("short_conv_kernel_size", 4, int), int),
            "full_rank_gates": True}
    if "sparse" in mlp:
        raw["moe"] = {"experts": c("num_experts", 512, int),
                      "top_k": c("num_experts_per_token", 8, int),
                      "d_ff": c("moe_intermediate_size", 768, int), "first_dense": 0,
                      "dense_layers": [i for i, t in enumerate(mlp) if t == "dense"]}
        shared = c("num_shared_experts", 1, int)
        if shared:
            raw["moe"]["shared_experts"] = shared
    raw.update(_mtp_note(c))
    return raw


def _xlstm(c: Config) -> Raw:
    """xLSTMForCausalLM (`xlstm/modeling_xlstm.py`, the native PyTorch path): `num_blocks`
    (else num_hidden_layers) blocks of an RMSNorm and an mLSTM layer (`kinds.mlstm`: num_heads
    heads, queries and keys int(qk_dim_factor·d) wide, values int(v_dim_factor·d)), then an
    RMSNorm and a SiLU-gated feed-forward of d·ffn_proj_factor rounded up to a multiple of
    ffn_round_up_to_multiple_of; a final RMSNorm; no positions; the head is never tied (the
    class names no tied weights, whatever tie_word_embeddings says). The gates' and logits'
    soft caps are element-wise; `weight_mode` "fused" holds the same numbers in fewer
    tensors. Refused: `use_bias` (its RMSNorms then hold a bias, which flopcalc's
    RMSNorm does not), a `mode` other than "inference" (the training kernels need or pad to
    whole chunks), an embedding_dim other than hidden_size (transformers cannot run it), and a
    max_inference_chunksize that is not a multiple of chunk_size."""
    d = c("hidden_size", None) or c("embedding_dim", 4096)
    if type(d) is not int or d < 1:
        raise FlopcalcError(f"{c.label}: hidden_size {d!r} must be a whole number, 1 or more")
    if c("embedding_dim", d) != d:
        raise FlopcalcError(f"{c.label}: embedding_dim {c('embedding_dim')} differs from "
                            f"hidden_size {d}: xLSTM's blocks read the embeddings at "
                            "hidden_size, which transformers cannot run; make them equal")
    if c("use_bias", False):
        raise FlopcalcError(f"{c.label}: use_bias true gives xLSTM's RMSNorms a bias, which "
                            "flopcalc's RMSNorm does not hold; set it false or describe the "
                            "model in a YAML file")
    mode = c("mode", "inference", str)
    if mode != "inference":
        raise FlopcalcError(f"{c.label}: mode {mode!r}: flopcalc counts xLSTM's inference "
                            "kernels (chunks of chunk_size, the rest token by token); set mode "
                            "to 'inference' or describe the model in a YAML file")
    chunk = c("chunk_size", 64, int)
    if chunk < 1 or c("max_inference_chunksize", 16384, int) % chunk:
        raise FlopcalcError(f"{c.label}: max_inference_chunksize must be a multiple of "
                            f"chunk_size {chunk} (1 or more): flopcalc counts a long prompt's "
                            "segments as whole chunks")
    n = c("num_blocks", None) or c("num_hidden_layers", 32)
    round_to = c("ffn_round_up_to_multiple_of", 64, int)
    factor = c("ffn_proj_factor", 2.667)
    if not isinstance(factor, (int, float)) or round_to < 1:
        raise FlopcalcError(f"{c.label}: ffn_proj_factor {factor!r} and "
                            f"ffn_round_up_to_multiple_of {round_to} must be positive numbers")
    # round_up_to_next_multiple_of, in the same floating-point steps as transformers
    ffn = int(((d * factor + round_to - 1) // round_to) * round_to)
    heads = c("num_heads", 8, int)
    qk, v = int(d * c("qk_dim_factor", 0.5)), int(d * c("v_dim_factor", 1.0))
    if heads < 1 or qk % heads or v % heads:
        raise FlopcalcError(f"{c.label}: num_heads {heads} must divide the query width {qk} "
                            f"and the value width {v}")
    return {"n_layers": n, "d_model": d, "d_ff": ffn, "mlp": "gated", "activation": "silu",
            "bias": False, "norm": "rmsnorm", "positions": "none",
            "vocab_size": c("vocab_size", 50304),
            "tie_embeddings": False, "layer_types": ["mlstm"],
            "mlstm": {"num_heads": heads, "qk_width": qk, "v_width": v, "chunk_size": chunk}}


def _muse_spark_text(c: Config) -> Raw:
    """Muse Spark's text model (MuseSparkTextModel, `muse_spark/modeling_muse_spark.py`;
    `kinds.muse_spark`): q, k, v and o with `attention_bias`, a bias-free per-element output
    gate d → h·head_dim, weightless q/k and output norms; windows of `sliding_window` on the
    `layer_types` "sliding_attention" layers (absent: all but every 4th counted back from the
    last); RoPE or none per layer (no parameters); a dense SwiGLU of intermediate_size on the
    `mlp_layer_types` "dense" layers (absent: none), elsewhere a sigmoid router from d (its
    e_score_correction_bias a buffer) over num_local_experts SwiGLU experts of
    moe_intermediate_size in a latent of moe_hidden_size; centred and input-scaled RMSNorms,
    residual gates; a weightless norm over the embeddings. The logit soft-capping and scales
    are element-wise."""
    n = c.layers()
    default = ["full_attention" if (n - 1 - i) % 4 == 0 else "sliding_attention"
               for i in range(n)]
    listed = c.per_layer("layer_types", n, default=default,
                         choices=("full_attention", "sliding_attention"))
    mlp = c.per_layer("mlp_layer_types", n, default=["sparse"] * n,
                      choices=("dense", "sparse"))
    types = [f"muse_{'dense_' if m == 'dense' else ''}"
             f"{'full' if t == 'full_attention' else 'window'}" for t, m in zip(listed, mlp)]
    attn = c("attention_bias", False)
    # the head is never tied, whatever tie_word_embeddings says: the only class with a head is
    # MuseSparkForConditionalGeneration, which names no tied weights
    raw: Raw = {**rotary_decoder(c), "tie_embeddings": False, **bias(attn, attn),
                "attention_gate": True,
                "activation": "silu", "layer_types": shortest_period(types),
                "muse_spark": {"window": c("sliding_window", 2048, int)
                               if "sliding_attention" in listed else None}}
    if "sparse" in mlp:
        raw["moe"] = {"experts": c("num_local_experts", 256, int),
                      "top_k": c("num_experts_per_tok", 8, int),
                      "d_ff": c("moe_intermediate_size", 4096, int),
                      "latent_size": c("moe_hidden_size", 4096, int), "expert_bias": False}
    return raw


# Wrappers (`*ForConditionalGeneration`) around the text models above: the language model is
# counted with the wrapper's LM head; their towers are not read.
WRAPPERS: dict[str, Wrapper] = {
    # Step 3.7: a SigLIP-style ViT with 2-D RoPE and layer scales, two stride-2 convolutions
    # and a linear projector, run over a global view and local crops
    "step3p7": Wrapper("step3p5"),
    # Muse Spark: a ViT with patch merging and an adapter, and an audio encoder whose output
    # is scattered onto the text embeddings; the head is never tied (no tied weights named)
    "muse_spark": Wrapper("muse_spark_text", tie="never"),
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


CONVERTERS = {"step3p5": _step3p5, "zamba": _zamba, "bailing_hybrid": _bailing_hybrid,
              "xlstm": _xlstm, "muse_spark_text": _muse_spark_text,
              **{name: _unwrap for name in WRAPPERS}}
# The config classes' defaults (transformers 5.24) for keys a hand-written file may leave out
# where the converters' own fallbacks (head_dim d / heads, as many KV heads as heads) differ.
DEFAULTS: dict[str, Raw] = {
    "step3p5": {"hidden_size": 4096, "intermediate_size": 11264, "num_hidden_layers": 45,
                "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
                "vocab_size": 128815, "max_position_embeddings": 128000},
    "zamba": {"num_hidden_layers": 76}, "bailing_hybrid": {"num_hidden_layers": 42},
    "muse_spark_text": {"hidden_size": 8192, "intermediate_size": 16384,
                        "num_hidden_layers": 62, "num_attention_heads": 128,
                        "num_key_value_heads": 16, "head_dim": 64, "vocab_size": 202048,
                        "max_position_embeddings": 1048576},
}
ALIASES: dict[str, dict[str, str]] = {
    "bailing_hybrid": {"max_position_embeddings": "model_max_length",
                       "num_local_experts": "num_experts",
                       "num_experts_per_tok": "num_experts_per_token",
                       "n_shared_experts": "num_shared_experts",
                       "num_mtp_layers": "num_nextn_predict_layers"},
    "zamba": {"layer_types": "layers_block_type", "head_dim": "attention_head_dim"},
    "step3p5": {"num_local_experts": "n_routed_experts", "moe_num_experts": "n_routed_experts",
                "moe_top_k": "num_experts_per_tok", "num_attention_groups": "num_key_value_heads",
                "share_expert_dims": "share_expert_dim",
                "num_mtp_layers": "num_nextn_predict_layers"},
}
REFUSED: dict[str, str] = {}
