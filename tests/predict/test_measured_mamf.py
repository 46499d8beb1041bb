"""Each part's matmul share is its own published Maximum Achievable Matmul FLOPS (MAMF), not
another part's carried over: stas00/ml-engineering compute/accelerator/README.md at commit
b9e2972, "Maximum Achievable Matmul FLOPS comparison table" (MAMF / dense peak, rounded to
0.1%), and a step on that part moves by exactly the ratio of the shares."""

from __future__ import annotations

import pytest

from flopcalc.models.networks import load_efficiency

pytestmark = [pytest.mark.published]

# (accelerator, dtype, MAMF TFLOP/s, dense peak TFLOP/s) as that table prints them
PUBLISHED = [
    ("gb200", "bf16", 1822.0, 2500),  # 1,822.0 / 2,500 = 0.72880 -> 72.9%
    ("gb200", "fp8", 3615.6, 5000),  # 3,615.6 / 5,000 = 0.72312 -> 72.3%
    ("b300", "bf16", 1769.0, 2250),  # 1,769.0 / 2,250 = 0.78622 -> 78.6%
    ("b300", "fp8", 3353.3, 4500),  # 3,353.3 / 4,500 = 0.74518 -> 74.5%
    ("h100-sxm", "fp8", 1402.6, 1979),  # 1,402.6 / 1,979 = 0.70874 -> 70.9% (H100's own row)
    ("h100-sxm", "bf16", 794.5, 989),  # 794.5 / 989 = 0.80334 -> 80.3%
    ("b200", "fp8", 3432.5, 4500),  # 3,432.5 / 4,500 = 0.76278 -> 76.3%
]


@pytest.mark.parametrize("accelerator,dtype,mamf,peak", PUBLISHED)
def test_matmul_share_is_the_parts_published_mamf(accelerator, dtype, mamf, peak):
    spec = load_efficiency(accelerator).spec
    assert spec.matmul_share(dtype) == round(mamf / peak, 3)


def test_fp4_takes_the_parts_own_fp8_share():
    # no published fp4 MAMF: each Blackwell part's fp8 share, as its file says
    assert load_efficiency("gb200").spec.matmul_share("fp4") == 0.723
    assert load_efficiency("b300").spec.matmul_share("fp4") == 0.745
