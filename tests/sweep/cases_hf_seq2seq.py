"""Classic decoders and more encoder-decoders (flopcalc/models/hf/classic.py, seq2seq2.py):
GPT-1, GPT-Neo, XGLM, BioGPT, CTRL and GPT-NeoX-Japanese (AutoModelForCausalLM); the BART-family
layouts of Blenderbot, Blenderbot-small, M2M-100, PLBART, MVP and FSMT, BigBird-Pegasus with full
attention, LongT5 with local encoder attention and T5Gemma (AutoModelForSeq2SeqLM)."""

from . import Case

UNTIED = dict(tie_word_embeddings=False)
BART = dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
            decoder_ffn_dim=80, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
            eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2)
SEQ2SEQ = (1, 6)
NO_LAYERDROP = dict(encoder_layerdrop=0.0, decoder_layerdrop=0.0)

CASES = [
    # pre-norm, final norms, learned tables of P rows; untied; per-stack heads and widths
    Case("blenderbot", auto="seq2seq", shrink=BART, lengths=SEQ2SEQ,
         variants=(UNTIED, dict(encoder_attention_heads=2, encoder_ffn_dim=128,
                                activation_function="relu", max_position_embeddings=256))),
    # post-norm, embedding norms, tables of P rows
    Case("blenderbot-small", auto="seq2seq", shrink=BART, lengths=SEQ2SEQ,
         variants=(UNTIED, dict(decoder_attention_heads=2, decoder_ffn_dim=128))),
    # sinusoids held as buffers: no position parameters. Its default layerdrop (0.05) skips
    # whole layers at random in a training-mode forward: the FLOP run turns it off
    Case("m2m_100", auto="seq2seq", shrink={**BART, **NO_LAYERDROP}, lengths=SEQ2SEQ,
         note="layerdrop off in the FLOP run (it skips layers at random in training mode)",
         variants=(UNTIED, dict(encoder_layers=3, decoder_ffn_dim=2048,
                                activation_function="gelu"))),
    Case("plbart", auto="seq2seq", shrink=BART, lengths=SEQ2SEQ,
         variants=(UNTIED, dict(encoder_ffn_dim=1024, decoder_layers=3))),
    Case("mvp", auto="seq2seq", shrink=BART, lengths=SEQ2SEQ,
         variants=(UNTIED, dict(decoder_attention_heads=8, max_position_embeddings=512))),
]

# ------------------------------------------------------------------------ classic decoders
GPT = dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=128)
SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             vocab_size=128, max_position_embeddings=64)
TIED = dict(tie_word_embeddings=True)
NEO = dict(hidden_size=64, num_layers=2, num_heads=4, vocab_size=128,
           max_position_embeddings=64, window_size=4,
           attention_types=[[["global", "local"], 1]])

CASES += [
    # post-norm, no final norm; afn
    Case("openai-gpt", shrink=GPT, variants=(UNTIED, dict(afn="relu", n_layer=4))),
    # local layers of window 4 (lengths 6 and 13 pass it), all global, all local, a wider MLP
    Case("gpt_neo", shrink=NEO, lengths=(1, 6, 13),
         variants=(UNTIED, dict(attention_types=[[["global"], 24]], intermediate_size=1000),
                   dict(attention_types=[[["local", "local", "global"], 8]]))),
    Case("xglm", shrink=dict(d_model=64, ffn_dim=96, num_layers=2, attention_heads=4,
                             vocab_size=128, max_position_embeddings=64),
         variants=(UNTIED, dict(activation_function="relu", ffn_dim=1000))),
    Case("biogpt", shrink=SIZES, variants=(UNTIED, dict(max_position_embeddings=2048))),
    Case("ctrl", shrink=dict(GPT, dff=96), variants=(UNTIED, dict(dff=1000, n_positions=512))),
]

# ------------------------------------------------------------- FSMT: two vocabularies
FSMT = {k: v for k, v in BART.items() if k != "vocab_size"}


def fsmt_inputs(config, batch, seq):
    """Source ids from the encoder's vocabulary (the target's when tied: transformers then
    gives the encoder the decoder's table), target ids from the decoder's."""
    import torch

    source = config.tgt_vocab_size if config.tie_word_embeddings else config.src_vocab_size
    torch.manual_seed(1)
    return {"input_ids": torch.randint(0, source, (batch, seq)),
            "decoder_input_ids": torch.randint(0, config.tgt_vocab_size, (batch, seq))}


CASES += [
    # untied by default (own source table, output projection); tied (one table: the
    # target's); another pad id (the position tables' rows)
    Case("fsmt", auto="seq2seq", shrink={**FSMT, "src_vocab_size": 96, "tgt_vocab_size": 128},
         lengths=SEQ2SEQ, inputs=fsmt_inputs,
         variants=(dict(tie_word_embeddings=True, src_vocab_size=42024),
                   dict(pad_token_id=3, src_vocab_size=1000, tgt_vocab_size=1200),
                   dict(tie_word_embeddings=True, src_vocab_size=500, tgt_vocab_size=600))),
]

# ------------------------------------------- BigBird-Pegasus with full attention (counted)
FULL = dict(attention_type="original_full")
CASES += [
    Case("bigbird_pegasus", auto="seq2seq", fix=FULL, lengths=SEQ2SEQ,
         note="attention_type original_full (block_sparse, the default, is refused)",
         shrink={**BART, "decoder_start_token_id": 2, "pad_token_id": 0, "eos_token_id": 1},
         variants=(UNTIED, dict(use_bias=True), dict(encoder_ffn_dim=1024, decoder_layers=3))),
]

# ---------------------------------------- GPT-NeoX-Japanese: the last layer's output bias
CASES += [
    Case("gpt_neox_japanese", lengths=(1, 7), note="the last layer's attention output bias",
         shrink=dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                     intermediate_multiple_size=2, vocab_size=128, max_position_embeddings=64),
         variants=(UNTIED, dict(num_hidden_layers=1, intermediate_multiple_size=3),
                   dict(rotary_pct=0.25, hidden_act="relu"))),
]

# ------------------------------------------------- LongT5: the encoder's local attention
T5 = dict(vocab_size=128, d_model=64, d_kv=16, d_ff=96, num_layers=2, num_heads=4,
          relative_attention_num_buckets=8, relative_attention_max_distance=16,
          decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
CASES += [
    # radius 2: blocks of 3 (lengths 1, 6 and 7: one block, whole blocks, a padded block);
    # radius 0 (blocks of 1); gated-gelu untied; a deeper decoder
    Case("longt5", auto="seq2seq", shrink={**T5, "local_radius": 2}, lengths=(1, 6, 7),
         note="local encoder attention, radius 2: blocks of 3",
         variants=(dict(feed_forward_proj="gated-gelu", **UNTIED),
                   dict(num_decoder_layers=3, d_kv=24, local_radius=0))),
    Case("longt5", auto="seq2seq", shrink={**T5, "local_radius": 0}, lengths=(1, 5),
         note="radius 0: blocks of one token over three keys"),
    Case("longt5", auto="seq2seq", shrink={**T5, "local_radius": 4}, lengths=(4, 13),
         note="radius 4: blocks of 5, a short and a padded sequence"),
]

# ------------------------------------------------------ T5Gemma: two Gemma 2 stacks
GEMMA_STACK = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   sliding_window=4, max_position_embeddings=64)
CASES += [
    # windows of 4 (encoder: a band of ±4; decoder: causal windows), lengths past them;
    # untied; a deeper, wider encoder with every layer local and its own window; biases
    Case("t5gemma", auto="seq2seq", lengths=(1, 6, 13),
         shrink=dict(encoder=GEMMA_STACK, decoder=GEMMA_STACK, vocab_size=128),
         variants=(UNTIED,
                   dict(encoder=dict(num_hidden_layers=30, intermediate_size=12288,
                                     sliding_window=512,
                                     layer_types=["sliding_attention"] * 30)),
                   dict(encoder=dict(attention_bias=True), decoder=dict(attention_bias=True)))),
    Case("t5gemma", auto="seq2seq", lengths=(1, 7),
         shrink=dict(encoder={**GEMMA_STACK, "num_hidden_layers": 3, "intermediate_size": 80,
                              "sliding_window": 2, "layer_types": ["sliding_attention"] * 3},
                     decoder=GEMMA_STACK, vocab_size=128),
         note="an encoder of its own depth, MLP width and window, every layer local"),
]
