"""Gemma 3n (transformers `models/gemma3n/`, flopcalc `kinds/gemma3n.py`): the text model at its
default config (AltUp ×4, LAuReL 64, per-layer inputs 256, the first 10 layers' gates sparse,
15 KV-shared layers) and with each setting transformers accepts varied, and the multimodal
wrapper counting its language model alone (its MobileNet-v5 and audio towers left out).

The shrink keeps every feature: six layers alternating window and full, the last two sharing
the keys and values of layers 2 and 3, a 512-row per-layer table."""

import random

from . import Case

LAYERS6 = ["sliding_attention", "full_attention"] * 3
SHRINK = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, vocab_size=512, vocab_size_per_layer_input=512,
              sliding_window=4, layer_types=LAYERS6, num_kv_shared_layers=2, laurel_rank=8,
              hidden_size_per_layer_input=16)
TIED, UNTIED = {"top": {"tie_word_embeddings": True}}, {"top": {"tie_word_embeddings": False}}

# the seeded variants keep their own layer count and per-layer lists: this shrink sets widths only
WIDTHS = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              vocab_size=512)


def seeded(count: int, seed: int = 38) -> tuple[dict, ...]:
    """Random settings Gemma3nTextConfig accepts: 1 to 9 layers of random types, a KV-shared
    tail whose types earlier layers compute, an MLP width and a sparsity per layer, 1 to 4
    AltUp streams, LAuReL ranks, per-layer widths and tables, windows, biases and tying."""
    rng, out = random.Random(seed), []
    for _ in range(count):
        n = rng.randint(1, 9)
        types = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(n)]
        shared = rng.randint(0, n - 1)
        while shared and set(types[:n - shared]) != set(types):
            shared -= 1
        out.append(dict(
            num_hidden_layers=n, layer_types=types, num_kv_shared_layers=shared,
            intermediate_size=[rng.choice([32, 48, 64, 96, 128]) for _ in range(n)],
            activation_sparsity_pattern=[rng.choice([0.0, 0.0, 0.5, 0.95]) for _ in range(n)],
            altup_num_inputs=rng.randint(1, 4), laurel_rank=rng.randint(1, 16),
            hidden_size_per_layer_input=rng.randint(1, 24),
            vocab_size_per_layer_input=rng.choice([64, 512, 1000]),
            sliding_window=rng.randint(2, 8), attention_bias=rng.random() < 0.3,
            tie_word_embeddings=rng.random() < 0.7, altup_correct_scale=rng.random() < 0.7))
    return tuple(out)


CASES = [
    Case("gemma3n_text", shrink=SHRINK, lengths=(5, 13), variants=(
        # no KV sharing, two AltUp streams, a wider LAuReL
        dict(num_kv_shared_layers=0, altup_num_inputs=2, laurel_rank=32),
        # biases on q, k, v and o, an untied head, no scale on the corrected stream
        dict(attention_bias=True, tie_word_embeddings=False, altup_correct_scale=False),
        # a single stream (no input or output projections), 4 KV-shared layers
        dict(altup_num_inputs=1, num_kv_shared_layers=4),
    )),
    # the default pattern (every 5th layer full) over 12 layers, the first 10 sparse, then one
    # width per layer (MatFormer's mix-and-match) and the seeded random settings
    Case("gemma3n_text", shrink=WIDTHS, lengths=(5, 11),
         fix=dict(num_hidden_layers=12, num_kv_shared_layers=5, intermediate_size=96,
                  laurel_rank=8, hidden_size_per_layer_input=16, vocab_size_per_layer_input=512,
                  sliding_window=4),
         variants=(dict(intermediate_size=[128, 96, 64, 128, 32, 160] * 2),) + seeded(6)),
    Case("gemma3n", shrink=SHRINK, text_config="text_config", count="text", lengths=(5,),
         variants=(UNTIED, TIED, dict(num_kv_shared_layers=0, altup_num_inputs=2))),
    # the cache after a real generate, with KV-shared layers (which keep none of their own); a
    # window of 16 does not bind at these lengths (transformers' sliding layers keep w − 1
    # keys after a generate, flopcalc's cache bound is w: kinds/masks.py)
    Case("gemma3n_text", shrink={**SHRINK, "sliding_window": 16}, lengths=(7,), cache=True),
]
