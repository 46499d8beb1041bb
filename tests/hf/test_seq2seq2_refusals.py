"""Settings of newly imported types that flopcalc cannot count exactly are refused in one line
naming the setting (the types themselves are checked against transformers in
tests/sweep/cases_hf_seq2seq.py)."""

from __future__ import annotations

import pytest

from flopcalc.errors import FlopcalcError
from flopcalc.models import hf

pytestmark = pytest.mark.behaviour

BART = dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
            decoder_ffn_dim=80, max_position_embeddings=64)


@pytest.mark.parametrize("data, words", [
    # BigBird's block-sparse encoder attention: transformers' default and the checkpoints'
    (dict(BART, model_type="bigbird_pegasus"), "block-sparse"),
    (dict(BART, model_type="bigbird_pegasus", attention_type="block_sparse"), "block-sparse"),
    # MVP's prompt prefixes in every attention
    (dict(BART, model_type="mvp", use_prompt=True), "use_prompt"),
    # GPT-Neo: three layer kinds named for two layers (GPTNeoConfig refuses it too)
    (dict(model_type="gpt_neo", hidden_size=64, num_layers=2, num_heads=4, vocab_size=128,
          max_position_embeddings=64, attention_types=[[["global", "local", "global"], 1]]),
     "attention_types names 3 layers"),
])
def test_uncountable_settings_are_refused_by_name(data, words):
    with pytest.raises(FlopcalcError, match=words):
        hf.from_hf_dict(data, "config.json")


def test_countable_settings_import():
    """The same files with the settings flopcalc counts import (the refusals above are the
    settings', not the types')."""
    hf.from_hf_dict(dict(BART, model_type="bigbird_pegasus", attention_type="original_full"),
                    "config.json")
    hf.from_hf_dict(dict(BART, model_type="mvp", use_prompt=False), "config.json")


@pytest.mark.parametrize("model_type, words", [
    ("t5gemma2", "merged attention"),
    ("cpmant", "prompt_length"),
])
def test_uncountable_types_are_refused_naming_the_feature(model_type, words):
    with pytest.raises(FlopcalcError, match=words):
        hf.from_hf_dict(dict(BART, model_type=model_type), "config.json")


def test_t5gemma_stacks_of_different_widths_are_refused():
    """T5Gemma 9B-2B: an encoder of 3,584 and a decoder of 2,304; cross-attention would read
    3,584-wide states with the decoder's heads, which flopcalc's encoder-decoder cannot hold."""
    stack = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16)
    data = dict(model_type="t5gemma", encoder={**stack, "hidden_size": 96}, decoder=stack)
    with pytest.raises(FlopcalcError, match="the encoder's d_model"):
        hf.from_hf_dict(data, "config.json")
    hf.from_hf_dict(dict(model_type="t5gemma", encoder=stack, decoder=stack), "config.json")
