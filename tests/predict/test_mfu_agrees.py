"""One MFU: `step`, `plan`, `mfu` and the Python API give the same figure for the same run (the
exact count with causal and window masks over the dense peak), and HFU, which adds
recomputation, is never below it."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flopcalc

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.invariant]

H100 = 989.5e12  # dense bf16 FLOP/s of an H100 SXM (NVIDIA H100 datasheet)

# Gemma 3 27B at 32k on 64 H100: five of every six layers slide a 1,024-key window, where the
# full count and the masked one differ most (the 42% against about 28%).
GEMMA = dict(seq="32k", tp=8, pp=1, count=64, global_batch=64, micro_batch=1, vp=1,
             recompute="full", dropout="off", zero=1, sequence_parallel=True, flash=True,
             accelerator="h100")


def digits(x: float) -> str:
    return f"{100 * x:.1f}%"


def test_gemma_step_and_mfu_agree_to_the_digit():
    step = flopcalc.step("gemma-3-27b", **GEMMA).to_dict()
    tps = step["throughput"]["tokens_per_second"]["estimate"]
    mfu = flopcalc.mfu("gemma-3-27b", seq="32k", tokens_per_second=repr(tps),
                       accelerator="h100", count=64).to_dict()
    assert digits(step["mfu"]["estimate"]) == digits(mfu["mfu"])
    assert step["mfu"]["estimate"] == pytest.approx(mfu["mfu"], rel=1e-12)
    # and it is the masked count: Gemma 3 27B at 32,768 tokens, by hand. Full attention:
    # 62 layers × 32,768² pairs × 4·d_q = 4·4,096 FLOPs. Masked out: the 10 global layers
    # (every 6th of 62) drop s(s−1)/2 = 536,854,528 pairs each; the 52 window layers keep
    # Σ min(i, 1,024) = 1,024·1,025/2 + (32,768 − 1,024)·1,024 = 33,030,656 of 1,073,741,824,
    # dropping 1,040,711,168 each: 59,485,526,016 pairs × 16,384 = 974,610,858,246,144 FLOPs.
    full = flopcalc.model("gemma-3-27b", seq="32k").flops.forward
    masked = (10 * 536_854_528 + 52 * 1_040_711_168) * 16_384
    assert masked == 974_610_858_246_144
    per_step = 3 * (full - masked) * 64
    assert step["model_flops_per_step"] == per_step
    assert step["mfu"]["estimate"] == pytest.approx(
        per_step / (step["time"]["step_seconds"]["estimate"] * 64 * H100), rel=1e-12)


def test_llama_405b_meta_layout_step_and_mfu_agree_and_hfu_is_not_below():
    # Meta's layout (Llama 3 paper, Table 4): tp 8, pp 16, dp 128, 2,048 sequences of 8,192
    lay = dict(seq=8192, tp=8, pp=16, dp=128, global_batch=2048, micro_batch=1, zero=1,
               sequence_parallel=True, flash=True, dropout="off", grad_fp32=True, vp=8,
               recompute="selective", accelerator="h100", network="dgx-h100")
    step = flopcalc.step("llama-3.1-405b", **lay).to_dict()
    for end in ("low", "estimate", "high"):
        assert step["hfu"][end] >= step["mfu"][end]
    tps = step["throughput"]["tokens_per_second"]["estimate"]
    mfu = flopcalc.mfu("llama-3.1-405b", seq=8192, tokens_per_second=repr(tps),
                       accelerator="h100", count=16384, recompute="selective").to_dict()
    assert digits(step["mfu"]["estimate"]) == digits(mfu["mfu"])
    assert digits(step["hfu"]["estimate"]) == digits(mfu["hfu"])


def test_plan_step_and_mfu_agree(cli):
    plan = run(cli, "plan", "llama-3.1-8b", "--accelerator", "h100", "--count", 16, "--seq",
               "8k", "--global-batch", 64, "--flash", "--top", 1)
    best = plan["plans"][0]
    lay = best["layout"]
    step = run(cli, "step", "llama-3.1-8b", "--accelerator", "h100", "--seq", "8k",
               "--global-batch", 64, "--flash", "--tp", lay["tp"], "--pp", lay["pp"],
               "--vp", lay["vp"], "--dp", lay["dp"], "--cp", lay["cp"], "--zero", lay["zero"],
               "--micro-batch", lay["micro_batch"], "--recompute", lay["recompute"],
               "--dropout", "off", *(["--sequence-parallel"] if lay["sequence_parallel"]
                                     else []))
    assert digits(step["mfu"]["estimate"]) == digits(best["mfu"])
    mfu = run(cli, "mfu", "llama-3.1-8b", "--seq", "8k", "--accelerator", "h100", "--count", 16,
              "--tokens-per-second", repr(best["tokens_per_second"]))
    assert digits(mfu["mfu"]) == digits(best["mfu"])
    assert mfu["mfu"] == pytest.approx(best["mfu"], rel=1e-12)


def test_gpt3_causal_mfu_by_hand():
    # GPT-3 at 2,048: 358,791,143,424 forward FLOPs per token counting every pair (the
    # preset's published figure, tests/presets/test_published_figures.py); attention
    # 4·d_q·L = 4·12,288·96 = 4,718,592 FLOPs per pair; a token sees 2,048 keys under full,
    # (2,048 + 1)/2 on average causally: 4,718,592 × (2,048 − 1,024.5) = 4,829,478,912 fewer
    # per token.
    per_token = 358_791_143_424 - 4_829_478_912
    assert per_token == 353_961_664_512
    tps = 1_000_000
    doc = flopcalc.mfu("gpt3", tokens_per_second=tps, accelerator="h100", count=1024).to_dict()
    assert doc["mfu"] == pytest.approx(3 * per_token * tps / (1024 * H100), rel=1e-12)
    full = flopcalc.mfu("gpt3", tokens_per_second=tps, accelerator="h100", count=1024,
                        attention="full").to_dict()
    assert full["mfu"] == pytest.approx(3 * 358_791_143_424 * tps / (1024 * H100), rel=1e-12)


STEP_MODELS = ["gpt2", "llama-3.1-8b", "gemma-3-4b", "mixtral-8x7b", "gpt-oss-20b",
               "mamba2-2.7b", "qwen3-next-80b-a3b"]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(model=st.sampled_from(STEP_MODELS), flash=st.booleans(),
       recompute=st.sampled_from(["none", "selective", "full"]),
       attention=st.sampled_from(["causal", "full"]), pp=st.sampled_from([1, 2]))
def test_hfu_is_never_below_mfu_in_step(model, flash, recompute, attention, pp):
    doc = flopcalc.step(model, seq="4k", tp=1, pp=pp, dp=4, global_batch=16, micro_batch=1,
                        vp=1, recompute=recompute, dropout="off", flash=flash,
                        accelerator="h200", attention=attention).to_dict()
    for end in ("low", "estimate", "high"):
        assert doc["hfu"][end] >= doc["mfu"][end] > 0
        if recompute == "none":
            assert doc["hfu"][end] == doc["mfu"][end]


@pytest.mark.parametrize("model", STEP_MODELS)
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("attention", ["causal", "full"])
def test_hfu_is_never_below_mfu_in_mfu(model, recompute, attention):
    doc = flopcalc.mfu(model, seq="4k", tokens_per_second=Fraction(10**5), accelerator="h100",
                       recompute=recompute, attention=attention).to_dict()
    assert doc["hfu"] >= doc["mfu"]
    rows = {r["name"]: r["utilisation"] for r in doc["rows"]}
    assert doc["mfu"] == rows[f"exact_{attention}"]
    assert doc["hfu"] == rows[f"hfu_exact_{attention}"]


def test_unknown_recompute_step_hfu_not_below_mfu_and_mfu_agrees():
    # the 405B layout with --recompute and --vp left out: each end takes its own recomputation
    doc = flopcalc.step("llama-3.1-405b", seq=8192, tp=8, pp=16, dp=128, global_batch=2048,
                        micro_batch=1, zero=1, sequence_parallel=True, flash=True,
                        dropout="off", grad_fp32=True, accelerator="h100",
                        network="dgx-h100").to_dict()
    for end in ("low", "estimate", "high"):
        assert doc["hfu"][end] >= doc["mfu"][end]
    tps = doc["throughput"]["tokens_per_second"]["estimate"]
    mfu = flopcalc.mfu("llama-3.1-405b", seq=8192, tokens_per_second=repr(tps),
                       accelerator="h100", count=16384,
                       recompute=doc["layout"]["recompute"]).to_dict()
    assert digits(doc["mfu"]["estimate"]) == digits(mfu["mfu"])
    assert digits(doc["hfu"]["estimate"]) == digits(mfu["hfu"])


def test_the_table_names_the_convention_of_mfu(cli):
    r = cli("step", "gemma-3-27b", *(x for k, v in GEMMA.items() if v is not False for x in (
        [f"--{k.replace('_', '-')}"] if v is True else [f"--{k.replace('_', '-')}", str(v)])))
    assert r.code == 0, r.err
    assert "MFU (exact, causal attention)" in r.out
    r = cli("mfu", "gemma-3-27b", "--seq", "32k", "--tokens-per-second", "4000",
            "--per-device", "--accelerator", "h100", "--count", "8")
    assert "exact_causal = MFU" in r.out and "hfu_exact_causal = HFU" in r.out
