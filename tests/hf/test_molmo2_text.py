"""Molmo 2's language model by hand (`molmo2_text`, `molmo2`): a token table of vocab_size +
additional_vocab_size rows and a head of vocab_size, never tied (`extra_token_rows`); and that
key's bad uses (tests/sweep/cases_mm_leftovers.py checks the same types against transformers)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

# d 64, 4 query heads of 16, 2 KV heads, MLP 96, 2 layers, vocabulary 100 + 16 extra rows
MOLMO = dict(model_type="molmo2_text", vocab_size=100, additional_vocab_size=16, hidden_size=64,
             intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, max_position_embeddings=64)


def _file(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_extra_rows_are_in_the_table_not_the_head(cli, tmp_path):
    # token table (100 + 16)·64 = 7,424; head 64·100 = 6,400 (untied even when the file says
    # tied: Molmo2ForConditionalGeneration ties nothing); final norm 64
    # per layer: q 64·64 + k 64·32 + v 64·32 + o 64·64 = 12,288, q/k norms per head 16 + 16,
    #   MLP 3·64·96 = 18,432, two norms 128 → 30,880; two layers 61,760
    # total 7,424 + 6,400 + 64 + 61,760 = 75,648
    doc = run(cli, "model", _file(tmp_path, {**MOLMO, "tie_word_embeddings": True}), "--seq",
              "8")
    assert doc["params"]["total"] == 75_648
    # the head reads V = 100 columns: (T×64)·(64×100) per token at seq 8 → 2·8·64·100
    assert doc["flops"]["components"]["lm_head"] == 2 * 8 * 64 * 100


def test_olmo_norms_span_all_heads(cli, tmp_path):
    # qk_norm_type "olmo": q norm 64 and k norm 32 wide in place of 16 + 16 → +64 per layer
    doc = run(cli, "model", _file(tmp_path, {**MOLMO, "qk_norm_type": "olmo"}))
    assert doc["params"]["total"] == 75_648 + 2 * 64


def test_extra_rows_need_an_untied_head(cli, tmp_path):
    text = ("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 16\nvocab_size: 10\n"
            "positions: rotary\nextra_token_rows: 3\n")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    r = cli("model", str(path), "--seq", "4")
    assert r.code == 2 and "extra_token_rows" in r.err and "tie_embeddings: false" in r.err


def test_unknown_qk_norm_type_is_named(cli, tmp_path):
    r = cli("model", str(_file(tmp_path, {**MOLMO, "qk_norm_type": "gemma"})))
    assert r.code == 2 and "qk_norm_type" in r.err and len(r.err.strip().splitlines()) == 1
