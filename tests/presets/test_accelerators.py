"""The accelerators people train and serve on in 2026 (GB200, GB300, B300, MI325X, MI355X) and
the system each device usually comes built into, read from its preset file.

Expected values are the vendors' published rack, node or per-device figures, worked to one
device by hand in the comments: a file that drifts from its datasheet fails here."""

from __future__ import annotations

import pytest

from flopcalc.models.accelerators import accelerator_names, load_accelerator
from flopcalc.models.networks import load_network

pytestmark = pytest.mark.published

T, P = 10**12, 10**15


@pytest.mark.parametrize("name, bf16, fp8, fp4, memory, bandwidth", [
    # GB200 NVL72: FP16/BF16 360 PFLOPS sparse for 72 GPUs -> 360/72/2 = 2.5 P dense; FP8 720
    # -> 5 P; FP4 1,440 -> 10 P; HBM3e 13.4 TB -> 186 GB; 576 TB/s / 72 = 8 TB/s.
    ("gb200", 2_500 * T, 5 * P, 10 * P, 186 * 10**9, 8 * T),
    # GB300 NVL72: BF16 and FP8 as GB200's rack; FP4 1,080 PFLOPS dense / 72 = 15 P.
    ("gb300", 2_500 * T, 5 * P, 15 * P, 288 * 10**9, 8 * T),
    # DGX B300: FP8 72 PFLOPS sparse for 8 GPUs -> 72/8/2 = 4.5 P; BF16 36 -> 2.25 P; FP4
    # 108 PFLOPS dense / 8 = 13.5 P; 2.3 TB / 8 -> 288 GB.
    ("b300", 2_250 * T, 4_500 * T, 13_500 * T, 288 * 10**9, 8 * T),
    # MI325X data sheet: the MI300X's dense peaks; 256 GB at 6 TB/s; no FP4.
    ("mi325x", 1_307_400 * 10**9, 2_614_900 * 10**9, None, 256 * 10**9, 6 * T),
    # MI355X data sheet: 256 CUs x 2.4 GHz x 4,096 bf16 FLOPs per clock = 2,516.58 T, quoted
    # as 2,516.6 T; FP8 twice, MXFP4 four times; 288 GB at 8 TB/s.
    ("mi355x", 2_516_600 * 10**9, 5_033_200 * 10**9, 10_066_300 * 10**9, 288 * 10**9, 8 * T),
])
def test_datasheet_figures_per_device(name, bf16, fp8, fp4, memory, bandwidth):
    spec = load_accelerator(name).spec
    assert spec.peak_flops["bf16"] == spec.peak_flops["fp16"] == bf16
    assert spec.peak_flops["fp8"] == fp8
    assert spec.peak_flops.get("fp4") == fp4
    assert (spec.memory_bytes, spec.memory_bandwidth) == (memory, bandwidth)


@pytest.mark.parametrize("name, system, domain, nic", [
    ("gb200", "gb200-nvl72", 72, 50 * 10**9),  # ConnectX-7, 400 Gb/s = 50 GB/s each way
    ("gb300", "gb300-nvl72", 72, 100 * 10**9),  # ConnectX-8, 800 Gb/s
    ("b300", "dgx-b300", 8, 100 * 10**9),
    ("mi325x", "mi300x", 8, 50 * 10**9),  # the MI300X platform
    ("mi355x", "mi355x", 8, 50 * 10**9),  # Pollara 400
])
def test_each_device_names_its_usual_system(name, system, domain, nic):
    spec = load_accelerator(name).spec
    assert spec.system == system
    net = load_network(system).spec
    assert (net.domain_size, net.scale_out_bandwidth) == (domain, nic)


def test_every_accelerator_names_a_system_that_exists():
    for name in accelerator_names():
        system = load_accelerator(name).spec.system
        assert system is not None, name
        load_network(system)  # raises if the file is missing


def test_mi355x_mesh_links():
    # 7 Infinity Fabric links of 153.6 GB/s, read as bidirectional: 76.8 GB/s each way per
    # peer, 7 x 76.8 = 537.6 GB/s each way to all peers.
    assert load_network("mi355x").spec.scale_up_bandwidth == 537_600 * 10**6


def test_step_on_gb200_runs_in_its_rack_by_default(cli):
    r = cli("step", "llama-3.1-70b", "--accelerator", "gb200", "--tp", 8, "--pp", 2,
            "--count", 144, "--global-batch", 288, "-f", "json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["machine"]["network"] == "gb200-nvl72" and "no default network" not in r.err
    # MFU is over the device's own dense bf16 peak: 2.5 PFLOP/s, not the HGX B200's 2.25.
    assert doc["machine"]["peak_flops"] == 2_500 * T
