"""Keys a wrapper's nested text class sets apart from the family it counts as
(models/hf/multimodal.py `FIXES`): a published file may leave out what `save_pretrained`
writes, so each recorded config of tests/data/zoo/ (transformers' own count beside it) is
imported again without the key, and must count the same; and keys the class ignores must
change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import sweep

pytestmark = pytest.mark.recorded

ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"


def _default(model_type: str) -> dict:
    return json.loads((ZOO / f"{model_type}.json").read_text())["cases"][0]["params"][0]


@pytest.mark.parametrize("model_type, key", [
    ("glm4v_moe_text", "attention_bias"),  # Glm4vMoeTextConfig: true (GLM-4.5's: false)
    ("qwen3_omni_moe_text", "head_dim"),  # absent from its config: d // heads, 2048 // 28 = 73
])
def test_a_key_left_out_takes_the_text_class_default(model_type, key):
    entry = _default(model_type)
    config = {k: v for k, v in entry["config"].items() if k != key}
    assert sweep.flopcalc_report(config, seq=8).params.total == entry["params"]


def test_qwen3_omni_moe_text_has_no_window_whatever_the_file_says():
    # Qwen3OmniMoeThinkerTextAttention sets sliding_window = None on every layer, so the cache
    # keeps every token: K and V of 28 layers × 4 KV heads × head_dim 73 (2048 // 28) in fp32,
    # 2·28·4·73·4 = 65,408 bytes a token; a 10-token prompt and no new token: 654,080
    config = {**_default("qwen3_omni_moe_text")["config"], "use_sliding_window": True,
              "sliding_window": 4, "max_window_layers": 0}
    doc = sweep.flopcalc_report(config, seq=0, batch=1, command="infer", prompt=10, gen=0,
                                kv_dtype="fp32", state_dtype="fp32")
    assert doc.kv_cache.bytes == 654_080


def test_glm4v_text_head_width_is_d_over_heads_whatever_the_file_says():
    # Glm4vTextAttention: head_dim = hidden_size // num_attention_heads, q, k, v always biased;
    # a head_dim or attention_bias in the file changes nothing
    entry = _default("glm4v_text")
    config = {**entry["config"], "head_dim": 7, "attention_bias": False}
    assert sweep.flopcalc_report(config, seq=8).params.total == entry["params"]


def test_cosmos3_edge_text_head_width_is_128_when_absent():
    # Cosmos3EdgeTextConfig's head_dim is 128 (Arcee's would be 64 / 4 = 16). One layer,
    # d 64, 4 heads, 2 KV heads, MLP 8, vocabulary 10, the head untied (Cosmos3-Edge never
    # ties it): embeddings 10·64 = 640; q 64·4·128 = 32,768, k and v 64·2·128 = 16,384 each,
    # o 512·64 = 32,768; fc1 and fc2 64·8 = 512 each; two norms 128 and the final 64; the head
    # 640: 100,800 (transformers 5.24 on the meta device counts the same)
    config = dict(model_type="cosmos3_edge_text", num_hidden_layers=1, hidden_size=64,
                  num_attention_heads=4, num_key_value_heads=2, intermediate_size=8,
                  vocab_size=10, tie_word_embeddings=True)
    assert sweep.flopcalc_report(config, seq=8).params.total == 100_800
