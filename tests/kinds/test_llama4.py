"""Llama 4's text model by hand: chunked RoPE layers with the weightless L2 QK-norm, a global NoPE
layer with temperature tuning, MoE on every 2nd layer (one shared expert, top-1) and dense MLPs
of their own width on the others.

d 8, 2 query heads and 1 KV head of 4, chunks of 2; dense MLP 4, 4 experts of 2; 4 layers
(rope, rope, rope, nope); an untied vocabulary of 8.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.recorded, pytest.mark.behaviour]

LLAMA4 = """n_layers: 4
d_model: 8
n_heads: 2
n_kv_heads: 1
head_dim: 4
d_ff: 4
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
tie_embeddings: false
layer_types: [llama4_rope, llama4_rope, llama4_rope, llama4_nope]
llama4_attention: {attention_chunk: 2}
moe: {experts: 4, top_k: 1, d_ff: 2, shared_experts: 1, every: 2}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "llama4.yaml"
    path.write_text(LLAMA4)
    return str(path)


def test_params(cli, model):
    p = run(cli, "model", model)["params"]
    # Per layer: q 8·8 = 64, k and v 8·4 = 32 each, o 64 (the L2 QK-norm has no weights) and
    # two RMSNorms 16. Layers 0 and 2: a dense MLP 3·8·4 = 96; layers 1 and 3: the router 8·4
    # = 32, 4 experts 4·3·8·2 = 192 and the shared expert 3·8·2 = 48. The table 64, the head
    # 64, the final norm 8: 136 + 2·(208 + 96) + 2·(208 + 272) = 1,704.
    assert p["total"] == 1704
    # A token uses 1 of the 4 experts: 3·48 fewer in each MoE layer.
    assert p["active"] == 1704 - 2 * 3 * 48


def test_causal_pairs_per_kind_of_layer(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--attention", "causal")["flops"]["components"]
    # RoPE layers in chunks of 2: queries see 1, 2 | 1, 2 | 1 keys, 7 pairs; the NoPE layer
    # every causal key, 15. Scores 3·2·2·7·4 + 2·2·15·4 = 336 + 240 = 576, values the same.
    assert c["decoder.attn.scores"] == c["decoder.attn.av"] == 576


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise", "--attention", "causal"
            )["flops"]["components"]
    # The L2 QK-norm on each RoPE layer: 3 per element of q (5·8) and k (5·4), 180, x 3 layers.
    # The NoPE layer's temperature: 6 per position (5) and 1 per query element (5·8): 70.
    # Softmax 5·2·(3·7 + 15) = 360.
    assert (c["decoder.attn.elementwise.qk_norm"], c["decoder.attn.elementwise.temperature"],
            c["decoder.attn.elementwise.softmax"]) == (540, 70, 360)


def test_switches_off(cli, tmp_path):
    path = tmp_path / "off.yaml"
    path.write_text(LLAMA4.replace("{attention_chunk: 2}", "{l2_qk_norm: false, "
                                   "temperature_tuning: false}"))
    c = run(cli, "model", str(path), "--seq", 5, "--elementwise", "--attention", "causal"
            )["flops"]["components"]
    # No chunk: every layer causal, 15 pairs: 4·2·2·15·4 = 960; neither element-wise term.
    assert c["decoder.attn.scores"] == 960
    assert "decoder.attn.elementwise.qk_norm" not in c
    assert "decoder.attn.elementwise.temperature" not in c


def test_published_scout_reads_temperature_tuning_4_as_true(cli, tmp_path):
    from tests.conftest import DATA

    text = json.loads((DATA / "hf" / "sparse" / "llama-4-scout.json").read_text())["text_config"]
    assert text["attn_temperature_tuning"] == 4
    path = tmp_path / "config.json"
    path.write_text(json.dumps(text))
    r = cli("show", str(path))
    assert r.code == 0, r.err
    assert "llama4_nope" in r.out and "attention_chunk: 8192" in r.out
    assert "temperature_tuning: false" not in r.out  # true, the default
    p = run(cli, "model", str(path))["params"]
    # transformers' Llama4ForCausalLM on the meta device (tests/pytorch/test_sparse.py).
    assert (p["total"], p["active"]) == (107_769_861_120, 17_172_894_720)


def test_qk_norm_key_is_refused(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(LLAMA4 + "qk_norm: per_head\n")
    r = cli("model", str(path))
    assert r.code == 2 and "llama4_attention.l2_qk_norm" in r.err


@pytest.mark.parametrize("wrapped", [False, True])
def test_null_chunk_size_is_no_chunking(cli, tmp_path, wrapped):
    # transformers 5.24 `Llama4TextConfig`: layer_types "chunked_attention" only where the layer
    # has RoPE and attention_chunk_size is not None, so an explicit null makes every layer
    # global; the wrapper (text_config) reads the same.
    from tests.conftest import DATA

    doc = json.loads((DATA / "hf" / "sparse" / "llama-4-scout.json").read_text())
    doc["text_config"]["attention_chunk_size"] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc if wrapped else doc["text_config"]))
    r = cli("show", str(path))
    assert r.code == 0, r.err
    assert "attention_chunk: 8192" not in r.out
    c = run(cli, "model", str(path), "--seq", 10_000, "--attention", "causal")["flops"]
    # 48 layers, every one causal over all 10,000 tokens: 10,000·10,001/2 = 50,005,000 pairs,
    # 40 query heads of 128: scores 2·40·128·50,005,000 per layer, × 48.
    assert c["components"]["decoder.attn.scores"] == 48 * 2 * 40 * 128 * 50_005_000
