"""Eager PyTorch (`step --no-compile`): the element-wise traffic each unfused kernel kind adds
beyond a fused kernel, hand-counted from torchtitan's Llama code (820504e,
torchtitan/models/llama3/model.py) and PyTorch's composite rms_norm (steptime.EAGER_BYTES)."""

from __future__ import annotations

import pytest

from flopcalc.commands import load
from flopcalc.predict import steptime as S

from tests.predict.test_op_checkpointing import MC  # the same made-up machine

pytestmark = [pytest.mark.hand]

TINY = ["d_model=64", "n_heads=4", "n_kv_heads=2", "d_ff=96", "n_layers=2", "vocab_size=100"]


def test_the_hand_counts_per_element():
    # RMSNorm eager: to fp32 2+4, pow 4+4, mean 4, × rsqrt 4+4, × weight 4+4, to bf16 4+2 =
    # 40; fused 2+2. silu 2+2 and × gate 2+2+2 = 10; fused both halves read, one written = 6.
    # rotary: .float() 2+4, complex × 4+4, type_as 4+2 = 20; fused 2+2
    assert S.EAGER_BYTES == {"rmsnorm": (6 + 8 + 4 + 8 + 8 + 6, 4), "swiglu": (4 + 6, 6),
                             "rotary": (6 + 8 + 6, 4)}


def test_a_tiny_llama_layers_eager_bytes():
    prof = S.profile(load("llama-3.1-8b", TINY).spec, 16)
    lp = prof.layers[0]
    # 16 tokens, d 64: 2 norms · 36 · 16·64 = 73,728; SwiGLU 4 · 16·96 = 6,144; rotary
    # 16 · 16·(4 + 2 heads)·16 = 24,576: 104,448 bytes
    assert S.eager_extra(lp, prof, S.Layout()) == 104_448
    # tp 2 with sequence parallelism halves each: 52,224
    assert S.eager_extra(lp, prof, S.Layout(tp=2, sequence_parallel=True)) == 52_224


def test_eager_adds_its_bytes_forward_and_1_5_times_backward():
    prof = S.profile(load("llama-3.1-8b", TINY).spec, 16)
    lp = prof.layers[0]
    fused = S.layer_compute(lp, prof, S.Layout(flash=True), MC, "estimate")
    eager = S.layer_compute(lp, prof, S.Layout(flash=True, compiled=False), MC, "estimate")
    ew = 4e12 * 0.9 * 0.752
    assert eager.mem_f - fused.mem_f == pytest.approx(104_448 / ew)
    assert eager.mem_b - fused.mem_b == pytest.approx(1.5 * 104_448 / ew)
    assert eager.gemm_f == fused.gemm_f


def test_layernorm_gelu_and_learned_positions_add_nothing():
    # GPT-2: LayerNorm is one native kernel eager, GELU one kernel, no rotary
    prof = S.profile(load("gpt2").spec, 16)
    assert S.eager_extra(prof.layers[0], prof, S.Layout()) == 0
