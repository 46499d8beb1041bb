"""A model without an LM head (Splinter's span-selection encoder, π0.5's backbone) says so in
its conventions instead of claiming a head it does not have."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.behaviour


def test_a_headless_model_says_it_has_no_head(cli, tmp_path):
    # a small Splinter (BERT layers, question-token span selection, no LM head)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "splinter", "num_hidden_layers": 2,
                                "hidden_size": 64, "num_attention_heads": 4,
                                "intermediate_size": 128, "vocab_size": 100,
                                "max_position_embeddings": 64}))
    lines = run(cli, "model", path)["conventions"]
    assert any(line.startswith("no LM head") for line in lines)
    assert not any("LM head counted" in line for line in lines)


def test_a_model_with_a_head_still_counts_it(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2,
                                "hidden_size": 64, "num_attention_heads": 4,
                                "intermediate_size": 128, "vocab_size": 100}))
    lines = run(cli, "model", path)["conventions"]
    assert any(line.startswith("LM head counted") for line in lines)
