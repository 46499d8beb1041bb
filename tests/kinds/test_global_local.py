"""Pegasus-X's global-local encoder layer by hand (kinds/global_local.py): d 8, 2 heads of 4,
MLP 12 wide, blocks of 4, 2 global tokens; layer 0 plain (holding the global-token table),
layer 1 staggered. The sweep checks the same arithmetic against FlopCounterMode
(tests/sweep/cases_seq2seq_leftovers.py)."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MODEL = """architecture: encoder-only
n_layers: 2
d_model: 8
n_heads: 2
norm: layernorm
norm_placement: pre
final_norm: false
positions: learned
max_seq_len: 16
vocab_size: 10
head: none
bias: {qkv: false, attn_out: false, mlp: true}
layer_types: [global_local_first, global_local_staggered]
global_local: {block_size: 4, num_global_tokens: 2, intermediate_size: 12}
"""


def _path(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def test_params(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path, MODEL), "--seq", "5")
    # per layer: q, k, v, o 4·8·8 = 256 (no biases), the globals' norm 16, the MLP's norm 16,
    # up 8·12 + 12 = 108, down 12·8 + 8 = 104, the layer's own norm 16 → 516; layer 0 also
    # the 2 × 8 global-token table; tables: tokens 10·8 + positions 16·8 = 208
    assert doc["params"]["total"] == 2 * 516 + 16 + 208


def test_forward(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path, MODEL), "--seq", "5", "--batch", "2")
    # 5 tokens pad to P = 8 (2 blocks); G = 2 globals; batch 2.
    # layer 0: q, k, v, o on 2·(8 + 2) = 20 rows: 4·2·20·64 = 10,240; the MLP on the same 20:
    # 2·2·20·8·12 = 7,680; pairs per head-sequence G·(G + P) + P·(G + b) = 2·10 + 8·6 = 68,
    # × 4 head-sequences = 272, scores and values 2 · 2·272·4 = 4,352 → 22,272.
    # layer 1, staggered: P' = 8 + 2·2 = 12, q, k, v, o on 2·14 = 28 rows: 14,336; the MLP on
    # 20 rows (the half blocks dropped): 7,680; pairs 2·14 + 12·6 = 100, × 4 = 400, scores and
    # values 2 · 2·400·4 = 6,400 → 28,416
    assert doc["flops"]["forward"] == 22_272 + 28_416


def test_an_odd_block_cannot_stagger(cli, tmp_path):
    text = MODEL.replace("block_size: 4", "block_size: 5")
    r = cli("model", _path(tmp_path, text))
    assert r.code == 2 and "block_size=5 is odd" in r.err


def test_one_global_token_sums_element_wise(cli, tmp_path):
    text = (MODEL.replace("n_layers: 2", "n_layers: 1")
            .replace("[global_local_first, global_local_staggered]", "[global_local_first]")
            .replace("num_global_tokens: 2", "num_global_tokens: 1"))
    doc = run(cli, "model", _path(tmp_path, text), "--seq", "5")
    # P = 8, G = 1, one sequence: q, k, v, o and the MLP on 9 rows, 4·2·9·64 + 2·2·9·96 =
    # 8,064; scores per head G·(G + P) + P·(G + b) = 9 + 40 = 49 pairs, 2·2·49·4 = 784; the
    # weighted sums as matmuls: the global's over 9 keys and the tokens' over their block,
    # 9 + 8·4 = 41 pairs, 2·2·41·4 = 656; the tokens' sum over the one global (8 pairs) is an
    # element-wise product in torch.einsum, not a matmul
    assert doc["flops"]["forward"] == 8_064 + 784 + 656
