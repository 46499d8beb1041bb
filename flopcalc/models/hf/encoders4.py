"""Encoders whose layers are not BERT's (transformers 5.24, counted as the class
`AutoModelForMaskedLM` builds): Reformer. The converter reads the keys its config and model
classes read (`models/reformer/configuration_reformer.py`, `modeling_reformer.py`), with their
defaults. And ProphetNet, an encoder-decoder whose decoder runs n-gram streams
(`AutoModelForSeq2SeqLM`'s ProphetNetForConditionalGeneration).
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw


def _reformer(c: Config) -> Raw:
    """ReformerForMaskedLM (Kitaev et al. 2020, "Reformer: The Efficient Transformer";
    `reformer/modeling_reformer.py`; ReformerModelWithLMHead, the causal class, has the same
    tensors and matmuls): one layer per `attn_layers` entry (`kinds.reformer`: `lsh` or `local`
    attention over chunks, the sequence padded to the chunk lengths' least common multiple,
    heads `attention_head_size` wide; the MLP `feed_forward_size` wide with biases), each
    with the attention's LayerNorm before it (the layer's norm) and the MLP's (the kind's);
    the token table (V × d, never tied: the head reads 2d); axial position tables (one per
    axis, `axial_pos_shape[i]` × `axial_pos_embds_dim[i]`, read by lookup) or a learned table
    `max_position_embeddings` × d; the reversible output (`kinds.reformer.ReformerOutput`:
    LayerNorm(2d), the head 2d → V with its bias and a second bias of V)."""
    d = c("hidden_size", expect=int)
    attn = c.texts("attn_layers")
    if not attn:
        raise FlopcalcError(f"{c.label}: 'attn_layers' is empty; give one entry ('lsh' or "
                            "'local') per layer")
    for i, kind in enumerate(attn):
        if kind not in ("lsh", "local"):
            raise FlopcalcError(f"{c.label}: attn_layers[{i}]={kind!r} is neither 'lsh' nor "
                                "'local' (transformers' ReformerAttention refuses it)")
    n = len(attn)  # ReformerConfig sets num_hidden_layers from attn_layers
    buckets = c("num_buckets", None)
    if buckets is not None and not (type(buckets) is int or (
            isinstance(buckets, list) and buckets and all(type(b) is int for b in buckets))):
        raise c.wrong("num_buckets", buckets, "a whole number or a list of them")
    factors = None if buckets is None else [buckets] if type(buckets) is int else buckets
    if factors is not None and any(b < 2 or b % 2 for b in factors):
        raise FlopcalcError(f"{c.label}: num_buckets={buckets} must be even (each factor): "
                            "transformers' hashing asserts it")
    if "lsh" in attn and c("lsh_attn_chunk_length", 64, int) < 1:
        raise c.wrong("lsh_attn_chunk_length", c.data["lsh_attn_chunk_length"], "positive")
    vocab = c("vocab_size", expect=int)
    if c("axial_pos_embds", True):
        shape, dims = c.ints("axial_pos_shape", [64, 64]), c.ints("axial_pos_embds_dim",
                                                                    [64, 192])
        if len(shape) != len(dims) or sum(dims) != d:
            raise FlopcalcError(f"{c.label}: axial_pos_embds_dim={dims} must have one entry "
                                f"per axis of axial_pos_shape={shape} and sum to hidden_size="
                                f"{d} (transformers' AxialPositionEmbeddings requires it)")
        tables = [{"rows": r, "width": w} for r, w in zip(shape, dims)]
    else:
        tables = [{"rows": c("max_position_embeddings", 4096, int), "width": d}]
    act = str(c("hidden_act", "relu", str))
    block = {"num_attention_heads": c("num_attention_heads", expect=int),
             "attention_head_size": c("attention_head_size", expect=int),
             "feed_forward_size": c("feed_forward_size", expect=int), "vocab_size": vocab,
             "max_position_embeddings": c("max_position_embeddings", 4096, int)}
    for key, default in (("lsh_attn_chunk_length", 64), ("local_attn_chunk_length", 64),
                         ("lsh_num_chunks_before", 1), ("lsh_num_chunks_after", 0),
                         ("local_num_chunks_before", 1), ("local_num_chunks_after", 0),
                         ("num_hashes", 1)):
        block[key] = c(key, default, int)
    if factors is not None:
        block["num_buckets"] = factors
    return {
        "architecture": "encoder-only", "n_layers": n, "d_model": d,
        "n_heads": block["num_attention_heads"], "mlp": "plain",
        "activation": "relu" if act == "relu" else "silu" if act in ("silu", "swish")
        else "gelu",
        "norm": "layernorm", "norm_placement": "pre", "final_norm": False,
        "positions": "none", "vocab_size": vocab, "head": "none", "tie_embeddings": True,
        "layer_types": [f"reformer_{k}" for k in attn], "reformer": block,
        "input_extras": {"tables": tables},
    }


def _prophetnet(c: Config) -> Raw:
    """ProphetNetForConditionalGeneration (Qi et al. 2020, "ProphetNet: Predicting Future
    N-gram for Sequence-to-Sequence Pre-training"; `prophetnet/modeling_prophetnet.py`):
    BART's post-norm layout (a LayerNorm after each stack's embeddings, learned position tables
    of `max_position_embeddings` rows per stack, q, k, v, o and the MLP with biases, no final
    norm) with the decoder's self-attention the n-gram kind (`kinds.prophetnet`: the main and
    `ngram` predicting streams through every layer, relative position logits over
    `num_buckets`), `ngram_embeddings` (N × d) and the head on the predicting streams."""
    from .seq2seq import bart_style

    keys = {"d_model": "hidden_size", "encoder_layers": "num_encoder_layers",
            "decoder_layers": "num_decoder_layers",
            "encoder_attention_heads": "num_encoder_attention_heads",
            "decoder_attention_heads": "num_decoder_attention_heads"}
    data = dict(c.data)
    for ours, theirs in keys.items():
        if data.get(theirs) is not None:
            data[ours] = data[theirs]
    raw = bart_style(Config(data, c.label, c.model_type), 0, True, "post", False)
    n = raw["n_layers"]
    return {**raw, "layer_types": ["ngram"] * n,
            "ngram": {"ngram": c("ngram", 2, int), "num_buckets": c("num_buckets", 32, int)}}


CONVERTERS = {"reformer": _reformer, "prophetnet": _prophetnet}
