"""DeepSeek-V4 and Hy4 (see HY_SHRINK). DeepSeek-V4 (transformers `models/deepseek_v4/`, flopcalc `kinds/deepseek_v4.py`): the
default config (DeepSeek-V4-Flash's sizes) and seeded variants of what DeepseekV4Config accepts:
other layer patterns (the legacy `compress_ratios` with sliding-only layers, as the published
checkpoint's), hash-routed layers, compression rates, hyper-connection streams, output groups,
the indexer's sizes, a tied head and a biased shared expert.

The shrink keeps every feature: six layers (the default schedule's heavily compressed and
compressed sparse layers; a variant lists each kind twice, sliding-only layers too), the first
three hash-routed, compression rates 4 (CSA) and 8 (HCA) so that both pool whole windows at the run
lengths (13 tokens: 3 CSA entries, 1 HCA entry; 21: 5 and 2), a window of 4, an indexer keeping
the top 2, two output groups, four hyper-connection streams."""

import random

from . import Case

LAYERS = ["sliding_attention", "compressed_sparse_attention",
          "heavily_compressed_attention"] * 2
SHRINK = dict(hidden_size=64, moe_intermediate_size=32, num_hidden_layers=6,
              num_attention_heads=4, head_dim=16, q_lora_rank=24, n_routed_experts=8,
              num_experts_per_tok=2, vocab_size=256, sliding_window=4, o_groups=2,
              o_lora_rank=8, index_n_heads=2, index_head_dim=8, index_topk=2,
              compress_rates={"compressed_sparse_attention": 4,
                              "heavily_compressed_attention": 8})


def _seeded(seed: int) -> dict:
    """A random layer schedule and sizes DeepseekV4Config accepts (seeded: the same every run)."""
    rng = random.Random(seed)
    kinds = ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"]
    return dict(num_hidden_layers=6, layer_types=[rng.choice(kinds) for _ in range(6)],
                mlp_layer_types=[rng.choice(["hash_moe", "moe"]) for _ in range(6)],
                hc_mult=rng.choice([1, 2, 3]), o_groups=rng.choice([1, 2, 4]),
                o_lora_rank=rng.choice([4, 8, 12]), sliding_window=rng.choice([2, 3, 7]),
                index_topk=rng.choice([1, 3]), mlp_bias=rng.choice([True, False]),
                tie_word_embeddings=rng.choice([True, False]))


# Hy4 (transformers `models/hy_v4/`, flopcalc `kinds/hy_v4.py`): six layers, the default
# indexer schedule (layers 0, 1 and 5 with their own indexer, the others reusing its selection)
# and the first layer dense; an indexer keeping the top 3 so that the selection binds at 5 tokens
HY_SHRINK = dict(hidden_size=64, intermediate_size=64, moe_intermediate_size=32,
                 num_hidden_layers=6, num_attention_heads=4, q_lora_rank=24, kv_lora_rank=16,
                 qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=8,
                 num_experts_per_tok=2, vocab_size=256, index_n_heads=2, index_head_dim=8,
                 index_topk=3, pad_token_id=0, bos_token_id=1, eos_token_id=2)

CASES = [
    Case("hy_v4", shrink=HY_SHRINK, lengths=(5, 13), variants=(
        dict(num_hidden_layers=6, indexer_types=["full", "shared", "full", "full", "shared",
                                                 "shared"], mlp_layer_types=["sparse"] * 6),
        dict(num_hidden_layers=6, mlp_layer_types=["dense", "dense", "sparse"] * 2,
             tie_word_embeddings=True, attention_bias=True),
        dict(hc_mult=2, n_shared_experts=2),
        dict(hc_mult=1, n_shared_experts=0),
    )),
    Case("deepseek_v4", shrink=SHRINK, lengths=(5, 13, 21), variants=(
        dict(num_hidden_layers=6, layer_types=LAYERS),
        # the published DeepSeek-V4-Flash's schedule: two sliding-only layers, then compressed
        # sparse (rate 4) and heavily compressed (rate 128) alternating, as compress_ratios
        dict(num_hidden_layers=6, compress_ratios=[0, 0, 4, 128, 4, 128, 0]),
        dict(num_hash_layers=0, tie_word_embeddings=True),
        dict(num_hash_layers=6, mlp_bias=True, n_shared_experts=2),
        dict(hc_mult=1, o_groups=4, o_lora_rank=16),
        dict(compress_rate_csa=2, compress_rate_hca=3, index_topk=1, index_n_heads=3),
        dict(num_hidden_layers=6, layer_types=["compressed_sparse_attention"] * 6,
             q_lora_rank=40),
        _seeded(1), _seeded(2), _seeded(3),
    )),
]
