"""DeBERTa's disentangled attention by hand (kinds/deberta.py): an encoder small enough that every
count is worked in the comment beside it.

d 4, 2 heads of 2, d_ff 8, 2 post-norm layers with biases, a vocabulary of 8 tied to the masked-LM
head, no absolute positions; relative terms c2p and p2c with their own position projections over
a table of 2S = 4 rows (S = 2) with its LayerNorm, and a ConvLayer of 3 taps after layer 0.
"""

from __future__ import annotations

import pytest

import flopcalc
from flopcalc.counting.crossover import crossover, layers_weights_attention
from flopcalc.counting.model import workload

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

DEBERTA = """architecture: encoder-only
n_layers: 2
d_model: 4
n_heads: 2
d_ff: 8
bias: true
norm_placement: post
final_norm: false
positions: none
vocab_size: 8
embedding_norm: true
head: masked-lm
layer_types: [deberta_first, deberta]
deberta: {span: 2, rel_norm: true, conv_kernel: 3}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "deberta.yaml"
    path.write_text(DEBERTA)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # Each layer: q, k, v, o 4·4 = 16 each with a bias of 4; pos_key and pos_query 16 + 4 each;
    # two LayerNorms 4 + 4 each; up 4·8 = 32 + 8, down 32 + 4. Two layers double each.
    for name in ("q", "k", "v", "o", "pos_key", "pos_query"):
        assert (c[f"encoder.attn.{name}.weight"], c[f"encoder.attn.{name}.bias"]) == (32, 8)
    # Layer 0's ConvLayer: 4·(4/1)·3 = 48, its bias 4, its LayerNorm 4 + 4.
    assert (c["encoder.attn.conv.weight"], c["encoder.attn.conv.bias"],
            c["encoder.attn.conv.norm.weight"]) == (48, 4, 4)
    # The table (2S × d = 4·4) and its norm are shared by both layers: counted once.
    assert (c["encoder.attn.rel_embeddings"], c["encoder.attn.rel_embeddings_norm.weight"],
            c["encoder.attn.rel_embeddings_norm.bias"]) == (16, 4, 4)
    # tokens 32, embedding norm 8, layers 2·212 = 424, conv 60, table 24, head 16 + 4 + 8 + 8
    assert sum(c.values()) == 32 + 8 + 424 + 60 + 24 + 36 == 584


def test_forward(cli, model):
    f = run(cli, "model", model, "--seq", 3, "--batch", 2)["flops"]
    c = f["components"]
    # T = 6. q, k, v, o 2·6·4·4 = 192 per layer; scores and av 2·2·(2·9)·2 = 144 per layer.
    assert (c["encoder.attn.q"], c["encoder.attn.scores"], c["encoder.attn.av"]) == (
        384, 288, 288)
    # The table projected by pos_key and pos_query: 2·(2·4·4·4) = 256 per layer whatever the
    # batch; c2p (B·h: 3×2)·(2×4) = 2·2·2·3·2·4 = 192 per layer, p2c the same.
    assert (c["encoder.attn.pos_proj"], c["encoder.attn.c2p"], c["encoder.attn.p2c"]) == (
        512, 384, 384)
    # The ConvLayer once: 2·6·4·4·3 = 576. Head: transform 2·6·4·4 = 192, decoder 2·6·4·8 = 384.
    assert (c["encoder.attn.conv"], c["head.transform"], c["lm_head"]) == (576, 192, 384)
    assert f["families"] == {"weights": 4 * 384 + 512 + 576 + 2 * 768 + 192 + 384,
                             "attention": 2 * 288 + 2 * 384}
    assert f["forward"] == 4736 + 1344


def test_batch_does_not_scale_the_table_projections(cli, model):
    one = run(cli, "model", model, "--seq", 3, "--batch", 1)["flops"]["components"]
    two = run(cli, "model", model, "--seq", 3, "--batch", 2)["flops"]["components"]
    assert one["encoder.attn.pos_proj"] == two["encoder.attn.pos_proj"] == 512
    assert 2 * one["encoder.attn.c2p"] == two["encoder.attn.c2p"]


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 3, "--batch", 2, "--elementwise")["flops"][
        "components"]
    # The projections' biases 2·4·4 = 32 per layer; per relative term and score a divide and an
    # add, then the sum into the scores: (2·2 + 1)·(2 heads·2·9 scores) = 180 per layer; the
    # table's LayerNorm in layer 0, 7·4·4 = 112; the ConvLayer per output element (bias 1,
    # tanh 1, residual 1, LayerNorm 7, mask 1) 11·6·4 = 264.
    assert (c["encoder.attn.elementwise.pos_proj_bias"], c["encoder.attn.elementwise.relative"],
            c["encoder.attn.elementwise.rel_norm"], c["encoder.attn.elementwise.conv"]) == (
        64, 360, 112, 264)


def test_crossover_is_exact_with_the_linear_terms(model):
    spec = flopcalc.load(model).spec
    # Layers at length s (batch 1): weights 2·(128s + 128s) + conv 96s + projections 512 =
    # 608s + 512; attention 2·16s² + 2·64s. 32s² − 480s − 512 = 0 at s = 16.
    x = crossover(spec)
    assert (x.seq, x.exact) == (16, 16)
    for s in (15, 16):
        weights, attention = layers_weights_attention(spec, workload(spec, s, None, 1))
        assert weights == 608 * s + 512 and attention == 32 * s * s + 128 * s
        assert (attention >= weights) == (s == 16)


def test_shared_keys_and_one_term(cli, tmp_path):
    path = tmp_path / "shared.yaml"
    path.write_text(DEBERTA.replace("deberta: {span: 2, rel_norm: true, conv_kernel: 3}",
                                    "deberta: {span: 2, c2p: true, p2c: false, "
                                    "share_keys: true}"))
    doc = run(cli, "model", str(path), "--seq", 3, "--batch", 2)
    c, f = doc["params"]["components"], doc["flops"]["components"]
    # Shared keys: no position projections of their own, but q and k both project the table
    # (2·(2·4·4·4) per layer) whatever pos_att_type; only c2p runs.
    assert not any("pos_key" in k or "pos_query" in k for k in c)
    assert (f["encoder.attn.pos_proj"], f["encoder.attn.c2p"]) == (512, 384)
    assert "encoder.attn.p2c" not in f and "encoder.attn.conv" not in f
    assert any(line.startswith("DeBERTa disentangled attention") for line in doc["conventions"])


@pytest.mark.parametrize("block, message", [
    ("deberta: {conv_kernel: 2, span: 2}", "must be odd"),
    ("deberta: {relative: true}", "deberta.span is required"),
    ("deberta: {span: 2, conv_kernel: 3, conv_groups: 3}", "must divide d_model=4"),
])
def test_bad_blocks(cli, tmp_path, block, message):
    path = tmp_path / "bad.yaml"
    path.write_text(DEBERTA.replace("deberta: {span: 2, rel_norm: true, conv_kernel: 3}", block))
    r = cli("model", str(path))
    assert r.code == 2 and message in r.err and "Traceback" not in r.err


def test_without_block(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(DEBERTA.replace("deberta: {span: 2, rel_norm: true, conv_kernel: 3}\n", ""))
    r = cli("model", str(path))
    assert r.code == 2 and "deberta layers need a deberta block" in r.err
