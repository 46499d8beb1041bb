"""Encoders and encoder-decoders with attention patterns of their own
(flopcalc/models/hf/encoders3.py, seq2seq4.py), each with seeded variants of settings
transformers accepts (the same every run):

- Longformer: sliding chunks over a sequence padded to the largest attention window; no global
  tokens (the forward gets no global_attention_mask).
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
