"""Gemma 4's published configs (tests/data/hf/gemma4/, SOURCES.md there): flopcalc's count of
the language model equals transformers' (Gemma4ForCausalLM over text_config on the meta device,
transformers 5.24; tests/pytorch/test_gemma4_published_configs.py rebuilds it), and the note
names the towers left out."""

from __future__ import annotations

import pytest

from tests.conftest import DATA, run

pytestmark = pytest.mark.published

HF = DATA / "hf" / "gemma4"

# transformers' count of the language model and tied head; the model cards' sizes ("31B";
# E2B "5.1B with embeddings") are the whole wrappers: 30,868,838,656 and 5,104,297,504 with
# the vision (and E2B's audio) towers, which flopcalc does not count
LANGUAGE_MODEL = {"gemma-4-31b": 30_697_345_280, "gemma-4-e2b": 4_628_569_344,
                  "gemma-4-26b-a4b": 25_233_141_760}
TOWERS = {"gemma-4-31b": "gemma4_vision encoder", "gemma-4-e2b": "gemma4_vision and "
          "gemma4_audio encoders", "gemma-4-26b-a4b": "gemma4_vision encoder"}


@pytest.mark.parametrize("name", sorted(LANGUAGE_MODEL))
def test_published_gemma4_counts_as_transformers(cli, name):
    doc = run(cli, "model", HF / f"{name}.json")
    assert doc["params"]["total"] == LANGUAGE_MODEL[name]
    assert TOWERS[name] in doc["model"]["notes"] and "not counted" in doc["model"]["notes"]



def test_26b_a4b_active_parameters_are_the_model_card_s(cli):
    """The model card's "25.2B total, 3.8B active": each of the 30 layers reads 8 of its 128
    experts, so 120 experts of 3·2,816·704 weights (gate, up, down) per layer sit idle:
    25,233,141,760 − 30·120·3·2,816·704 = 25,233,141,760 − 21,410,611,200 = 3,822,530,560."""
    doc = run(cli, "model", HF / "gemma-4-26b-a4b.json")
    assert doc["params"]["active"] == 3_822_530_560
