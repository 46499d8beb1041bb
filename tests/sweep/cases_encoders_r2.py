"""Encoders whose layers are not BERT's (flopcalc/models/hf/encoders4.py), each with seeded
variants of settings transformers accepts (the same every run):

- Reformer: reversible layers of LSH and local attention over chunks, the sequence padded to
  the chunk lengths' least common multiple; counted in eval mode under no_grad (`eval_mode`):
  the training-mode forward cannot run (torch's module tracker asserts a gradient function in
  the reversible layers, and training refuses lengths off the chunk multiple and off the axial
  shape's product). The count does not depend on the data (chunks of fixed sizes, whichever
  keys the hash picks).
- ProphetNet: BART's post-norm layout, the decoder running the main and `ngram` predicting
  streams through every layer (n-gram self-attention with relative position logits), the head
  on the predicting streams.
"""

import random

from . import Case


# ------------------------------------------------------------ Reformer
def _reformer(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 3, 4])
    attn = [rng.choice(["lsh", "local"]) for _ in range(n)]
    hidden = rng.choice([64, 96, 128])
    axial = rng.choice([True, False])
    keys = dict(attn_layers=attn, hidden_size=hidden,
                num_attention_heads=rng.choice([1, 2, 4]),
                attention_head_size=rng.choice([8, 16, 32]),
                feed_forward_size=rng.choice([40, 96, 130]),
                lsh_attn_chunk_length=rng.choice([4, 6, 8]),
                local_attn_chunk_length=rng.choice([4, 6, 8, 12]),
                lsh_num_chunks_before=rng.choice([0, 1, 2]),
                lsh_num_chunks_after=rng.choice([0, 1]),
                local_num_chunks_before=rng.choice([0, 1, 2]),
                local_num_chunks_after=rng.choice([0, 1]),
                num_hashes=rng.choice([1, 2, 3]),
                num_buckets=rng.choice([None, 4, 8, [2, 4]]),
                hidden_act=rng.choice(["relu", "gelu", "silu"]),
                axial_pos_embds=axial, vocab_size=rng.choice([99, 320]))
    if axial:
        keys.update(axial_pos_shape=[16, 16], axial_pos_embds_dim=[hidden // 4, hidden * 3 // 4])
    else:
        keys.update(max_position_embeddings=rng.choice([256, 512]))
    return keys


# sizes only: the variants' chunk lengths, hash rounds and layer kinds stay (the axial widths
# follow the shrunk hidden size; the shape stays the variant's, or the default 64 × 64)
REFORMER = dict(hidden_size=32, num_attention_heads=2, attention_head_size=8,
                feed_forward_size=48, vocab_size=99, axial_pos_embds_dim=[8, 24])

CASES = [
    # the default: 6 layers alternating local and LSH (chunks of 64, num_buckets unset: derived
    # from the length, as transformers sets it on the first forward); 100 tokens pad to 128
    # (two chunks each); 5 and 13 run full attention unpadded
    # seeded: no hidden_size: axial_pos_embds_dim must sum to it
    Case("reformer", auto="masked_lm", lengths=(5, 13, 100), shrink=REFORMER, eval_mode=True,
         note="eval mode under no_grad (the training forward cannot run the reversible "
              "layers under FlopCounterMode)",
         variants=(dict(attn_layers=["lsh", "local"], lsh_attn_chunk_length=4,
                        local_attn_chunk_length=6, num_hashes=2, num_buckets=[2, 4]),
                   _reformer(1), _reformer(2), _reformer(3)),
         seeded_skip=("hidden_size",)),
]


# ------------------------------------------------------------ ProphetNet
def _prophetnet(seed: int) -> dict:
    rng = random.Random(seed)
    return dict(num_encoder_layers=rng.choice([1, 2, 3]),
                num_decoder_layers=rng.choice([1, 2, 3]),
                ngram=rng.choice([1, 2, 3, 4]), num_buckets=rng.choice([8, 16, 32]),
                relative_max_distance=rng.choice([16, 64, 128]),
                activation_function=rng.choice(["gelu", "relu", "silu"]),
                encoder_ffn_dim=rng.choice([40, 96, 130]),
                decoder_ffn_dim=rng.choice([40, 96, 130]),
                num_encoder_attention_heads=rng.choice([2, 4, 8]),
                num_decoder_attention_heads=rng.choice([2, 4, 8]),
                tie_word_embeddings=rng.choice([True, False]))


# widths only (the variants' layer counts, streams and MLP widths stay)
PROPHETNET = dict(vocab_size=99, hidden_size=32, max_position_embeddings=64)

CASES += [
    # the default (12 + 12 layers, 2 predicting streams, tied); untied with 3 streams; one
    # stream (the head on it alone); seeded layer counts, streams, buckets, heads, widths
    Case("prophetnet", auto="seq2seq", shrink=PROPHETNET,
         variants=(dict(tie_word_embeddings=False, ngram=3, num_buckets=16),
                   dict(ngram=1, num_encoder_layers=3, num_decoder_layers=1),
                   _prophetnet(1), _prophetnet(2), _prophetnet(3))),
]
