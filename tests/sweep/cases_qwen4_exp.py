"""Qwen4-Exp (transformers `models/qwen4_exp/`, flopcalc `kinds/qwen4_exp.py`): the text model
and the wrapper's language model.

transformers' default config does not build (its attention layers need the five QSA indexer
keys, which default to None), so `fix` gives them: 16 index heads of 256 (the attention's
rotary width, which the index head must hold), a budget of 2,048 keys in blocks of 64. The
variants: n-gram embeddings (PLE) on some linear layers, other layer patterns (the published
files' `full_attention` spelling too), stream counts and ranks, indexer sizes, n-gram orders,
heads and table multiples, and seeded random combinations of them that the config class
accepts (a partial rotary factor of 1/4 lets the index head be narrower than head_dim).

The shrink keeps every feature: six layers, widths of 32, four experts, n-gram tables from
the primes above 50 (20,000,000 would allocate gigabytes on CPU), lengths across a whole
gated-DeltaNet chunk (64) and past the indexer's budget."""

import random

from . import Case

FIX = dict(indexer_n_heads=16, indexer_kv_heads=1, indexer_head_dim=256, indexer_budget=2048,
           indexer_compress_ratio=64)
SHRINK = dict(vocab_size=97, hidden_size=32, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, head_dim=8, linear_num_key_heads=2,
              linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=12,
              num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
              shared_expert_intermediate_size=24, ngram_vocab_size_base=50)
ROPE = {"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25}
LENGTHS = (1, 5, 13, 70)


def _seeded(seed: int) -> dict:
    """Six layers in a random pattern (one of each kind at least), PLE on a random subset of
    the linear ones, random stream, indexer and n-gram sizes (seeded: the same every run)."""
    rng = random.Random(seed)
    types = ["linear_attention", "indexed_attention"] + [
        rng.choice(["linear_attention", "indexed_attention"]) for _ in range(4)]
    rng.shuffle(types)
    linear = [i + 1 for i, t in enumerate(types) if t == "linear_attention"]
    ratio = rng.choice([1, 2, 3])
    ngram, per = rng.choice([2, 3, 4]), rng.choice([1, 2, 3])
    return dict(num_hidden_layers=6, layer_types=types,
                ple_layer_ids=rng.sample(linear, rng.randint(1, len(linear))), eos_token_id=1,
                hc_count=rng.choice([2, 3, 5]), hc_lowrank=rng.choice([4, 16, 40]),
                indexer_n_heads=rng.choice([1, 3, 4]), indexer_head_dim=rng.choice([64, 96]),
                indexer_compress_ratio=ratio, indexer_budget=ratio * rng.choice([1, 2, 3]),
                rope_parameters=ROPE, ngram_size=ngram, heads_per_ngram=per,
                ple_embed_dim=(ngram - 1) * per * rng.choice([2, 4]),
                ple_conv_kernel_size=rng.choice([2, 3, 4]),
                make_ngram_vocab_size_divisible_by=rng.choice([1, 64, 128]),
                tie_word_embeddings=rng.choice([True, False]),
                attention_bias=rng.choice([True, False]),
                output_gate_type=rng.choice(["silu", "sigmoid"]))


VARIANTS = (
    # PLE on linear layers 1, 2 and 5 (one-indexed), the default n-gram sizes
    dict(ple_layer_ids=[5, 1, 2], eos_token_id=1),
    # the published files' spelling of the attention layers, attention first; two streams
    dict(num_hidden_layers=6, hc_count=2, hc_lowrank=12,
         layer_types=["full_attention", "linear_attention"] * 3, ple_layer_ids=[2, 6],
         eos_token_id=[1, 2], ngram_size=4, heads_per_ngram=3, ple_embed_dim=36,
         ple_conv_kernel_size=3, make_ngram_vocab_size_divisible_by=1),
    # every layer attention, whole blocks of 1 key, a tied head and biased q/k/v/o
    dict(num_hidden_layers=6, full_attention_interval=1, indexer_compress_ratio=1,
         indexer_budget=3, indexer_n_heads=2, tie_word_embeddings=True, attention_bias=True),
    _seeded(1), _seeded(2), _seeded(3),
)

CASES = [
    # cache: K, V and the indexer's key per token, the gated DeltaNet's states (no PLE layer)
    Case("qwen4_exp_text", fix=FIX, shrink=SHRINK, variants=VARIANTS, lengths=LENGTHS,
         cache=True),
    Case("qwen4_exp", fix=FIX, shrink=SHRINK, text_config="text_config", count="text",
         lengths=(1, 13), variants=(
             dict(ple_layer_ids=[1, 3], eos_token_id=1, hc_count=3),
             # the wrapper's flag ties the head, whatever the text config's says
             {"top": {"tie_word_embeddings": True}})),
]
