"""`--attention-kernel`: the attention kernel whose published shares of peak the step takes.
On Hopper the efficiency files' default is FlashAttention-3 / cuDNN's fused kernel (typical
60% forward, 50% backward); `fa2` is FlashAttention-2, PyTorch SDPA's flash backend, at the
shares its sources give: forward 35% best (the FlashAttention-3 paper's "only 35%
utilization on the H100"), 33% typical (pytorch/pytorch#142132: 329.5 of 989.5 TFLOP/s),
30% worst; backward the FlashAttention-3 backward's 55 / 50 / 50% divided by the paper's
1.5 / 1.625 / 1.75 speed-up, rounded: 37 / 31 / 29%."""

from __future__ import annotations

import pytest

from flopcalc.commands.common import machine

pytestmark = pytest.mark.published

ENDS = ("low", "estimate", "high")


@pytest.mark.parametrize("device", ["h100-sxm", "h200", "h100-pcie"])
def test_fa2_takes_its_published_shares_on_hopper(device):
    _, res = machine(device, "bf16", 8, None, None, None, "fa2")
    mc = res.machine
    assert [mc.attention_forward[e] for e in ENDS] == pytest.approx([0.35, 0.33, 0.30])
    assert [mc.attention_backward[e] for e in ENDS] == pytest.approx([0.37, 0.31, 0.29])
    assert mc.attention_kernel == "fa2"
    _, res = machine(device, "bf16", 8, None, None, None, None)
    assert res.machine.attention_kernel == "fa3"
    assert res.machine.attention_forward["estimate"] == pytest.approx(0.60)


def test_the_attention_time_scales_with_the_kernels_shares(cli):
    # one layer's flash attention: F/(P·f) forward and 2.5·F/(P·b) backward, so the step's
    # attention seconds scale by (1/0.33 + 2.5/0.31) / (1/0.60 + 2.5/0.50) at the estimate
    args = ["step", "llama-3.1-8b", "--seq", "8192", "--dp", "8", "--global-batch", "16",
            "--micro-batch", "2", "--recompute", "none", "--dropout", "off", "--zero", "3",
            "--accelerator", "h100-sxm", "--format", "json"]
    fa3, fa2 = (cli(*args, *extra).json() for extra in ([], ["--attention-kernel", "fa2"]))
    seconds = lambda r: r["time"]["breakdown"]["estimate"]["attention"]  # noqa: E731
    assert seconds(fa2) / seconds(fa3) == pytest.approx(
        (1 / 0.33 + 2.5 / 0.31) / (1 / 0.60 + 2.5 / 0.50), rel=1e-9)
    assert any(line.startswith("attention: fa2 (FlashAttention-2")
               for line in fa2["conventions"])
    assert any(line.startswith("attention: fa3 (FlashAttention-3")
               for line in fa3["conventions"])


@pytest.mark.parametrize("device, kernel, known", [
    ("h100-sxm", "fa9", "fa3 (the default), fa2"),
    ("a100-sxm-80gb", "fa3", "fa2 (the default)"),  # no FlashAttention-3 before Hopper
])
def test_a_kernel_the_file_has_no_shares_for_is_refused(cli, device, kernel, known):
    r = cli("step", "llama-3.1-8b", "--dp", "8", "--global-batch", "16", "--accelerator",
            device, "--attention-kernel", kernel)
    assert r.code == 2 and r.err.count("\n") == 1 and known in r.err


def test_plan_takes_the_kernel_too(cli):
    r = cli("plan", "llama-3.1-8b", "--seq", "8192", "--global-batch", "64", "--count", "8",
            "--accelerator", "h100-sxm", "--attention-kernel", "fa2", "--format", "json")
    assert r.code == 0, r.err
    assert any("attention as fa2: FlashAttention-2" in line for line in r.json()["conventions"])


@pytest.mark.parametrize("command", ["step", "plan"])
def test_a_kernel_with_the_eager_path_is_refused(cli, command):
    r = cli(command, "llama-3.1-8b", "--count", "8", "--global-batch", "16", "--accelerator",
            "h100-sxm", "--attention-kernel", "fa2", "--no-flash")
    assert r.code == 2 and r.err.count("\n") == 1 and "--no-flash" in r.err
