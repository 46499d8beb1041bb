"""Hybrids built on Mamba-2: Bamba, Nemotron-H, Falcon-H1, Granite 4.0-H (granitemoehybrid) and
Zamba2, each read the way its transformers 5.24 configuration and modeling classes read it
(`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with the same defaults."""

from __future__ import annotations

from ...errors import FlopcalcError
from ..spec import MAX_LAYERS
from .common import Config, Raw, bias, shortest_period

MAMBA = ("linear_attention", "mamba")
ATTENTION = ("full_attention", "attention")


def _activation(name: object) -> str:
    """flopcalc's name for a transformers activation (ACT2FN key)."""
    name = str(name)
    if name == "relu2":
        return "relu2"
    if name == "relu":
        return "relu"
    return "gelu" if name.startswith("gelu") else "silu"


def _head_dim(c: Config, d: int, heads: int) -> int:
    """`getattr(config, "head_dim", hidden_size // num_attention_heads)`: an extra head_dim key
    in config.json is honoured."""
    if c.has("head_dim"):
        return c("head_dim")
    if not isinstance(d, int) or not isinstance(heads, int) or heads < 1 or d % heads:
        raise FlopcalcError(f"{c.label}: hidden_size={d!r} is not divisible by "
                            f"num_attention_heads={heads!r}; give head_dim")
    return d // heads


def _mamba_head_dim(c: Config, key: str, inner: int, heads: int) -> int:
    """A `mamba_d_head` of "auto": the inner width over the heads, as __post_init__ sets it."""
    value = c(key, "auto")
    if value != "auto":
        return value
    if not isinstance(inner, int) or not isinstance(heads, int) or heads < 1:
        raise FlopcalcError(f"{c.label}: cannot derive {key} from the Mamba width and heads")
    return inner // heads


def _mamba2(c: Config, *, heads: int, head_dim: int, state: tuple[str, int],
            groups: tuple[str, int], conv: tuple[str, int], chunk: tuple[str, int],
            bias: str, conv_bias: str = "", out_bias: str = "", norm: bool = True) -> Raw:
    """The `mamba2` block: the heads as derived, the other sizes from (key, the config class's
    default); `bias` on in_proj (and out_proj unless `out_bias` names its own key), the conv
    bias from `conv_bias` (always there when empty)."""
    block: Raw = {"n_heads": heads, "head_dim": head_dim, "d_state": c(*state),
                  "n_groups": c(*groups), "d_conv": c(*conv), "chunk_size": c(*chunk),
                  "bias": bool(c(bias, False)),
                  "conv_bias": bool(c(conv_bias, True)) if conv_bias else True,
                  "gated_norm": norm}
    if out_bias:
        block["out_bias"] = bool(c(out_bias, False))
    return block


def _core(c: Config, *, layers: int, vocab: int, tie: bool, positions: str,
          context: int) -> Raw:
    """Keys every hybrid here shares: RMSNorm everywhere, a final norm, the token table."""
    return {"n_layers": layers, "d_model": c("hidden_size"), "norm": "rmsnorm",
            "positions": positions, "max_seq_len": context, "vocab_size": vocab,
            "tie_embeddings": tie}


def _bamba(c: Config) -> Raw:
    """BambaForCausalLM: every layer a pre-norm token mixer (attention on `attn_layer_indices`,
    Mamba-2 elsewhere) and a pre-norm SwiGLU MLP; partial rotary positions (no parameters)."""
    n, d = c("num_hidden_layers", 32), c("hidden_size", 4096)
    heads = c("num_attention_heads", 32)
    attn = set(c("attn_layer_indices", []) or [])
    mamba_heads = c("mamba_n_heads", 128)
    inner = int(c("mamba_expand", 2) * d)
    raw = {**_core(c, layers=n, vocab=c("vocab_size", 128000),
                   tie=bool(c("tie_word_embeddings", False)), positions="rotary",
                   context=c("max_position_embeddings", 262144)),
           "n_heads": heads, "n_kv_heads": c("num_key_value_heads", 8),
           "head_dim": _head_dim(c, d, heads), "d_ff": c("intermediate_size", 14336),
           "mlp": "gated", "activation": _activation(c("hidden_act", "silu")),
           **bias(c("attention_bias", False), c("attention_bias", False), c("mlp_bias", False)),
           "layer_types": shortest_period(["full" if i in attn else "mamba2" for i in range(n)]),
           "mamba2": _mamba2(c, heads=mamba_heads,
                             head_dim=_mamba_head_dim(c, "mamba_d_head", inner, mamba_heads),
                             state=("mamba_d_state", 256), groups=("mamba_n_groups", 1),
                             conv=("mamba_d_conv", 4), chunk=("mamba_chunk_size", 256),
                             bias="mamba_proj_bias", conv_bias="mamba_conv_bias")}
    return raw


NEMOTRON_CODES = {"M": "mamba2", "*": "full", "-": "mlp", "E": "moe"}
NEMOTRON_TYPES = {"linear_attention": "mamba2", "mamba": "mamba2", "full_attention": "full",
                  "attention": "full", "mlp": "mlp", "moe": "moe"}


def _nemotron_h(c: Config) -> Raw:
    """NemotronHForCausalLM: each block ONE RMSNorm and ONE mixer, of its type in
    `layers_block_type` (or the legacy `hybrid_override_pattern`, M Mamba-2, * attention, - MLP,
    E MoE; the list wins when both are given): Mamba-2 of mamba_num_heads x mamba_head_dim
    (`expand` is not read), attention with config.head_dim and neither biases nor RoPE, a
    ReLU² MLP (up, down), or a MoE of ReLU² experts with a shared expert and, with
    moe_latent_size, the experts between d → latent and latent → d projections; the router is an
    fp32 parameter (E x d). num_hidden_layers is the pattern's length. The LM head is never tied
    (`_tied_weights_keys = {}`), whatever tie_word_embeddings says."""
    if c.has("layers_block_type") or c.has("layer_types"):
        # the list sets the layer count (transformers ignores num_hidden_layers beside it)
        key = "layers_block_type" if c.has("layers_block_type") else "layer_types"
        listed = c.per_layer(key, len(c(key, expect=list)), choices=tuple(NEMOTRON_TYPES))
        types = [NEMOTRON_TYPES[t] for t in listed]
    elif c.has("hybrid_override_pattern"):
        pattern = str(c("hybrid_override_pattern"))
        bad = [i for i, ch in enumerate(pattern) if ch not in NEMOTRON_CODES]
        if bad:
            raise FlopcalcError(f"{c.label}: hybrid_override_pattern[{bad[0]}] = "
                                f"{pattern[bad[0]]!r} must be M, *, - or E")
        types = [NEMOTRON_CODES[ch] for ch in pattern]
    else:
        types = ["mamba2", "moe", "full", "mlp"]
    if not types or len(types) > MAX_LAYERS:
        raise FlopcalcError(f"{c.label}: the layer pattern has {len(types):,} layers; give 1 to "
                            f"{MAX_LAYERS:,}")
    raw = {**_core(c, layers=len(types), vocab=c("vocab_size", 131072), tie=False,
                   positions="none", context=c("max_position_embeddings", 4096)),
           "mlp": "plain", "activation": _activation(c("mlp_hidden_act", "relu2")),
           **bias(False, False, c("mlp_bias", False)),
           "layer_types": shortest_period(types)}
    n = c("num_hidden_layers", None)
    if n is not None and n != len(types):  # transformers' NemotronHConfig warns and goes on
        raw["notes"] = (f"num_hidden_layers ({n}) does not match the layer pattern's "
                        f"{len(types)} layers: the pattern's length is used, as transformers' "
                        "NemotronHConfig does (num_hidden_layers is deprecated there)")
    if "full" in types:
        raw.update(n_heads=c("num_attention_heads", 32),
                   n_kv_heads=c("num_key_value_heads", 8), head_dim=c("head_dim", 128))
    if "mamba2" in types:
        raw["mamba2"] = _mamba2(c, heads=c("mamba_num_heads", 128),
                                head_dim=c("mamba_head_dim", 64),
                                state=("ssm_state_size", 128), groups=("n_groups", 8),
                                conv=("conv_kernel", 4), chunk=("chunk_size", 128),
                                bias="use_bias", conv_bias="use_conv_bias")
    if "mlp" in types:
        raw["d_ff"] = c("intermediate_size", 21504)
    if "moe" in types:
        # NemotronHMLP takes `intermediate_size or config.intermediate_size`: a 0 (or null)
        # shared width builds the shared expert at the dense MLP's width
        shared = (c("moe_shared_expert_intermediate_size", 7688)
                  or c("intermediate_size", 21504))
        moe: Raw = {"experts": c("n_routed_experts", 8), "top_k": c("num_experts_per_tok", 2),
                    "d_ff": c("moe_intermediate_size", 7688), "expert_bias": False,
                    "shared_experts": 1, "shared_d_ff": shared}
        if c.has("moe_latent_size"):
            moe["latent_size"] = c("moe_latent_size")
        raw["moe"] = moe
    return raw


def _falcon_h1(c: Config) -> Raw:
    """FalconH1ForCausalLM: every layer runs attention and Mamba-2 side by side on the same
    normed input and adds their outputs (`full+mamba2`), then a pre-norm SwiGLU MLP. The Mamba-2
    width is mamba_d_ssm (`mamba_expand`·d only where mamba_d_ssm is null), its heads
    mamba_n_heads of mamba_d_head; mamba_proj_bias on in_proj, projectors_bias on out_proj;
    without mamba_rms_norm no gated-norm weight (y·SiLU(z)). The µP multipliers are scalars (no
    parameters; their multiplies are element-wise) and the mup_vector a buffer."""
    d, heads = c("hidden_size", 4096), c("num_attention_heads", 32)
    mamba_heads = c("mamba_n_heads", 128)
    inner = c("mamba_d_ssm", 1024)
    head_dim = _mamba_head_dim(c, "mamba_d_head", inner, mamba_heads)
    if c.has("mamba_d_ssm") and isinstance(inner, int) and inner != mamba_heads * head_dim:
        raise FlopcalcError(f"{c.label}: mamba_d_ssm={inner} is not mamba_n_heads x "
                            f"mamba_d_head = {mamba_heads} x {head_dim}; the mixer needs both")
    attn_bias = c("attention_bias", False)
    block = _mamba2(c, heads=mamba_heads, head_dim=head_dim, state=("mamba_d_state", 256),
                    groups=("mamba_n_groups", 1), conv=("mamba_d_conv", 4),
                    chunk=("mamba_chunk_size", 256), bias="mamba_proj_bias",
                    conv_bias="mamba_conv_bias", out_bias="projectors_bias",
                    norm=bool(c("mamba_rms_norm", False)))
    return {**_core(c, layers=c("num_hidden_layers", 32), vocab=c("vocab_size", 128000),
                    tie=bool(c("tie_word_embeddings", False)), positions="rotary",
                    context=c("max_position_embeddings", 8192)),
            "n_heads": heads, "n_kv_heads": c("num_key_value_heads", 8),
            "head_dim": _head_dim(c, d, heads), "d_ff": c("intermediate_size", 14336),
            "mlp": "gated", "activation": _activation(c("hidden_act", "silu")),
            **bias(attn_bias, attn_bias, c("mlp_bias", False)),
            "layer_types": ["full+mamba2"], "mamba2": block,
            "multipliers": {"embedding": True, "logits": True,
                            "attention": ["input", "key", "output"],
                            "mamba2": ["input", "projection", "output"],
                            "mlp": ["gate", "output"]}}


def _granitemoehybrid(c: Config) -> Raw:
    """GraniteMoeHybridForCausalLM: each layer a pre-norm token mixer (`layer_types`: Mamba-2
    or attention; legacy "mamba"/"attention" as transformers remaps them; none: all Mamba-2)
    and a pre-norm MoE of SwiGLU experts (router without bias) plus a shared SwiGLU MLP that
    every layer has; with num_local_experts 0 the shared MLP alone. Attention has RoPE only with
    position_embedding_type "rope". The multipliers (embeddings, every sublayer's output,
    logits ÷ logits_scaling) are scalars: element-wise only; attention_multiplier replaces the
    score scaling."""
    n, d = c("num_hidden_layers", 32), c("hidden_size", 4096)
    heads = c("num_attention_heads", 32)
    listed = (c.per_layer("layer_types", n, default=None, choices=MAMBA + ATTENTION)
              or c.per_layer("layers_block_type", n, default=None, choices=MAMBA + ATTENTION)
              or ["mamba"] * n)
    types = ["mamba2" if t in MAMBA else "full" for t in listed]
    mamba_heads = c("mamba_n_heads", 128)
    inner = int(c("mamba_expand", 2) * d)
    experts = c("num_local_experts", 8)
    attn_bias = c("attention_bias", False)
    raw = {**_core(c, layers=n, vocab=c("vocab_size", 32000),
                   tie=bool(c("tie_word_embeddings", False)),
                   positions="rotary" if c("position_embedding_type", None) == "rope" else "none",
                   context=c("max_position_embeddings", 2048)),
           "mlp": "gated", "activation": _activation(c("hidden_act", "silu")),
           **bias(attn_bias, attn_bias, False), "layer_types": shortest_period(types),
           "multipliers": {"embedding": True, "logits": True, "attention": ["output"],
                           "mamba2": ["output"], "mlp": ["output"]}}
    if "full" in types:
        raw.update(n_heads=heads, n_kv_heads=c("num_key_value_heads", heads),
                   head_dim=_head_dim(c, d, heads))
    if "mamba2" in types:
        raw["mamba2"] = _mamba2(c, heads=mamba_heads,
                                head_dim=_mamba_head_dim(c, "mamba_d_head", inner, mamba_heads),
                                state=("mamba_d_state", 256), groups=("mamba_n_groups", 1),
                                conv=("mamba_d_conv", 4), chunk=("mamba_chunk_size", 256),
                                bias="mamba_proj_bias", conv_bias="mamba_conv_bias")
    shared = c("shared_intermediate_size", 1024, int)
    if experts:
        raw["moe"] = {"experts": experts, "top_k": c("num_experts_per_tok", 2),
                      "d_ff": c("intermediate_size", 11008)}
        if shared:  # a 0-wide shared MLP: Linear(d, 0) and Linear(0, d), no tensor, no FLOP
            raw["moe"].update(shared_experts=1, shared_d_ff=shared)
    elif shared:
        raw["d_ff"] = shared
    else:  # transformers keeps the layers' second norm before a 0-wide MLP: not a layout here
        raise FlopcalcError(f"{c.label}: num_local_experts 0 and shared_intermediate_size 0 "
                            "leave the layers no MLP at all; set one of them")
    return raw


ZAMBA2_DEFAULT = (["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"]
                  + ["mamba"] * 3 + ["hybrid"] + ["mamba"] * 2)


def _zamba2(c: Config) -> Raw:
    """Zamba2ForCausalLM: every layer a Mamba-2 decoder (RMSNorm, mixer); a "hybrid" layer
    first runs shared transformer block i mod num_mem_blocks (i counting hybrid layers) on the
    hidden state concatenated with the embeddings and adds its output, through a per-layer
    linear, to the Mamba-2 input (`mamba2+shared@B`). Derived as __post_init__ does:
    intermediate_size (null: 4d), heads of 2d / num_attention_heads (any head_dim key is
    replaced), mamba_headdim = mamba_expand·d / n_mamba_heads; the conv bias is always there
    (use_conv_bias is not read); the blocks are tied only when tie_word_embeddings is."""
    d = c("hidden_size", 2560)
    listed = c("layers_block_type", None) or c("layer_types", None) or ZAMBA2_DEFAULT
    bad = sorted({str(t) for t in listed if t not in MAMBA + ("hybrid",)})
    if bad:
        raise FlopcalcError(f"{c.label}: layers_block_type entries {bad} are not mamba or "
                            "hybrid")
    blocks, types, hybrids = c("num_mem_blocks", 1), [], 0
    for t in listed:
        if t == "hybrid":
            types.append(f"mamba2+shared@{hybrids % blocks}")
            hybrids += 1
        else:
            types.append("mamba2")
    heads, mamba_heads = c("num_attention_heads", 32), c("n_mamba_heads", 8)
    if not isinstance(heads, int) or heads < 1 or (2 * d) % heads:
        raise FlopcalcError(f"{c.label}: 2·hidden_size={2 * d} is not divisible by "
                            f"num_attention_heads={heads!r}")
    tie = bool(c("tie_word_embeddings", True))
    use_long = bool(c("use_long_context", False))
    raw = {**_core(c, layers=len(types), vocab=c("vocab_size", 32000), tie=tie,
                   positions="rotary" if c("use_mem_rope", False) else "none",
                   context=16384 if use_long else c("max_position_embeddings", 4096)),
           "activation": _activation(c("hidden_act", "gelu")),
           "layer_types": shortest_period(types),
           "mamba2": _mamba2(c, heads=mamba_heads,
                             head_dim=int(c("mamba_expand", 2) * d) // mamba_heads,
                             state=("mamba_d_state", 64), groups=("mamba_ngroups", 1),
                             conv=("mamba_d_conv", 4), chunk=("chunk_size", 256),
                             bias="add_bias_linear")}
    if hybrids:
        raw["shared_block"] = {
            "n_heads": heads, "n_kv_heads": c("num_key_value_heads", heads),
            "head_dim": 2 * d // heads, "d_ff": c("intermediate_size", 4 * d),
            "adapter_rank": c("adapter_rank", 128),
            "attention_adapters": bool(c("use_shared_attention_adapter", False)),
            "bias": bool(c("add_bias_linear", False)), "tied": tie}
    return raw


CONVERTERS = {"bamba": _bamba, "nemotron_h": _nemotron_h, "falcon_h1": _falcon_h1,
              "granitemoehybrid": _granitemoehybrid, "zamba2": _zamba2}

# The legacy names NemotronHConfig.__post_init__ renames (published configs use them).
ALIASES = {"nemotron_h": {"mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel",
                          "mamba_conv_bias": "use_conv_bias",
                          "mamba_chunk_size": "chunk_size",
                          "num_local_experts": "n_routed_experts"}}
