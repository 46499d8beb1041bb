"""What the importers of flopcalc/models/hf/classic2.py and seq2seq3.py refuse, each naming the
setting to change: parts that run only where flopcalc counts nothing (VisualBERT's
bypass_transformer layer), work that depends on a random draw (YOSO without its expectation),
settings transformers itself cannot build or run, and a moe block an encoder-decoder cannot
place."""

from __future__ import annotations

import pytest

from flopcalc.errors import FlopcalcError
from flopcalc.models import hf
from tests import sweep

pytestmark = pytest.mark.behaviour

BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)


@pytest.mark.parametrize("model_type, keys, words", [
    ("visual_bert", dict(BERT, bypass_transformer=True), ["bypass_transformer: false"]),
    ("deberta", dict(BERT, talking_head=True), ["talking_head: false"]),
    ("yoso", dict(BERT, use_expectation=False), ["use_expectation: true"]),
    ("xmod", dict(BERT, languages=[]), ["'languages' is empty"]),
    ("mobilebert", dict(BERT, embedding_size=128), ["embedding_size=128 > hidden_size=64"]),
    # an even kernel pads one position too many and transformers fails
    ("convbert", dict(BERT, conv_kernel_size=4), ["must be odd"]),
    ("nystromformer", dict(BERT, conv_kernel_size=4), ["must be odd"]),
    # each landmark is the mean of segment_means_seq_len / num_landmarks queries
    ("nystromformer", dict(BERT, segment_means_seq_len=10, num_landmarks=4), ["must divide"]),
    # six d/6-wide box embeddings must make d; 4·coordinate_size + 2·shape_size must too
    ("lilt", dict(BERT), ["not a multiple of 6"]),
    ("layoutlmv3", dict(BERT, coordinate_size=12, shape_size=12), ["is not hidden_size=64"]),
    # one expert width for both stacks' mixtures
    ("nllb-moe", dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_ffn_dim=96,
                      decoder_ffn_dim=80, encoder_sparse_step=1, decoder_sparse_step=1,
                      encoder_attention_heads=4, decoder_attention_heads=4, vocab_size=128,
                      num_experts=4, max_position_embeddings=64),
     ["encoder_ffn_dim=96 != decoder_ffn_dim=80"]),
    # 64 / (4 // 1) = 16 is even, but 64 / 3 heads is not a whole head
    ("convbert", dict(BERT, num_attention_heads=6, head_ratio=2), ["must divide"]),
])
def test_refused(model_type, keys, words):
    with pytest.raises(FlopcalcError) as err:
        sweep.flopcalc_report({"model_type": model_type, **keys}, seq=8)
    assert all(w in str(err.value) for w in words), str(err.value)


MOE = {"experts": 4, "top_k": 1, "d_ff": 96}
T5 = dict(architecture="encoder-decoder", n_layers=2, n_encoder_layers=2, d_model=64,
          n_heads=4, d_ff=96, vocab_size=128, positions="relative", relative_buckets=8)
GPT = dict(n_layers=2, d_model=64, n_heads=4, d_ff=96, vocab_size=128, positions="rotary",
           max_seq_len=64)


@pytest.mark.parametrize("raw, words", [
    # which layers of which stack: an encoder-decoder's mixture lists them
    (dict(T5, moe=MOE), "moe.layers (decoder) and moe.encoder_layers"),
    (dict(GPT, moe={**MOE, "encoder_layers": [0]}), "moe.encoder_layers is an encoder-decoder's"),
    (dict(T5, moe={**MOE, "layers": [], "encoder_layers": [2]}), "[2] are not layers"),
])
def test_encoder_decoder_moe_blocks_name_the_key(raw, words, tmp_path):
    from flopcalc.errors import FlopcalcError as Refused
    from flopcalc.models.registry import load_model
    import yaml

    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"title": "t", **raw}))
    with pytest.raises(Refused) as err:
        load_model(str(path))
    assert words in str(err.value), str(err.value)


def test_supported_types_include_the_new_imports():
    assert {"trocr", "xmod", "visual_bert", "deberta", "convbert", "mobilebert",
            "switch_transformers", "nystromformer", "yoso", "lilt", "luke",
            "layoutlmv3", "nllb-moe"} <= set(hf.supported())
