"""What the encoder importers of flopcalc/models/hf/encoders2.py refuse, each with the key to
change: computations flopcalc does not count (block-sparse and integer-only attention, an
adaptive softmax, FNet's DFT matrices) and a tying transformers does not do."""

from __future__ import annotations

import pytest

from flopcalc.errors import FlopcalcError
from tests import sweep

pytestmark = pytest.mark.behaviour

BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)
XLM = dict(vocab_size=128, emb_dim=64, n_layers=2, n_heads=4, max_position_embeddings=64)


@pytest.mark.parametrize("model_type, keys, words", [
    ("big_bird", dict(BERT, attention_type="block_sparse", block_size=16, num_random_blocks=2),
     ["block-sparse", "original_full", "144"]),  # (5 + 2·2)·16 = 144 tokens run full
    ("fnet", dict(BERT, use_tpu_fourier_optimizations=True),
     ["use_tpu_fourier_optimizations"]),
    ("xlm", dict(XLM, asm=True), ["adaptive", "asm: false"]),
    ("flaubert", dict(XLM, asm=True), ["adaptive", "asm: false"]),
    ("ibert", dict(BERT, quant_mode=True), ["quant_mode: false"]),
    ("rembert", dict(BERT, tie_word_embeddings=True), ["tie_word_embeddings"]),
])
def test_refused(model_type, keys, words):
    with pytest.raises(FlopcalcError) as err:
        sweep.flopcalc_report({"model_type": model_type, **keys}, seq=8)
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize("model_type, words", [
    ("mra", ["block_per_row", "depends on the data"]),
])
def test_refused_types_name_what_is_missing(model_type, words):
    with pytest.raises(FlopcalcError) as err:
        sweep.flopcalc_report({"model_type": model_type, **BERT}, seq=8)
    assert "is not supported" in str(err.value)
    assert all(w in str(err.value) for w in words), str(err.value)
