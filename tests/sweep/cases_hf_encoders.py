"""More encoder-only models (flopcalc/models/hf/encoders2.py), each compared as the class
AutoModelForMaskedLM builds, as tests/sweep/cases_encoders.py's are."""

from . import Case

BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)
ROBERTA = {**BERT, "pad_token_id": 1}
UNTIED = dict(tie_word_embeddings=False)
ENC = (1, 7)
XLM = dict(vocab_size=128, emb_dim=64, n_layers=2, n_heads=4, max_position_embeddings=64)

CASES = [
    # RoBERTa's copies: positions offset by pad + 1
    Case("data2vec-text", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(dict(type_vocab_size=1, **UNTIED), dict(max_position_embeddings=514))),
    Case("ibert", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(max_position_embeddings=514, type_vocab_size=1))),
    # pre-norm relatives: a final norm; the embedding norm kept (RoBERTa-PreLayerNorm) or not
    Case("roberta-prelayernorm", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=1, max_position_embeddings=514))),
    Case("xlm-roberta-xl", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=2, num_hidden_layers=3))),
    Case("megatron-bert", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=3, num_hidden_layers=3))),
    # ERNIE: BERT, with a task-type table when use_task_id
    Case("ernie", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(dict(use_task_id=True), dict(use_task_id=True, task_type_vocab_size=5,
                                                **UNTIED))),
    # LayoutLM: BERT, four 2-D position tables and the pooler
    Case("layoutlm", auto="masked_lm", shrink={**BERT, "max_2d_position_embeddings": 32},
         lengths=ENC, variants=(UNTIED, dict(max_2d_position_embeddings=2048))),
    # RoCBERT: pronunciation and glyph tables, concatenated and projected (or not)
    Case("roc_bert", auto="masked_lm", lengths=ENC,
         shrink={**BERT, "pronunciation_vocab_size": 20, "pronunciation_embed_dim": 24,
                 "shape_vocab_size": 30, "shape_embed_dim": 16},
         variants=(dict(enable_shape=False), dict(enable_pronunciation=False, **UNTIED),
                   dict(concat_input=False))),
    # RoFormer: rotary, its frozen sinusoid table a parameter; E != d projected
    Case("roformer", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(dict(embedding_size=32), dict(embedding_size=32, **UNTIED),
                   dict(rotary_value=True, max_position_embeddings=512))),
    # MPNet: positions offset by 2, a relative bias of buckets × heads (its forward reads 32
    # buckets whatever the config says, so the table is never narrower)
    Case("mpnet", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(UNTIED, dict(relative_attention_num_buckets=64, num_attention_heads=8))),
    # rotary encoders: Jina v3 (XLM-RoBERTa's layers), Nomic (gated, no biases, head_dim)
    Case("jina_embeddings_v3", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=2, hidden_act="relu"))),
    Case("nomic_bert", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(UNTIED, dict(head_dim=32, hidden_act="gelu"))),
    # EuroBERT: Llama's layers bidirectional, an untied LM head
    Case("eurobert", auto="masked_lm", lengths=ENC,
         shrink={**BERT, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
                 "mask_token_id": 3},
         variants=(dict(num_key_value_heads=2, mlp_bias=True, attention_bias=True),
                   dict(tie_word_embeddings=True, head_dim=32))),
    # GTE: rotary, a gated MLP with a bias on down only, no token types when 0
    Case("gte", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=0, hidden_act="silu"),
                   dict(type_vocab_size=2))),
    # headless models (AutoModel): Splinter, BertGenerationEncoder, CLIP's and TIPSv2's text
    # towers (pre-norm, a final norm)
    Case("splinter", auto="base", shrink=BERT, lengths=ENC,
         variants=(dict(type_vocab_size=4, hidden_act="relu"),)),
    Case("bert-generation", auto="base", shrink=BERT, lengths=ENC,
         variants=(dict(max_position_embeddings=1024, num_hidden_layers=3),)),
    Case("clip_text_model", auto="base", lengths=ENC,
         shrink={**BERT, "max_position_embeddings": 16, "bos_token_id": 0, "eos_token_id": 2},
         variants=(dict(hidden_act="gelu", max_position_embeddings=128),)),
    Case("tipsv2_text_model", auto="base", shrink={**BERT, "max_position_embeddings": 16},
         lengths=ENC, variants=(dict(scale_sqrt_depth=False, hidden_act="gelu"),)),
    # ESM: pre-norm, a final norm; learned positions offset by pad + 1 or rotary; the embedding
    # norm only when asked; the contact head held, not run
    Case("esm", auto="masked_lm", fix=dict(vocab_size=33), lengths=ENC,
         shrink={**BERT, "pad_token_id": 1, "mask_token_id": 3},
         variants=(dict(position_embedding_type="rotary", emb_layer_norm_before=True),
                   dict(token_dropout=True, pad_token_id=1, mask_token_id=3, **UNTIED))),
    # MarkupLM (AutoModel): XPath tables per depth, their MLP, an unused projection, the pooler
    Case("markuplm", auto="base", lengths=ENC,
         shrink={**BERT, "max_xpath_tag_unit_embeddings": 24, "max_xpath_subs_unit_embeddings": 40,
                 "tag_pad_id": 20, "subs_pad_id": 30, "xpath_unit_hidden_size": 8,
                 "max_depth": 6},
         variants=(dict(max_depth=10, xpath_unit_hidden_size=16, pad_token_id=1),)),
    # FNet: Fourier mixing (no parameters, no counted FLOPs), the embedding projection, pooler
    Case("fnet", auto="masked_lm", lengths=ENC,
         shrink={k: v for k, v in BERT.items() if k != "num_attention_heads"},
         variants=(dict(type_vocab_size=2, hidden_act="relu", num_hidden_layers=3), UNTIED)),
    # TAPAS: seven token-type tables
    Case("tapas", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(dict(type_vocab_sizes=[2, 4, 8, 3]), UNTIED)),
    # XLM and FlauBERT: the language table (n_langs > 1), ReLU, sinusoidal filling
    Case("xlm", auto="masked_lm", shrink=XLM, lengths=ENC,
         variants=(dict(n_langs=3), dict(n_langs=3, use_lang_emb=False, gelu_activation=False),
                   dict(sinusoidal_embeddings=True))),
    # (pre_norm: tests/pytorch/test_flaubert_pre_norm.py, parameters only: transformers 5.24's
    # pre-norm forward fails)
    Case("flaubert", auto="masked_lm", shrink=XLM, lengths=ENC,
         variants=(dict(n_langs=2, gelu_activation=False),)),
    # BigBird with full attention (block-sparse refused), the pooler; no q/k/v biases
    Case("big_bird", auto="masked_lm", fix=dict(attention_type="original_full"), lengths=ENC,
         shrink=BERT, variants=(dict(use_bias=False, **UNTIED), dict(rescale_embeddings=True))),
    # RemBERT: decoupled input (E) and output (O) embedding widths, E = O
    # seeded: no tying: flopcalc refuses tying a token table to a decoder of another width
    Case("rembert", auto="masked_lm", lengths=ENC,
         shrink={**BERT, "input_embedding_size": 16, "output_embedding_size": 48},
         variants=(dict(input_embedding_size=32, output_embedding_size=32),
                   dict(output_embedding_size=128, hidden_act="relu")),
         seeded_skip=("tie_word_embeddings",)),
    # SqueezeBERT: grouped kernel-1 convolutions (default groups, then others), the pooler
    # seeded: no hidden_size: it must equal embedding_size (transformers fails)
    Case("squeezebert", auto="masked_lm", lengths=ENC, shrink={**BERT, "embedding_size": 64},
         variants=(dict(q_groups=2, k_groups=1, v_groups=8, post_attention_groups=4,
                        intermediate_groups=2, output_groups=8, **UNTIED),
                   dict(q_groups=1, k_groups=1, v_groups=1, intermediate_groups=1,
                        output_groups=1)),
         seeded_skip=("hidden_size",)),
    # ESM C: LayerNorms with biases, q/k norms and the final norm without, never tied
    # seeded: no KV heads: transformers requires as many as heads
    Case("esmc", auto="masked_lm", lengths=ENC,
         shrink={**BERT, "num_key_value_heads": 4, "head_dim": 16, "pad_token_id": 1,
                 "bos_token_id": 0, "eos_token_id": 2, "mask_token_id": 3},
         variants=(dict(attention_bias=True, mlp_bias=True), dict(tie_word_embeddings=True)),
         seeded_skip=("num_key_value_heads",)),
]
