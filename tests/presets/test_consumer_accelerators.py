"""The GPUs people serve on outside data centres (RTX 3090, 4090, 5090, L40S, L4, A10), read
from their preset files and held to the vendors' figures, worked to one dense figure per dtype
by hand in the comments: a file that drifts from its datasheet or whitepaper fails here.

GeForce whitepapers list FP16/FP8 tensor rates with FP16 and with FP32 accumulation (half
the rate); the presets take the FP32-accumulate rows, what framework GEMMs use."""

from __future__ import annotations

import pytest

from flopcalc.engines.loading import choose
from flopcalc.models.accelerators import load_accelerator
from flopcalc.models.networks import load_network

pytestmark = pytest.mark.published

T, G, MiB = 10**12, 10**9, 1 << 20


@pytest.mark.parametrize("name, bf16, fp8, int8, fp4, memory, bandwidth, usable_mib, watts", [
    # GA102 whitepaper, RTX 3090: BF16/FP16 with FP32 accumulate 71/142 (dense/sparse); INT8
    # 284/568; no FP8; 24 GB GDDR6X, 19.5 Gbps x 384 bit / 8 = 936 GB/s; 350 W
    ("rtx-3090", 71 * T, None, 284 * T, None, 24 * G, 936 * G, 24_576, 350),
    # Ada whitepaper, RTX 4090: 165.2/330.4 (FP32 accumulate), FP8 330.3/660.6, INT8
    # 660.6/1321.2; 21 Gbps x 384 / 8 = 1,008 GB/s; 450 W
    ("rtx-4090", 165_200 * G, 330_300 * G, 660_600 * G, None, 24 * G, 1_008 * G, 24_564, 450),
    # RTX Blackwell whitepaper, RTX 5090: 209.5/419 (FP32 accumulate), FP8 419/838, INT8
    # 838/1676, FP4 1676/3352 ("3,352 AI TOPS"); 28 Gbps x 512 / 8 = 1,792 GB/s; 575 W
    ("rtx-5090", 209_500 * G, 419 * T, 838 * T, 1_676 * T, 32 * G, 1_792 * G, 32_607, 575),
    # L40S datasheet: BF16 362.05 | 733*, FP8 733 | 1,466*, INT8 733 | 1,466*; 864 GB/s; 350 W
    ("l40s", 362_050 * G, 733 * T, 733 * T, None, 48 * G, 864 * G, 46_068, 350),
    # L4 datasheet (sparse, "one-half lower without sparsity"): BF16 242/2 = 121, FP8 485/2 =
    # 242.5, INT8 485/2; 300 GB/s; 72 W
    ("l4", 121 * T, 242_500 * G, 242_500 * G, None, 24 * G, 300 * G, 23_034, 72),
    # A10 datasheet: BF16 125 | 250*, INT8 250 | 500*; no FP8; 600 GB/s; 150 W
    ("a10", 125 * T, None, 250 * T, None, 24 * G, 600 * G, 23_028, 150),
])
def test_vendor_figures_per_device(name, bf16, fp8, int8, fp4, memory, bandwidth, usable_mib,
                                   watts):
    spec = load_accelerator(name).spec
    assert spec.peak_flops["bf16"] == spec.peak_flops["fp16"] == bf16
    assert spec.peak_flops.get("fp8") == fp8
    assert spec.peak_flops["int8"] == int8
    assert spec.peak_flops.get("fp4") == fp4
    assert (spec.memory_bytes, spec.memory_bandwidth) == (memory, bandwidth)
    assert spec.usable_memory_bytes == usable_mib * MiB  # nvidia-smi's total
    assert spec.board_watts == watts


@pytest.mark.parametrize("ref, name", [("RTX5090", "rtx-5090"), ("rtx4090", "rtx-4090"),
                                       ("L40S", "l40s"), ("rtx3090", "rtx-3090")])
def test_short_names(ref, name):
    assert load_accelerator(ref).name == name


@pytest.mark.parametrize("system, up", [
    # PCIe 4.0: 16 GT/s x 16 lanes x 128/130 / 8 = 31.51 GB/s each way, kept as 31.5 GB/s
    ("pcie-gen4-x16", 31_500_000_000),
    # PCIe 5.0: 32 GT/s: 63.02 GB/s, kept as 63 GB/s
    ("pcie-gen5-x16", 63 * G),
])
def test_pcie_systems(system, up):
    net = load_network(system).spec
    assert net.scale_up_bandwidth == up and net.domain_size == 8


def test_each_card_sits_in_its_pcie_generation():
    for name in ("rtx-3090", "rtx-4090", "l40s", "l4", "a10"):
        assert load_accelerator(name).spec.system == "pcie-gen4-x16", name
    assert load_accelerator("rtx-5090").spec.system == "pcie-gen5-x16"


def test_consumer_blackwell_runs_fp4_but_not_sm100_kernels():
    """SM120 has FP4 tensor cores (NVFP4 in CUTLASS's swizzled layout) but not SM100's
    FlashInfer MXFP4 MoE: vLLM falls back to Marlin there (get_mxfp4_backend), as on Ada."""
    rtx = choose("auto", load_accelerator("rtx-5090").spec.architecture)
    assert (rtx.mxfp4_backend, rtx.nvfp4) == ("marlin", "swizzled")
    ada = choose("auto", load_accelerator("rtx-4090").spec.architecture)
    assert (ada.mxfp4_backend, ada.nvfp4) == ("marlin", "marlin")
    b200 = choose("auto", load_accelerator("b200").spec.architecture)
    assert (b200.mxfp4_backend, b200.nvfp4) == ("flashinfer-sm100", "swizzled")
