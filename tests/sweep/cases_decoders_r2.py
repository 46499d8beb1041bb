"""Decoders imported by flopcalc/models/hf/decoders5.py (types flopcalc refused until their
layer kinds existed). Variants are non-default settings transformers accepts, written out:
another layer split, loop count, layer pattern, widths, biases and tying, and two seeded random
draws of them for each type (the same every run)."""

import random

from . import Case


def _dory_seeded(seed: int) -> dict:
    rng = random.Random(seed)
    n_in, n_rec, n_out = rng.randint(0, 2), rng.randint(1, 3), rng.randint(0, 2)
    return dict(num_hidden_layers=n_in + n_rec + n_out, n_input_layers=n_in,
                n_output_layers=n_out, n_recurrent_loops=rng.randint(1, 4),
                num_key_value_heads=rng.choice([1, 2, 4]), sliding_window=rng.choice([3, 7, 16]),
                tie_word_embeddings=rng.choice([True, False]),
                attention_bias=rng.choice([True, False]), mlp_bias=rng.choice([True, False]))


def _ultrabert_seeded(seed: int) -> dict:
    rng = random.Random(seed)
    return dict(num_hidden_layers=rng.randint(2, 4), num_key_value_heads=rng.choice([1, 2, 4]),
                sliding_window=rng.choice([2, 3, 5]),
                prediction_head_size=rng.choice([24, 40, 96]),
                tie_word_embeddings=rng.choice([True, False]),
                attention_bias=rng.choice([True, False]), mlp_bias=rng.choice([True, False]))


def _hrm_seeded(seed: int) -> dict:
    rng = random.Random(seed)
    return dict(num_hidden_layers=rng.randint(1, 3), H_cycles=rng.randint(1, 3),
                L_cycles=rng.randint(1, 3), prefix_lm=rng.choice([True, False]),
                embedding_scale=rng.choice([1.0, 2.0]),
                tie_word_embeddings=rng.choice([True, False]),
                attention_bias=rng.choice([True, False]), mlp_bias=rng.choice([True, False]))


# Dory: the layer split (input, recurrent layers run n_recurrent_loops times on one set of
# weights, output) kept as each config has it; windows of 16 on the sliding layers, longer than
# the generated text of the cache check (transformers keeps window − 1 tokens, flopcalc the
# window; under the full convention the window moves no FLOP)
_DORY = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=64,
             sliding_window=16)
_DORY_VARIANTS = (
    dict(num_hidden_layers=5, n_input_layers=2, n_output_layers=1, tie_word_embeddings=True,
         n_recurrent_loops=3, attention_bias=True, mlp_bias=True),
    # a released file's layout: attention and "mlp" blocks listed alternately, counts doubled
    dict(num_hidden_layers=12, n_input_layers=4, n_output_layers=4, n_recurrent_layers=4,
         layer_types=["sliding_attention", "mlp", "full_attention", "mlp"] * 3,
         num_attention_heads=8, num_key_value_heads=8, head_dim=32, n_recurrent_loops=1),
    dict(num_hidden_layers=7, n_input_layers=1, n_output_layers=2, n_recurrent_loops=4,
         layer_types=["full_attention"] * 7, intermediate_size=5120, hidden_size=1536,
         num_attention_heads=12, num_key_value_heads=3, head_dim=128),
    dict(n_input_layers=0, n_output_layers=0, num_hidden_layers=6, n_recurrent_loops=2,
         sliding_window=7, vocab_size=50000),
    _dory_seeded(1), _dory_seeded(2),
)

CASES = [
    Case("dory", shrink=_DORY, variants=_DORY_VARIANTS, lengths=(1, 6, 13), cache=True),
]

# UltraBERT: the layer list kept as each config has it, windows of 3 positions on either side
# (shorter than the longest run: the mask bites), a prediction head of 40
_ULTRABERT = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, vocab_size=128,
                  max_position_embeddings=64,
                  sliding_window=3, prediction_head_size=40, pad_token_id=0, bos_token_id=1,
                  eos_token_id=2)
CASES += [
    Case("ultrabert", auto="masked_lm", shrink=_ULTRABERT, lengths=(1, 9, 13),
         variants=(
             dict(num_hidden_layers=4, num_key_value_heads=2, attention_bias=True, mlp_bias=True,
                  tie_word_embeddings=True, prediction_head_size=1024),
             dict(num_hidden_layers=5, layer_types=["full_attention", "sliding_attention",
                                                    "sliding_attention", "full_attention",
                                                    "sliding_attention"],
                  head_dim=96, num_attention_heads=16, num_key_value_heads=4,
                  hidden_size=1536, sliding_window=7),
             dict(layer_types=["full_attention"] * 32, prediction_head_size=3072,
                  intermediate_size=2816, hidden_size=1024, num_attention_heads=8),
             _ultrabert_seeded(1), _ultrabert_seeded(2))),
]

# HRM's text model: stacks of 2 layers (num_hidden_layers read as the per-stack count, as a
# file without num_layers_per_stack is), run H_cycles·(L_cycles + 1) times
_HRM = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            head_dim=16, vocab_size=128, max_position_embeddings=64)
CASES += [
    Case("hrm_text", shrink=_HRM, lengths=(1, 6, 13), cache=True, variants=(
        dict(H_cycles=1, L_cycles=1, attention_bias=True, mlp_bias=True,
             tie_word_embeddings=True),
        dict(num_hidden_layers=3, H_cycles=3, L_cycles=2, L_bp_cycles=[1, 2],
             hidden_size=2048, num_attention_heads=16, head_dim=64, intermediate_size=5632),
        dict(num_hidden_layers=5, H_cycles=2, L_cycles=4, head_dim=96, num_attention_heads=8,
             prefix_lm=False, embedding_scale=2.0),
        _hrm_seeded(1), _hrm_seeded(2))),
]
