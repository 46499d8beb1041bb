"""The model-level features of the encoder and encoder-decoder importers, by hand: ALBERT's shared
layers (`layer_weights`) and factorised embedding (`embed_dim` on an encoder), DeBERTa's
embedding norm after the projection, UMT5's relative bias in every layer, an untied BART's four
token tables, Marian's two vocabularies; the errors; and the Hugging Face refusals and offsets."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

ALBERT = """architecture: encoder-only
n_layers: 4
d_model: 4
n_heads: 2
d_ff: 8
bias: true
norm_placement: post
final_norm: false
positions: learned
max_seq_len: 6
vocab_size: 8
token_types: 2
embedding_norm: true
head: masked-lm
embed_dim: 2
embed_proj_bias: true
layer_weights: [0, 0, 1, 1]
"""

T5 = """architecture: encoder-decoder
n_encoder_layers: 2
n_layers: 3
d_model: 4
n_heads: 2
d_ff: 8
norm: rmsnorm
positions: relative
relative_buckets: 4
relative_bias_per_layer: true
vocab_size: 8
"""

BART = """architecture: encoder-decoder
n_encoder_layers: 1
n_layers: 1
d_model: 4
n_heads: 2
d_ff: 8
bias: true
positions: learned
max_seq_len: 6
position_offset: 2
vocab_size: 8
"""


def write(tmp_path, text, name="model.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_albert_shared_layers_and_factorised_embedding(cli, tmp_path):
    doc = run(cli, "model", write(tmp_path, ALBERT), "--seq", 3)
    c = doc["params"]["components"]
    # Tables 2 wide: tokens 8·2, positions 6·2, token types 2·2, their LayerNorm 2 + 2; then
    # E → d 2·4 + 4.
    assert (c["embed.tokens"], c["embed.positions"], c["embed.token_types"],
            c["embed.norm.weight"], c["embed.project_in.weight"], c["embed.project_in.bias"]) == (
        16, 12, 4, 2, 8, 4)
    # 4 layers run, 2 weight sets stored: q is 4·4 per set, so 32, not 64.
    assert c["encoder.attn.q.weight"] == 32 and c["encoder.mlp.up.weight"] == 64
    # The head: transform d → E 4·2 + 2, its LayerNorm 2 + 2, the tied decoder's bias 8.
    assert (c["head.transform.weight"], c["head.transform.bias"], c["head.norm.weight"],
            c["lm_head.bias"]) == (8, 2, 2, 8)
    assert doc["params"]["total"] == 48 + 2 * 172 + 22 == 414
    f = doc["flops"]["components"]
    # FLOPs for every layer run: q 2·3·4·4 = 96 per layer, 4 layers; E → d 2·3·2·4 = 48; the
    # head's d → E 2·3·4·2 = 48 and E → V 2·3·2·8 = 96.
    assert (f["encoder.attn.q"], f["embed.project_in"], f["head.transform"], f["lm_head"]) == (
        384, 48, 48, 96)
    assert doc["flops"]["forward"] == 4 * 912 + 48 + 48 + 96
    assert [(g["n_layers"], g["params"]) for g in doc["layers"]] == [(2, 172), (2, 172)]


def test_albert_elementwise_is_e_wide(cli, tmp_path):
    f = run(cli, "model", write(tmp_path, ALBERT), "--seq", 3, "--elementwise")["flops"][
        "components"]
    # The embedding LayerNorm over 3 tokens × E 2: 7·6 = 42; the projection's bias 3·4; the
    # head's transform bias 3·2, GELU 9·6, LayerNorm 7·6; the output bias 3·8.
    assert (f["embed.norm.elementwise"], f["embed.project_in.elementwise.bias"],
            f["head.elementwise.bias"], f["head.elementwise.activation"],
            f["head.elementwise.norm"], f["lm_head.elementwise.bias"]) == (42, 12, 6, 54, 42, 24)


def test_embedding_norm_after_the_projection(cli, tmp_path):
    text = ALBERT.replace("embed_proj_bias: true\n", "embed_norm_width: model\n")
    c = run(cli, "model", write(tmp_path, text))["params"]["components"]
    # DeBERTa-v2: E → d without bias, then a LayerNorm over d (4 + 4)
    assert (c["embed.norm.weight"], c["embed.norm.bias"]) == (4, 4)
    assert "embed.project_in.bias" not in c


@pytest.mark.parametrize("change, message", [
    (("layer_weights: [0, 0, 1, 1]", "layer_weights: [0, 1, 2]"),
     "layer_weights has 3 entries, which neither match nor divide the 4 layers"),
    (("embed_dim: 2\n", ""), "embed_proj_bias and embed_norm_width describe a factorised"),
    (("head: masked-lm\n", "head: lm\nhead_bias: false\n"), "head_bias: false applies to head: "
     "masked-lm"),
    (("architecture: encoder-only\n", "architecture: encoder-only\nencoder_d_ff: 4\n"),
     "encoder_n_heads and encoder_d_ff are an encoder-decoder's encoder sizes"),
])
def test_albert_errors(cli, tmp_path, change, message):
    r = cli("model", write(tmp_path, ALBERT.replace(*change)))
    assert r.code == 2 and message in r.err and "Traceback" not in r.err


def test_layers_sharing_weights_must_be_alike(cli, tmp_path):
    text = ALBERT.replace("layer_weights: [0, 0, 1, 1]", "layer_weights: [0, 0, 0, 0]") + \
        "layer_types: [deberta_first, deberta, deberta, deberta]\ndeberta: {span: 2, conv_kernel: 3}\n"
    r = cli("model", write(tmp_path, text))
    assert r.code == 2 and "sharing weight set 0 must be of one kind" in r.err


def test_relative_bias_in_every_layer(cli, tmp_path):
    c = run(cli, "model", write(tmp_path, T5))["params"]["components"]
    # buckets 4 × heads 2 in each self-attention: 2 encoder layers, 3 decoder layers
    assert (c["encoder.relative_bias"], c["decoder.relative_bias"]) == (16, 24)
    c = run(cli, "model", write(tmp_path, T5.replace("relative_bias_per_layer: true\n", "")))[
        "params"]["components"]
    assert (c["encoder.relative_bias"], c["decoder.relative_bias"]) == (8, 8)


def test_untied_bart_has_four_token_tables(cli, tmp_path):
    text = BART + "tie_embeddings: false\nshare_encoder_embeddings: false\nunused_token_tables: 1\n"
    c = run(cli, "model", write(tmp_path, text))["params"]["components"]
    # `shared` (unused), the encoder's, the decoder's and lm_head: 4 × 8·4
    assert (c["encoder.embed.tokens"], c["embed.unused_tokens"], c["embed.tokens"],
            c["lm_head.weight"]) == (32, 32, 32, 32)
    # P + 2 position rows in each stack
    assert (c["encoder.embed.positions"], c["embed.positions"]) == (32, 32)


def test_marian_vocabularies_and_stack_norms(cli, tmp_path):
    text = BART + "share_encoder_embeddings: false\nencoder_vocab_size: 6\nembedding_norm: true\n"
    doc = run(cli, "model", write(tmp_path, text), "--elementwise", "--seq", 3)
    c = doc["params"]["components"]
    assert (c["encoder.embed.tokens"], c["embed.tokens"]) == (24, 32)
    # each stack's embedding norm named for its stack
    assert (c["encoder.embed.norm.weight"], c["embed.norm.weight"]) == (4, 4)
    f = doc["flops"]["components"]
    assert f["encoder.embed.norm.elementwise"] == f["embed.norm.elementwise"] == 7 * 3 * 4
    assert sum(c.values()) == doc["params"]["total"]


@pytest.mark.parametrize("extra, message", [
    ("encoder_vocab_size: 6\n", "set share_encoder_embeddings: false"),
    ("relative_bias_per_layer: true\n", "relative_bias_per_layer applies to positions: "
     "relative only"),
])
def test_encoder_decoder_errors(cli, tmp_path, extra, message):
    r = cli("model", write(tmp_path, BART + extra))
    assert r.code == 2 and message in r.err


def test_decoder_only_has_no_encoder_tables(cli, tmp_path):
    text = "n_layers: 1\nd_model: 4\nn_heads: 2\nd_ff: 4\npositions: rotary\nvocab_size: 8\n" \
        "unused_token_tables: 1\n"
    r = cli("model", write(tmp_path, text))
    assert r.code == 2 and "are for encoder-decoder models" in r.err


# --------------------------------------------------------------------- Hugging Face import


def hf(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_roberta_positions_start_after_the_padding(cli, tmp_path):
    path = hf(tmp_path, {"model_type": "roberta", "vocab_size": 50265, "hidden_size": 768,
                         "num_hidden_layers": 12, "num_attention_heads": 12,
                         "intermediate_size": 3072, "max_position_embeddings": 514,
                         "type_vocab_size": 1, "pad_token_id": 1})
    doc = run(cli, "model", path)
    # 514 rows, of which 2 (pad + 1) are never read: a 512-token context
    assert doc["settings"]["seq"] == 512 and doc["params"]["components"][
        "embed.positions"] == 514 * 768
    # FacebookAI/roberta-base as RobertaForMaskedLM: tables 50265·768 + 514·768 + 768 and
    # their LayerNorm 1,536; 12 layers of 7,087,872; the head 768² + 768, 1,536 and 50,265
    emb = 50265 * 768 + 514 * 768 + 768 + 1536
    layer = 4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 4 * 768
    assert doc["params"]["total"] == emb + 12 * layer + 768 * 768 + 768 + 1536 + 50265 \
        == 124_697_433


def test_aliases_read_as_transformers_reads_them(cli, tmp_path):
    saved = {"model_type": "distilbert", "vocab_size": 8, "dim": 4, "n_layers": 1,
             "n_heads": 2, "hidden_dim": 8, "max_position_embeddings": 6}
    alias = {"model_type": "distilbert", "vocab_size": 8, "hidden_size": 4,
             "num_hidden_layers": 1, "num_attention_heads": 2, "hidden_dim": 8,
             "max_position_embeddings": 6}
    a = run(cli, "model", hf(tmp_path, saved))["params"]["total"]
    (tmp_path / "b").mkdir()
    b = run(cli, "model", hf(tmp_path / "b", alias))["params"]["total"]
    assert a == b
