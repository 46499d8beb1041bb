"""Packed sequences (--packed): attention only inside each sample, pairs Σ Lᵢ² (full) and
Σ Lᵢ(Lᵢ+1)/2 (causal), windows inside each sample, against a numpy boolean mask of the packed
sequence counted element by element and against hand-worked integers; and the one-line errors
of bad sample lengths."""

from __future__ import annotations

import numpy as np
import pytest

from flopcalc.kinds.base import Span
from flopcalc.kinds.masks import Mask

pytestmark = pytest.mark.invariant


def packed_mask(lengths: list[int], causal: bool, window: int | None = None) -> np.ndarray:
    """The boolean (query, key) mask of one packed sequence: block-diagonal by sample, ∧ causal
    (key at or before the query), ∧ within a window of w keys (0 <= i − j < w)."""
    sample = np.repeat(np.arange(len(lengths)), lengths)
    i = np.arange(sum(lengths))[:, None]
    j = np.arange(sum(lengths))[None, :]
    mask = sample[:, None] == sample[None, :]
    if causal:
        mask &= j <= i
    if window is not None:
        mask &= (i - j) < window
    return mask


CASES = [[1], [7], [3, 5], [1, 1, 1, 1], [100, 28, 1, 127], [64] * 8, [5, 300, 17, 190]]


@pytest.mark.parametrize("lengths", CASES)
@pytest.mark.parametrize("mask, causal, window", [
    (Mask("causal"), True, None), (Mask("window", 16), True, 16), (Mask("window", 1), True, 1),
    (Mask("bidirectional"), False, None)])
def test_pairs_match_a_numpy_mask(lengths, mask, causal, window):
    seq = sum(lengths)
    expected = int(packed_mask(lengths, causal, window).sum())
    assert Span(3, seq, seq, "causal", packed=tuple(lengths)).pairs(mask) == 3 * expected


@pytest.mark.parametrize("lengths", CASES)
def test_full_convention_is_the_sum_of_squares(lengths):
    # under `full` every pair of each sample: the block-diagonal mask without causality
    seq = sum(lengths)
    expected = int(packed_mask(lengths, causal=False).sum())
    assert Span(1, seq, seq, "full", packed=tuple(lengths)).pairs(Mask("causal")) == expected


@pytest.mark.hand
def test_gpt2_hand_worked(cli):
    # gpt2: 12 layers, 12 heads of 64. Samples 3 and 5 in a sequence of 8.
    # causal pairs 3·4/2 + 5·6/2 = 6 + 15 = 21; full 3² + 5² = 34 (unpacked: 36, 64).
    # attention FLOPs = layers·heads·2·(d_qk + d_v)·pairs = 12·12·2·128·pairs = 36,864·pairs
    for attention, pairs in (("causal", 21), ("full", 34)):
        r = cli("model", "gpt2", "--seq", "8", "--packed", "3,5", "--attention", attention,
                "-f", "json")
        assert r.code == 0, r.err
        doc = r.json()
        assert doc["flops"]["attention"] == 36_864 * pairs
        assert doc["settings"]["packed"] == [3, 5]
    # the weights see the same tokens packed or not
    plain = cli("model", "gpt2", "--seq", "8", "-f", "json").json()
    assert doc["flops"]["weights"] == plain["flops"]["weights"]


def test_windowed_model_against_numpy(cli):
    # gemma-3-1b: 22 layers with a 512-key sliding window and 4 global layers, 4 heads of 256
    # (d_qk = d_v = 256): 2·4·(256 + 256) = 4,096 FLOPs per pair per layer
    lengths = [700, 1000, 348]
    local = int(packed_mask(lengths, True, 512).sum())
    glob = int(packed_mask(lengths, True).sum())
    r = cli("model", "gemma-3-1b", "--seq", "2048", "--packed", "700,1000,348", "--attention",
            "causal", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["flops"]["attention"] == 4_096 * (22 * local + 4 * glob)


@pytest.mark.hand
def test_repeated_lengths_and_other_commands(cli):
    # 4 samples of 256 in 1,024, causal: 4·256·257/2 = 131,584 pairs; gpt2 36,864 per pair
    doc = cli("model", "gpt2", "--seq", "1k", "--packed", "256x4", "--attention", "causal",
              "-f", "json").json()
    assert doc["flops"]["attention"] == 36_864 * 131_584
    assert doc["settings"]["packed"] == [256] * 4
    # train: 3 × forward per token × D, with D = 1,024 tokens (one sequence)
    t = cli("train", "gpt2", "--seq", "1k", "--packed", "256x4", "--tokens", "1024", "--mfu",
            "40%", "--accelerator", "h100", "-f", "json").json()
    assert t["training"]["exact"] == 3 * doc["flops"]["forward"]
    assert t["settings"]["packed"] == [256] * 4
    # mfu: exact_causal per token = 3 × forward / 1,024
    m = cli("mfu", "gpt2", "--seq", "1k", "--packed", "256x4", "--tokens-per-second", "1000",
            "--accelerator", "h100", "-f", "json").json()
    row = {x["name"]: x for x in m["rows"]}["exact_causal"]
    assert row["flops_per_token_exact"] == str(__import__("fractions").Fraction(
        3 * doc["flops"]["forward"], 1024))
    assert m["settings"]["packed"] == [256] * 4


@pytest.mark.behaviour
def test_step_says_packed_and_is_faster(cli):
    # --cuda-graph: GPT-2 small at one 1k sequence a micro-batch is bound by the host's kernel
    # launches when run eagerly, which packing does not change; replayed as a graph its device
    # time (less attention when packed) decides
    args = ("step", "gpt2", "--seq", "1k", "--global-batch", "8", "--accelerator", "h100",
            "--count", "1", "--micro-batch", "1", "--recompute", "none", "--dropout", "off",
            "--cuda-graph", "-f", "json")
    plain = cli(*args).json()
    packed = cli(*args, "--packed", "128x8").json()
    assert packed["settings"]["packed"] == [128] * 8
    assert plain["settings"]["packed"] == []
    assert packed["model_flops_per_step"] < plain["model_flops_per_step"]
    assert packed["time"]["step_seconds"]["estimate"] < plain["time"]["step_seconds"]["estimate"]
    brief = cli(*args[:-2], "--packed", "128x8", "--brief")
    assert "packed 128x8" in brief.out


@pytest.mark.behaviour
@pytest.mark.parametrize("args, words", [
    (("--seq", "1k", "--packed", "256x3"), "sum to 768 tokens, not the sequence length 1,024"),
    (("--seq", "1k", "--packed", "0,1024"), "positive whole number"),
    (("--seq", "1k", "--packed", "-4,1028"), "positive whole number"),
    (("--seq", "1k", "--packed", "512x0,1024"), "positive whole number"),
    (("--seq", "100000", "--packed", "1x100000"), "more than 65,536 samples"),
    (("--seq", "2k", "--packed", "2k"), "longer than gpt2's context of 1,024"),
    (("--seq", "1k", "--packed", "1k,,"), "not a length"),
    (("--seq", "1k", "--packed", "abc"), "not a number"),
])
def test_bad_lengths_one_line_exit_2(cli, args, words):
    for command in (("model", "gpt2"), ("train", "gpt2", "--mfu", "40%", "--accelerator",
                                         "h100"),
                    ("mfu", "gpt2", "--tokens-per-second", "1M", "--accelerator", "h100"),
                    ("step", "gpt2", "--global-batch", "8", "--accelerator", "h100",
                     "--count", "1")):
        r = cli(*command, *args)
        assert r.code == 2, (command, r.out)
        assert words in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.behaviour
def test_refusals(cli):
    r = cli("step", "gpt2", "--seq", "1k", "--packed", "512x2", "--no-flash", "--global-batch",
            "8", "--accelerator", "h100", "--count", "1")
    assert r.code == 2 and "--no-flash" in r.err
    r = cli("model", "transformer-base", "--seq", "256", "--packed", "128x2")
    assert r.code == 2 and "encoder-decoder" in r.err


@pytest.mark.behaviour
def test_api_takes_packed():
    import flopcalc

    r = flopcalc.model("gpt2", seq=8, packed="3,5", attention="causal")
    assert r.flops.attention == 36_864 * 21  # as test_gpt2_hand_worked
