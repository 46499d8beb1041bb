"""Mixture-of-experts costs of the step-time model against figures worked by hand from their
sources (not from the code): the grouped expert GEMM's rate at few tokens per expert (DeepGEMM's
published table), the unpermutation after the experts (Megatron-Core's `unpermute`), NVFP4
matmuls' operand bytes, and a plan search that prunes by a lower bound yet answers as the
exhaustive one does.

The machine is the made-up one of tests/test_hand_steptime.py: 10¹⁵ FLOP/s at an MAMF share of
0.8, 100 SMs, 4·10¹² B/s of HBM at a memory share of 0.8 in the estimate.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from flopcalc.commands import load
from flopcalc.predict import steptime as S
from flopcalc.predict.collectives import Net

pytestmark = [pytest.mark.hand, pytest.mark.published]

ENDS3 = ("low", "estimate", "high")
NET = Net(domain=64, up=1e11, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6)
MC = S.Machine(
    matmul_peak=1e15, attention_peak=5e14, hbm=4e12, matmul_share=0.8, sms=100,
    attention_forward=dict(zip(ENDS3, (0.7, 0.6, 0.5))),
    attention_backward=dict(zip(ENDS3, (0.5, 0.4, 0.3))),
    memory_share=dict(zip(ENDS3, (0.9, 0.8, 0.7))), net=NET)
RATE = 1e15 * 0.8 * 0.85 * 0.975  # the estimate: peak × MAMF × shape factor × slowest device
BW = 4e12 * 0.8


# DeepGEMM's README, first release (H800, FP8): grouped GEMM TFLOP/s at M tokens per group
# against the same shape's large-M rate (N×K 4,096×7,168: dense M = 4,096 at 1,304; 7,168×2,048:
# grouped M = 4,096-8,192 at 1,099)
DEEPGEMM = {256: (932 / 1304 + 815 / 1099) / 2, 512: (1040 / 1304 + 916 / 1099) / 2,
            1024: (1233 / 1304 + 925 / 1099) / 2}


@pytest.mark.parametrize("tokens", sorted(DEEPGEMM))
def test_grouped_gemm_share_is_deepgemms_measurement(tokens):
    # 256: (0.7147 + 0.7416)/2 = 0.7282; 512: (0.7975 + 0.8335)/2 = 0.8155;
    # 1,024: (0.9455 + 0.8417)/2 = 0.8936 (the constants keep three digits)
    assert S.grouped_share(tokens) == pytest.approx(DEEPGEMM[tokens], abs=6e-4)


def test_grouped_gemm_share_between_and_beyond_the_points():
    # 2,048 tokens: halfway in log₂ from 1,024 (0.894) to 4,096 (1.0): 0.947
    assert S.grouped_share(2048) == pytest.approx(0.947, abs=1e-9)
    assert S.grouped_share(4096) == S.grouped_share(65536) == 1.0
    # 128 tokens: one halving below 256 at the 256-512 slope, 0.728 − 0.088 = 0.640
    assert S.grouped_share(128) == pytest.approx(0.640, abs=1e-9)
    assert S.grouped_share(1) == 0.25  # the floor


def test_an_expert_gemm_with_few_tokens_runs_at_the_grouped_share():
    # (256 × 1024)·(1024 × 512): 268,435,456 FLOPs on 4 tiles of 100 SMs (wave 0.04); at 256
    # tokens per expert the grouped kernel's 0.728 of the rate
    dense = 268_435_456 / (RATE * 0.04)
    assert S.gemm_time(256, 512, 1024, MC, "estimate", 1, 0.728) == pytest.approx(dense / 0.728)


def test_nvfp4_operands_move_four_and_a_half_bits():
    # (1 × 8192)·(8192 × 8192), memory-bound: operands 9/16·(8,192 + 67,108,864) =
    # 37,753,344 bytes, output 2·8,192 = 16,384: 37,769,728 bytes at 3.2·10¹² B/s (the 32
    # tiles' 134,217,728 FLOPs take 0.6 µs)
    from flopcalc.models.hardware import resolve
    from flopcalc.predict.plans import machine_for

    machine = machine_for(resolve("gb300", "fp4", 1, timed=True)).machine
    assert machine.matmul_bytes == 0.5625  # E2M1 and an E4M3 scale per 16: 4 + 8/16 bits
    assert machine.matmul_share == 0.763  # presets/efficiency/gb300.yaml (fp8's, assumed)
    fp4 = replace(MC, matmul_bytes=machine.matmul_bytes)
    assert S.gemm_time(1, 8192, 8192, fp4, "estimate") == pytest.approx(37_769_728 / BW)


def test_the_unpermutation_moves_the_routed_copies():
    # Qwen3-30B-A3B (d 2,048, top-8) at 4,096 tokens, one sequence, tp 1: forward reads the 8
    # copies and writes the token, 9·4,096·2,048·2 = 150,994,944 bytes; backward reads the
    # token's gradient and the 8 copies and writes the copies' gradient, 17·4,096·2,048·2 =
    # 285,212,672 bytes, at the element-wise kernels' rate: the copy's 0.9 of 4·10¹² B/s
    # times Transformer Engine's measured 0.752 of it (steptime.ELEMENTWISE)
    prof = S.profile(load("qwen3-30b-a3b").spec, 4096)
    lp = next(x for x in prof.layers if x.moe[0])
    lay = S.Layout(ep=8, flash=True)
    with_moe = S.layer_compute(lp, prof, lay, MC, "estimate")
    without = S.layer_compute(replace(lp, moe=(0, 0)), prof, lay, MC, "estimate")
    ew = 4e12 * 0.9 * 0.752
    assert with_moe.mem_f - without.mem_f == pytest.approx(150_994_944 / ew)
    assert with_moe.mem_b - without.mem_b == pytest.approx(285_212_672 / ew)


def test_a_pruned_plan_search_answers_as_the_exhaustive_one():
    # the search times layouts in the order of a lower bound and stops past the fifth best;
    # timing every fitting layout must give the same five, in the same order
    from flopcalc.models.hardware import resolve
    from flopcalc.predict import plans as P

    spec = load("mixtral-8x7b").spec
    prof = S.profile(spec, 4096)
    found = resolve("h100", "bf16", 64, timed=True)
    hw, res = found.hw, P.machine_for(found)
    best, count = P.search(spec, prof, res.machine, 64, 256, hw.memory_bytes, True, True, False)
    # (the enumeration is the search's own, `P.candidates`: its layouts are the subject of
    # tests/predict/test_plan_search.py; here only the pruning is)
    every = [P.Candidate(lay, S.step_time(prof, lay, res.machine, "estimate"), used)
             for lay, used in P.candidates(spec, prof, res.machine, 64, 256, hw.memory_bytes,
                                           True, True, False)]
    every.sort(key=lambda c: c.time.total)  # stable: ties in the order the search met them
    assert count > 5
    assert [(c.layout, c.time.total) for c in best] == [(c.layout, c.time.total)
                                                        for c in every[:5]]
    assert all(P.lower_bound(prof, c.layout, res.machine) <= c.time.total for c in every)
    # every token dispatcher is tried where experts are split
    assert {c.layout.dispatcher for c in every if c.layout.ep > 1} == {"alltoall", "allgather",
                                                                        "flex"}


def test_a_hidden_dispatch_costs_its_sms_share_of_the_time_it_hides_behind():
    # Qwen3-30B-A3B on 8 devices of one fast domain at 10¹³ B/s: the expert all-to-all of a
    # micro-batch takes milliseconds, its compute a tenth of a second, so the 1F1B overlap
    # hides all of it, yet its kernels hold 20 of the 100 SMs meanwhile (DeepSeek-V3 Technical
    # Report §3.2.2): exposed 20/100 of the dispatch time instead of all of it, in the 7 of
    # 8 micro-batches whose forward Megatron-Core's combined 1F1B pairs with a backward; the
    # first forward and the last backward run alone and expose theirs whole:
    # 1/8 + 7/8 · 0.2 = 0.3
    fast = replace(MC, net=Net(domain=64, up=1e13, out=1e12, base=1e-5, lat_up=1e-6,
                               lat_out=5e-6))
    prof = S.profile(load("qwen3-30b-a3b").spec, 4096)
    lay = S.Layout(dp=8, ep=8, flash=True, global_batch=64)
    exposed = S.step_time(prof, lay, fast, "estimate").exposed["ep"]
    hidden = S.step_time(prof, replace(lay, moe_overlap=True), fast, "estimate").exposed["ep"]
    assert exposed > 0
    assert hidden == pytest.approx(0.3 * exposed)
