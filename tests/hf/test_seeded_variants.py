"""The sweep's seeded random variants (tests/sweep/draws.py), without transformers: drawn the
same in every process, and keeping the rules a config needs to build, as the parameter check
and as the shrunk FLOP run see it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sweep import draws as seeded

pytestmark = pytest.mark.invariant

ROOT = Path(__file__).resolve().parents[2]

# a Llama-like default (the generic keys as transformers' to_dict writes them)
LLAMA = dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
             num_key_value_heads=8, head_dim=128, intermediate_size=11008, vocab_size=32000,
             attention_bias=False, mlp_bias=False, tie_word_embeddings=False, pad_token_id=None,
             bos_token_id=1, eos_token_id=2)
MOE = dict(LLAMA, n_routed_experts=64, num_experts_per_tok=6, n_group=8, topk_group=3,
           moe_intermediate_size=1408, first_k_dense_replace=3, head_dim=None)


def _draws(model_type: str, config: dict, shrink: dict, skip: tuple = ()) -> tuple:
    return seeded.variants(model_type, config, shrink, skip, 16)


def test_the_same_draws_in_a_process_with_another_hash_seed():
    # Python's hash() of a str changes with PYTHONHASHSEED; zlib.crc32 does not
    code = ("import json, sys; from tests.sweep import draws as seeded; "
            "print(json.dumps(seeded.variants('llama', json.loads(sys.argv[1]), {}, (), 4)))")
    out = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
        run = subprocess.run([sys.executable, "-c", code, json.dumps(LLAMA)], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
        out.append(json.loads(run.stdout))
    assert out[0] == out[1] == [dict(v) for v in _draws("llama", LLAMA, {})[:4]]
    assert _draws("llama", LLAMA, {}) != _draws("mistral", LLAMA, {})  # seeded by the type


def test_draws_keep_heads_kv_and_widths_consistent():
    for v in _draws("llama", LLAMA, {}):
        assert 1 <= v["num_hidden_layers"] <= 4
        assert v["num_attention_heads"] % v["num_key_value_heads"] == 0
        # an explicit head width: the hidden size is heads × width or twice that
        assert v["hidden_size"] in (v["num_attention_heads"] * v["head_dim"] * m for m in (1, 2))
    no_width = dict(LLAMA, head_dim=None)
    for v in _draws("gpt2ish", no_width, {}):
        assert "head_dim" not in v
        assert v["hidden_size"] % v["num_attention_heads"] == 0
        assert (v["hidden_size"] // v["num_attention_heads"]) % 2 == 0


def test_draws_keep_experts_groups_and_dense_layers():
    for v in _draws("deepseek_v3ish", MOE, {}):
        assert v["n_routed_experts"] % 8 == 0  # whole routing groups
        experts = v["n_routed_experts"]
        assert v["num_experts_per_tok"] <= min(experts, 3 * experts // 8)  # in 3 of 8 groups
        assert v["num_hidden_layers"] > 3  # a sparse layer after the 3 dense ones


def test_the_shrink_decides_which_geometry_keys_are_drawn():
    # the shrink sets hidden size and heads only: the drawn KV heads must divide its heads too,
    # and the head width (which the FLOP run would mix with the shrunk heads) stays the default
    shrink = dict(hidden_size=64, num_attention_heads=4)
    for v in seeded.variants("llama", LLAMA, shrink, (), 64):
        assert "head_dim" not in v
        assert v["hidden_size"] == v["num_attention_heads"] * 128
        assert 4 % v["num_key_value_heads"] == 0
        assert v["num_attention_heads"] % v["num_key_value_heads"] == 0


def test_per_layer_lists_keep_the_layer_count():
    config = dict(LLAMA, layer_types=["full_attention"] * 32)
    assert all("num_hidden_layers" not in v for v in _draws("llama", config, {}))
    shrunk_lists = {"layer_types": ["full_attention"] * 2}  # the FLOP run's lists: its count
    assert all("num_hidden_layers" not in v for v in _draws("llama", LLAMA, shrunk_lists))


def test_skipped_keys_are_never_drawn():
    skip = ("hidden_size", "tie_word_embeddings", "vocab_size")
    for v in _draws("llama", dict(LLAMA, head_dim=None), {}, skip):
        assert not set(skip) & set(v)
        # no head width key: the heads still divide the default hidden size into even widths
        assert (4096 // v["num_attention_heads"]) % 2 == 0 == 4096 % v["num_attention_heads"]


def test_the_vocabulary_holds_every_special_token():
    config = dict(LLAMA, pad_token_id=151643, eos_token_id=[151645, 151643])
    assert all(v["vocab_size"] > 151645 for v in _draws("qwen2", config, {}))


def test_a_wrapper_ties_by_its_own_key():
    top = {"tie_word_embeddings": True, "text_config": LLAMA}
    for v in seeded.variants("llava", LLAMA, {}, (), 8, top):
        assert "tie_word_embeddings" not in v and set(v["top"]) == {"tie_word_embeddings"}
