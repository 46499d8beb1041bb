"""Encoder-decoders (transformers 5.24, each counted as the class
`AutoModelForSeq2SeqLM` builds): T5, mT5 and UMT5, the BART family (BART, mBART, Marian, Pegasus)
and Whisper. Each converter reads the keys its config and model classes read
(`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with their defaults;
`ALIASES` are the config classes' `attribute_map`.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw

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


_T5_ALIASES = {"hidden_size": "d_model", "num_attention_heads": "num_heads",
               "num_hidden_layers": "num_layers", "head_dim": "d_kv"}
_BART_ALIASES = {"num_attention_heads": "encoder_attention_heads", "hidden_size": "d_model",
                 "num_hidden_layers": "encoder_layers"}


def _mt5(c: Config) -> Raw:
    """MT5ForConditionalGeneration: T5 v1.1's layers (`mt5/modeling_mt5.py`), read as T5. Its
    config class forces `tie_word_embeddings` true (`configuration_mt5.py`), so a saved file is
    tied; published mT5 checkpoints are untied, and flopcalc counts the file as written."""
    return _t5(c)


def _umt5(c: Config) -> Raw:
    """UMT5ForConditionalGeneration (`umt5/modeling_umt5.py`): mT5 whose every self-attention
    layer has its own relative position bias (buckets × heads), not only the first of each stack
    (cross-attention has none)."""
    return {**_t5(c), "relative_bias_per_layer": True}


def _activation(c: Config) -> str:
    act = str(c("activation_function", "gelu", str))
    return "relu" if act == "relu" else "silu" if act in ("silu", "swish") else "gelu"


# (position_offset, layernorm_embedding, norm placement, final LayerNorm per stack)
_STYLE = {
    "bart": (2, True, "post", False),  # BartLearnedPositionalEmbedding: P + 2 rows
    "mbart": (2, True, "pre", True),
    "marian": (0, False, "post", False),  # MarianSinusoidalPositionalEmbedding: P rows
    "pegasus": (0, False, "pre", True),  # PegasusSinusoidalPositionalEmbedding: P rows
}


def _bart_family(c: Config) -> Raw:
    return bart_style(c, *_STYLE[c.model_type])


def bart_style(c: Config, offset: int, emb_norm: bool, placement: str, final: bool,
               positions: str = "learned") -> Raw:
    """BART, mBART, Marian, Pegasus `*ForConditionalGeneration` (MarianMTModel): post-norm
    (BART, Marian) or pre-norm with a final LayerNorm per stack (mBART, Pegasus); a LayerNorm
    after each stack's embeddings (BART, mBART); q, k, v, o, fc1 and fc2 with biases; each stack
    its own heads and MLP width (`encoder_attention_heads`/`encoder_ffn_dim`; cross-attention
    has the decoder's heads). Positions: learned tables of P + 2 rows (BART, mBART: the offset
    of 2 their position ids start at) or sinusoids stored as frozen P × d parameters (Marian,
    Pegasus: counted as tables). Token tables: one `shared` when tied; untied, transformers 5
    keeps `shared` (then unused), each stack's `embed_tokens` and `lm_head`; Marian with
    `share_encoder_decoder_embeddings: false` has the encoder's V × d and the decoder's
    `decoder_vocab_size` × d (tied to its head). `final_logits_bias` is a buffer, and
    `scale_embedding` a scalar: neither is a parameter or a matmul. `positions: sinusoidal`
    is a table held as a buffer (M2M-100's), no parameter."""
    d = c("d_model")
    enc_heads, dec_heads = c("encoder_attention_heads"), c("decoder_attention_heads")
    enc_ff, dec_ff = c("encoder_ffn_dim"), c("decoder_ffn_dim")
    vocab, tied = c("vocab_size", expect=int), bool(c("tie_word_embeddings", True))
    raw: Raw = {
        "architecture": "encoder-decoder",
        "n_encoder_layers": c("encoder_layers"),
        "n_layers": c("decoder_layers"),
        "d_model": d,
        "n_heads": dec_heads,
        "d_ff": dec_ff,
        "mlp": "plain",
        "activation": _activation(c),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": placement,
        "final_norm": final,
        "embedding_norm": emb_norm,
        "positions": positions,
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": vocab,
        "tie_embeddings": tied,
    }
    if offset and positions == "learned":
        raw["position_offset"] = offset
    if enc_heads != dec_heads:
        raw["encoder_n_heads"] = enc_heads
    if enc_ff != dec_ff:
        raw["encoder_d_ff"] = enc_ff
    share = c.model_type != "marian" or bool(c("share_encoder_decoder_embeddings", True))
    if c.model_type == "marian":
        target = c("decoder_vocab_size", vocab, int)
        if share and target != vocab:
            raise FlopcalcError(f"{c.label}: decoder_vocab_size={target} differs from "
                                f"vocab_size={vocab} with share_encoder_decoder_embeddings: "
                                "true; one shared table cannot have both sizes")
        if not share:  # the decoder's vocabulary is the output's; the encoder has its own
            raw.update(vocab_size=target, encoder_vocab_size=vocab,
                       share_encoder_embeddings=False)
    if share and not tied:  # `shared` stays, unused, beside both stacks' tables and lm_head
        raw.update(share_encoder_embeddings=False, unused_token_tables=1)
    return raw


def _whisper(c: Config) -> Raw:
    """WhisperForConditionalGeneration (Radford et al. 2022; `whisper/modeling_whisper.py`): the
    audio front end (`kinds.audio_frontend`: two convolutions over `num_mel_bins`), an encoder
    over `max_source_positions` positions with sinusoids stored as a frozen table (counted),
    a decoder with a learned table of `max_target_positions` rows, pre-norm layers with a final
    LayerNorm per stack, q, v, o, fc1 and fc2 with biases and k without (WhisperAttention), each
    stack its own heads and MLP width; the decoder's token table, tied to `proj_out` unless
    `tie_word_embeddings` is false. `--seq` is the encoder's positions (the input is 2·seq mel
    frames; transformers accepts only seq = max_source_positions, its default here)."""
    enc_heads, dec_heads = c("encoder_attention_heads"), c("decoder_attention_heads")
    enc_ff, dec_ff = c("encoder_ffn_dim"), c("decoder_ffn_dim")
    source = c("max_source_positions", 1500)
    raw: Raw = {
        "architecture": "encoder-decoder",
        "n_encoder_layers": c("encoder_layers"),
        "n_layers": c("decoder_layers"),
        "d_model": c("d_model"),
        "n_heads": dec_heads,
        "d_ff": dec_ff,
        "mlp": "plain",
        "activation": _activation(c),
        "bias": {"qkv": True, "attn_out": True, "mlp": True, "k": False},
        "norm": "layernorm",
        "norm_placement": "pre",
        "final_norm": True,
        "positions": "learned",
        "max_seq_len": c("max_target_positions", 448),
        "encoder_max_seq_len": source,
        "default_seq": source,
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "audio_frontend": {"mel_bins": c("num_mel_bins", 80)},
    }
    if enc_heads != dec_heads:
        raw["encoder_n_heads"] = enc_heads
    if enc_ff != dec_ff:
        raw["encoder_d_ff"] = enc_ff
    return raw


CONVERTERS = {"t5": _t5, "mt5": _mt5, "umt5": _umt5, "bart": _bart_family, "mbart": _bart_family,
              "marian": _bart_family, "pegasus": _bart_family, "whisper": _whisper}

ALIASES = {"mt5": _T5_ALIASES, "umt5": _T5_ALIASES,
           **{t: _BART_ALIASES for t in ("bart", "mbart", "marian", "pegasus")},
           "whisper": {"num_key_value_heads": "encoder_attention_heads",
                       "num_attention_heads": "encoder_attention_heads",
                       "hidden_size": "d_model", "num_hidden_layers": "encoder_layers"}}
