"""Encoders with sliding-chunk attention (transformers 5.24, counted as the class
`AutoModelForMaskedLM` builds): Longformer; and XLNet (`AutoModelForCausalLM`'s
XLNetLMHeadModel). The converter reads the keys its config and model
classes read (`models/longformer/configuration_longformer.py`, `modeling_longformer.py`),
with their defaults. XLNet's relative attention runs bidirectionally over the whole
sequence (its plain forward), so it is counted here as an encoder with an LM head.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw
from .encoders import _roberta


def windows(c: Config, n: int, key: str = "attention_window") -> list[int]:
    """Each layer's attention_window (an int for all, or one per layer), checked as
    transformers does when it runs: even, and each dividing the largest (the model pads the
    sequence to the largest, and each layer's chunks of 2w must tile it)."""
    value = c(key, 512)
    if type(value) is int:
        value = [value] * n
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise c.wrong(key, value, "a whole number or a list of them")
    if len(value) != n:
        raise FlopcalcError(f"{c.label}: '{key}' has {len(value)} entries for {n} layers; "
                            "give one per layer (or one number for all)")
    for i, w in enumerate(value):
        if w < 4 or w % 2:  # w = 1 breaks transformers' copy of the first chunk
            raise FlopcalcError(f"{c.label}: {key}[{i}]={w} must be even and at least 4 "
                                "(w = window / 2 tokens each side; transformers' forward "
                                "fails below 4)")
        if max(value) % w:
            raise FlopcalcError(f"{c.label}: {key}[{i}]={w} does not divide the largest window "
                                f"{max(value)}, which the sequence is padded to: the layer's "
                                "chunks cannot tile it (transformers fails in the forward)")
    return value


def sliding(raw: Raw, c: Config, n: int, d_ff: int, key: str = "attention_window") -> Raw:
    """`raw` with every layer a `sliding_chunks@W` whole layer (its MLP inside)."""
    w = windows(c, n, key)
    raw.pop("d_ff", None)
    return {**raw, "layer_types": [f"sliding_chunks@{v}" for v in w],
            "sliding_chunks": {"pad_to": max(w), "intermediate_size": d_ff}}


def _longformer(c: Config) -> Raw:
    """LongformerForMaskedLM (Beltagy et al. 2020, "Longformer: The Long-Document
    Transformer"; `longformer/modeling_longformer.py`): RoBERTa's embedding (position ids
    after the padding index), head and post-norm layers, each layer's self-attention over
    overlapping chunks of its `attention_window` (`kinds.sliding_chunks`: every layer's
    matmuls on the sequence padded to the largest window, the head on the real tokens), with
    the query_global, key_global and value_global projections that global tokens use, held
    and unrun in a forward with none (flopcalc counts no global token)."""
    n = c.layers("num_hidden_layers")
    return sliding(_roberta(c), c, n, c("intermediate_size", expect=int))


def _xlnet(c: Config) -> Raw:
    """XLNetLMHeadModel (Yang et al. 2019, "XLNet: Generalized Autoregressive Pretraining for
    Language Understanding"; `xlnet/modeling_xlnet.py`), the class AutoModelForCausalLM
    builds, counted as the content stream of a plain forward (`kinds.xlnet`: no query stream,
    no mems, no segment term): post-norm layers (a LayerNorm after attention and after the
    MLP) of relative attention without biases (heads d/n_head wide) and a `ff_activation`
    MLP `d_inner` wide with biases; no position table (sinusoids computed in the forward);
    `mask_emb` (1 × d, read only with a perm_mask's query stream) held; the head `lm_loss`
    (d → V with its bias), tied to the token table by default. Every query scores every key
    (attn_type bi; uni masks, but the matmuls keep their shapes): an encoder here."""
    d, h = c("d_model", expect=int), c("n_head", expect=int)
    if h < 1 or d % h:
        raise FlopcalcError(f"{c.label}: xlnet n_head={h} must divide d_model={d} "
                            "(transformers' config requires it)")
    attn = str(c("attn_type", "bi", str))
    if attn not in ("bi", "uni"):
        raise FlopcalcError(f"{c.label}: xlnet attn_type={attn!r} is neither 'bi' nor 'uni' "
                            "(transformers' relative_positional_encoding refuses it)")
    n = c.layers("n_layer")
    act = str(c("ff_activation", "gelu", str))
    tied = bool(c("tie_word_embeddings", True))
    return {
        "architecture": "encoder-only", "n_layers": n, "d_model": d, "n_heads": h,
        "d_ff": c("d_inner", expect=int), "mlp": "plain",
        "activation": "relu" if act == "relu" else "silu" if act in ("silu", "swish")
        else "gelu",
        "bias": {"qkv": False, "attn_out": False, "mlp": True},
        "norm": "layernorm", "norm_placement": "post", "final_norm": False,
        "positions": "none", "vocab_size": c("vocab_size", expect=int),
        "head": "lm", "tie_embeddings": tied, "lm_head_bias": 1,
        "layer_types": ["xlnet"] * n, "xlnet": {"attn_type": attn},
        "input_extras": {"tables": [{"rows": 1, "width": d}]},
    }


CONVERTERS = {"longformer": _longformer, "xlnet": _xlnet}

ALIASES = {"xlnet": {"n_token": "vocab_size", "hidden_size": "d_model",
                     "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}}
