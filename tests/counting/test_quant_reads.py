"""Weight bytes a forward reads in a scaled format (`counting.quant.read_bytes`), by hand: the
rows of the embedding its tokens use, every layer matrix in the format with its scales, what
the format leaves in bf16, and of a mixture of experts the experts routed to."""

from __future__ import annotations

from fractions import Fraction

import pytest

from flopcalc.counting.quant import read_bytes
from flopcalc.models.registry import load_model

pytestmark = pytest.mark.hand

DENSE = """\
n_layers: 1
d_model: 32
n_heads: 4
n_kv_heads: 4
d_ff: 64
mlp: gated
activation: silu
bias: false
norm: rmsnorm
positions: rotary
max_seq_len: 256
vocab_size: 64
tie_embeddings: false
"""

MOE = DENSE + """\
moe:
  experts: 4
  top_k: 1
  d_ff: 16
"""


def spec(tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return load_model(str(path)).spec


def test_dense_fp8_tensor(tmp_path):
    s = spec(tmp_path, "dense", DENSE)
    # fp8-tensor: n_in·n_out bytes + one 4-byte scale per matrix. q, k, v, o 32×32: 4·1,028 =
    # 4,112; gate and up 32×64: 2·2,052 = 4,104; down 64×32: 2,052. In bf16: two layer norms and
    # the final norm 3·32·2 = 192, the LM head 32·64·2 = 4,096, and of the 64×32 embedding the
    # rows the tokens use, 32·2 = 64 bytes each.
    layers = 4112 + 4104 + 2052 + 192 + 4096
    r = read_bytes(s, 3, "fp8-tensor")
    assert (r.least, r.expected, r.most) == (layers + 3 * 64,) * 3 == (14748,) * 3
    # 100 tokens read every one of the 64 rows once
    assert read_bytes(s, 100, "fp8-tensor").expected == layers + 64 * 64 == 18652


def test_dense_nvfp4_and_a_plain_dtype(tmp_path):
    s = spec(tmp_path, "dense", DENSE)
    # nvfp4: n_in·n_out/2 + n_out·⌈n_in/16⌉ (one byte each) + 4. 32×32: 512 + 32·2 + 4 = 580
    # (x4); 32×64: 1,024 + 64·2 + 4 = 1,156 (x2); 64×32: 1,024 + 32·4 + 4 = 1,156.
    r = read_bytes(s, 1, "nvfp4")
    assert r.expected == 4 * 580 + 3 * 1156 + 192 + 4096 + 64 == 10140
    assert {type(x) for x in (r.least, r.expected, r.most)} == {Fraction}  # exact, no floats
    # a plain dtype stores everything at its width: int8, 1 byte a value; embedding 2 rows
    params = 4 * 1024 + 3 * 2048 + 96 + 2048
    assert read_bytes(s, 2, "int8").expected == params + 2 * 32


def test_experts_read_are_the_routed_ones(tmp_path):
    s = spec(tmp_path, "moe", MOE)
    # One expert in fp8-tensor: gate, up 32×16 and down 16×32, 3·(512 + 4) = 1,548 bytes. Around
    # them: attention 4,112, the router 32·4 in bf16 256, norms 192, the LM head 4,096.
    fixed = 4112 + 256 + 192 + 4096
    # One token reads exactly its top-1 expert.
    one = read_bytes(s, 1, "fp8-tensor")
    assert (one.least, one.expected, one.most) == (fixed + 64 + 1548,) * 3
    # Two tokens: at least 1 expert, at most 2, expected 4·(1 − (3/4)²) = 7/4 under uniform
    # routing; embedding rows 2·64.
    two = read_bytes(s, 2, "fp8-tensor")
    assert two.least == fixed + 128 + 1548
    assert two.most == fixed + 128 + 2 * 1548
    assert two.expected == fixed + 128 + Fraction(7, 4) * 1548
    # the experts in a format of their own: mxfp4 32×16 is 256 + 16·1 = 272, 16×32 256 + 32·1
    # = 288, so 832 per expert; the rest as fp8-tensor
    assert read_bytes(s, 1, "fp8-tensor", experts="mxfp4").expected == fixed + 64 + 832
