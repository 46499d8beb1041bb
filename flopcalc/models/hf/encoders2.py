"""More encoder-only models (transformers 5.24, each counted as the class
`AutoModelForMaskedLM` builds, as `encoders.py`'s are): BERT's and RoBERTa's copies and
pre-norm relatives. Each converter reads the keys its config and model classes read
(`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with their defaults.

Types flopcalc cannot count exactly are in `REFUSED`, each with the feature it lacks.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, rotary_decoder
from .encoders import _bert, _factorised, _roberta


def _prenorm(raw: Raw, embedding_norm: bool) -> Raw:
    """BERT's layers made pre-norm: a LayerNorm before attention and before the MLP of every
    layer and one after the last layer (the post-norm layers' two norms moved, one added)."""
    return {**raw, "norm_placement": "pre", "final_norm": True,
            "embedding_norm": embedding_norm}


def _roberta_prelayernorm(c: Config) -> Raw:
    """RobertaPreLayerNormForMaskedLM (`roberta_prelayernorm/modeling_roberta_prelayernorm.py`):
    RoBERTa's embedding (its LayerNorm kept, positions offset by pad + 1), pre-norm layers
    (`attention.LayerNorm`, `intermediate.LayerNorm`) and the model's final `LayerNorm`, and
    RoBERTa's head."""
    return _prenorm(_roberta(c), embedding_norm=True)


def _xlm_roberta_xl(c: Config) -> Raw:
    """XLMRobertaXLForMaskedLM (`xlm_roberta_xl/modeling_xlm_roberta_xl.py`): RoBERTa's
    embedding without its LayerNorm, pre-norm layers (`self_attn_layer_norm`, `LayerNorm`)
    and the encoder's final `LayerNorm`, RoBERTa's head."""
    return _prenorm(_roberta(c), embedding_norm=False)


def _megatron_bert(c: Config) -> Raw:
    """MegatronBertForMaskedLM (`megatron_bert/modeling_megatron_bert.py`): BERT's embedding
    without its LayerNorm (positions from 0), pre-norm layers (`attention.ln`, `ln`) and the
    encoder's final `ln`, BERT's head."""
    return _prenorm(_bert(c), embedding_norm=False)


def _ernie(c: Config) -> Raw:
    """ErnieForMaskedLM (`ernie/modeling_ernie.py`): BERT, and with `use_task_id` a
    `task_type_embeddings` table of `task_type_vocab_size` rows added to the embedding sum:
    the same d-wide lookup as the token types, counted as that many more token-type rows (a
    lookup costs no matmul FLOPs)."""
    raw = _bert(c)
    if c("use_task_id", False):
        raw["token_types"] = raw["token_types"] + c("task_type_vocab_size", 3, int)
    return raw


def _ibert(c: Config) -> Raw:
    """IBertForMaskedLM (Kim et al. 2021, "I-BERT: Integer-only BERT Quantization", ICML;
    `ibert/modeling_ibert.py`) with `quant_mode` false, the default: RoBERTa's model
    (QuantLinear, QuantEmbedding and IntLayerNorm then run as float linear, embedding and
    LayerNorm layers with the same weights). In quant mode the quantisers keep scaling
    factors flopcalc does not count: refused."""
    if c("quant_mode", False):
        raise FlopcalcError(f"{c.label}: ibert with quant_mode: true keeps integer-only "
                            "quantisers (activation scaling factors, integer GELU, softmax and "
                            "LayerNorm) that flopcalc does not count; set quant_mode: false to "
                            "count the float model")
    if c("hidden_act", "gelu", str) != "gelu":
        raise FlopcalcError(f"{c.label}: ibert runs hidden_act gelu only (transformers refuses "
                            "another: IntGELU); set hidden_act: gelu")
    return _roberta(c)


def _layoutlm(c: Config) -> Raw:
    """LayoutLMForMaskedLM (Xu et al. 2020, "LayoutLM", KDD; `layoutlm/modeling_layoutlm.py`):
    BERT with four 2-D position tables (x, y, h, w: `max_2d_position_embeddings` × d each,
    looked up from the boxes, zeros when none are given) and the pooler, which
    LayoutLMForMaskedLM builds and runs on each sequence's first token."""
    rows = c("max_2d_position_embeddings", 1024, int)
    return {**_bert(c), "pooler": True,
            "input_extras": {"tables": [{"rows": rows, "width": c("hidden_size")}] * 4}}


def _roc_bert(c: Config) -> Raw:
    """RoCBertForMaskedLM (Su et al. 2022, "RoCBert", ACL; `roc_bert/modeling_roc_bert.py`):
    BERT with a pronunciation table (`pronunciation_vocab_size` × `pronunciation_embed_dim`)
    and a glyph table (`shape_vocab_size` × `shape_embed_dim`), both always held; with
    `concat_input` (the default) the token embedding and the enabled pronunciation and glyph
    embeddings (ids 0 when none are given) are concatenated and projected to d with a bias
    (`map_inputs_layer`) before the positions and token types are added."""
    d = c("hidden_size", expect=int)
    pron, shape = c("pronunciation_embed_dim", 768, int), c("shape_embed_dim", 512, int)
    extras: Raw = {"tables": [{"rows": c("pronunciation_vocab_size", 910, int), "width": pron},
                              {"rows": c("shape_vocab_size", 24858, int), "width": shape}]}
    if c("concat_input", True):
        extras["projections"] = [{"inputs": d + (pron if c("enable_pronunciation", True) else 0)
                                  + (shape if c("enable_shape", True) else 0)}]
    return {**_bert(c), "input_extras": extras}


def _roformer(c: Config) -> Raw:
    """RoFormerForMaskedLM (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary
    Position Embedding", arXiv:2104.09864; `roformer/modeling_roformer.py`): BERT's layers
    with rotary positions on queries and keys (and values with `rotary_value`: element-wise
    either way) over an `embedding_size` E-wide embedding without a position table, projected
    E → d with a bias when E ≠ d (`embeddings_project`); the sinusoid table the rotations read
    is an `nn.Embedding` of `max_position_embeddings` × d // heads held frozen (a parameter,
    an extra table here). Head: dense d → E, LayerNorm(E), decoder E → V (a second V bias when
    untied, as BERT's)."""
    d, heads = c("hidden_size", expect=int), c("num_attention_heads", expect=int)
    e = c("embedding_size", d, int)
    rows = c("max_position_embeddings", 1536, int)
    raw = _factorised(c, d, e if e != d else None, c("num_hidden_layers"))
    tied = bool(c("tie_word_embeddings", True))
    return {**raw, "positions": "rotary", "max_seq_len": rows, "lm_head_bias": 1 if tied else 2,
            "input_extras": {"tables": [{"rows": rows, "width": d // heads}]}}


def _mpnet(c: Config) -> Raw:
    """MPNetForMaskedLM (Song et al. 2020, "MPNet", NeurIPS; `mpnet/modeling_mpnet.py`):
    BERT's post-norm layers without token types, learned positions offset as RoBERTa's with
    the padding index fixed at 1 (`MPNetEmbeddings.padding_idx`: positions start at 2 whatever
    pad_token_id is), and a T5-style relative-position bias (`relative_attention_num_buckets`
    × heads) computed once and added to every layer's scores (a lookup and additions: no
    matmul FLOPs); RoBERTa's head."""
    rows = c("max_position_embeddings", 512, int)
    if rows < 3:
        raise FlopcalcError(f"{c.label}: max_position_embeddings={rows} leaves no position "
                            "after MPNet's offset of 2; check the number")
    raw = _bert(c)
    return {**raw, "token_types": 0, "max_seq_len": rows - 2, "position_offset": 2,
            "input_extras": {"tables": [{"rows": c("relative_attention_num_buckets", 32, int),
                                         "width": c("num_attention_heads")}]}}


def _jina_embeddings_v3(c: Config) -> Raw:
    """JinaEmbeddingsV3ForMaskedLM (`jina_embeddings_v3/modeling_jina_embeddings_v3.py`):
    XLM-RoBERTa's post-norm layers and head with rotary positions in place of the position
    table (q, k, v, o and fc1, fc2 with biases)."""
    return {**_bert(c), "positions": "rotary", "lm_head_bias": None if c(
        "tie_word_embeddings", True) else 2}


def _nomic_bert(c: Config) -> Raw:
    """NomicBertForMaskedLM (Nussbaum et al. 2024, "Nomic Embed", arXiv:2402.01613;
    `nomic_bert/modeling_nomic_bert.py`): BERT's post-norm layers with rotary positions (no
    position table), q, k, v, o of `head_dim` heads without biases and a gated MLP without
    biases (`hidden_act`, SiLU by default); BERT's embedding norm, token types and head."""
    raw = _bert(c)
    raw.update(positions="rotary", mlp="gated", bias={"qkv": False, "attn_out": False,
                                                       "mlp": False},
               activation=_act(c("hidden_act", "silu", str)))
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    return raw


def _gte(c: Config) -> Raw:
    """GteForMaskedLM (Li et al. 2023, "Towards General Text Embeddings with Multi-stage
    Contrastive Learning", arXiv:2308.03281; `gte/modeling_gte.py`): BERT's post-norm layers
    with rotary positions (no position table), q, k, v, o with biases, a gated MLP whose down
    projection alone has a bias; the embedding norm, token types when `type_vocab_size` > 0,
    RoBERTa's head (one V bias)."""
    raw = _bert(c)
    raw.update(positions="rotary", mlp="gated", activation=_act(c("hidden_act", "gelu", str)),
               bias={"qkv": True, "attn_out": True, "mlp": False, "mlp_down": True},
               token_types=max(c("type_vocab_size", 1, int), 0), lm_head_bias=1)
    return raw


def _headless(raw: Raw) -> Raw:
    """A model transformers builds only without a head (`AutoModel`): its last hidden states
    are the output (no masked-LM head, no second vocabulary bias)."""
    return {**raw, "head": "none", "lm_head_bias": 0, "tie_embeddings": True}


def _splinter(c: Config) -> Raw:
    """SplinterModel (Ram et al. 2021, "Few-Shot Question Answering by Pretraining Span
    Selection", ACL; `splinter/modeling_splinter.py`), the class AutoModel builds (the
    question-answering heads are separate classes): BERT's embedding and post-norm layers,
    without a pooler or a head."""
    return _headless(_bert(c))


def _bert_generation(c: Config) -> Raw:
    """BertGenerationEncoder (Rothe et al. 2020, "Leveraging Pre-trained Checkpoints for
    Sequence Generation Tasks", TACL; `bert_generation/modeling_bert_generation.py`), the class
    AutoModel builds: BERT's post-norm layers over word and position tables (no token types)
    and the embedding LayerNorm, without a pooler or a head."""
    return {**_headless(_bert(c)), "token_types": 0}


def _text_tower(c: Config, positions: str) -> Raw:
    """CLIP-style text encoders (the class AutoModel builds): pre-norm layers (`layer_norm1`
    before attention, `layer_norm2` before the MLP) with biases everywhere, a plain MLP, a
    final LayerNorm, no embedding norm, no head (pooling gathers or averages: no matmul)."""
    return {
        "architecture": "encoder-only",
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": _act(str(c("hidden_act", "gelu", str)).replace("quick_gelu", "gelu")),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "pre",
        "final_norm": True,
        "positions": positions,
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "head": "none",
        "tie_embeddings": True,
    }


def _clip_text_model(c: Config) -> Raw:
    """CLIPTextModel (Radford et al. 2021, "Learning Transferable Visual Models From Natural
    Language Supervision", ICML; `clip/modeling_clip.py`): a learned position table of
    `max_position_embeddings` rows and pre-norm layers under a causal mask; eager attention
    multiplies every (query, key) pair (the mask is added to the scores), which is what the
    default `--attention full` counts. (`--attention causal` counts an encoder's pairs
    bidirectionally: s², not the s(s+1)/2 CLIP's mask lets through.)"""
    return _text_tower(c, "learned")


def _tipsv2_text_model(c: Config) -> Raw:
    """Tipsv2TextModel (`tipsv2/modeling_tipsv2.py`): fixed sinusoidal positions (a buffer,
    `max_position_embeddings` long), the embedding scaled by √d (`scale_sqrt_depth`,
    element-wise), bidirectional pre-norm layers (ReLU by default) and a final LayerNorm;
    the output is mean-pooled (no matmul)."""
    return _text_tower(c, "sinusoidal")


def _esm(c: Config) -> Raw:
    """EsmForMaskedLM (Lin et al. 2023, "Evolutionary-scale prediction of atomic-level protein
    structure with a language model", Science; `esm/modeling_esm.py`): pre-norm layers
    (`attention.LayerNorm`, `LayerNorm`) with biases, the encoder's final
    `emb_layer_norm_after`, an embedding LayerNorm only with `emb_layer_norm_before`, no token
    types; positions learned (`position_embedding_type` absolute: a table of
    `max_position_embeddings` rows read from pad + 1 on, as RoBERTa's) or rotary. The head:
    dense d × d, LayerNorm, decoder d → V without a bias and one V bias, tied or not. The
    contact-prediction regression (layers·heads → 1 with a bias) is held by the model but
    not run by its forward: counted as a table of layers·heads + 1 parameters."""
    raw = _bert(c)
    absolute = c("position_embedding_type", "absolute", str) == "absolute"
    rows = c("max_position_embeddings", 1026, int)
    contact = c("num_hidden_layers", expect=int) * c("num_attention_heads", expect=int) + 1
    raw.update(norm_placement="pre", final_norm=True,
               embedding_norm=bool(c("emb_layer_norm_before", False)), token_types=0,
               lm_head_bias=1, input_extras={"tables": [{"rows": contact, "width": 1}]})
    if not absolute:
        raw.update(positions="rotary", max_seq_len=rows)
    elif c.has("pad_token_id"):
        pad = c("pad_token_id", expect=int)
        if rows - pad - 1 < 1:
            raise FlopcalcError(f"{c.label}: max_position_embeddings={rows} leaves no position "
                                f"after the padding offset (pad_token_id={pad}); check the "
                                "numbers")
        raw.update(max_seq_len=rows - pad - 1, position_offset=pad + 1)
    return raw


def _markuplm(c: Config) -> Raw:
    """MarkupLMModel (Li et al. 2022, "MarkupLM", ACL; `markuplm/modeling_markuplm.py`), the
    class AutoModel builds: RoBERTa's embedding (positions from pad + 1) and BERT's layers, the
    pooler, and the XPath embedding added to every token: `max_depth` tag tables
    (`max_xpath_tag_unit_embeddings` × u) and as many subscript tables
    (`max_xpath_subs_unit_embeddings` × u), whose u·depth-wide sum runs through
    `xpath_unitseq2_inner` (u·depth → 4d), ReLU and `inner2emb` (4d → d), both with biases;
    `xpath_unitseq2_embeddings` (u·depth → d) is held but not called."""
    d, u, depth = c("hidden_size", expect=int), c("xpath_unit_hidden_size", 32, int), \
        c("max_depth", 50, int)
    extras = {"tables": [{"rows": c("max_xpath_tag_unit_embeddings", 256, int), "width": u,
                          "count": depth},
                         {"rows": c("max_xpath_subs_unit_embeddings", 1024, int), "width": u,
                          "count": depth}],
              "projections": [{"inputs": u * depth, "outputs": 4 * d}, {"inputs": 4 * d},
                              {"inputs": u * depth, "runs": False}]}
    return {**_headless(_roberta(c)), "pooler": True, "input_extras": extras}


def _fnet(c: Config) -> Raw:
    """FNetForMaskedLM (Lee-Thorp et al. 2022, "FNet", NAACL; `fnet/modeling_fnet.py`): BERT's
    embedding (positions from 0, `type_vocab_size` token types, LayerNorm) followed by a
    `projection` d → d with a bias, post-norm layers whose token mixer is Fourier mixing
    (`kinds.fourier`: no parameters, no counted FLOPs) and a BERT MLP, the pooler (FNetModel
    builds and runs it), BERT's head. `use_tpu_fourier_optimizations` multiplies DFT matrices
    instead of calling an FFT: refused."""
    if c("use_tpu_fourier_optimizations", False):
        raise FlopcalcError(f"{c.label}: fnet with use_tpu_fourier_optimizations: true mixes "
                            "tokens by complex DFT-matrix products, which flopcalc does not "
                            "count; set it to false (the FFT path)")
    n = c("num_hidden_layers", expect=int)
    # no attention: BERT's keys without its head count (FNetConfig has none)
    raw = _bert(Config({**c.data, "num_attention_heads": 1}, c.label, c.model_type))
    raw.pop("n_heads")
    return {**raw, "pooler": True, "layer_types": ["fourier"] * n if n > 0 else ["fourier"],
            "activation": _act(str(c("hidden_act", "gelu_new", str)).replace("gelu_new", "gelu")),
            "input_extras": {"projections": [{"inputs": c("hidden_size")}]}}


def _tapas(c: Config) -> Raw:
    """TapasForMaskedLM (Herzig et al. 2020, "TAPAS", ACL; `tapas/modeling_tapas.py`): BERT with
    one token-type table per entry of `type_vocab_sizes` (segment, column, row, rank, ...: d
    wide each, their lookups summed), counted as one table of their summed rows; no pooler
    under the masked-LM head."""
    sizes = c.ints("type_vocab_sizes", [3, 256, 256, 2, 256, 256, 10])
    return {**_bert(c), "token_types": sum(sizes)}


def _xlm(c: Config) -> Raw:
    """XLMWithLMHeadModel (Lample & Conneau 2019, "Cross-lingual Language Model Pretraining",
    NeurIPS; `xlm/modeling_xlm.py`), the class AutoModelForMaskedLM builds: a learned position
    table (filled with sinusoids under `sinusoidal_embeddings`, still a parameter) from 0, a
    language table of `n_langs` rows when n_langs > 1 and `use_lang_emb`, the embedding
    LayerNorm, post-norm layers (q, k, v, out with biases, an MLP 4d wide with biases, GELU
    under `gelu_activation` else ReLU), and `pred_layer.proj` d → V with a bias, tied to the
    token table. The adaptive softmax head (`asm`) is refused."""
    if c("asm", False):
        raise FlopcalcError(f"{c.label}: {c.model_type} with asm: true predicts through an "
                            "adaptive log-softmax (AdaptiveLogSoftmaxWithLoss: clusters of "
                            "the vocabulary), which flopcalc does not count; set asm: false")
    d, langs = c("emb_dim", expect=int), c("n_langs", 1, int)
    raw: Raw = {
        "architecture": "encoder-only",
        "n_layers": c("n_layers"),
        "d_model": d,
        "n_heads": c("n_heads"),
        "d_ff": 4 * d,
        "mlp": "plain",
        "activation": "gelu" if c("gelu_activation", True) else "relu",
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings", 512),
        "vocab_size": c("vocab_size"),
        "embedding_norm": True,
        "head": "lm",
        "lm_head_bias": 1,
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
    }
    if langs > 1 and c("use_lang_emb", True):
        raw["input_extras"] = {"tables": [{"rows": langs, "width": d}]}
    return raw


def _flaubert(c: Config) -> Raw:
    """FlaubertWithLMHeadModel (Le et al. 2020, "FlauBERT", LREC;
    `flaubert/modeling_flaubert.py`): XLM's model, with `pre_norm` moving each layer's two
    LayerNorms before their sublayers (no norm after the last layer; the same matmuls:
    transformers 5.24's pre-norm forward itself fails, indexing its cache per layer, so only
    its parameters are checked). With `layerdrop` > 0 a training forward skips layers at
    random; the count is of every layer (the eval forward; training's expectation is (1 − p)
    of the layers' share)."""
    raw = _xlm(c)
    if c("pre_norm", False):
        raw["norm_placement"] = "pre"
    return raw


def _big_bird(c: Config) -> Raw:
    """BigBirdForMaskedLM (Zaheer et al. 2020, "Big Bird: Transformers for Longer Sequences",
    NeurIPS; `big_bird/modeling_big_bird.py`) with `attention_type: original_full`: BERT's
    embedding and post-norm layers (q, k, v biases under `use_bias`), the pooler (BigBirdModel
    builds and runs it) and BERT's head. Block-sparse attention (the default) attends to
    `num_random_blocks` random blocks per query block above (5 + 2·r)·block_size tokens and
    falls back to full attention below: refused, naming that switch."""
    kind = c("attention_type", "block_sparse", str)
    if kind != "original_full":
        size, r = c("block_size", 64, int), c("num_random_blocks", 3, int)
        raise FlopcalcError(
            f"{c.label}: big_bird attention_type '{kind[:40]}' is not counted: block-sparse "
            f"attention (sliding, global and {r} random blocks of {size} tokens) is not a "
            "layer kind flopcalc has; transformers runs full attention for sequences of at "
            f"most {(5 + 2 * r) * size:,} tokens, which attention_type: original_full counts")
    use = bool(c("use_bias", True))
    return {**_bert(c), "pooler": True,
            "bias": {"qkv": use, "attn_out": True, "mlp": True},
            "activation": _act(str(c("hidden_act", "gelu_new", str)).replace("gelu_new",
                                                                              "gelu"))}


def _rembert(c: Config) -> Raw:
    """RemBertForMaskedLM (Chung et al. 2021, "Rethinking Embedding Coupling in Pre-trained
    Language Models", ICLR; `rembert/modeling_rembert.py`): BERT's post-norm layers over an
    `input_embedding_size` E-wide embedding (tables and LayerNorm E wide, then
    `embedding_hidden_mapping_in` E → d with a bias, always), and a head of its own width
    `output_embedding_size` O: dense d → O, activation, LayerNorm(O), decoder O → V with a
    bias; the input and output embeddings are decoupled (untied), as the paper's point is."""
    d, e = c("hidden_size", expect=int), c("input_embedding_size", 256, int)
    o = c("output_embedding_size", 1664, int)
    if c("tie_word_embeddings", False):
        raise FlopcalcError(f"{c.label}: rembert with tie_word_embeddings: true ties an "
                            f"{e}-wide token table to an {o}-wide decoder; transformers keeps "
                            "them apart (set it to false)")
    raw = _factorised(c, d, e, c("num_hidden_layers"))
    raw.update(tie_embeddings=False, lm_head_bias=1)
    if o != e:
        raw["head_width"] = o
    return raw


def _squeezebert(c: Config) -> Raw:
    """SqueezeBertForMaskedLM (`squeezebert/modeling_squeezebert.py`): BERT's embedding (its
    LayerNorm over d, tables `embedding_size` wide: they must be d), layers whose projections
    are grouped kernel-1 convolutions (`kinds.squeezebert`), the pooler (SqueezeBertModel
    builds and runs it) and BERT's head."""
    d, e = c("hidden_size", expect=int), c("embedding_size", 768, int)
    if e != d:
        raise FlopcalcError(f"{c.label}: squeezebert embedding_size={e} != hidden_size={d} "
                            "does not run in transformers (the embedding LayerNorm is "
                            "hidden_size wide); set them equal")
    n = c("num_hidden_layers", expect=int)
    raw = _bert(c)
    raw.pop("d_ff")
    keys = ("q_groups", "k_groups", "v_groups", "post_attention_groups", "intermediate_groups",
            "output_groups")
    block = {k: c(k, 4 if k != "post_attention_groups" else 1, int) for k in keys}
    return {**raw, "pooler": True, "layer_types": ["squeezebert"] * max(n, 1),
            "squeezebert": {**block, "intermediate_size": c("intermediate_size", expect=int)}}


def _esmc(c: Config) -> Raw:
    """EsmcForMaskedLM (EvolutionaryScale 2024, "ESM Cambrian"; `esmc/modeling_esmc.py`):
    Llama-shaped pre-norm layers attending bidirectionally, with LayerNorms (biases) in place
    of RMSNorms, q and k LayerNorms over all heads without biases, rotary positions, a gated
    MLP (`mlp_bias`), q, k, v, o with `attention_bias`, a final LayerNorm without a bias, and
    the head: dense d × d, GELU, LayerNorm, decoder d → V with a bias, never tied (the model
    declares no tied weights, whatever tie_word_embeddings says).
    ESM3's residue scaling of each residual branch is element-wise. The q/k norms are
    hidden_size wide: grouped-query attention does not run there (refused)."""
    heads = c("num_attention_heads", expect=int)
    kv = c("num_key_value_heads", heads, int)
    if kv != heads:
        raise FlopcalcError(f"{c.label}: esmc with num_key_value_heads={kv} != "
                            f"num_attention_heads={heads} does not run in transformers (its k "
                            "norm is hidden_size wide); set them equal")
    raw = rotary_decoder(c, tie=False)
    attn, mlp = bool(c("attention_bias", False)), bool(c("mlp_bias", False))
    return {**raw, "architecture": "encoder-only", "norm": "layernorm", "norm_placement": "pre",
            "final_norm": True, "final_norm_bias": False, "qk_norm": "all_heads",
            "qk_norm_bias": False, "bias": {"qkv": attn, "attn_out": attn, "mlp": mlp},
            "head": "masked-lm", "lm_head_bias": 1, "tie_embeddings": False}


def _act(name: str) -> str:
    return "relu" if name == "relu" else "silu" if name in ("silu", "swish") else "gelu"


def _eurobert(c: Config) -> Raw:
    """EuroBertForMaskedLM (Boizard et al. 2025, "EuroBERT", arXiv:2503.05500;
    `eurobert/modeling_eurobert.py`): Llama's pre-norm layers (RMSNorm, grouped-query
    attention with `attention_bias`, a gated MLP with `mlp_bias`, rotary positions, a final
    norm) attending bidirectionally, and `lm_head` d → V (with a bias when `mlp_bias`), untied
    by default."""
    raw = rotary_decoder(c, tie=False)
    mlp = bool(c("mlp_bias", False))
    attn = bool(c("attention_bias", False))
    return {**raw, "architecture": "encoder-only", "norm_placement": "pre", "final_norm": True,
            "bias": {"qkv": attn, "attn_out": attn, "mlp": mlp}, "head": "lm",
            "lm_head_bias": 1 if mlp else 0}


CONVERTERS = {"data2vec-text": _roberta, "roberta-prelayernorm": _roberta_prelayernorm,
              "xlm-roberta-xl": _xlm_roberta_xl, "megatron-bert": _megatron_bert,
              "ernie": _ernie, "ibert": _ibert,
              "layoutlm": _layoutlm, "roc_bert": _roc_bert, "roformer": _roformer,
              "mpnet": _mpnet, "jina_embeddings_v3": _jina_embeddings_v3,
              "nomic_bert": _nomic_bert, "eurobert": _eurobert, "gte": _gte,
              "splinter": _splinter, "bert-generation": _bert_generation,
              "clip_text_model": _clip_text_model, "tipsv2_text_model": _tipsv2_text_model,
              "esm": _esm, "markuplm": _markuplm,
              "fnet": _fnet, "tapas": _tapas,
              "xlm": _xlm, "flaubert": _flaubert, "big_bird": _big_bird,
              "rembert": _rembert, "squeezebert": _squeezebert,
              "esmc": _esmc}

# Encoders whose FLOPs depend on the data, or whose token mixing is a kind flopcalc lacks
# (transformers 5.24's modeling files), named with what is missing.
_YAML = "; describe an approximation in a YAML file if one will do"
REFUSED = {
    "mra": ("MRA's multi-resolution attention keeps `block_per_row` blocks per row of an "
            "approximate, block-averaged score matrix (`approx_mode`): which blocks run depends "
            "on the data, in CUDA kernels; not a layer kind flopcalc can count exactly"
            + _YAML),
    "canine": ("CANINE's hashed character embeddings (`num_hash_functions` tables), "
               "downsampling convolution, local initial and final character transformers and "
               "upsampling are not layer kinds flopcalc has" + _YAML),
    "funnel": ("Funnel Transformer's pooling between blocks (`block_sizes`, `pooling_type`), "
               "relative attention and upsampling decoder are not layer kinds flopcalc has"
               + _YAML),
}
