"""transformers 5.25's new text types that came after the first set (flopcalc/models/hf/ergo.py and
kolibri.py): their cases (defaults, variants and seeded random settings), which
tests/pytorch/test_transformers_5_25_types.py runs beside the first set's (parameters against
the model built on the meta device, forward FLOPs of a shrunk copy against FlopCounterMode),
and their default configs' counts. Skipped where the installed transformers is older."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests import sweep  # noqa: E402
from tests.sweep import Case  # noqa: E402

_VERSION = tuple(int(p) for p in transformers.__version__.split(".")[:2] if p.isdigit())
pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(_VERSION < (5, 25), reason="needs transformers 5.25 (installed: "
                                 f"{transformers.__version__}); its new model types")]

# Ergo's layers, shrunk: 4 layers (the first dense), window and full alternating, 4 experts of
# which 2 routed, a shared expert
_ERGO = dict(vocab_size=97, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, first_dense_intermediate_size=96, moe_intermediate_size=24,
             shared_intermediate_size=40, num_experts=4, num_experts_per_tok=2,
             sliding_window=4, global_attention_every_n_layers=2)


def _seeded(count: int, seed: int = 25) -> tuple[dict, ...]:
    """Random settings ErgoConfig accepts: 1 to 6 layers, each window or full and dense or
    sparse, head splits, expert counts and widths, windows, a context scale."""
    rng, out = random.Random(seed), []
    for _ in range(count):
        n = rng.randint(1, 6)
        heads, experts = rng.choice([1, 2, 4, 8]), rng.randint(1, 6)
        out.append(dict(
            num_hidden_layers=n, num_attention_heads=heads,
            num_key_value_heads=rng.choice([h for h in (1, 2, 4, 8) if heads % h == 0]),
            layer_types=[rng.choice(["sliding_attention", "full_attention"]) for _ in range(n)],
            mlp_layer_types=[rng.choice(["dense", "sparse"]) for _ in range(n)],
            num_experts=experts, num_experts_per_tok=rng.randint(1, experts),
            moe_intermediate_size=rng.choice([8, 16, 24]),
            shared_intermediate_size=rng.choice([8, 40]),
            first_dense_intermediate_size=rng.choice([32, 96]),
            sliding_window=rng.randint(2, 8),
            global_attention_scale=rng.choice([None, 2.0])))
    return tuple(out)


# Kolibri 1.1's layers, shrunk: 10 layers alternating window and indexed (the default sources:
# the 2nd and 3rd indexed layers read the 1st's keys, the 4th and 5th their own), an indexer of
# 2 heads, 4 experts of which 2 routed, a shared expert, the first two layers dense
_KOLIBRI = dict(vocab_size=97, hidden_size=64, num_hidden_layers=10, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, moe_intermediate_size=24,
                shared_expert_intermediate_size=40, num_experts=4, num_experts_per_tok=2,
                mlp_only_intermediate_size=96, sliding_window=4, index_num_heads=2,
                layer_types=["sliding_attention", "indexed_attention"] * 5)
# an indexer that runs at these lengths: queries seeing more than 2 + 1 + 1 keys are scored,
# pools of 8 keys picked in blocks of 2
_RUNS = dict(index_topk=2, index_num_local_tokens=1, index_num_sink_tokens=1,
             index_pool_size=8, index_compression=2)


def _kolibri_seeded(count: int, seed: int = 11) -> tuple[dict, ...]:
    """Random settings Kolibri1_1Config accepts: 1 to 8 layers of random types, pool layers
    among the indexed ones (the first always), each indexed layer reading its own keys or those
    of an earlier indexed layer that computes them, dense layers, indexer sizes."""
    rng, out = random.Random(seed), []
    for _ in range(count):
        n = rng.randint(1, 8)
        kinds = [rng.choice(["sliding_attention", "indexed_attention"]) for _ in range(n)]
        indexed = [i for i, k in enumerate(kinds) if k == "indexed_attention"]
        pools = sorted({indexed[0], *rng.sample(indexed, rng.randint(0, len(indexed)))}) \
            if indexed else []
        sources = list(range(n))
        for i in indexed:
            owners = [j for j in indexed if j < i and sources[j] == j]
            if owners and rng.random() < 0.5:
                sources[i] = rng.choice(owners)
        compression = rng.choice([1, 2, 4])
        out.append(dict(
            num_hidden_layers=n, layer_types=kinds, index_layers=pools,
            kv_source_layers=sources, mlp_only_layers=sorted(rng.sample(range(n),
                                                                        rng.randint(0, n))),
            index_topk=rng.randint(1, 4), index_num_local_tokens=rng.randint(0, 3),
            index_num_sink_tokens=rng.randint(0, 2), index_compression=compression,
            index_pool_size=compression * rng.randint(1, 5), index_num_heads=rng.randint(1, 2),
            sliding_window=rng.randint(2, 8), tie_word_embeddings=rng.random() < 0.3))
    return tuple(out)


CASES = [
    Case("ergo", shrink=_ERGO, lengths=(5, 13), variants=(
        # no dense layer; every layer full; three dense layers of eight, every 3rd full
        dict(num_dense_blocks=0), dict(global_attention_every_n_layers=1),
        dict(num_hidden_layers=8, num_dense_blocks=3, global_attention_every_n_layers=3),
        # the released checkpoints' key for the window, and a context scale on full layers
        dict(local_attention_window=128, global_attention_scale=4.0))),
    # the seeded settings carry their own layer lists: this shrink sets widths only
    Case("ergo", shrink=dict(vocab_size=97, hidden_size=64), lengths=(5, 9),
         fix=dict(num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                  first_dense_intermediate_size=96,
                  moe_intermediate_size=24, shared_intermediate_size=40, num_experts=4,
                  num_experts_per_tok=2),
         variants=_seeded(6)),
    Case("kolibri1_1", shrink=_KOLIBRI, lengths=(5, 13), variants=(
        _RUNS,
        # pools on every indexed layer, no sharing, the dense layers elsewhere, tied
        dict(_RUNS, num_hidden_layers=10, layer_types=_KOLIBRI["layer_types"],
             index_layers=[1, 3, 5, 7, 9], kv_source_layers=list(range(10)),
             mlp_only_layers=[4, 9], tie_word_embeddings=True),
        # no dense layer and no shared expert
        dict(mlp_only_layers=[], shared_expert_intermediate_size=0))),
    # the seeded settings carry their own layer lists: this shrink sets widths only
    Case("kolibri1_1", shrink=dict(vocab_size=97, hidden_size=64), lengths=(5, 11),
         fix=dict(num_hidden_layers=10, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=16, moe_intermediate_size=24, shared_expert_intermediate_size=40,
                  num_experts=4, num_experts_per_tok=2, mlp_only_intermediate_size=96,
                  index_num_heads=2),
         variants=_kolibri_seeded(6)),
]


def test_kolibri1_1_default_is_transformers_count():
    # Kolibri1_1Config() built by Kolibri1_1ForCausalLM on the meta device: 75,112,646,912
    # parameters (50 layers of 2,560, 10 of them indexed, 6 of those with their own keys and
    # values, 2 dense, 384 experts of 512 and a shared expert, an untied 128,000-row head)
    config = sweep.config_of("kolibri1_1", {})
    assert sweep.flopcalc_report(sweep.saved(config), seq=8).params.total == 75_112_646_912


def test_ergo_default_is_transformers_count():
    # ErgoConfig() built by ErgoForCausalLM on the meta device: 1,105,550,917,632 parameters
    # (64 layers of 8,192, one dense of 32,768, 63 with 256 experts of 4,096 and a shared
    # expert of 8,192, an untied 262,144-row head)
    config = sweep.config_of("ergo", {})
    assert sweep.flopcalc_report(sweep.saved(config), seq=8).params.total == 1_105_550_917_632
