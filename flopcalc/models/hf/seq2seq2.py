"""More encoder-decoders of the BART family (transformers 5.24, each counted as the class
`AutoModelForSeq2SeqLM` builds): Blenderbot, Blenderbot-small, M2M-100 (NLLB's dense layers),
PLBART and MVP. Each is BART's layers (q, k, v, o, fc1, fc2 with biases; LayerNorms) in one of
the layouts `seq2seq.bart_style` describes; `ALIASES` are their config classes' `attribute_map`.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, layer_types, rotary_decoder
from .seq2seq import _T5_ALIASES, _t5, bart_style

_BART_ALIASES = {"num_attention_heads": "encoder_attention_heads", "hidden_size": "d_model",
                 "num_hidden_layers": "encoder_layers"}


def _blenderbot(c: Config) -> Raw:
    """BlenderbotForConditionalGeneration (`blenderbot/modeling_blenderbot.py`): pre-norm with
    a final LayerNorm per stack, learned position tables of max_position_embeddings rows (no
    offset), no embedding LayerNorm."""
    return bart_style(c, 0, False, "pre", True)


def _blenderbot_small(c: Config) -> Raw:
    """BlenderbotSmallForConditionalGeneration: post-norm as BART, a LayerNorm after each
    stack's embeddings, learned tables of max_position_embeddings rows (no offset)."""
    return bart_style(c, 0, True, "post", False)


def _m2m_100(c: Config) -> Raw:
    """M2M100ForConditionalGeneration: pre-norm, a final LayerNorm per stack, sinusoidal
    positions held as buffers (M2M100SinusoidalPositionalEmbedding: no parameter)."""
    return bart_style(c, 0, False, "pre", True, positions="sinusoidal")


def _plbart(c: Config) -> Raw:
    """PLBartForConditionalGeneration: BART's layout (post-norm, embedding LayerNorms, learned
    tables of P + 2 rows)."""
    return bart_style(c, 2, True, "post", False)


def _mvp(c: Config) -> Raw:
    """MvpForConditionalGeneration: BART's layout. With `use_prompt` every layer's attention
    also reads prompt_length learned prefix keys and values made by a prompt MLP per stack:
    not counted, so refused."""
    if c("use_prompt", False, bool):
        raise FlopcalcError(f"{c.label}: MVP with use_prompt: true (prefix keys and values "
                            "from a prompt MLP in every attention) is not counted; set it "
                            "false or describe the model in a YAML file")
    return bart_style(c, 2, True, "post", False)


def _fsmt(c: Config) -> Raw:
    """FSMTForConditionalGeneration (fairseq's WMT19 transformers; `fsmt/modeling_fsmt.py`):
    post-norm as BART without embedding LayerNorms, sinusoids stored as frozen parameters of
    max_position_embeddings + pad_token_id + 1 rows per stack (counted as tables), the
    encoder's own table of src_vocab_size rows and the decoder's of tgt_vocab_size with its
    `output_projection` (untied by default). Tied, transformers ties all three to the
    decoder's table, whatever src_vocab_size says: one tgt_vocab_size × d table."""
    offset = c("pad_token_id", 1, int) + 1
    raw = bart_style(c, offset, False, "post", False)
    raw.pop("unused_token_tables", None)  # FSMT has no `shared` table
    if not raw["tie_embeddings"]:
        raw["share_encoder_embeddings"] = False
        source = c("src_vocab_size", expect=int)
        if source != raw["vocab_size"]:
            raw["encoder_vocab_size"] = source
    else:
        raw["share_encoder_embeddings"] = True
    return raw


def _bigbird_pegasus(c: Config) -> Raw:
    """BigBirdPegasusForConditionalGeneration (`bigbird_pegasus/modeling_bigbird_pegasus.py`)
    with `attention_type: original_full`: Pegasus's layout (pre-norm; the final norm of each
    stack is the module transformers names `layernorm_embedding`, run after the layers) with
    learned tables of P rows and `use_bias` on q, k, v and o (fc1, fc2 always biased).
    `block_sparse` (the default, and the published checkpoints') is BigBird's block-sparse
    encoder attention (Zaheer et al. 2020): global, sliding and random key blocks past
    (5 + 2·num_random_blocks)·block_size tokens, full attention at or below it; flopcalc has no
    such mixer, so that setting is refused."""
    kind = c("attention_type", "block_sparse", str)
    if kind != "original_full":
        raise FlopcalcError(f"{c.label}: BigBird-Pegasus with attention_type "
                            f"'{kind[:40]}' is not supported: its block-sparse "
                            "encoder attention (global, sliding and random blocks) is not a "
                            "mixer flopcalc has; set attention_type: original_full (the same "
                            "parameters, full attention) to count that model")
    raw = bart_style(c, 0, False, "pre", True)
    attn = bool(c("use_bias", False, bool))
    raw["bias"] = {"qkv": attn, "attn_out": attn, "mlp": True}
    return raw


def _longt5(c: Config) -> Raw:
    """LongT5ForConditionalGeneration (`longt5/modeling_longt5.py`) with
    `encoder_attention_type: local`: T5's layers (relative bias in each stack's first layer,
    `feed_forward_proj`), the encoder's self-attention local (`block_local`: ±local_radius
    tokens, computed in blocks of local_radius + 1). `transient-global` adds global tokens
    (sums of global_block_size blocks, with their own norm and relative bias), which flopcalc
    has no mixer for: refused."""
    kind = c("encoder_attention_type", "local", str)
    if kind != "local":
        raise FlopcalcError(f"{c.label}: LongT5 with encoder_attention_type '{kind[:40]}' is "
                            "not supported: its transient-global attention (keys from "
                            "global_block_size block sums, with their own norm and relative "
                            "bias) is not a mixer flopcalc has; 'local' is counted")
    n = c.layers("num_layers")
    return {**_t5(c), "encoder_layer_types": ["block_local"] * n,
            "block_local": {"radius": c("local_radius", 127, int)}}


def _gemma2_stack(c: Config) -> Raw:
    """One T5Gemma stack (T5GemmaModuleConfig): Gemma 2's layers (sandwich RMSNorms, a gated
    GELU MLP, rotary positions, q, k, v, o biased when attention_bias) and its layer types."""
    attn = c("attention_bias", False)
    return {**rotary_decoder(c, tie=True), **bias(attn, attn), "norm_placement": "sandwich",
            **layer_types(c, default_every=2)}


# what the encoder must share with the decoder: flopcalc's encoder-decoder has one attention
# shape (cross-attention reads d-wide encoder states with the decoder's heads)
_SHARED = ("d_model", "n_heads", "n_kv_heads", "head_dim", "bias", "activation", "mlp")


def _t5gemma(c: Config) -> Raw:
    """T5GemmaForConditionalGeneration (Zhang et al. 2025, "Encoder-Decoder Gemma";
    `t5gemma/modeling_t5gemma.py`): an `encoder` and a `decoder` of Gemma 2's layers (each
    stack its own config), the decoder's layers with a cross-attention sublayer between
    sandwich norms, a final RMSNorm per stack, a token table per stack (both held, tied or
    not) and the head tied to the decoder's table unless tie_word_embeddings is false. The
    encoder's sliding layers are bidirectional bands, |i − j| <= sliding_window (the `local`
    mixer with a window of 2·sliding_window); the decoder's are causal windows. flopcalc's
    encoder-decoder has one attention shape, so stacks of different widths or heads (T5Gemma
    9B-2B) are refused; their layer counts, MLP widths and windows may differ."""
    top = c("tie_word_embeddings", True, bool)
    stacks = {}
    for name in ("encoder", "decoder"):
        sub = Config(c(name, expect=dict), f"{c.label} ({name})", c.model_type)
        stacks[name] = _gemma2_stack(sub)
    enc, dec = stacks["encoder"], stacks["decoder"]
    for key in _SHARED:
        if enc.get(key) != dec.get(key):
            raise FlopcalcError(f"{c.label}: the encoder's {key} ({enc.get(key)}) differs from "
                                f"the decoder's ({dec.get(key)}); flopcalc's encoder-decoders "
                                "have one attention shape for both stacks")
    raw: Raw = {**dec, "architecture": "encoder-decoder", "n_encoder_layers": enc["n_layers"],
                "tie_embeddings": top, "share_encoder_embeddings": False}
    raw.pop("notes", None)  # rotary: no table, and the encoder-decoder's --seq is checked
    if enc["d_ff"] != dec["d_ff"]:
        raw["encoder_d_ff"] = enc["d_ff"]
    if enc["vocab_size"] != dec["vocab_size"]:
        raw["encoder_vocab_size"] = enc["vocab_size"]
    kinds = enc.get("layer_types")
    if kinds is not None and "window" in kinds:
        raw["encoder_layer_types"] = ["local" if k == "window" else "bidirectional"
                                      for k in kinds]
        raw["local_attention"] = {"window": 2 * enc["sliding_window"]}
    elif enc.get("sliding_window") is not None and kinds is None:  # every layer slides
        raw["encoder_layer_types"] = ["local"]
        raw["local_attention"] = {"window": 2 * enc["sliding_window"]}
    return raw


CONVERTERS = {"blenderbot": _blenderbot, "blenderbot-small": _blenderbot_small,
              "m2m_100": _m2m_100, "plbart": _plbart, "mvp": _mvp, "fsmt": _fsmt,
              "bigbird_pegasus": _bigbird_pegasus, "longt5": _longt5,
              "t5gemma": _t5gemma}

ALIASES = {**{t: _BART_ALIASES for t in CONVERTERS}, "longt5": _T5_ALIASES,
           "fsmt": {**_BART_ALIASES, "vocab_size": "tgt_vocab_size"}}

_YAML = "; describe an approximation in a YAML file if one will do"
REFUSED = {
    "t5gemma2": ("T5Gemma 2's merged attention (one set of projections scoring the decoder's "
                 "and the encoder's keys together) and the vision encoder feeding its encoder "
                 "are not layer kinds flopcalc has" + _YAML),
    "cpmant": ("CPM-Ant prepends prompt_length prompt tokens to every input (its layers run "
               "over seq + prompt_length tokens, its head over seq) and adds segment "
               "embeddings and a segment-aware relative position bias, which flopcalc's "
               "models do not describe" + _YAML),
}
