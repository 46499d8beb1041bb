"""More classic models (transformers 5.24), each counted as the class `AutoModelForCausalLM` or
`AutoModelForMaskedLM` builds: TrOCR's text decoder, X-MOD, VisualBERT's text
forward, DeBERTa (v1), ConvBERT,
MobileBERT, Nyströmformer, YOSO, LiLT, LUKE,
LayoutLMv3's text forward. Each converter reads the keys its config
and model classes read (`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with
their defaults; `ALIASES` are the config classes' `attribute_map`.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .classic import _act
from .common import Config, Raw
from .encoders import _bert, _deberta_v2, _factorised, _pos_att_type, _roberta
from .encoders2 import _headless, _prenorm


def _trocr(c: Config) -> Raw:
    """TrOCRForCausalLM (Li et al. 2021, "TrOCR: Transformer-based Optical Character
    Recognition with Pre-trained Models"; `trocr/modeling_trocr.py`): BART's decoder alone.
    Post-norm layers (self_attn_layer_norm after the attention's residual add,
    final_layer_norm after the MLP's), q, k, v, o, fc1 and fc2 with biases, no final norm; a
    LayerNorm after the embeddings when `layernorm_embedding`; positions a learned table of
    max_position_embeddings + 2 rows (its ids start at 2) or, without
    `use_learned_position_embeddings`, sinusoids held as a buffer; `output_projection` without
    a bias, tied unless tie_word_embeddings is false. TrOCRForCausalLM sets `is_decoder`, so
    every layer also holds a cross-attention (keys and values `cross_attention_hidden_size`
    wide) and its LayerNorm, which a text-only forward never runs (`kinds.idle_cross`).
    `scale_embedding`'s √d is a scalar multiply, neither a parameter nor a matmul."""
    learned = bool(c("use_learned_position_embeddings", True))
    raw: Raw = {
        "n_layers": c.layers("decoder_layers"),
        "d_model": c("d_model"),
        "n_heads": c("decoder_attention_heads"),
        "d_ff": c("decoder_ffn_dim"),
        "mlp": "plain",
        "activation": _act(str(c("activation_function", "gelu"))),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "embedding_norm": bool(c("layernorm_embedding", True)),
        "positions": "learned" if learned else "sinusoidal",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "layer_types": ["full_idle_cross"],
    }
    if learned:
        raw["position_offset"] = 2
    width = c("cross_attention_hidden_size", None, int)
    if width is not None:
        raw["idle_cross"] = {"kv_width": width}
    return raw


def _xmod(c: Config) -> Raw:
    """XmodForMaskedLM (Pfeiffer et al. 2022, "Lifting the Curse of Multilinguality by
    Pre-training Modular Transformers", NAACL; `xmod/modeling_xmod.py`): RoBERTa's model and
    head (post-norm, or with `pre_norm` pre-norm layers and the encoder's final LayerNorm, the
    embedding LayerNorm kept), each layer's MLP followed by per-language bottleneck adapters
    (`kinds.language_adapters`): one per distinct entry of `languages` (an `nn.ModuleDict`
    keyed by the code), hidden_size // `adapter_reduction_factor` wide, with their own
    LayerNorm when `adapter_layer_norm`, else the layer's output LayerNorm applied again when
    `adapter_reuse_layer_norm`. A forward runs the adapter of each sequence's language (the
    config's `default_language` when no lang_ids are given): one adapter per token."""
    raw = _roberta(c)
    if c("pre_norm", False, bool):
        raw = _prenorm(raw, embedding_norm=True)
    languages = dict.fromkeys(str(code) for code in c("languages", ["en_XX"], list))
    if not languages:
        raise FlopcalcError(f"{c.label}: 'languages' is empty: X-MOD needs at least one "
                            "language's adapters (transformers' forward picks one)")
    raw["language_adapters"] = {
        "languages": len(languages),
        "reduction_factor": c("adapter_reduction_factor", 2, int),
        "own_norm": bool(c("adapter_layer_norm", False)),
        "reuse_norm": bool(c("adapter_reuse_layer_norm", True)),
    }
    return raw


def _visual_bert(c: Config) -> Raw:
    """VisualBertModel (Li et al. 2019, "VisualBERT: A Simple and Performant Baseline for
    Vision and Language", arXiv:1908.03557; `visual_bert/modeling_visual_bert.py`), the class
    AutoModel builds, over text (no `visual_embeds`): BERT's embedding (positions from 0) and
    post-norm layers, and the pooler on each sequence's first token. The visual inputs' parts
    are held but not read by a text forward: `visual_token_type_embeddings` (type_vocab_size ×
    d), `visual_position_embeddings` (max_position_embeddings × d) and `visual_projection`
    (visual_embedding_dim → d with a bias). With `bypass_transformer` the model holds an
    `additional_layer` (a whole BERT layer run only on the concatenated visual states), which
    flopcalc does not describe: refused."""
    if c("bypass_transformer", False, bool):
        raise FlopcalcError(f"{c.label}: visual_bert with bypass_transformer: true holds an "
                            "additional BERT layer that runs only on visual inputs, which "
                            "flopcalc does not describe; set bypass_transformer: false")
    d = c("hidden_size", expect=int)
    extras = {"tables": [{"rows": c("type_vocab_size", 2, int), "width": d},
                         {"rows": c("max_position_embeddings", 512, int), "width": d}],
              "projections": [{"inputs": c("visual_embedding_dim", 512, int), "runs": False}]}
    return {**_headless(_bert(c)), "pooler": True, "input_extras": extras}


def _deberta(c: Config) -> Raw:
    """DebertaForMaskedLM (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled
    Attention", ICLR; `deberta/modeling_deberta.py`): DeBERTa-v2's embedding, post-norm layers
    and heads (legacy or not; see `encoders._deberta_v2`), each layer's attention v1's
    (`kinds.deberta_v1`): q, k, v from one `in_proj` without a bias plus `q_bias` and
    `v_bias`; with `relative_attention`, c2p (`pos_proj`, no bias) and p2c (`pos_q_proj`, with
    a bias) against 2·min(L, S) rows of a 2S-row table, S = `max_relative_positions`, else
    `max_position_embeddings`. v1 reads none of v2's `position_buckets`, `share_att_key`,
    `norm_rel_ebd`, `conv_kernel_size` or `attention_head_size` (head_dim = d / heads).
    `talking_head` (read when a file sets it: two heads × heads projections over the scores
    and the probabilities) is refused."""
    if c("talking_head", False):
        raise FlopcalcError(f"{c.label}: deberta with talking_head: true mixes the scores and "
                            "probabilities across heads (head_logits_proj, head_weights_proj), "
                            "which flopcalc does not describe; set talking_head: false")
    data = {k: v for k, v in c.data.items()
            if k not in ("position_buckets", "share_att_key", "norm_rel_ebd",
                         "conv_kernel_size", "attention_head_size")}
    raw = _deberta_v2(Config(data, c.label, c.model_type))
    relative = bool(c("relative_attention", False))
    types = _pos_att_type(c)
    block = {"relative": relative, "span": raw["deberta"]["span"], "c2p": "c2p" in types,
             "p2c": "p2c" in types}
    return {**raw, "bias": {"qkv": True, "k": False, "attn_out": True, "mlp": True},
            "layer_types": ["deberta_v1"], "deberta": block}


def _convbert(c: Config) -> Raw:
    """ConvBertForMaskedLM (Jiang et al. 2020, "ConvBERT: Improving BERT with Span-based
    Dynamic Convolution", NeurIPS; `convbert/modeling_convbert.py`): ELECTRA's embedding (E =
    `embedding_size` wide, projected E → d with a bias only when E ≠ d) and generator head
    (dense d → E, GELU, LayerNorm(E), `generator_lm_head` E → V with one bias), and post-norm
    layers of mixed attention and span-based dynamic convolution with a grouped MLP
    (`kinds.convbert`: `head_ratio`, `conv_kernel_size`, `num_groups`)."""
    d, e = c("hidden_size", expect=int), c("embedding_size", 768, int)
    n = c.layers()
    raw = _factorised(c, d, e if e != d else None, n)
    raw.pop("d_ff")
    block = {"head_ratio": c("head_ratio", 2, int),
             "conv_kernel_size": c("conv_kernel_size", 9, int),
             "num_groups": c("num_groups", 1, int),
             "intermediate_size": c("intermediate_size", expect=int)}
    return {**raw, "lm_head_bias": 1, "layer_types": ["convbert"], "convbert": block}


def _mobilebert(c: Config) -> Raw:
    """MobileBertForMaskedLM (Sun et al. 2020, "MobileBERT", ACL;
    `mobilebert/modeling_mobilebert.py`): bottlenecked post-norm layers with stacked
    feed-forward networks (`kinds.mobilebert`), BERT's masked-LM transform (d × d, a real
    LayerNorm), no pooler.

    The embedding: token rows `embedding_size` (E) wide; with `trigram_input` each token's row
    and its two neighbours' (3E) run through `embedding_transformation` 3E → d with a bias, else
    E → d when E ≠ d (an `input_extras` projection, 2·T·3E·d FLOPs); d-wide position and
    token-type tables, and the embedding's norm (d). The head multiplies by the d × V matrix
    [decoder.weightᵀ; dense.weight]: its first E rows are the (tied) token table, the other
    d − E its own (`cls.predictions.dense`, V × (d − E)). Together they are one V × d table,
    which is how flopcalc holds them (`embed.tokens`, read E wide by the lookup, all d by
    the head: 2·T·d·V), with one vocabulary bias. Untied, the decoder holds its own V × E copy
    (an extra table) and, as BERT's, a second bias."""
    d, e = c("hidden_size", expect=int), c("embedding_size", 128, int)
    if e > d:
        raise FlopcalcError(f"{c.label}: mobilebert embedding_size={e} > hidden_size={d} does "
                            "not build in transformers (the head's dense is V × (d − E)); "
                            "check the numbers")
    c.layers()  # the layer count checked, as every converter does
    trigram = bool(c("trigram_input", True))
    tied = bool(c("tie_word_embeddings", True))
    raw = _bert(c)
    raw.pop("d_ff")
    raw["activation"] = _act(str(c("hidden_act", "relu")))
    bottleneck = bool(c("use_bottleneck", True))
    block = {"intra_bottleneck_size": c("intra_bottleneck_size", 128, int),
             "use_bottleneck": bottleneck,
             "key_query_shared_bottleneck": bool(c("key_query_shared_bottleneck", True)),
             "use_bottleneck_attention": bool(c("use_bottleneck_attention", False)),
             "num_feedforward_networks": c("num_feedforward_networks", 4, int),
             "intermediate_size": c("intermediate_size", expect=int),
             "normalization_type": str(c("normalization_type", "no_norm", str))}
    extras: Raw = {}
    if trigram or e != d:
        extras["projections"] = [{"inputs": (3 if trigram else 1) * e, "outputs": d}]
    if not tied:
        extras["tables"] = [{"rows": c("vocab_size", expect=int), "width": e}]
    raw.update(tie_embeddings=True, lm_head_bias=1 if tied else 2, layer_types=["mobilebert"],
               mobilebert=block)
    if extras:
        raw["input_extras"] = extras
    return raw


def _nystromformer(c: Config) -> Raw:
    """NystromformerForMaskedLM (Xiong et al. 2021, "Nyströmformer", AAAI;
    `nystromformer/modeling_nystromformer.py`): BERT's embedding with a position table of
    max_position_embeddings + 2 rows read from 2, post-norm layers whose attention is
    Nyström's (`kinds.nystrom`: exact when `num_landmarks` equals `segment_means_seq_len`, the
    default, else over the landmarks; a depthwise convolution of the values over
    `conv_kernel_size` positions: transformers 5.24's config takes an int only), BERT's head."""
    raw = _bert(c)
    raw.update(position_offset=2, layer_types=["nystrom"],
               nystrom={"landmarks": c("num_landmarks", 64, int),
                        "segment_len": c("segment_means_seq_len", 64, int),
                        "conv_kernel": c("conv_kernel_size", 65, int)})
    return raw


def _yoso(c: Config) -> Raw:
    """YosoForMaskedLM (Zeng et al. 2021, "You Only Sample (Almost) Once", ICML;
    `yoso/modeling_yoso.py`): Nyströmformer's embedding (positions from 2) and BERT's layers
    and head, each attention YOSO's (`kinds.nystrom`, `yoso`) with `use_expectation`, the
    default: the expected collision kernel over every pair, computed densely, and
    `conv_window`'s depthwise convolution of the values. Without `use_expectation` the
    attention samples hash codes in CUDA kernels (`num_hash`, `hash_code_len`): which keys a
    query meets depends on the draw, refused."""
    if not c("use_expectation", True, bool):
        raise FlopcalcError(f"{c.label}: yoso with use_expectation: false samples "
                            "locality-sensitive hashes in CUDA kernels (num_hash random codes "
                            "drawn every forward), which flopcalc cannot count exactly; set "
                            "use_expectation: true")
    raw = _bert(c)
    raw.update(position_offset=2, layer_types=["yoso"],
               yoso={"conv_window": c("conv_window", 0, int)})
    return raw


def _lilt(c: Config) -> Raw:
    """LiltModel (Wang et al. 2022, "LiLT", ACL; `lilt/modeling_lilt.py`), the class AutoModel
    builds: RoBERTa's text embedding (positions from pad + 1) and BERT's layers, each beside a
    layout stream `channel_shrink_ratio` (r) times narrower (`kinds.lilt`), and the pooler.
    The layout embedding (`input_extras`): x, y, h and w tables of `max_2d_position_embeddings`
    rows, d/6 wide each (x and y read twice), concatenated (6·d/6 must be d) and projected
    d → d/r with a bias (`box_linear_embeddings`), plus a `box_position_embeddings` table of
    max_position_embeddings × d/r; its LayerNorm is held by layer 0. Without `bbox` the boxes
    are zeros: the same work."""
    d, r = c("hidden_size", expect=int), c("channel_shrink_ratio", 4, int)
    if d % 6:
        raise FlopcalcError(f"{c.label}: lilt hidden_size={d} is not a multiple of 6: its six "
                            "d/6-wide box embeddings do not make the d inputs of "
                            "box_linear_embeddings, and transformers fails; check the number")
    n = c.layers()
    raw = {**_headless(_roberta(c)), "pooler": True}
    raw.update(layer_types=["lilt_first"] + ["lilt"] * (n - 1),
               lilt={"channel_shrink_ratio": r,
                     "layout_ff": c("intermediate_size", expect=int) // max(r, 1)},
               input_extras={"tables": [{"rows": c("max_2d_position_embeddings", 1024, int),
                                         "width": d // 6, "count": 4},
                                        {"rows": c("max_position_embeddings", expect=int),
                                         "width": d // max(r, 1)}],
                             "projections": [{"inputs": d, "outputs": d // max(r, 1)}]})
    return raw


def _luke(c: Config) -> Raw:
    """LukeForMaskedLM (Yamada et al. 2020, "LUKE", EMNLP; `luke/modeling_luke.py`) over
    words (no entity inputs): RoBERTa's embedding, layers and head (its decoder weight never
    tied), and the pooler LukeModel builds and runs. Held but not run over words: each layer's
    entity-aware queries (`kinds.entity_aware`, with `use_entity_aware_attention`), and as
    `input_extras` the entity embedding (`entity_vocab_size` × `entity_emb_size` E,
    `entity_embedding_dense` E → d without a bias when E ≠ d, its own position and token-type
    tables and LayerNorm (2·d)) and the entity prediction head (dense d → E with a bias,
    LayerNorm (2·E), a decoder tied to the entity table, an `entity_vocab_size` bias)."""
    d, e = c("hidden_size", expect=int), c("entity_emb_size", 256, int)
    ve = c("entity_vocab_size", 500000, int)
    tied = bool(c("tie_word_embeddings", True))
    # LukeForMaskedLM ties its word decoder's bias but never its weight (`_tied_weights_keys`
    # names only the entity decoder and the bias): the word head is its own V × d
    raw = {**_roberta(c), "pooler": True, "tie_embeddings": False,
           "lm_head_bias": 1 if tied else 2}
    if c("use_entity_aware_attention", True, bool):
        raw["layer_types"] = ["entity_aware"]
    tables = [{"rows": ve, "width": e},  # entity_embeddings
              {"rows": c("max_position_embeddings", expect=int), "width": d},
              {"rows": c("type_vocab_size", 2, int), "width": d},
              {"rows": 2, "width": d},  # the entity embedding's LayerNorm: gain and bias
              {"rows": 2, "width": e},  # the entity head's LayerNorm
              {"rows": 1, "width": ve}]  # the entity head's bias
    if not tied:  # the entity decoder's own E × entity_vocab_size
        tables.append({"rows": ve, "width": e})
    projections = [{"inputs": d, "outputs": e, "runs": False}]  # the entity head's dense
    if e != d:
        projections.append({"inputs": e, "bias": False, "runs": False})
    raw["input_extras"] = {"tables": tables, "projections": projections}
    return raw


def _layoutlmv3(c: Config) -> Raw:
    """LayoutLMv3Model (Huang et al. 2022, "LayoutLMv3: Pre-training for Document AI with
    Unified Text and Image Masking", ACM MM; `layoutlmv3/modeling_layoutlmv3.py`), the class
    AutoModel builds, over text (no `pixel_values`; `bbox` zeros when not given): RoBERTa's
    embedding (positions from pad + 1) plus four 2-D tables (x and y `coordinate_size` wide,
    h and w `shape_size` wide, `max_2d_position_embeddings` rows: x and y read twice, their
    concatenation must be d), BERT's layers, no pooler, no head. As `input_extras`: the
    relative position biases (`rel_pos_bias` with `has_relative_attention_bias`, the x and y
    ones with `has_spatial_attention_bias`: bins × heads each), which transformers 5.24
    gathers by bucket (a lookup, no matmul), and with `visual_embed` the image parts a text
    forward does not run: the patch convolution (channels·p² → d with a bias), `cls_token`,
    `pos_embed` ((input_size/p)² + 1 rows), `LayerNorm` and `norm` (2·d each)."""
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    coord, shape = c("coordinate_size", 128, int), c("shape_size", 128, int)
    if 4 * coord + 2 * shape != d:
        raise FlopcalcError(f"{c.label}: layoutlmv3 4·coordinate_size + 2·shape_size = "
                            f"{4 * coord + 2 * shape} is not hidden_size={d}: the 2-D "
                            "embedding would not add to the token's, and transformers fails")
    if not c("text_embed", True, bool):
        raise FlopcalcError(f"{c.label}: layoutlmv3 with text_embed: false has no text "
                            "embedding: flopcalc counts the text forward; set text_embed: true")
    rows2d = c("max_2d_position_embeddings", 1024, int)
    tables = [{"rows": rows2d, "width": coord, "count": 2},
              {"rows": rows2d, "width": shape, "count": 2}]
    projections = []
    # each built on its own flag (the spatial one is read only with the 1-D one, but held)
    if c("has_relative_attention_bias", True, bool):
        tables.append({"rows": c("rel_pos_bins", 32, int), "width": heads})
    if c("has_spatial_attention_bias", True, bool):
        tables.append({"rows": c("rel_2d_pos_bins", 64, int), "width": heads, "count": 2})
    if c("visual_embed", True, bool):
        # LayoutLMv3Model divides input_size by patch_size: a whole number only
        ph = pw = c("patch_size", 16, int)
        side = c("input_size", 224, int) // ph
        tables += [{"rows": side * side + 2, "width": d},  # pos_embed and cls_token
                   {"rows": 4, "width": d}]  # LayerNorm and norm: gain and bias each
        projections.append({"inputs": c("num_channels", 3, int) * ph * pw, "runs": False})
    return {**_headless(_roberta(c)),
            "input_extras": {"tables": tables, "projections": projections}}


CONVERTERS = {"mobilebert": _mobilebert, "layoutlmv3": _layoutlmv3, "luke": _luke,
              "lilt": _lilt, "yoso": _yoso, "nystromformer": _nystromformer,
              "trocr": _trocr, "xmod": _xmod, "visual_bert": _visual_bert,
              "deberta": _deberta, "convbert": _convbert}

ALIASES = {
    "trocr": {"num_attention_heads": "decoder_attention_heads", "hidden_size": "d_model",
              "num_hidden_layers": "decoder_layers"},
}
