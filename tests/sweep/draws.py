"""Seeded random variants for every case of the model-zoo sweep: non-default settings of the
generic keys a type's config has, drawn the same way on every run.

For each case, `variants(model_type, default, shrink, skip, count)` draws `count` settings
from transformers' default config of the type (after the case's `fix`; a multimodal wrapper's
text config for a case with `text_config`), each from
`random.Random(zlib.crc32(b"MODEL_TYPE/i"))`: the seed is a stable hash of the model_type and
the variant's index (never Python's `hash()`, which is salted per process), so the sweep, the
recorded references (`tools/zoo_reference.py`) and the table (`tools/sweep.py`) see the same
variants on every machine. Only keys that exist in the default config with an int or bool
value are drawn:

- the layer count (1 to 4; above `first_k_dense_replace` in a mixture of experts, which keeps
  a sparse layer), unless the config or the shrink has per-layer lists (their length must
  match: the count is then left alone) or lists of layer indices;
- the attention geometry: hidden size, heads, key/value heads (a divisor of the heads) and head
  width (`head_dim`, T5's `d_kv`), kept consistent: without a head-width key the hidden size is
  heads × width; with one, heads × width or twice that;
- MLP widths (`intermediate_size`, `ffn_dim`, `d_ff`, the experts' and shared experts' widths),
  the vocabulary (above every special token id), `tie_word_embeddings` (the wrapper's own key
  where it has one), attention and MLP bias flags, expert counts and top-k (top-k ≤ experts, the
  experts a multiple of the routing groups).

The FLOP run sets the case's `shrink` keys on top of the variant, so a drawn key that `shrink`
also sets is checked at the drawn value for parameters only. Where `shrink` sets part of the
attention geometry, only the geometry keys it sets are drawn (the rest of the FLOP run's
geometry would not fit the drawn part); every draw is checked for consistency both as the
parameter check builds it and as the FLOP run does, and drawn again until it fits (200 tries,
then once more without the geometry; a type whose draws never fit gets the default config).

A case opts keys out with `seeded_skip` (a key that the type's transformers code constrains
beyond these rules, or that flopcalc does not count as transformers does: the case says which),
or opts out entirely with `seeded=0`.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

LAYERS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
          "decoder_layers", "num_decoder_layers")
HIDDEN = ("hidden_size", "d_model", "n_embd")
HEADS = ("num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
         "decoder_attention_heads")
KV = ("num_key_value_heads",)
HEAD_DIM = ("head_dim", "d_kv")
GEOMETRY = HIDDEN + HEADS + KV + HEAD_DIM
WIDTHS = ("intermediate_size", "ffn_dim", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim",
          "moe_intermediate_size", "shared_expert_intermediate_size", "shared_intermediate_size")
VOCAB = ("vocab_size",)
TIE = "tie_word_embeddings"
BIASES = ("attention_bias", "mlp_bias")
EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
TOP_K = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "moe_k")
# latent attention (MLA) derives its head width from its own ranks: its `head_dim` is the rope
# part, which the hidden size does not depend on
LATENT = ("kv_lora_rank", "qk_rope_head_dim")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _present(config: dict[str, Any], names: tuple[str, ...], skip: tuple[str, ...],
             kind: type = int) -> list[str]:
    """The keys of `names` the config has with a value of `kind`, less the skipped ones."""
    test = _int if kind is int else (lambda v: isinstance(v, bool))
    return [k for k in names if k in config and test(config[k]) and k not in skip]


def _per_layer_lists(config: dict[str, Any], layers: list[str]) -> bool:
    """Whether the config has lists tied to the layer count: of its length, or of indices."""
    counts = {config[k] for k in layers if _int(config.get(k))}
    for key, value in config.items():
        if isinstance(value, list) and value and (len(value) in counts or "layer" in key):
            return True
    return False


def _fits(ctx: dict[str, Any]) -> bool:
    """Whether a config (the default with the variant, and for the FLOP run the shrink) keeps
    the rules the draws must keep."""
    heads = [ctx[k] for k in HEADS if _int(ctx.get(k))]
    # JetMoE's and Zamba2's head width is `kv_channels` (never drawn: it stays the default's)
    width = next((ctx[k] for k in HEAD_DIM + ("kv_channels",) if k in ctx), None)
    latent = any(_int(ctx.get(k)) for k in LATENT)
    hidden = next((ctx[k] for k in HIDDEN if _int(ctx.get(k))), None)
    for h in heads:
        if h <= 0:
            return False
        if width is None and not latent and hidden is not None:
            if hidden % h or (hidden // h) % 2:
                return False
    kv = ctx.get("num_key_value_heads")
    if _int(kv) and _int(ctx.get("num_attention_heads")) and ctx["num_attention_heads"] % kv:
        return False
    rotary = ctx.get("rotary_dim")
    if _int(rotary) and _int(width) and rotary > width:
        return False
    experts = next((ctx[k] for k in EXPERTS if _int(ctx.get(k))), None)
    top_k = next((ctx[k] for k in TOP_K if _int(ctx.get(k))), None)
    if experts is not None:
        if top_k is not None and top_k > experts:
            return False
        groups, top_groups = ctx.get("n_group"), ctx.get("topk_group")
        if _int(groups) and groups > 0:
            if experts % groups:
                return False
            if _int(top_groups) and top_k is not None and \
                    top_k > experts // groups * min(top_groups, groups):
                return False
    return True


def _special_ids(config: dict[str, Any]) -> int:
    """The largest special token id (pad, bos, eos, ...: a padding index must be a row)."""
    ids = [0]
    for key, value in config.items():
        if key.endswith("_token_id"):
            for v in value if isinstance(value, list) else [value]:
                if _int(v):
                    ids.append(v)
    return max(ids)


def draw(rng: random.Random, config: dict[str, Any], shrink: dict[str, Any],
         skip: tuple[str, ...]) -> dict[str, Any]:
    """One setting of the generic keys `config` has (see the module's docstring)."""
    out: dict[str, Any] = {}
    layers = _present(config, LAYERS, skip)
    if layers and not _per_layer_lists({**config, **shrink}, layers):
        # a mixture of experts keeps a sparse layer after its leading dense ones
        dense = config.get("first_k_dense_replace")
        low = dense + 1 if _int(dense) and _present(config, EXPERTS, skip) else 1
        for key in layers:
            out[key] = rng.randint(min(low, 4), max(low, 4))

    geometry = [k for k in GEOMETRY if k in config and _int(config[k]) and k not in skip]
    if any(k in shrink for k in GEOMETRY):
        # the key/value heads follow the heads (a divisor of both the drawn and the shrunk ones)
        geometry = [k for k in geometry
                    if k in shrink or k in KV and any(h in shrink for h in HEADS)]
    latent = any(_int(config.get(k)) for k in LATENT)
    heads = rng.choice([2, 4, 6, 8])
    width = rng.choice([8, 16, 32])
    fixed_width = next((config[k] for k in HEAD_DIM if _int(config.get(k))), None)
    if fixed_width is not None and not any(k in geometry for k in HEAD_DIM):
        width = fixed_width  # the head width stays the default's: the hidden size fits it
    drawn_width = any(k in geometry for k in HEAD_DIM) and not latent
    hidden = heads * width * (rng.choice([1, 2]) if drawn_width else 1)
    kv = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
    for key in geometry:
        if key in HIDDEN:
            out[key] = hidden
        elif key in HEADS:
            out[key] = heads
        elif key in KV:
            out[key] = kv
        elif not latent:  # a head width
            out[key] = width
            if _int(config.get("rotary_dim")) and "rotary_dim" not in skip:
                out["rotary_dim"] = width // 2  # the rotated part of a head

    for key in _present(config, WIDTHS, skip):
        out[key] = rng.randrange(16, 257, 8)
    if "vocab_size" in config and _int(config["vocab_size"]) and "vocab_size" not in skip:
        low = max(256, _special_ids(config) + 1)
        out["vocab_size"] = rng.randint(low, low + 1000)

    experts = _present(config, EXPERTS, skip)
    if experts:
        groups = config.get("n_group") if _int(config.get("n_group")) else 1
        n = groups * rng.randint(max(1, 2 // groups), max(1, 16 // groups))
        for key in experts:
            out[key] = n
        for key in _present(config, TOP_K, skip):
            out[key] = rng.randint(1, min(n, 4))

    for key in _present(config, BIASES, skip, bool):
        out[key] = rng.random() < 0.5
    if TIE in config and isinstance(config[TIE], bool) and TIE not in skip:
        out[TIE] = rng.random() < 0.5
    return out


def _fitting(rng: random.Random, config: dict[str, Any], shrink: dict[str, Any],
             skip: tuple[str, ...]) -> dict[str, Any] | None:
    """A draw that fits both as the parameter check and as the FLOP run builds it (None where
    200 draws do not: the type's geometry follows rules of its own, and is left alone)."""
    for _ in range(200):
        keys = draw(rng, config, shrink, skip)
        params = {**config, **keys}
        if _fits(params) and _fits({**params, **shrink}):
            return keys
    return None


def variants(model_type: str, config: dict[str, Any], shrink: dict[str, Any],
             skip: tuple[str, ...], count: int, top: dict[str, Any] | None = None,
             ) -> tuple[dict[str, Any], ...]:
    """`count` seeded settings of the type's generic keys, each fitting both as the parameter
    check and as the FLOP run builds it. `top`: a wrapper's own config (its tying key drawn
    there, under the variant's "top", where the wrapper has one)."""
    out = []
    for i in range(count):
        rng = random.Random(zlib.crc32(f"{model_type}/{i}".encode()))
        keys = _fitting(rng, config, shrink, skip) or \
            _fitting(rng, config, shrink, skip + GEOMETRY + ("rotary_dim",)) or {}
        if top is not None and TIE in top and TIE not in skip:
            keys.pop(TIE, None)
            keys["top"] = {TIE: rng.random() < 0.5}
        out.append(keys)
    return tuple(out)
