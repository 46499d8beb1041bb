"""A training step's element-wise kernels (norms, activations, residual adds, the
unpermutation, the cross-entropy) run at Transformer Engine's measured share of a copy's
bandwidth, not at the copy's own (steptime.ELEMENTWISE); the quantisation casts and the
optimizer keep the efficiency file's memory share."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flopcalc.commands import load
from flopcalc.predict import steptime as S
from flopcalc.predict.collectives import Net

pytestmark = [pytest.mark.published, pytest.mark.hand]

# ROCm/TransformerEngine pull request 598, "B200 (us)" column of the CAST_ONLY table, bf16
# 8192×8192 to MXFP8: 134,217,728 bytes read (2 per element), 67,108,864 written per direction
# (1 per element) and 2,097,152 of E8M0 scales per direction (one per 32); HGX B200: 7.7 TB/s,
# a copy 90% of it (presets/efficiency/b200.yaml)
ONE_WAY = 134_217_728 + 67_108_864 + 2_097_152  # 203,423,744 bytes
BOTH = 134_217_728 + 2 * (67_108_864 + 2_097_152)  # 272,629,760 bytes
COPY = 7.7e12 * 0.9


def test_the_shares_are_transformer_engines_measured_kernels():
    # row-wise 203,423,744 B / 34.84 µs = 5.839 TB/s, 0.758 of 7.7, 0.842 of the copy;
    # both ways 272,629,760 B / 52.34 µs = 5.209 TB/s, 0.676 of 7.7, 0.752 of the copy;
    # column-wise 203,423,744 B / 39.61 µs = 5.136 TB/s, 0.667 of 7.7, 0.741 of the copy
    assert S.ELEMENTWISE["estimate"] == round(BOTH / 52.34e-6 / COPY, 3) == 0.752
    assert S.ELEMENTWISE["high"] == round(ONE_WAY / 39.61e-6 / COPY, 3) == 0.741
    assert S.ELEMENTWISE["low"] == 1.0  # a copy's rate: speed-of-light kernels exist


ENDS = ("low", "estimate", "high")
# every end at the same memory share, so that only the element-wise rate tells them apart
MC = S.Machine(matmul_peak=1e15, attention_peak=5e14, hbm=4e12, matmul_share=0.8, sms=100,
               attention_forward=dict(zip(ENDS, (0.7, 0.6, 0.5))),
               attention_backward=dict(zip(ENDS, (0.5, 0.4, 0.3))),
               memory_share=dict(zip(ENDS, (0.9, 0.9, 0.9))),
               net=Net(domain=8, up=1e11, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6))


def test_a_layers_memory_bound_time_is_its_traffic_at_the_measured_kernels_rate():
    prof = S.profile(load("llama-3.1-8b").spec, 1024)
    (lp,) = prof.layers
    saved = S._activation_bytes(lp.layer, prof.d, 1024, 1, 1, False, False, True)
    for end, share in (("low", 1.0), ("estimate", 0.752), ("high", 0.741)):
        c = S.layer_compute(lp, prof, S.Layout(flash=True), MC, end)
        # forward 1.5 × the kept bytes, backward 1.5 × that, at 4·10¹² × 0.9 × the share
        assert c.mem_f == pytest.approx(1.5 * saved / (4e12 * 0.9 * share))
        assert c.mem_b == pytest.approx(2.25 * saved / (4e12 * 0.9 * share))


def test_the_casts_and_the_optimizer_keep_the_copys_rate():
    # an fp8 layer's casts add the same seconds at every end when the memory share is the
    # same: their bytes at the efficiency file's share, not the element-wise kernels'
    prof = S.profile(load("llama-3.1-8b").spec, 1024)
    (lp,) = prof.layers
    fp8 = replace(MC, matmul_bytes=1)
    lay = S.Layout(flash=True, fp8_recipe="mxfp8")
    casts = [S.layer_compute(lp, prof, lay, fp8, end).mem_f
             - S.layer_compute(lp, prof, lay, MC, end).mem_f for end in ENDS]
    assert casts[0] > 0 and casts[0] == pytest.approx(casts[1]) == pytest.approx(casts[2])
    # MXFP8 casts 6 bytes per element of each forward input (torchao's roofline); 8,192² at
    # a B200 copy's rate takes 6·67,108,864 / (7.7·10¹² · 0.9) = 58.1 µs, Transformer
    # Engine's kernel 52.34 µs both ways: the copy's rate does not undercount them
    assert S.FP8_CAST_BYTES["mxfp8"][0] * 8192 ** 2 / COPY == pytest.approx(58.1e-6, rel=1e-3)
