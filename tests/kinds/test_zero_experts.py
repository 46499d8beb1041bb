"""Zero-computation experts (LongCat-Flash) by hand: every count is worked in the comment beside
it.

d 4, one head of 4; a mixture of 4 SwiGLU experts of 2 and 2 identity experts, top-3, with a
router bias and transformers' unused gate/up rows for the identity experts. A token's 3 picks
are 3·4/6 = 2 computing experts on average under uniform routing, which is what is counted.
One layer, a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

ZERO = """n_layers: 1
d_model: 4
n_heads: 1
d_ff: 2
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
tie_embeddings: true
moe: {experts: 4, top_k: 3, d_ff: 2, zero_experts: 2, zero_expert_gate_up: true,
      router_bias: true}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "zero.yaml"
    path.write_text(ZERO)
    return str(path)


def test_params(cli, model):
    p = run(cli, "model", model)["params"]
    c = p["components"]
    # Router over 4 + 2: 4·6 = 24 and its bias 6; the experts 4·3·(4·2) = 96; the identity
    # experts' gate and up rows 2·(2 + 2)·4 = 32. Attention 4·16 = 64, two norms 8, the final
    # norm 4, the table 32: 266.
    assert (c["decoder.mlp.router.weight"], c["decoder.mlp.router.bias"],
            c["decoder.mlp.zero_experts.gate_up.weight"]) == (24, 6, 32)
    assert p["total"] == 266
    # Active: 2 computing experts of the 4 (48 unused) and none of the identity rows.
    assert p["active"] == 266 - 48 - 32


def test_forward(cli, model):
    c = run(cli, "model", model, "--seq", 5)["flops"]["components"]
    # T = 5: the router 2·5·4·6 = 240; 5·2 = 10 computing rows, 2·10·4·2 = 160 each for gate,
    # up and down; the identity picks cost no matmul.
    assert (c["decoder.mlp.router"], c["decoder.mlp.experts.gate"], c["decoder.mlp.experts.up"],
            c["decoder.mlp.experts.down"]) == (240, 160, 160, 160)


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # Softmax over 6 logits (4 each) and all 3 picks scaled and summed (2·3·4): 5·(24 + 24);
    # the router bias 5·6 = 30; SiLU and product on the computing rows 10·2·5 = 100.
    assert (c["decoder.mlp.elementwise.routing"], c["decoder.mlp.elementwise.bias"],
            c["decoder.mlp.elementwise.activation"]) == (240, 30, 100)


def test_reads(cli, model):
    r = run(cli, "infer", model, "--prompt", 5, "--gen", 2)["decode"]["routing"]
    # One token picks 3 of 6: at least 3 − 2 = 1 real expert, at most 3, on average
    # 4·(1 − (3/6)) = 2.
    assert (r["least"], r["expected"], r["most"]) == (1, 2.0, 3)


def test_the_expectation_must_be_whole(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(ZERO.replace("zero_experts: 2", "zero_experts: 1"))
    r = cli("model", str(path))
    # 3·4/5 is not whole
    assert r.code != 0 and "must be whole" in r.err
    path.write_text(ZERO.replace("zero_experts: 2, ", ""))
    r = cli("model", str(path))
    assert r.code != 0 and "zero_expert_gate_up needs zero_experts" in r.err
