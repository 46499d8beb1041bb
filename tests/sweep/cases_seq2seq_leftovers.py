"""Encoders and encoder-decoders with attention patterns of their own
(flopcalc/models/hf/encoders3.py, seq2seq4.py), each with seeded variants of settings
transformers accepts (the same every run):

- Longformer: sliding chunks over a sequence padded to the largest attention window; no global
  tokens (the forward gets no global_attention_mask).
- LED: BART's layout with Longformer's attention in the encoder (the source padded likewise).
- XLNet: the content stream of a plain forward (no target_mapping, no mems, no token types).
- Pegasus-X: block-local encoder attention with global tokens, staggered blocks on odd layers.
"""

import random

from . import Case

UNTIED = dict(tie_word_embeddings=False)
# the shrinks keep the layer counts (a variant's per-layer lists must match them)
BERT = dict(vocab_size=128, hidden_size=64, num_attention_heads=4, intermediate_size=96,
            max_position_embeddings=64, pad_token_id=1)


def _windows(rng: random.Random, n: int) -> list[int]:
    """n attention windows (even), each dividing the largest, as transformers runs them."""
    small = rng.choice([4, 6, 8])  # 2 (w = 1) fails in transformers' chunk copy
    top = small * rng.choice([1, 2, 3])
    return [rng.choice([small, top]) for _ in range(n - 1)] + [top]


def _longformer(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.choice([2, 3, 4])
    return dict(num_hidden_layers=n, attention_window=_windows(rng, n),
                hidden_act=rng.choice(["gelu", "relu", "silu"]),
                intermediate_size=rng.choice([40, 96, 130]),
                type_vocab_size=rng.choice([1, 2, 3]),
                tie_word_embeddings=rng.choice([True, False]))


CASES = [
    # the default: 12 layers of window 512 (the FLOP run pads every length to 512); windows of
    # 4 and 8 (w = 2 and 4: lengths 1, 5 and 13 pad to 8 and 16, each layer's chunks differ);
    # untied; seeded windows, widths, activations, token types and tying
    Case("longformer", auto="masked_lm", lengths=(1, 5, 13), shrink=BERT,
         variants=(UNTIED, dict(num_hidden_layers=2, attention_window=[4, 8]),
                   _longformer(1), _longformer(2), _longformer(3))),
]


# ------------------------------------------------------------ LED
def _led(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.choice([2, 3, 4])
    return dict(encoder_layers=n, attention_window=_windows(rng, n),
                decoder_layers=rng.choice([1, 2, 3]),
                activation_function=rng.choice(["gelu", "relu", "silu"]),
                encoder_ffn_dim=rng.choice([40, 96, 130]),
                decoder_ffn_dim=rng.choice([40, 96, 130]),
                encoder_attention_heads=rng.choice([2, 4, 8]),
                max_encoder_position_embeddings=rng.choice([64, 100]),
                tie_word_embeddings=rng.choice([True, False]))


# the encoder reads positions 0..P − 1 of the padded source: its table must hold P rows
LED = dict(vocab_size=128, d_model=64, decoder_layers=2, encoder_attention_heads=4,
           decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=80,
           max_encoder_position_embeddings=1024, max_decoder_position_embeddings=32)

CASES += [
    # the default's 12 encoder layers of window 512 (the FLOP run pads the source to 512);
    # windows of 4 and 8 in a 2-layer encoder; untied; seeded windows, layer counts, widths,
    # heads, activations, position tables and tying
    Case("led", auto="seq2seq", lengths=(1, 5, 13), shrink=LED,
         variants=(UNTIED, dict(encoder_layers=2, attention_window=[8, 4]),
                   _led(1), _led(2), _led(3))),
]


# ------------------------------------------------------------ XLNet
def _xlnet(seed: int) -> dict:
    rng = random.Random(seed)
    return dict(n_layer=rng.choice([1, 2, 3]), n_head=rng.choice([1, 2, 4, 8]),
                d_inner=rng.choice([40, 96, 130]), attn_type=rng.choice(["bi", "uni"]),
                ff_activation=rng.choice(["gelu", "relu", "silu"]),
                clamp_len=rng.choice([-1, 3]), same_length=rng.choice([True, False]),
                tie_word_embeddings=rng.choice([True, False]))


XLNET = dict(vocab_size=128, d_model=64)

CASES += [
    # the default (24 layers, 16 heads); attn_type uni (s + 1 relative positions); untied;
    # seeded layers, heads, widths, attention types, activations, clamping and tying
    Case("xlnet", shrink=XLNET, lengths=(1, 5, 13),
         variants=(UNTIED, dict(attn_type="uni", n_layer=2, n_head=4, d_inner=96),
                   _xlnet(1), _xlnet(2), _xlnet(3))),
]


# ------------------------------------------------------------ Pegasus-X
def _pegasus_x(seed: int) -> dict:
    rng = random.Random(seed)
    return dict(encoder_layers=rng.choice([1, 2, 3, 4]), decoder_layers=rng.choice([1, 2]),
                block_size=rng.choice([2, 4, 6, 8]), num_global_tokens=rng.choice([1, 3, 8]),
                stagger_local_blocks=rng.choice([True, False]),
                activation_function=rng.choice(["gelu", "relu", "silu"]),
                encoder_ffn_dim=rng.choice([40, 96, 130]),
                encoder_attention_heads=rng.choice([2, 4, 8]),
                tie_word_embeddings=rng.choice([True, False]))


PEGASUS_X = dict(vocab_size=128, d_model=64, decoder_attention_heads=4, decoder_ffn_dim=80,
                 encoder_ffn_dim=96, max_position_embeddings=64)

CASES += [
    # the default: 16 encoder layers, blocks of 512 (every length padded to 512, 1,024 on the
    # staggered layers), 32 global tokens; blocks of 4 with 3 globals; unstaggered; untied;
    # seeded layer counts, blocks, globals, staggering, widths, heads, activations and tying
    Case("pegasus_x", auto="seq2seq", lengths=(1, 5, 13), shrink=PEGASUS_X,
         variants=(UNTIED, dict(encoder_layers=3, block_size=4, num_global_tokens=3),
                   dict(encoder_layers=2, block_size=6, stagger_local_blocks=False),
                   _pegasus_x(1), _pegasus_x(2), _pegasus_x(3))),
]
