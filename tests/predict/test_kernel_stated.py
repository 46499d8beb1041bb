"""Commands with activations (memory, step, plan) say which attention kernel they assumed, and
hint at --flash when the eager kernel's s² scores are most of the activations."""

from __future__ import annotations

import pytest

import flopcalc

from tests.conftest import run

pytestmark = pytest.mark.behaviour

HINT = "activations assume the eager kernel"


def test_memory_llama_70b_8k_eager_hints(cli):
    # Llama 3.1 70B at 8,192 tokens, one device, --no-flash: the eager kernel keeps each
    # layer's softmax scores, 64 heads × 8,192² × 2 bytes = 8,589,934,592 bytes (the table's
    # attn.softmax), × 80 layers = 687,194,767,360 of the 871,517,650,944 bytes of activations
    # (909,098,614,784 with eager PyTorch's four gated-MLP tensors, less one, 2·8,192·28,672
    # bytes a layer × 80 = 37,580,963,840, as Megatron-Core keeps three): most of them.
    # A flash kernel (the default) keeps one fp32 log-sum-exp per head and row instead,
    # 64 × 8,192 × 4 × 80 = 167,772,160 bytes: it saves 687,026,995,200 bytes (687.0 GB).
    assert 64 * 8192 * 8192 * 2 * 80 - 64 * 8192 * 4 * 80 == 687_026_995_200
    assert 909_098_614_784 - 2 * 8192 * 28672 * 80 == 871_517_650_944
    r = cli("memory", "llama-3.1-70b", "--seq", "8k", "--no-flash")
    assert r.code == 0
    assert HINT in r.err and "--no-flash" in r.err and "687.0 of 871.5 GB" in r.err
    flash = run(cli, "memory", "llama-3.1-70b", "--seq", "8k")
    assert flash["memory"]["activations"] == 871_517_650_944 - 687_026_995_200
    assert flash["settings"]["flash"] is True
    assert "attention kernel: eager" in " ".join(r.out.split())
    doc = run(cli, "memory", "llama-3.1-70b", "--seq", "8k", "--no-flash")
    assert doc["settings"]["flash"] is False
    assert doc["memory"]["activations"] == 871_517_650_944


def test_memory_with_flash_says_so_without_hint(cli):
    r = cli("memory", "llama-3.1-70b", "--seq", "8k", "--flash")
    assert r.code == 0 and HINT not in r.err
    assert "attention kernel: flash" in " ".join(r.out.split())


def test_no_hint_where_the_scores_are_small(cli):
    # GPT-2 at 1,024: the scores are 12·1,024²·2 bytes = 25 MB of a layer's ~100 MB: no
    # hint, but the kernel is still stated
    r = cli("memory", "gpt2", "--no-flash")
    assert r.code == 0 and HINT not in r.err
    assert "attention kernel: eager" in " ".join(r.out.split())


def test_step_and_plan_state_the_kernel():
    for flash, kernel in ((True, "flash"), (False, "eager")):
        step = flopcalc.step("llama-3.1-8b", seq="8k", tp=8, dp=1, global_batch=8,
                             micro_batch=1, recompute="none", dropout="off", flash=flash,
                             accelerator="h200").to_dict()
        assert step["settings"]["flash"] is flash and step["settings"]["kernel"] == kernel
        assert any(line.startswith(f"attention kernel: {kernel}")
                   for line in step["conventions"])
        plan = flopcalc.plan("llama-3.1-8b", seq="8k", global_batch=8, count=8, flash=flash,
                             accelerator="h200", top=1).to_dict()
        assert plan["settings"]["flash"] is flash and plan["settings"]["kernel"] == kernel
        assert any(line.startswith(f"attention kernel: {kernel}")
                   for line in plan["conventions"])


def test_step_eager_long_sequence_hints():
    step = flopcalc.step("llama-3.1-70b", seq="8k", tp=8, pp=4, dp=1, global_batch=8,
                         micro_batch=1, vp=1, recompute="none", dropout="off", flash=False,
                         accelerator="h200").to_dict()
    assert any(HINT in w for w in step["warnings"])
    flash = flopcalc.step("llama-3.1-70b", seq="8k", tp=8, pp=4, dp=1, global_batch=8,
                          micro_batch=1, vp=1, recompute="none", dropout="off", flash=True,
                          accelerator="h200").to_dict()
    assert not any(HINT in w for w in flash["warnings"])
