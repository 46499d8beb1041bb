"""Encoders and encoder-decoders: BERT and T5."""

from __future__ import annotations

from .common import Config, Raw


def _bert(c: Config) -> Raw:
    return {
        "architecture": "encoder-only",
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": "relu" if c("hidden_act", "gelu", str) == "relu" else "gelu",
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "token_types": c("type_vocab_size", 2),
        "embedding_norm": True,
        "head": "masked-lm",  # BertForMaskedLM, the published checkpoints' own head
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        # BertLMPredictionHead has decoder.bias and its own `bias`, one tensor only when tied
        # (`_tied_weights_keys`); untied, transformers keeps both (the second unused).
        **({} if c("tie_word_embeddings", True) else {"lm_head_bias": 2}),
    }


def _t5(c: Config) -> Raw:
    proj = str(c("feed_forward_proj", "relu"))
    gated = proj.startswith("gated-")
    act = proj.removeprefix("gated-")
    return {
        "architecture": "encoder-decoder",
        "n_encoder_layers": c("num_layers"),
        "n_layers": c("num_decoder_layers", c("num_layers")),
        "d_model": c("d_model"),
        "n_heads": c("num_heads"),
        "head_dim": c("d_kv"),
        "d_ff": c("d_ff"),
        "mlp": "gated" if gated else "plain",
        "activation": "relu" if act == "relu" else "gelu",
        "bias": False,
        "norm": "rmsnorm",
        "positions": "relative",
        "relative_buckets": c("relative_attention_num_buckets", 32),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "share_encoder_embeddings": True,
    }


CONVERTERS = {"bert": _bert, "t5": _t5}
