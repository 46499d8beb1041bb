"""The attention of a model config's layers: which kind (softmax attention, or latent attention
when the config has a `latent_attention` block) with which mask, for the `layer_types` entries
`full`, `window` and `chunked` (and for encoders and cross-attention, bidirectional). A
`window_attention` block gives the window layers their own query heads, key/value heads and
sinks (MiMo-V2-Flash: twice the full layers' KV heads, and a learned sink per head; Step 3.7:
more query heads on its sliding layers, of the same width)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min

from .attention import Attention
from .masks import Mask
from .multipliers import scales
from .norm import Norm, model_norm  # noqa: F401 - model_norm: read here by the kinds
from .registry import Entry


def build(cfg: Any, name: str) -> Attention:
    """The attention of a model config's layers of type `name`: `full` (causal), `window`,
    `chunked`, or `bidirectional` (encoders, cross-attention). With a `latent_attention` block
    it is latent attention."""
    masks = {"full": lambda: Mask("causal"), "bidirectional": lambda: Mask("bidirectional"),
             "window": lambda: Mask("window", cfg.sliding_window),
             "chunked": lambda: Mask("chunked", cfg.attention_chunk)}
    if name == "window" and cfg.sliding_window is None:
        raise ValueError("window layers need sliding_window (the window size)")
    if name == "chunked" and cfg.attention_chunk is None:
        raise ValueError("chunked layers need attention_chunk (the chunk size)")
    if cfg.n_heads is None:
        raise ValueError("n_heads is required: this model has attention layers")
    heads, d = cfg.n_heads, cfg.d_model
    kv_heads, sinks = cfg.n_kv_heads, cfg.attention_sinks
    own = cfg.window_attention
    if own is not None and name == "window":
        kv_heads = own.n_kv_heads if own.n_kv_heads is not None else kv_heads
        heads = own.n_heads if own.n_heads is not None else heads
        sinks = own.sinks if own.sinks is not None else sinks
    common = dict(mask=masks[name](), qkv_bias=cfg.bias.qkv, out_bias=cfg.bias.attn_out,
                  **({"k_bias": cfg.bias.k} if cfg.bias.k is not None else {}),
                  qk_norm=cfg.qk_norm, sinks=sinks, norm=qk_norm(cfg),
                  alibi=cfg.positions == "alibi")
    mla = cfg.latent_attention
    if mla is not None and own is not None:
        raise ValueError("window_attention applies to softmax attention, not latent_attention")
    if mla is not None and cfg.attention_gate is True:
        raise ValueError("attention_gate applies to softmax attention (true: a gate per output "
                         "element); latent_attention takes attention_gate: head")
    if mla is not None and set(scales(cfg, "attention")) - {"output"}:
        raise ValueError("multipliers.attention on latent_attention scales its output only "
                         "(MiniCPM3's residual scale); input and key apply to softmax attention")
    if mla is not None:
        from .latent import LatentAttention  # imported only by models that have it

        latent: Any = LatentAttention
        if cfg.attention_gate == "head":  # Bailing-hybrid's per-head gate
            from .head_gate import HeadGatedLatentAttention

            latent = HeadGatedLatentAttention
        return latent(heads=heads, kv_heads=heads,
                               qk_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
                               v_dim=mla.v_head_dim, q_rank=mla.q_lora_rank,
                               kv_rank=mla.kv_lora_rank, rope_dim=mla.qk_rope_head_dim,
                               multipliers=scales(cfg, "attention"), **common)
    if cfg.head_dim is None and d % cfg.n_heads:
        raise ValueError(f"d_model={d} is not divisible by n_heads={cfg.n_heads}; set head_dim "
                         "explicitly")
    # the width is the model's (d / n_heads when not given) whatever heads a window layer has
    head_dim = cfg.head_dim or d // cfg.n_heads
    kind, extra = Attention, {}
    if cfg.attention_gate == "head" and cfg.sub_norms:
        raise ValueError("attention_gate: head and sub_norms together are not a kind flopcalc has")
    if cfg.attention_gate == "head":
        from .head_gate import HeadGatedAttention  # imported only by models that have it

        kind = HeadGatedAttention
    if cfg.sub_norms:
        from .sub_norms import SubNormAttention  # imported only by models that have it

        kind, extra = SubNormAttention, {"sub_norm": model_norm(cfg)}
    attn = kind(heads=heads, kv_heads=kv_heads or heads, qk_dim=head_dim,
                v_dim=cfg.v_head_dim or head_dim, gate=cfg.attention_gate is True,
                multipliers=scales(cfg, "attention"), **common, **extra)
    if cfg.gemma4 is not None and name in ("full", "window"):
        from .gemma4 import adapt  # imported only by models that have it

        return adapt(cfg, name, attn)
    return attn


def qk_norm(cfg: Any) -> Norm:
    """The norm QK-norm uses: the model's, with its own bias when qk_norm_bias is given
    (StableLM's bias-free per-head LayerNorms in a model whose LayerNorms have one), or one of
    the form `qk_norm_form` (Chameleon's biased LayerNorms in a model of RMSNorms; a LayerNorm
    has its bias unless qk_norm_bias is false)."""
    norm = model_norm(cfg)
    if cfg.qk_norm_form is not None:
        if cfg.qk_norm == "none":
            raise ValueError("qk_norm_form is the form of a QK-norm: set qk_norm (per_head or "
                             "all_heads)")
        return Norm(cfg.qk_norm_form, cfg.qk_norm_bias is not False)
    if cfg.qk_norm_bias is None:
        return norm
    if cfg.norm != "layernorm" or cfg.qk_norm == "none" or not cfg.norm_affine:
        raise ValueError("qk_norm_bias applies to a LayerNorm QK-norm (norm: layernorm, qk_norm "
                         "per_head or all_heads)")
    return Norm(norm.form, cfg.qk_norm_bias, norm.affine)


@dataclass(frozen=True)
class WindowAttentionConfig:
    """`window_attention:` in a model file: what the `window` layers hold unlike the others
    (MiMo-V2-Flash, transformers `models/mimo_v2_flash/`: `num_key_value_heads × 2` KV heads
    and sinks on its sliding layers only; Step 3.7, `models/step3p7/`: its sliding layers'
    `num_sliding_attention_heads` query heads)."""

    n_heads: Optional[Annotated[int, Min(1)]] = None  # None: the model's n_heads
    n_kv_heads: Optional[Annotated[int, Min(1)]] = None  # None: the model's n_kv_heads
    sinks: Optional[bool] = None  # None: the model's attention_sinks


REGISTER = Entry(layer_types=("full", "window", "chunked"), build=build,
                 blocks=(("window_attention", WindowAttentionConfig),))
