"""The format keys the model-zoo importers added, by hand: ALiBi, ReLU², xIELU, norms without
parameters, a QK-norm's own bias, an LM head bias, learned positions with an offset, an
embedding narrower than the model (OPT's project_in/project_out), Qwen2-MoE's shared-expert gate
on a 0-wide shared expert, and untied BERT's two output biases.

Every model is one layer, d 4, 2 heads of 2, a vocabulary of 8, at 3 tokens (batch 1), so
each count is worked in the comment beside it.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

BASE = """n_layers: 1
d_model: 4
n_heads: 2
d_ff: 8
mlp: plain
vocab_size: 8
tie_embeddings: true
"""


def write(tmp_path, extra: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(BASE + extra)
    return str(path)


def components(cli, model, *options):
    doc = run(cli, "model", model, "--seq", 3, *options)
    return doc["params"]["components"], doc["flops"]["components"]


def test_alibi_and_relu2(cli, tmp_path):
    model = write(tmp_path, "activation: relu2\nnorm: layernorm\nnorm_bias: false\n"
                            "positions: alibi\n")
    params, flops = components(cli, model, "--elementwise")
    # No position table. Table 8·4 = 32; 3 bias-free LayerNorms of 4 (attention, MLP, final);
    # q, k, v, o 4·4 each; up 4·8, down 8·4: 32 + 12 + 64 + 64 = 172.
    assert "embed.positions" not in params and sum(params.values()) == 172
    # Full attention, 3 tokens: 9 scored pairs per head, 2 heads: one ALiBi add per score 18;
    # softmax 5·18 = 90. ReLU²: max and multiply on 3·8 hidden elements: 48.
    assert flops["decoder.attn.elementwise.alibi"] == 18
    assert flops["decoder.attn.elementwise.softmax"] == 90
    assert flops["decoder.mlp.elementwise.activation"] == 48
    # Causal: 1 + 2 + 3 = 6 pairs per head, 12 adds.
    _, causal = components(cli, model, "--elementwise", "--attention", "causal")
    assert causal["decoder.attn.elementwise.alibi"] == 12


def test_xielu_has_two_learned_scalars(cli, tmp_path):
    model = write(tmp_path, "activation: xielu\nnorm: rmsnorm\npositions: rotary\n")
    params, flops = components(cli, model, "--elementwise")
    # alpha_p and alpha_n, one each per MLP; 11 FLOPs per hidden element (both branches of the
    # torch.where): 11·3·8 = 264.
    assert (params["decoder.mlp.act.alpha_p"], params["decoder.mlp.act.alpha_n"]) == (1, 1)
    assert flops["decoder.mlp.elementwise.activation"] == 264
    # 32 + 3 RMSNorms 12 + 64 + 64 + 2 = 174.
    assert sum(params.values()) == 174


def test_layernorm_without_parameters(cli, tmp_path):
    model = write(tmp_path, "norm: layernorm\nnorm_affine: false\npositions: rotary\n")
    params, flops = components(cli, model, "--elementwise")
    # OLMo: no gain, no bias: no norm tensor at all (32 + 64 + 64 = 160).
    assert not [k for k in params if "norm" in k] and sum(params.values()) == 160
    # mean, subtract, square, variance sum, normalise: 5 per element, 3·4 elements per norm.
    assert flops["decoder.attn.elementwise.norm"] == 60
    assert flops["decoder.final_norm.elementwise"] == 60


def test_qk_norm_bias_of_its_own(cli, tmp_path):
    model = write(tmp_path, "norm: layernorm\nqk_norm: all_heads\nqk_norm_bias: false\n"
                            "positions: rotary\n")
    params, flops = components(cli, model, "--elementwise")
    # StableLM: the model's LayerNorms keep their bias, the QK-norm has a gain only.
    assert params["decoder.attn.q_norm.weight"] == 4 and "decoder.attn.q_norm.bias" not in params
    assert params["decoder.attn_norm.bias"] == 4
    # 6 per element (no bias) over 3 tokens × (4 query + 4 key) widths: 144.
    assert flops["decoder.attn.elementwise.qk_norm"] == 144


def test_lm_head_bias_kept_when_tied(cli, tmp_path):
    model = write(tmp_path, "positions: rotary\nlm_head_bias: 1\n")
    params, flops = components(cli, model, "--elementwise")
    # Phi, GPT-J: the head reuses the table but has its own bias of V = 8, added on each of
    # the 3 tokens' 8 logits.
    assert params["lm_head.bias"] == 8 and "lm_head.weight" not in params
    assert flops["lm_head.elementwise.bias"] == 24


def test_learned_positions_with_an_offset(cli, tmp_path):
    model = write(tmp_path, "positions: learned\nmax_seq_len: 6\nposition_offset: 2\n")
    params, _ = components(cli, model)
    # OPT: 6 + 2 rows of 4.
    assert params["embed.positions"] == 32


def test_embedding_narrower_than_the_model(cli, tmp_path):
    model = write(tmp_path, "positions: learned\nmax_seq_len: 6\nembed_dim: 2\n")
    params, flops = components(cli, model)
    # OPT-350M: a table of 8·2, project_in 2 → 4 and project_out 4 → 2 without bias, the tied
    # head on 2.
    assert (params["embed.tokens"], params["embed.project_in.weight"],
            params["embed.project_out.weight"]) == (16, 8, 8)
    # project_in (3×2)·(2×4) → 48, project_out (3×4)·(4×2) → 48, head (3×2)·(2×8) → 96.
    assert (flops["embed.project_in"], flops["embed.project_out"], flops["lm_head"]) == \
        (48, 48, 96)


def test_embedding_projection_in_decode(tmp_path):
    import flopcalc
    from flopcalc.counting.model import decode_flops

    spec = flopcalc.load(write(tmp_path, "positions: learned\nmax_seq_len: 6\n"
                                         "embed_dim: 2\n")).spec
    parts = {p.name: p.value for p in decode_flops(spec, 4, 4, 2)}
    # One step, 2 sequences: project_in (2×2)·(2×4) → 32, out (2×4)·(4×2) → 32, head
    # (2×2)·(2×8) → 64.
    assert (parts["embed.project_in"], parts["embed.project_out"], parts["lm_head"]) == \
        (32, 32, 64)


def test_shared_expert_gate_without_a_shared_expert(cli, tmp_path):
    model = write(tmp_path, "positions: rotary\nnorm: rmsnorm\n"
                            "moe: {experts: 2, top_k: 1, d_ff: 2, shared_gate: true}\n")
    params, flops = components(cli, model, "--elementwise")
    # Qwen2-MoE with shared_expert_intermediate_size 0: the gate d → 1 is still built and run:
    # 4 weights, (3×4)·(4×1) → 24 FLOPs; no shared expert tensor.
    assert params["decoder.mlp.shared_gate.weight"] == 4
    assert not [k for k in params if ".shared." in k]
    assert flops["decoder.mlp.shared_gate"] == 24
    # Routing per token: softmax 4·2, the k = 1 output scaled and summed 2·1·4, the gate's
    # sigmoid 4 and product 4, the 0-wide expert's output added 4: 3·(8 + 8 + 8 + 4) = 84.
    assert flops["decoder.mlp.elementwise.routing"] == 84


def test_untied_masked_lm_head_keeps_two_biases(cli, tmp_path):
    path = tmp_path / "enc.yaml"
    path.write_text(BASE.replace("tie_embeddings: true", "tie_embeddings: false")
                    + "architecture: encoder-only\npositions: learned\nmax_seq_len: 6\n"
                      "head: masked-lm\nlm_head_bias: 2\n")
    params, _ = components(cli, str(path))
    # BERT untied: decoder.bias (used) and cls.predictions.bias (kept, unused), V = 8 each.
    assert (params["lm_head.bias"], params["lm_head.extra_bias"]) == (8, 8)


@pytest.mark.parametrize("extra, message", [
    ("positions: rotary\nposition_offset: 2\n", "position_offset applies to positions: learned"),
    ("positions: rotary\nnorm: rmsnorm\nqk_norm: per_head\nqk_norm_bias: false\n",
     "qk_norm_bias applies to a LayerNorm QK-norm"),
    ("positions: rotary\nnorm: none\nnorm_affine: false\n", "norm_affine applies to norm"),
    ("positions: rotary\nhead: none\nlm_head_bias: 1\n", "no LM head bias"),
])
def test_bad_combinations_are_one_line(cli, tmp_path, extra, message):
    r = cli("model", write(tmp_path, extra))
    assert r.code == 2 and message in r.err and len(r.err.strip().splitlines()) == 1


def test_show_prints_the_new_keys_and_reloads(cli, tmp_path):
    model = write(tmp_path, "positions: learned\nmax_seq_len: 6\nposition_offset: 2\n"
                            "embed_dim: 2\nlm_head_bias: 1\nnorm: layernorm\nnorm_affine: false\n"
                            "activation: xielu\n")
    shown = cli("show", model).out
    for key in ("position_offset: 2", "embed_dim: 2", "lm_head_bias: 1", "norm_affine: false",
                "activation: xielu"):
        assert key in shown
    again = tmp_path / "again.yaml"
    again.write_text(shown)
    a, b = run(cli, "model", model), run(cli, "model", str(again))
    assert (a["params"], a["flops"]) == (b["params"], b["flops"])


def test_a_model_without_a_head_has_no_head_flops(cli, tmp_path):
    # head: none (an encoder read for its hidden states): at 3 tokens q, k, v, o 2·3·4·4 = 96
    # each, scores and A·V 2·3·3·2·2 = 72 each, up and down 2·3·4·8 = 192 each; no lm_head,
    # which with a head is 2·3·4·8 = 192 more
    model = write(tmp_path, "positions: rotary\nhead: none\n")
    _, flops = components(cli, model)
    assert flops == {"decoder.attn.q": 96, "decoder.attn.k": 96, "decoder.attn.v": 96,
                     "decoder.attn.scores": 72, "decoder.attn.av": 72, "decoder.attn.o": 96,
                     "decoder.mlp.up": 192, "decoder.mlp.down": 192}
    _, with_head = components(cli, write(tmp_path, "positions: rotary\n"))
    assert with_head == {**flops, "lm_head": 192}
