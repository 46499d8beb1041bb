"""A step or plan that assumes what a source did not state says so next to its headline, and
a plan's best MFU is set beside the MFU comparable published runs measured."""

from __future__ import annotations

import pytest

import flopcalc

pytestmark = [pytest.mark.published, pytest.mark.behaviour]

# Llama Team 2024, "The Llama 3 Herd of Models", Table 4: 405B on 8,192-16,384 H100 at 38-43%
# BF16 MFU.
LLAMA3_LOW, LLAMA3_HIGH = 0.38, 0.43
META = dict(seq=8192, tp=8, pp=16, dp=128, global_batch=2048, micro_batch=1, zero=1,
            sequence_parallel=True, flash=True, dropout="off", grad_fp32=True,
            accelerator="h100", network="dgx-h100")


def headline(out: str) -> str:
    """The table output up to where the time goes: what a reader sees by the headline."""
    return " ".join(out.split("Where the time goes")[0].split())


def test_step_without_vp_says_what_it_took(cli):
    doc = flopcalc.step("llama-3.1-405b", **META).to_dict()
    assert any(line.startswith("--vp not given: the estimate takes 1") for line in doc["assumed"])
    assert any(line.startswith("--recompute not given") for line in doc["assumed"])
    r = cli("step", "llama-3.1-405b", "--seq", "8192", "--tp", "8", "--pp", "16", "--dp", "128",
            "--global-batch", "2048", "--micro-batch", "1", "--zero", "1",
            "--sequence-parallel", "--flash", "--dropout", "off", "--grad-fp32",
            "--accelerator", "h100", "--network", "dgx-h100")
    assert r.code == 0
    top = headline(r.out)
    assert "assumed: --vp not given: the estimate takes 1" in top
    assert "38-43%" in top and "below" in top  # 18% against Meta's measured range
    brief = cli("step", "llama-3.1-405b", "--seq", "8192", "--tp", "8", "--pp", "16", "--dp",
                "128", "--global-batch", "2048", "--micro-batch", "1", "--zero", "1",
                "--sequence-parallel", "--flash", "--dropout", "off", "--grad-fp32",
                "--accelerator", "h100", "--network", "dgx-h100", "--brief").out
    assert "--vp not given" in brief


def test_step_with_everything_given_assumes_nothing():
    doc = flopcalc.step("llama-3.1-405b", vp=8, recompute="none", **META).to_dict()
    assert doc["assumed"] == []
    pub = doc["published"]
    assert (pub["low"], pub["high"]) == (LLAMA3_LOW, LLAMA3_HIGH)
    assert "Llama 3 Herd of Models" in pub["source"]


def test_micro_batch_taken_as_one_is_said():
    doc = flopcalc.step("llama-3.1-8b", seq="8k", dp=8, global_batch=64, recompute="none",
                        dropout="off", flash=True, accelerator="h100").to_dict()
    assert any(line.startswith("--micro-batch not given: the estimate takes 1")
               for line in doc["assumed"])


def test_plan_405b_best_against_meta(cli):
    doc = flopcalc.plan("llama-3.1-405b", seq="8k", global_batch=2048, count=16384,
                        flash=True, grad_fp32=True, accelerator="h100", top=1).to_dict()
    best = doc["plans"][0]["mfu"]
    pub = doc["published"]
    assert (pub["low"], pub["high"]) == (LLAMA3_LOW, LLAMA3_HIGH) and pub["mfu"] == best
    assert pub["where"] == ("above" if best > LLAMA3_HIGH else "inside"
                            if best >= LLAMA3_LOW else "below")
    assert any("searched" in line for line in doc["assumed"])
    r = cli("plan", "llama-3.1-405b", "--seq", "8k", "--global-batch", "2048", "--count",
            "16384", "--flash", "--grad-fp32", "--accelerator", "h100", "--top", "1")
    top = " ".join(r.out.split("Why #1 wins")[0].split())
    assert f"predicted MFU {100 * best:.1f}%" in top and "38-43%" in top


def test_no_published_range_no_line():
    doc = flopcalc.plan("llama-3.1-8b", seq="8k", global_batch=8, count=8, flash=True,
                        accelerator="h100", top=1).to_dict()
    assert doc["published"] is None
