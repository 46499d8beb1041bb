"""Encoders and encoder-decoders (flopcalc/models/hf/encoders.py, seq2seq.py): RoBERTa and its
copies, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2, ModernBERT (masked-LM heads); mT5, UMT5, the
BART family and Whisper (the class AutoModelForSeq2SeqLM / ForSpeechSeq2Seq builds)."""

from . import Case

BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)
UNTIED = dict(tie_word_embeddings=False)
T5 = dict(vocab_size=128, d_model=64, d_kv=16, d_ff=96, num_layers=2, num_heads=4,
          relative_attention_num_buckets=8, relative_attention_max_distance=16,
          decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
BART = dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
            decoder_ffn_dim=80, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
            eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2)
ENC, SEQ2SEQ = (1, 7), (1, 6)


def whisper_inputs(config, batch, seq):
    """Mel frames for the one length the encoder accepts (2·max_source_positions, which the case
    makes its `--seq`), and `seq` decoder tokens."""
    import torch

    assert seq == config.max_source_positions, "flopcalc's --seq is the encoder's positions"
    torch.manual_seed(1)
    return {"input_features": torch.randn(batch, config.num_mel_bins, 2 * seq),
            "decoder_input_ids": torch.randint(0, config.vocab_size, (batch, seq))}


CASES = [
    # RoBERTa and its copies: the bert layers with positions offset by pad + 1
    Case("roberta", auto="masked_lm", shrink={**BERT, "pad_token_id": 1}, lengths=ENC,
         variants=(dict(type_vocab_size=1, **UNTIED), dict(max_position_embeddings=514))),
    Case("xlm-roberta", auto="masked_lm", shrink={**BERT, "pad_token_id": 1}, lengths=ENC,
         variants=(UNTIED,)),
    Case("camembert", auto="masked_lm", shrink={**BERT, "pad_token_id": 1}, lengths=ENC,
         variants=(dict(type_vocab_size=1),)),
    Case("distilbert", auto="masked_lm", lengths=ENC,
         shrink=dict(vocab_size=128, dim=64, n_layers=2, n_heads=4, hidden_dim=96,
                     max_position_embeddings=64),
         variants=(dict(sinusoidal_pos_embds=True), UNTIED)),
    # ALBERT: one weight set (default), 2 groups of 2 inner layers, 3 groups over 4 layers
    # (int(i / (4/3)): 0, 0, 1, 2), untied (a second V bias)
    Case("albert", auto="masked_lm", lengths=ENC,
         shrink={**BERT, "embedding_size": 16, "num_hidden_layers": 4},
         variants=(dict(num_hidden_groups=2, inner_group_num=2), dict(num_hidden_groups=3),
                   dict(embedding_size=4096), UNTIED)),
    # ELECTRA's generator: E = 128 > d shrunk, E = d (no projection), untied
    Case("electra", auto="masked_lm", lengths=ENC, shrink=BERT,
         variants=(dict(embedding_size=64), UNTIED)),
    # DeBERTa-v2: the default is BERT-like (no relative attention); v3-like (buckets, both
    # terms, shared keys, a normed table, no absolute positions); v2-xlarge-like (own position
    # projections, a ConvLayer, E = 32, token types); c2p only with absolute positions; the
    # non-legacy head; untied
    Case("deberta-v2", auto="masked_lm", lengths=ENC, shrink=BERT,
         variants=(dict(relative_attention=True, position_buckets=8, pos_att_type="p2c|c2p",
                        share_att_key=True, norm_rel_ebd="layer_norm",
                        position_biased_input=False),
                   dict(relative_attention=True, max_relative_positions=16,
                        pos_att_type=["c2p", "p2c"], conv_kernel_size=3, embedding_size=32,
                        type_vocab_size=2),
                   dict(relative_attention=True, pos_att_type=["c2p"], position_buckets=4,
                        share_att_key=True, conv_kernel_size=5, conv_groups=2,
                        conv_act="gelu"),
                   dict(relative_attention=True, position_buckets=4, pos_att_type=["p2c"],
                        legacy=False),
                   dict(norm_rel_ebd="layer_norm"),
                   UNTIED)),
    # ModernBERT: global every 3rd layer from layer 0, local windows of 4 (±2), biases,
    # untied with and without the decoder bias, global every other layer
    Case("modernbert", auto="masked_lm", lengths=(1, 9),
         shrink=dict(vocab_size=128, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                     intermediate_size=96, max_position_embeddings=64, local_attention=4,
                     pad_token_id=0, cls_token_id=1, sep_token_id=2, bos_token_id=1,
                     eos_token_id=2),
         variants=(dict(norm_bias=True, attention_bias=True, mlp_bias=True,
                        classifier_bias=True),
                   dict(decoder_bias=False, **UNTIED), UNTIED,
                   dict(global_attn_every_n_layers=2))),
    # T5 relatives: mT5 (T5's layers), UMT5 (a relative bias in every self-attention)
    Case("mt5", auto="seq2seq", shrink=T5, lengths=SEQ2SEQ,
         variants=(dict(feed_forward_proj="relu", num_decoder_layers=3, **UNTIED),)),
    Case("umt5", auto="seq2seq", shrink=T5, lengths=SEQ2SEQ,
         variants=(dict(num_decoder_layers=3, **UNTIED),)),
    # The BART family: untied (4 token tables), per-stack heads and widths, activations
    Case("bart", auto="seq2seq", shrink=BART, lengths=SEQ2SEQ,
         variants=(UNTIED, dict(decoder_attention_heads=2),
                   dict(encoder_attention_heads=2, encoder_ffn_dim=128,
                        activation_function="relu"))),
    Case("mbart", auto="seq2seq", shrink=BART, lengths=SEQ2SEQ,
         variants=(UNTIED, dict(encoder_attention_heads=2))),
    Case("marian", auto="seq2seq", lengths=SEQ2SEQ,
         shrink={**BART, "pad_token_id": 1, "decoder_start_token_id": 1, "eos_token_id": 0,
                 "forced_eos_token_id": 0},
         variants=(dict(share_encoder_decoder_embeddings=False, decoder_vocab_size=160,
                        pad_token_id=1),
                   UNTIED,
                   dict(share_encoder_decoder_embeddings=False, decoder_vocab_size=160,
                        pad_token_id=1, activation_function="swish", **UNTIED))),
    Case("pegasus", auto="seq2seq", lengths=SEQ2SEQ,
         shrink={**BART, "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1,
                 "forced_eos_token_id": 1},
         variants=(UNTIED, dict(decoder_ffn_dim=128))),
    # Whisper: --seq is the encoder's positions (= max_source_positions, the only length its
    # encoder takes), the input 2·seq mel frames
    Case("whisper", auto="speech_seq2seq", lengths=(8,), inputs=whisper_inputs,
         shrink=dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                     decoder_ffn_dim=80, num_mel_bins=16, max_source_positions=8,
                     max_target_positions=32, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                     decoder_start_token_id=3, suppress_tokens=[], begin_suppress_tokens=[]),
         variants=(dict(decoder_attention_heads=2, **UNTIED),
                   dict(encoder_attention_heads=2, encoder_ffn_dim=128))),
]
