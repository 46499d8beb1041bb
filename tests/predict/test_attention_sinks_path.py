"""Attention with a learnable softmax (gpt-oss's sinks) has no FlashAttention path in
Transformer Engine (`get_attention_backend`: "Disabling FlashAttention for softmax_type =
learnable"): the step's interval runs from the flash rate (low) to the unfused kernels (high),
the estimate half-way. Worked by hand for one full-attention layer of gpt-oss-120b at 4,096
tokens on a made-up machine whose HBM is so fast that every matmul is compute-bound and the
memory-bound terms vanish.
"""

from __future__ import annotations

import pytest

from flopcalc.commands import load
from flopcalc.predict import steptime as S
from flopcalc.predict.collectives import Net

pytestmark = [pytest.mark.hand]

ENDS3 = ("low", "estimate", "high")
NET = Net(domain=8, up=1e11, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6)
# 128 SMs: QKᵀ at 4,096² × 64 heads is 32·16·64 = 32,768 tiles of 128×256, AV 32·1·64 = 2,048:
# whole waves, so each eager matmul runs at the full rate
MC = S.Machine(
    matmul_peak=1e15, attention_peak=1e15, hbm=1e30, matmul_share=1.0, sms=128,
    attention_forward=dict(zip(ENDS3, (0.5, 0.5, 0.5))),
    attention_backward=dict(zip(ENDS3, (0.4, 0.4, 0.4))),
    memory_share=dict(zip(ENDS3, (1.0, 1.0, 1.0))), net=NET)
SEQ = 4096
# causal pairs of one sequence, per head: 4,096·4,097/2 = 8,390,656; 64 heads of d_qk = d_v = 64:
# 2·64·(64 + 64)·8,390,656 = 137,472,507,904 FLOPs forward (the flash kernel's)
CAUSAL = 137_472_507_904
# every pair (an unfused kernel masks no work away): QKᵀ 2·4,096·4,096·64 per head, × 64 heads
# = 137,438,953,472, and AV as many
PER_MATMUL = 137_438_953_472
SLOWEST = {"low": 1.0, "estimate": 0.975, "high": 0.95}
SHAPE = {"low": 0.90, "estimate": 0.85, "high": 0.80}


def flash(end: str) -> tuple[float, float]:
    """Forward at 50% of the attention peak, backward 2.5 × the FLOPs at 40%."""
    a = 1e15 * SLOWEST[end]
    return CAUSAL / (a * 0.5), 2.5 * CAUSAL / (a * 0.4)


def eager(end: str) -> tuple[float, float]:
    """QKᵀ and AV forward; backward dQ = dS·K, dK = dSᵀ·Q, dP = dO·Vᵀ and dV = Pᵀ·dO, four
    matmuls of as many FLOPs each; at peak × shape factor × slowest device."""
    rate = 1e15 * SHAPE[end] * SLOWEST[end]
    return 2 * PER_MATMUL / rate, 4 * PER_MATMUL / rate


def full_layer(model: str) -> tuple[S.LayerProfile, S.Profile]:
    prof = S.profile(load(model).spec, SEQ)
    (lp,) = [x for x in prof.layers if x.attention_causal == CAUSAL]
    return lp, prof


LAY = S.Layout(flash=True, micro_batch=1, global_batch=1)


@pytest.mark.parametrize("end,share", [("low", 0.0), ("estimate", 0.5), ("high", 1.0)])
def test_sink_attention_spans_flash_to_unfused(end: str, share: float) -> None:
    lp, prof = full_layer("gpt-oss-120b")
    c = S.layer_compute(lp, prof, LAY, MC, end)
    (ff, fb), (ef, eb) = flash(end), eager(end)
    assert c.attn_f == pytest.approx((1 - share) * ff + share * ef, rel=1e-9)
    assert c.attn_b == pytest.approx((1 - share) * fb + share * eb, rel=1e-9)


def test_vanilla_softmax_keeps_the_flash_path() -> None:
    """Llama 3.1 8B's 32 heads of 128 score as many FLOPs (2·32·(128 + 128)·8,390,656 =
    137,472,507,904) without sinks: every end runs the flash kernel."""
    lp, prof = full_layer("llama-3.1-8b")
    for end in ENDS3:
        c = S.layer_compute(lp, prof, LAY, MC, end)
        assert c.attn_f == pytest.approx(flash(end)[0], rel=1e-9)
        assert c.attn_b == pytest.approx(flash(end)[1], rel=1e-9)
