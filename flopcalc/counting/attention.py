"""Parameters and FLOPs of one attention sublayer: multi-head, grouped-query and multi-query
attention (`kv_heads` key/value heads), and multi-head latent attention (DeepSeek-V2/V3).

A matmul (T×in)·(in×out) costs 2·T·in·out FLOPs. Per head, the scores QKᵀ cost 2·d_qk and the
value product AV 2·d_v per scored (query, key) pair, so an attention layer's s² part is
2·h·(d_qk + d_v)·pairs: 4·s²·d_q for full self-attention with d_v = d_qk. GQA shares keys and
values between query heads, but every query head still scores its own pairs. The pair count
comes from `masks`. Norms of q and k (QK-norm), attention sinks, softmax and bias adds are
element-wise (see `elementwise`); Hugging Face computes none of them as a matmul, so
FlopCounterMode does not count them either.
"""

from __future__ import annotations

from ..models.spec import Attention, Norm
from .parts import ATTENTION, LAYERS, WEIGHTS, Part


def norm_params(norm: Norm, width: int, prefix: str, kind: str = LAYERS) -> list[Part]:
    """A norm over `width` features: LayerNorm gain (+ bias), RMSNorm gain, or nothing."""
    if not norm.present:
        return []
    parts = [Part(f"{prefix}.weight", width, kind, (width,))]
    if norm.kind == "layernorm" and norm.bias:
        parts.append(Part(f"{prefix}.bias", width, kind, (width,)))
    return parts


def linear_params(name: str, n_in: int, n_out: int, bias: bool) -> list[Part]:
    """A linear layer's weight (n_in x n_out) and, if it has one, its bias (n_out)."""
    parts = [Part(f"{name}.weight", n_in * n_out, LAYERS, (n_in, n_out))]
    if bias:
        parts.append(Part(f"{name}.bias", n_out, LAYERS, (n_out,)))
    return parts


def qk_norm_widths(att: Attention) -> tuple[int, int]:
    """Widths of the q and k norms: one head's width shared by every head (Qwen3, Gemma 3), or
    all heads' widths at once (OLMo 2)."""
    if att.qk_norm == "per_head":
        return att.qk_dim, att.qk_dim
    if att.qk_norm == "all_heads":
        return att.d_q, att.d_k
    return 0, 0


def attention_params(att: Attention, d: int, norm: Norm, prefix: str) -> list[Part]:
    """Parameters of one attention sublayer, tensor by tensor (its input norm excluded)."""
    if att.latent is not None:
        parts = _latent_params(att, d, norm, prefix)
    else:
        parts = [Part(f"{prefix}.q.weight", d * att.d_q, LAYERS, (d, att.d_q)),
                 Part(f"{prefix}.k.weight", d * att.d_k, LAYERS, (d, att.d_k)),
                 Part(f"{prefix}.v.weight", d * att.d_v, LAYERS, (d, att.d_v))]
        if att.qkv_bias:
            parts += [Part(f"{prefix}.q.bias", att.d_q, LAYERS, (att.d_q,)),
                      Part(f"{prefix}.k.bias", att.d_k, LAYERS, (att.d_k,)),
                      Part(f"{prefix}.v.bias", att.d_v, LAYERS, (att.d_v,))]
        parts += linear_params(f"{prefix}.o", att.d_o, d, att.out_bias)
    q_width, k_width = qk_norm_widths(att)
    if q_width:
        parts += norm_params(norm, q_width, f"{prefix}.q_norm")
        parts += norm_params(norm, k_width, f"{prefix}.k_norm")
    if att.sinks:
        parts.append(Part(f"{prefix}.sinks", att.heads, LAYERS, (att.heads,)))
    return parts


def _latent_params(att: Attention, d: int, norm: Norm, prefix: str) -> list[Part]:
    """DeepSeek-V3's MLA, as Hugging Face builds it: q_a (d → r_q), its RMSNorm, q_b
    (r_q → h·d_qk), or one q projection (d → h·d_qk) without a query rank; kv_a
    (d → r_kv + d_rope) with an RMSNorm over the r_kv latent, kv_b (r_kv → h·(d_nope + d_v));
    o (h·d_v → d). `attention_bias` puts biases on q_a, kv_a and o only."""
    lat = att.latent
    assert lat is not None
    h, nope = att.heads, att.qk_dim - lat.rope_dim
    rms = Norm("rmsnorm")
    if lat.q_rank is None:
        parts = linear_params(f"{prefix}.q", d, att.d_q, False)
    else:
        parts = (linear_params(f"{prefix}.q_a", d, lat.q_rank, att.qkv_bias)
                 + norm_params(rms, lat.q_rank, f"{prefix}.q_a_norm")
                 + linear_params(f"{prefix}.q_b", lat.q_rank, att.d_q, False))
    parts += linear_params(f"{prefix}.kv_a", d, lat.kv_rank + lat.rope_dim, att.qkv_bias)
    parts += norm_params(rms, lat.kv_rank, f"{prefix}.kv_a_norm")
    parts += linear_params(f"{prefix}.kv_b", lat.kv_rank, h * (nope + att.v_dim), False)
    parts += linear_params(f"{prefix}.o", att.d_o, d, att.out_bias)
    return parts


def pair_flops(att: Attention, pairs: int) -> list[Part]:
    """The attention matrix for `pairs` (query, key) pairs per head: QKᵀ is 2·d_qk per pair
    and head, AV 2·d_v."""
    return [Part("scores", 2 * att.heads * pairs * att.qk_dim, ATTENTION),
            Part("av", 2 * att.heads * pairs * att.v_dim, ATTENTION)]


def attention_flops(att: Attention, d: int, t_q: int, t_k: int, pairs: int,
                    prefix: str) -> list[Part]:
    """Forward FLOPs of one attention sublayer: `t_q` query tokens, `t_k` key/value tokens
    (the encoder's, for cross-attention) and `pairs` scored pairs per head, batch included."""
    scores, av = (Part(f"{prefix}.{p.name}", p.value, p.kind) for p in pair_flops(att, pairs))
    if att.latent is not None:
        return _latent_flops(att, d, t_q, t_k, prefix, scores, av)
    return [
        Part(f"{prefix}.q", 2 * t_q * d * att.d_q, WEIGHTS),  # (T_q×d)·(d×h·d_qk)
        Part(f"{prefix}.k", 2 * t_k * d * att.d_k, WEIGHTS),  # (T_k×d)·(d×h_kv·d_qk)
        Part(f"{prefix}.v", 2 * t_k * d * att.d_v, WEIGHTS),  # (T_k×d)·(d×h_kv·d_v)
        scores,
        av,
        Part(f"{prefix}.o", 2 * t_q * att.d_o * d, WEIGHTS),  # (T_q×h·d_v)·(h·d_v×d)
    ]


def _q_path(att: Attention, d: int, t: int, prefix: str) -> list[Part]:
    lat = att.latent
    assert lat is not None
    if lat.q_rank is None:
        return [Part(f"{prefix}.q", 2 * t * d * att.d_q, WEIGHTS)]  # (T×d)·(d×h·d_qk)
    return [Part(f"{prefix}.q_a", 2 * t * d * lat.q_rank, WEIGHTS),  # (T×d)·(d×r_q)
            Part(f"{prefix}.q_b", 2 * t * lat.q_rank * att.d_q, WEIGHTS)]  # (T×r_q)·(r_q×h·d_qk)


def _latent_flops(att: Attention, d: int, t_q: int, t_k: int, prefix: str, scores: Part,
                  av: Part) -> list[Part]:
    """MLA as Hugging Face runs it: keys and values decompressed per head from the latent
    (compressed from the `t_k` key tokens: the encoder's, for cross-attention)."""
    lat = att.latent
    assert lat is not None
    nope = att.qk_dim - lat.rope_dim
    return _q_path(att, d, t_q, prefix) + [
        Part(f"{prefix}.kv_a", 2 * t_k * d * (lat.kv_rank + lat.rope_dim), WEIGHTS),
        # (T_k×r_kv)·(r_kv×h·(d_nope + d_v)): the per-head keys (without their rope part), values
        Part(f"{prefix}.kv_b", 2 * t_k * lat.kv_rank * att.heads * (nope + att.v_dim), WEIGHTS),
        scores,
        av,
        Part(f"{prefix}.o", 2 * t_q * att.d_o * d, WEIGHTS),
    ]


def decode_attention_flops(att: Attention, d: int, batch: int, keys: int, steps: int,
                           prefix: str) -> list[Part]:
    """FLOPs of `steps` decode steps, each feeding one token per sequence (`batch` of them),
    whose attention together covers `keys` (query, key) pairs per head and sequence.

    Multi-head and grouped-query attention: the projections of the new token, then one query
    per head against its keys. Latent attention in the weight-absorbed form serving engines run
    (vLLM, SGLang, DeepSeek's own): the cache holds the latent (r_kv values) and the rotary key
    (d_rope); W_UK is absorbed into the query and W_UV applied after the value sum, so no key or
    value is decompressed: scores 2·h·(r_kv + d_rope) and the value sum 2·h·r_kv per key.
    """
    t = batch * steps
    lat = att.latent
    if lat is None:
        return attention_flops(att, d, t, t, batch * keys, prefix)
    nope, h = att.qk_dim - lat.rope_dim, att.heads
    pairs = batch * keys
    return _q_path(att, d, t, prefix) + [
        Part(f"{prefix}.kv_a", 2 * t * d * (lat.kv_rank + lat.rope_dim), WEIGHTS),
        # Per head, the no-rope query (1×d_nope) times W_UK (d_nope×r_kv): a latent-space query.
        Part(f"{prefix}.q_absorb", 2 * t * h * nope * lat.kv_rank, WEIGHTS),
        Part(f"{prefix}.scores", 2 * h * pairs * (lat.kv_rank + lat.rope_dim), ATTENTION),
        Part(f"{prefix}.av", 2 * h * pairs * lat.kv_rank, ATTENTION),
        # Per head, the latent-space output (1×r_kv) times W_UV (r_kv×d_v).
        Part(f"{prefix}.v_up", 2 * t * h * lat.kv_rank * att.v_dim, WEIGHTS),
        Part(f"{prefix}.o", 2 * t * att.d_o * d, WEIGHTS),
    ]


def kv_values(att: Attention) -> int:
    """Values cached per token: keys and values of the KV heads, or MLA's latent and rotary
    key, as serving engines keep them."""
    if att.latent is not None:
        return att.latent.kv_rank + att.latent.rope_dim
    return att.d_k + att.d_v


def kv_values_decompressed(att: Attention) -> int:
    """Values per token a cache of per-head keys and values would hold: every query head's own
    key and value (multi-head attention; MLA decompressed)."""
    return att.heads * (att.qk_dim + att.v_dim)
