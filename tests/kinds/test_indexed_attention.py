"""Kolibri 1.1's indexed attention by hand (kinds/kolibri.py): the indexer's token and pool
scores, the top-k mask, KV sharing.

The model: d 8, 2 layers of 2 heads × 4 (1 KV head), per-head q/k norms, no norms around the
sublayers' outputs (pre-norm), a plain ReLU MLP 8 wide, a tied vocabulary of 10; both layers
indexed with an indexer of H = 1 head over B = topk 2 + local 1 + sink 1 = 4 keys, layer 0
picking pools of P = 4 keys in blocks of c = 2, layer 1 reading layer 0's keys and values.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

TINY = """n_layers: 2
d_model: 8
n_heads: 2
n_kv_heads: 1
head_dim: 4
d_ff: 8
mlp: plain
activation: relu
bias: false
norm: rmsnorm
qk_norm: per_head
positions: rotary
vocab_size: 10
layer_types: [indexed_pool, indexed_shared]
indexed_attention: {topk: 2, local_tokens: 1, sink_tokens: 1, pool_size: 4, compression: 2,
                    heads: 1}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "kolibri.yaml"
    path.write_text(TINY)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # the indexer has no weights; the shared layer no k, v or k norm: k 8×4 = 32 once
    assert (c["decoder.attn.k.weight"], c["decoder.attn.v.weight"]) == (32, 32)
    # layer 0: q 8×8 + k 32 + v 32 + o 8×8 + q/k norms 4 + 4 = 200, 2 norms 16, MLP 2·8·8 =
    #   128 → 344; layer 1: 64 + 64 + 4 = 132, 16, 128 → 276; table 80 (tied), final norm 8
    assert sum(c.values()) == 344 + 276 + 80 + 8


def test_indexer_scores_at_seven_tokens(cli, model):
    f = run(cli, "model", model, "--seq", 7)["flops"]["components"]
    # each of the n − B = 7 − 4 = 3 queries seeing more than 4 keys is scored against all 7:
    #   2·H·d_h·3·7 = 2·1·4·21 = 168 per layer; layer 0 also scores the 7 − P = 3 queries
    #   seeing more than 4 keys against ⌊7/2⌋ = 3 block means: 2·4·3·3 = 72 → 168·2 + 72 = 408
    assert f["decoder.attn.indexer.scores"] == 408


def test_no_indexer_work_below_the_budget(cli, model):
    # at 4 tokens no query sees more than B = 4 keys nor P = 4: the attention alone
    f = run(cli, "model", model, "--seq", 4)["flops"]["components"]
    assert "decoder.attn.indexer.scores" not in f


def test_decode_steps(cli, model):
    # one sequence, prompt 5, 2 steps at positions 6 and 7 (the prompt's last token re-fed is
    # not a step): the indexer scores the new token against 6, then 7 keys in each layer,
    # 2·4·(6 + 7)·2 = 208, and layer 0's pool ⌊6/2⌋ + ⌊7/2⌋ = 6 block means, 2·4·6 = 48
    decode = run(cli, "infer", model, "--prompt", 5, "--gen", 2)["decode"]
    assert (decode["context_first"], decode["context_last"]) == (6, 7)
    assert decode["components"]["decoder.attn.indexer.scores"] == 208 + 48
    # the attention itself over min(p, B) = 4 picked keys per step and layer:
    # 2·2 heads·4·(4 + 4)·2 layers = 256
    assert decode["components"]["decoder.attn.scores"] == 256


def test_kv_shared_layer_keeps_no_cache(cli, model):
    # layer 0 alone keeps K and V: 1 head × (4 + 4) values × 4 bytes per token, every token
    # (any may be picked): 9 tokens → 288
    doc = run(cli, "infer", model, "--prompt", 9, "--gen", 0, "--kv-dtype", "fp32")
    assert doc["kv_cache"]["bytes"] == 9 * 32
