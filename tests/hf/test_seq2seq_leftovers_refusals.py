"""What the importers of Longformer, LED, XLNet and Pegasus-X (flopcalc/models/hf/encoders3.py,
seq2seq4.py) refuse: settings transformers' forward cannot run, each named with its key (and
the layer's index for a per-layer list)."""

from __future__ import annotations

import pytest

from flopcalc.errors import FlopcalcError
from tests import sweep

pytestmark = pytest.mark.behaviour

BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)
BART = dict(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
            decoder_ffn_dim=96)


@pytest.mark.parametrize("model_type, keys, words", [
    # a list for 3 layers in a 2-layer stack
    ("longformer", dict(BERT, attention_window=[4, 4, 4]), ["3 entries for 2 layers"]),
    # w = 1: transformers' copy of the first chunk fails
    ("longformer", dict(BERT, attention_window=[2, 4]), ["attention_window[0]=2", "at least 4"]),
    ("longformer", dict(BERT, attention_window=[6, 5]), ["attention_window[1]=5", "even"]),
    # 6 does not divide the 8 the sequence is padded to
    ("led", dict(BART, attention_window=[6, 8]), ["attention_window[0]=6", "does not divide"]),
    ("pegasus_x", dict(BART, block_size=5), ["block_size=5", "stagger_local_blocks"]),
    ("xlnet", dict(d_model=64, n_head=4, n_layer=2, d_inner=96, vocab_size=128,
                   attn_type="both"), ["attn_type='both'"]),
])
def test_refused(model_type, keys, words):
    with pytest.raises(FlopcalcError) as err:
        sweep.flopcalc_report({"model_type": model_type, **keys}, seq=8)
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words), message


@pytest.mark.parametrize("model_type, keys", [
    ("longformer", dict(BERT, attention_window=[4, 8])),
    ("led", dict(BART, attention_window=[8, 4])),
    ("pegasus_x", dict(BART, block_size=5, stagger_local_blocks=False)),  # odd, unstaggered
    ("pegasus_x", dict(BART, encoder_layers=1, block_size=5)),  # one layer: none staggered
    ("xlnet", dict(d_model=64, n_head=4, n_layer=2, d_inner=96, vocab_size=128,
                   attn_type="uni")),
])
def test_settings_transformers_runs_import(model_type, keys):
    assert sweep.flopcalc_report({"model_type": model_type, **keys}, seq=8).params.total > 0
