"""Where a token's routed copies land, and what DeepEP's dispatch then sends: the expected
ranks and domains a token reaches under uniform routing (worked by hand) and under NeMo
AutoModel's FakeBalancedGate (`--routing contiguous`), checked against that gate's own
formula run over every token with numpy (nemo_automodel/components/moe/layers.py at 89e3a9f:
`indices = arange(tokens * k).view(-1, k) % n_experts`, experts laid out in order over the
ranks); the dispatch bytes of a device and the step's CLI option."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from flopcalc.predict.collectives import dispatch_bytes, groups_hit

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]


def gate_groups(experts: int, k: int, groups: int) -> float:
    """The mean number of distinct groups (ranks or domains) a token's experts fall in, over
    64 whole cycles of tokens routed by the FakeBalancedGate's formula."""
    tokens = 64 * experts // math.gcd(experts, k)
    indices = np.arange(tokens * k).reshape(-1, k) % experts
    owner = indices // (experts // groups)
    return float(np.mean([len(set(row)) for row in owner.tolist()]))


def test_uniform_routing_reaches_each_group_with_one_minus_its_miss_chance():
    # 8 groups, k = 8: 8·(1 − (7/8)^8) = 8 · (16,777,216 − 5,764,801) / 16,777,216
    assert groups_hit("uniform", 8, 128, 8) == pytest.approx(
        float(8 * Fraction(16_777_216 - 5_764_801, 16_777_216)), rel=1e-12)
    # one group: always 1
    assert groups_hit("uniform", 8, 128, 1) == 1


@pytest.mark.parametrize("experts, k, groups, by_hand", [
    # DeepSeek-V3 on ep 64: 4 experts a rank; windows of 8 start at multiples of 8, so each
    # covers 2 whole ranks; 8 domains of 32 experts: each window inside one
    (256, 8, 64, 2.0), (256, 8, 8, 1.0),
    # Qwen3-30B-A3B on ep 8: 16 experts a rank, windows of 8 inside one rank
    (128, 8, 8, 1.0),
    # Kimi K2 on ep 32: 12 experts a rank; windows [0, 8) [8, 16) [16, 24) reach 1, 2, 1 ranks
    # and the pattern repeats every 24 experts: 4/3
    (384, 8, 32, 4 / 3),
    # gpt-oss-120b on ep 64: 2 experts a rank, windows of 4 cover 2 ranks
    (128, 4, 64, 2.0),
    # a window that wraps: 10 experts, k 4, 5 ranks of 2: starts 0, 4, 8, 2, 6 (5 windows);
    # [0..3] 2 ranks, [4..7] 2, [8, 9, 0, 1] 2, [2..5] 2, [6..9] 2
    (10, 4, 5, 2.0),
    # one expert a rank: a window of k reaches k ranks
    (8, 2, 8, 2.0),
])
def test_contiguous_routing_matches_the_gate_token_by_token(experts, k, groups, by_hand):
    assert groups_hit("contiguous", k, experts, groups) == pytest.approx(by_hand, rel=1e-12)
    assert groups_hit("contiguous", k, experts, groups) == pytest.approx(
        gate_groups(experts, k, groups), rel=1e-9)


def test_flex_sends_a_token_once_to_each_other_rank_it_reaches():
    # 8 ranks, 16 experts each, k 8, a buffer of S = 8 copies per token: uniform reaches
    # 8·(1 − (7/8)^8) ranks, 7/8 of them other ranks: S/8 · that · 7/8
    size = 8 * 1024
    hit = 8 * (1 - (7 / 8) ** 8)
    assert dispatch_bytes("flex", size, 8, 8, "uniform", 128) == pytest.approx(
        1024 * hit * 7 / 8, rel=1e-12)
    # contiguous: 1 rank a token, another with probability 7/8: 1,024 · 7/8 = 896
    assert dispatch_bytes("flex", size, 8, 8, "contiguous", 128) == pytest.approx(896)
    # the all-to-all dispatcher sends every copy that leaves the device, however routed
    assert dispatch_bytes("alltoall", size, 8, 8, "contiguous", 128) == 7 / 8 * size


def test_the_step_takes_the_routing_and_says_it(cli):
    args = ["step", "qwen3-30b-a3b", "--seq", "4096", "--dp", "8", "--ep", "8",
            "--global-batch", "64", "--micro-batch", "1", "--recompute", "full",
            "--dropout", "off", "--accelerator", "h100-sxm", "--format", "json"]
    uniform = json.loads(cli(*args).out)
    contiguous = json.loads(cli(*args, "--routing", "contiguous").out)
    ep = lambda r: r["communication"]["ep"]  # noqa: E731
    # one rank in 8 per token against 8·(1 − (7/8)^8) ≈ 5.25: the bytes fall by that ratio
    ratio = ep(contiguous)["bytes"] / ep(uniform)["bytes"]
    assert ratio == pytest.approx(1 / (8 * (1 - (7 / 8) ** 8)), rel=1e-6)
    assert contiguous["time"]["step_seconds"]["estimate"] < uniform["time"]["step_seconds"][
        "estimate"]
    assert any("--routing contiguous" in line for line in contiguous["conventions"])
    bad = cli(*args, "--routing", "nearest")
    assert bad.code == 2 and bad.err.count("\n") == 1


def test_contiguous_routing_needs_whole_copies_and_experts():
    # a stage whose routed layers differ has a fractional mean k: the uniform figure stands
    # (4·(1 − (3/4)^2.5)), as it does for fewer experts than groups
    assert groups_hit("contiguous", 2.5, 8, 4) == pytest.approx(4 * (1 - 0.75 ** 2.5))
    assert groups_hit("contiguous", 2, 4, 8) == pytest.approx(8 * (1 - (7 / 8) ** 2))
