"""Encoder-decoders whose encoder attends in a pattern of its own (transformers 5.24, counted as
the class `AutoModelForSeq2SeqLM` builds): LED, Pegasus-X. The converter reads the keys its config and
model classes read (`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with their
defaults; `ALIASES` are the config classes' `attribute_map`.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw
from .encoders3 import windows
from .seq2seq import bart_style


def _led(c: Config) -> Raw:
    """LEDForConditionalGeneration (Beltagy et al. 2020, "Longformer: The Long-Document
    Transformer", §5; `led/modeling_led.py`): BART's post-norm layout (a LayerNorm after each
    stack's embeddings, learned position tables without offset: the encoder's
    `max_encoder_position_embeddings` rows, the decoder's `max_decoder_position_embeddings`),
    with Longformer's sliding-chunk self-attention in every encoder layer
    (`kinds.sliding_chunks`: the source padded to the largest `attention_window`, every matmul
    of every encoder layer on the padded tokens; the global projections held, unrun without a
    global_attention_mask). The decoder and its cross-attention read the s real tokens'
    encoder states (LEDEncoder drops the padding)."""
    dec = c("max_decoder_position_embeddings", 1024, int)
    enc = c("max_encoder_position_embeddings", 16384, int)
    raw = bart_style(Config({**c.data, "max_position_embeddings": dec}, c.label, c.model_type),
                     0, True, "post", False)
    n = c.layers("encoder_layers")
    w = windows(c, n)
    raw.pop("encoder_d_ff", None)
    return {**raw, "encoder_max_seq_len": enc,
            "encoder_layer_types": [f"sliding_chunks@{v}" for v in w],
            "sliding_chunks": {"pad_to": max(w),
                               "intermediate_size": c("encoder_ffn_dim", expect=int)}}


def _pegasus_x(c: Config) -> Raw:
    """PegasusXForConditionalGeneration (Phang et al. 2022, "Investigating Efficiently
    Extending Transformers for Long Input Summarization"; `pegasus_x/modeling_pegasus_x.py`):
    Pegasus's pre-norm layout with a final LayerNorm per stack, sinusoids computed in the
    forward (no table), q, k, v and o without biases (both stacks), fc1 and fc2 with biases,
    one `shared` token table tied to the head; every encoder layer a `kinds.global_local`
    layer (blocks of `block_size`, `num_global_tokens` global tokens from a table layer 0
    holds, every odd layer staggered with `stagger_local_blocks`)."""
    raw = bart_style(Config({**c.data, "max_position_embeddings": c(
        "max_position_embeddings", 16384, int)}, c.label, c.model_type), 0, False, "pre", True,
        positions="sinusoidal")
    raw["bias"] = {"qkv": False, "attn_out": False, "mlp": True}
    n = c.layers("encoder_layers")
    stagger = bool(c("stagger_local_blocks", True))
    block = c("block_size", 512, int)
    if block < 1 or (stagger and n > 1 and block % 2):
        raise FlopcalcError(f"{c.label}: block_size={block} must be at least 1, and even with "
                            "stagger_local_blocks (staggered layers pad half a block either "
                            "side; transformers' blocks do not tile an odd one)")
    types = ["global_local_first"] + ["global_local_staggered" if stagger and i % 2 else
                                      "global_local" for i in range(1, n)]
    raw.pop("encoder_d_ff", None)
    return {**raw, "encoder_layer_types": types,
            "global_local": {"block_size": block,
                             "num_global_tokens": c("num_global_tokens", 32, int),
                             "stagger_local_blocks": stagger,
                             "intermediate_size": c("encoder_ffn_dim", expect=int)}}


CONVERTERS = {"led": _led, "pegasus_x": _pegasus_x}

_BART_ALIASES = {"num_attention_heads": "encoder_attention_heads", "hidden_size": "d_model",
                 "num_hidden_layers": "encoder_layers"}
ALIASES = {"led": _BART_ALIASES, "pegasus_x": _BART_ALIASES}
