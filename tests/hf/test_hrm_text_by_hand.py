"""HRM's text model (transformers `models/hrm_text/modeling_hrm_text.py`) counted by hand: two
weight-shared stacks run in nested cycles, gated attention, weightless norms, z_L_init; and
the layer counts it refuses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# d = 4, 2 heads of 2 (multi-head), d_ff 3, V 10; stacks of one layer, H_cycles 2, L_cycles 3:
# each H cycle runs the L stack 3 times then the H stack once → 8 runs.
TINY = dict(model_type="hrm_text", vocab_size=10, hidden_size=4, intermediate_size=3,
            num_hidden_layers=1, num_attention_heads=2, head_dim=2, H_cycles=2, L_cycles=3,
            max_position_embeddings=64)


def _write(tmp_path, **keys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **keys}))
    return path


def test_tiny_hrm_text_by_hand(cli, tmp_path):
    # a layer: q, k, v, o 4·4 = 16 each and gate_proj 4·4 = 16 → 80; MLP 3·4·3 = 36 → 116
    #   (its norms weightless); two stacks 232; z_L_init 4; embeddings 40, untied head 40: 316
    doc = run(cli, "model", _write(tmp_path), "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 316
    # per token against weights: a run 80 + 36 = 116, 8 runs 928, head 40 → 968; ×2×4 tokens
    #   = 7,744
    assert doc["flops"]["weights"] == 7_744


def test_saved_file_reads_the_runs(cli, tmp_path):
    # a saved file holds num_layers_per_stack and num_hidden_layers = 1·2·(3 + 1) = 8: the same
    path = _write(tmp_path, num_layers_per_stack=1, num_hidden_layers=8)
    assert run(cli, "model", path, "--seq", 4)["params"]["total"] == 316


@pytest.mark.parametrize("keys, words", [
    (dict(num_layers_per_stack=1, num_hidden_layers=6), "num_hidden_layers=6 must be"),
    (dict(L_cycles=0), "L_cycles=0"),
])
def test_hrm_refusals_name_the_key(cli, tmp_path, keys, words):
    r = cli("model", str(_write(tmp_path, **keys)), "--format", "json")
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert words in r.err
