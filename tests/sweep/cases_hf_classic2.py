"""Classic types imported by flopcalc/models/hf/classic2.py (transformers 5.24), each compared
as the class AutoModelForCausalLM (or AutoModelForMaskedLM) builds."""

from . import Case

UNTIED = dict(tie_word_embeddings=False)
ENC = (1, 7)

CASES = [
    # TrOCR: BART's decoder alone, each layer holding a cross-attention a text-only forward
    # does not run (parameters only)
    Case("trocr", shrink=dict(d_model=64, decoder_ffn_dim=96, decoder_layers=2,
                              decoder_attention_heads=4, vocab_size=128,
                              max_position_embeddings=64),
         variants=(dict(cross_attention_hidden_size=48, **UNTIED),
                   dict(use_learned_position_embeddings=False, layernorm_embedding=False),
                   dict(activation_function="relu", scale_embedding=True, decoder_layers=3,
                        decoder_ffn_dim=1000))),
]

ROBERTA = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=96, max_position_embeddings=64, pad_token_id=1)
# X-MOD: RoBERTa with per-language adapters after every MLP; the forward needs a language
XMOD_LANG = dict(default_language="en_XX")
CASES += [
    Case("xmod", auto="masked_lm", shrink=ROBERTA, lengths=ENC, fix=XMOD_LANG,
         variants=(dict(languages=["en_XX", "de_DE", "fr_XX"], adapter_reduction_factor=4,
                        **UNTIED),
                   dict(pre_norm=True, adapter_layer_norm=True, ln_before_adapter=False,
                        languages=["de_DE", "en_XX"]),
                   dict(adapter_reuse_layer_norm=False, hidden_act="relu",
                        adapter_reduction_factor=3, num_hidden_layers=3))),
]

BERT = {**ROBERTA, "pad_token_id": 0}
CASES += [
    # VisualBERT (AutoModel) over text: BERT and the pooler, the visual tables and projection
    # held but not run
    Case("visual_bert", auto="base", lengths=ENC, shrink={**BERT, "visual_embedding_dim": 24},
         variants=(dict(visual_embedding_dim=2048, type_vocab_size=3),
                   dict(special_visual_initialize=False, hidden_act="relu",
                        max_position_embeddings=1024))),
]

CASES += [
    # DeBERTa (v1): q and v biased, k not; c2p and p2c against 2·min(L, S) table rows (S = 4
    # in the second variant, below the longer length: the slice stops growing)
    Case("deberta", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(dict(relative_attention=True, pos_att_type=["c2p", "p2c"]),
                   dict(relative_attention=True, pos_att_type="p2c", max_relative_positions=4,
                        **UNTIED),
                   dict(relative_attention=True, pos_att_type=["c2p"], embedding_size=32,
                        position_biased_input=False, type_vocab_size=2),
                   dict(legacy=False, hidden_act="relu", type_vocab_size=0))),
]

CASES += [
    # ConvBERT: h/2 attention heads of d/h beside span-based dynamic convolutions, grouped MLP
    # (the shrunk copies keep each variant's kernel and head ratio: 9 taps over 7 tokens pad)
    Case("convbert", auto="masked_lm", lengths=ENC,
         shrink={**BERT, "embedding_size": 48},
         variants=(dict(num_groups=2, embedding_size=128, **UNTIED),
                   dict(head_ratio=4, conv_kernel_size=5, hidden_act="relu"),
                   dict(head_ratio=8, num_groups=4))),
]

CASES += [
    # MobileBERT: bottlenecked layers with stacked FFNs, the trigram embedding projection, the
    # head's d × V matrix of which E rows are the token table
    # seeded: no hidden_size: it must not be below embedding_size (transformers fails)
    Case("mobilebert", auto="masked_lm", lengths=ENC,
         shrink=dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, embedding_size=16,
                     intra_bottleneck_size=32),
         variants=(UNTIED, dict(use_bottleneck=False, trigram_input=False),
                   dict(use_bottleneck_attention=True, normalization_type="layer_norm",
                        num_feedforward_networks=2, hidden_act="gelu"),
                   dict(key_query_shared_bottleneck=False, use_bottleneck_attention=True,
                        num_feedforward_networks=1)),
         seeded_skip=("hidden_size",)),
]

# Switch Transformers: T5 with top-1 experts in every (n // sparse)-th layer of each stack;
# lengths below expert_capacity (64), so no token is dropped and every token runs its expert
SWITCH = dict(vocab_size=128, d_model=64, d_kv=16, d_ff=96, num_layers=4, num_decoder_layers=4,
              num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=20,
              num_experts=4)
CASES += [
    Case("switch_transformers", auto="seq2seq", shrink=SWITCH, lengths=(1, 6),
         variants=(dict(num_sparse_encoder_layers=4, num_sparse_decoder_layers=1,
                        router_bias=True, **UNTIED),
                   dict(num_sparse_encoder_layers=0, num_sparse_decoder_layers=2,
                        dense_act_fn="gelu_new"),
                   dict(num_sparse_encoder_layers=2, num_sparse_decoder_layers=0,
                        expert_capacity=8))),
]

CASES += [
    # Nyströmformer: exact softmax when num_landmarks == segment_means_seq_len (the default),
    # a depthwise convolution over the values
    Case("nystromformer", auto="masked_lm", lengths=ENC,
         shrink={**ROBERTA, "segment_means_seq_len": 16, "num_landmarks": 16,
                 "conv_kernel_size": 5},
         variants=(dict(conv_kernel_size=1, **UNTIED),
                   dict(hidden_act="relu", type_vocab_size=1, max_position_embeddings=1024))),
    # the Nyström approximation over 4 landmarks runs sequences of segment_means_seq_len (8)
    Case("nystromformer", auto="masked_lm", lengths=(8,),
         shrink={**ROBERTA, "segment_means_seq_len": 8, "num_landmarks": 4,
                 "conv_kernel_size": 3},
         variants=(dict(segment_means_seq_len=512, num_landmarks=128, conv_kernel_size=33),)),
]

CASES += [
    # YOSO with use_expectation: the expected collision kernel over every pair (QKᵀ, then ·V),
    # and conv_window's depthwise convolution of the values
    Case("yoso", auto="masked_lm", lengths=ENC, shrink=ROBERTA,
         variants=(dict(conv_window=3, **UNTIED),
                   dict(conv_window=65, hash_code_len=4, type_vocab_size=2, hidden_act="relu"))),
]

CASES += [
    # LiLT (AutoModel): BERT's layers beside a layout stream d/r wide, the box tables and their
    # projection, the pooler (d a multiple of 6: six d/6-wide box embeddings make d)
    # seeded: no hidden_size: it must be a multiple of 6 (transformers fails)
    Case("lilt", auto="base", lengths=ENC,
         shrink=dict(vocab_size=128, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=96, max_position_embeddings=64,
                     max_2d_position_embeddings=32),
         variants=(dict(channel_shrink_ratio=2, type_vocab_size=1),
                   dict(channel_shrink_ratio=1, hidden_act="relu", pad_token_id=1)),
         seeded_skip=("hidden_size",)),
]

CASES += [
    # LUKE over words: RoBERTa and the pooler; entity-aware queries, the entity embedding and
    # the entity head held, not run
    Case("luke", auto="masked_lm", lengths=ENC,
         shrink={**ROBERTA, "entity_vocab_size": 50, "entity_emb_size": 24},
         variants=(dict(use_entity_aware_attention=False, entity_emb_size=768, **UNTIED),
                   dict(type_vocab_size=1, hidden_act="relu"))),
]

CASES += [
    # LayoutLMv3 (AutoModel) over text: RoBERTa's embedding with four 2-D tables, BERT's
    # layers; the relative biases gathered (no matmul), the image parts held, not run
    # seeded: no hidden_size: 4 coordinate_size + 2 shape_size must equal it
    Case("layoutlmv3", auto="base", lengths=ENC,
         shrink={**ROBERTA, "coordinate_size": 12, "shape_size": 8,
                 "max_2d_position_embeddings": 32, "rel_pos_bins": 8, "max_rel_pos": 16,
                 "rel_2d_pos_bins": 8, "max_rel_2d_pos": 16,
                 "input_size": 32, "patch_size": 8},
         variants=(dict(has_spatial_attention_bias=False, num_channels=1),
                   dict(visual_embed=False, has_relative_attention_bias=False)),
         seeded_skip=("hidden_size",)),
]


def _nllb_all_rows(config, batch: int, seq: int) -> int:
    """transformers 5.24's NllbMoeExperts one-hot encodes the router's 0/1 top-1 mask again,
    so `expert_0` runs on every (token, unchosen expert) row and `expert_1` on every chosen
    one: E expert passes per token where the model runs its top 2. Beyond flopcalc's count,
    per sparse layer: (E − 2) passes of fc1 and fc2, 2·T·d·f each, T = batch·seq in each stack
    (the sweep feeds the decoder as many tokens as the encoder)."""
    d, e, t = config.d_model, config.num_experts, batch * seq
    total = 0
    for n, step, f in ((config.encoder_layers, config.encoder_sparse_step,
                        config.encoder_ffn_dim),
                       (config.decoder_layers, config.decoder_sparse_step,
                        config.decoder_ffn_dim)):
        sparse = sum(1 for i in range(n) if step > 0 and (i + 1) % step == 0)
        total += sparse * (e - 2) * 2 * (2 * t * d * f)
    return total


# NLLB-MoE: M2M-100 with top-2 experts in every step-th layer of each stack; layerdrop off in
# the FLOP run (it skips layers at random in training mode)
NLLB = dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
            decoder_ffn_dim=96, max_position_embeddings=64, num_experts=4,
            encoder_sparse_step=2, decoder_sparse_step=1, encoder_layerdrop=0.0,
            decoder_layerdrop=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
            decoder_start_token_id=2)
CASES += [
    Case("nllb-moe", auto="seq2seq", shrink=NLLB, lengths=(1, 6), extra_flops=_nllb_all_rows,
         note="transformers 5.24 runs E expert passes per token (its experts' mask is one-hot "
              "encoded twice); flopcalc counts the top 2",
         variants=(dict(router_bias=True, activation_function="gelu", **UNTIED),
                   dict(encoder_sparse_step=1, decoder_sparse_step=0, num_experts=8))),
]
