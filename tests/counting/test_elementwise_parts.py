"""`--elementwise`: bias adds, norms, activations, softmax and residual adds as named parts."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]


def test_elementwise_off_by_default(cli):
    doc = cli("model", "gpt2", "--seq", "10", "-f", "json").json()
    assert doc["flops"]["elementwise"] == 0
    assert not any(".elementwise." in k for k in doc["flops"]["components"])


def test_gpt2_elementwise_by_hand(cli):
    T, d, f, h, L = 10, 768, 3072, 12, 12
    base = cli("model", "gpt2", "--seq", T, "-f", "json").json()["flops"]
    doc = cli("model", "gpt2", "--seq", T, "--elementwise", "-f", "json").json()["flops"]
    comps = doc["components"]
    # Per layer: two LayerNorms (7 per element), two residual adds, q/k/v/o biases (4·T·d),
    # MLP biases (T·(f + d)), tanh-GELU (9 per hidden element), softmax (5 per score).
    assert comps["decoder.attn.elementwise.norm"] == L * 7 * T * d
    assert comps["decoder.mlp.elementwise.residual"] == L * T * d
    assert comps["decoder.attn.elementwise.bias"] == L * 4 * T * d
    assert comps["decoder.mlp.elementwise.bias"] == L * T * (f + d)
    assert comps["decoder.mlp.elementwise.activation"] == L * 9 * T * f
    assert comps["decoder.attn.elementwise.softmax"] == L * 5 * h * T * T
    per_layer = 14 * T * d + 2 * T * d + 4 * T * d + T * (f + d) + 9 * T * f + 5 * h * T * T
    assert doc["elementwise"] == L * per_layer + 7 * T * d  # + the final LayerNorm
    assert doc["forward"] == doc["weights"] + doc["attention"] + doc["elementwise"]
    assert (doc["weights"], doc["attention"]) == (base["weights"], base["attention"])
    assert sum(comps.values()) == doc["forward"]


def test_llama_elementwise_gated_rmsnorm_no_bias(cli):
    doc = cli("model", "llama-3.1-8b", "--seq", "16", "--elementwise", "--attention", "causal",
              "-f", "json").json()["flops"]["components"]
    T, d, f, h, L = 16, 4096, 14336, 32, 32
    assert doc["decoder.attn.elementwise.norm"] == L * 4 * T * d  # RMSNorm: 4 per element
    assert doc["decoder.mlp.elementwise.activation"] == L * (4 + 1) * T * f  # SiLU + gate
    assert doc["decoder.attn.elementwise.softmax"] == L * 5 * h * T * (T + 1) // 2  # causal
    assert not any(k.endswith("elementwise.bias") for k in doc)


def test_elementwise_table_and_caption(cli):
    out = " ".join(cli("model", "gpt2", "--seq", "64", "--elementwise").out.split())
    assert "element-wise" in out and "forward = weights + attention + elementwise" in out
