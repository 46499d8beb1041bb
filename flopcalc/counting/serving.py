"""Serving FLOPs of a decoder-only model: the prefill over the prompt, then decode steps that
each feed one token per sequence and attend over the KV cache.

- Prefill is the forward pass over the prompt (`model.model_flops`), so it equals
  `flopcalc model M --seq P` under the same convention (LM head on every prompt token).
- Decode step at position c (c = P + i for the i-th generated token) projects the new token
  through every weight (the LM head included) and attends, in each layer, over the keys its
  mask lets the query see: c for a full layer, min(c, w) for a window of w, (c − 1) mod b + 1
  in blocks of b. Latent attention (MLA) decodes in the weight-absorbed form (see
  `attention.decode_attention_flops`). A mixture of experts runs its router, k experts and the
  shared experts per token.
- Sums over many steps are exact: weight parts are the same every step and attention parts sum
  the visible keys in closed form (`masks.sum_visible_keys`).
"""

from __future__ import annotations

from ..models.spec import ModelSpec
from .attention import decode_attention_flops
from .masks import breakpoints, sum_visible_keys
from .mlp import ffn_flops
from .model import model_flops, workload
from .parts import WEIGHTS, Convention, Part, merged, scaled


def prefill_parts(spec: ModelSpec, prompt: int, batch: int, convention: Convention
                  ) -> list[Part]:
    """Forward FLOPs over `batch` prompts of `prompt` tokens: exactly `model_flops`."""
    return model_flops(spec, workload(spec, prompt, None, batch, convention))


def decode_parts(spec: ModelSpec, first: int, last: int, batch: int) -> list[Part]:
    """FLOPs of the decode steps at positions first..last (one step each), `batch` sequences.
    A single step at context c is decode_parts(spec, c, c, batch)."""
    steps = last - first + 1
    d = spec.d_model
    parts: list[Part] = []
    for g in spec.groups("decoder"):
        att = g.layer.attention
        keys = sum_visible_keys(att.mask, first, last)
        layer = (decode_attention_flops(att, d, batch, keys, steps, "attn")
                 + ffn_flops(g.layer.mlp, d, batch * steps))
        parts += scaled(layer, g.count, "decoder")
    # The LM head on every generated token: (B×d)·(d×V) per step.
    return merged(parts) + [Part("lm_head", 2 * batch * steps * d * spec.vocab_size, WEIGHTS)]


def affine_segments(spec: ModelSpec, first: int, last: int) -> list[tuple[int, int]]:
    """[first, last] cut where any layer's visible keys change their affine form (a window
    filling up, a new chunk): on each piece every decode cost is affine in the position."""
    cuts = sorted({p for g in spec.groups("decoder")
                   for p in breakpoints(g.layer.attention.mask, first, last)})
    pieces, start = [], first
    for cut in cuts:
        pieces.append((start, cut))
        start = cut + 1
    pieces.append((start, last))
    return [(a, b) for a, b in pieces if a <= b]
