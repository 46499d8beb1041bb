"""`--async-tp`, PyTorch's async tensor parallelism as torchtitan runs it: reported as a
forward-pass speed-up (up to ~20-29% forward, ~8% end to end: "[Distributed w/ TorchTitan]
Introducing Async Tensor Parallelism in PyTorch", 2024), so the estimate hides the forward's
collectives and exposes the backward's; it lies between vanilla TP and Megatron's overlap."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.behaviour

ARGS = ["step", "llama-3.1-70b", "--seq", "8192", "--tp", "8", "--dp", "4",
        "--global-batch", "32", "--micro-batch", "2", "--zero", "3", "--recompute", "full",
        "--sequence-parallel", "--dropout", "off", "--accelerator", "h100-sxm",
        "--format", "json"]


def test_async_tp_lies_between_vanilla_tp_and_megatrons_overlap(cli):
    est = {}
    for name, extra in (("vanilla", ["--no-tp-overlap"]), ("async", ["--async-tp"]),
                        ("megatron", ["--tp-overlap"])):
        r = cli(*ARGS, *extra)
        assert r.code == 0, r.err
        est[name] = r.json()["communication"]["tp"]["exposed_seconds"]
        if name == "async":
            assert any("--async-tp: the forward's only" in line
                       for line in r.json()["conventions"])
    assert est["megatron"] < est["async"] < est["vanilla"]


def test_async_tp_without_overlap_is_refused(cli):
    r = cli(*ARGS, "--async-tp", "--no-tp-overlap")
    assert r.code == 2 and r.err.count("\n") == 1 and "--async-tp" in r.err
