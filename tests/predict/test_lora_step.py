"""LoRA and QLoRA step time (`step --lora-rank R`): the frozen base computes no weight
gradients and keeps no optimizer state, the adapters run x·A·B, and only their gradients are
reduced. Worked by hand on tests/data/serve/tiny.yaml at 16 tokens (2 layers; q 8→8, k 8→4,
v 8→4, o 8→8, up 8→16, down 16→8) with rank 2."""

from __future__ import annotations

from fractions import Fraction

import pytest

from flopcalc.predict import steptime as S
from flopcalc.predict.communication import adapter_params, volumes
from flopcalc.reports.step import model_flops_per_sequence

from tests.predict.test_steptime import TINY, load

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

# Σ(n_in + n_out) over the six projections: 16 + 12 + 12 + 16 + 24 + 24 = 104;
# Σ n_in·n_out: 64 + 32 + 32 + 64 + 128 + 128 = 448.


def prof():
    return S.profile(load(TINY).spec, 16)


def test_model_flops_drop_the_frozen_weight_gradients_and_add_the_adapters():
    # per layer: the adapters' forward 2·16·2·104 = 6,656, three times (forward, input and
    # weight gradients) 19,968; the frozen weights' gradients, one forward of theirs,
    # 2·16·448 = 14,336, go: +5,632 a layer, +11,264 for the two
    p = prof()
    assert model_flops_per_sequence(p, "full", 2) - model_flops_per_sequence(p, "full") \
        == 2 * (3 * 2 * 16 * 2 * 104 - 2 * 16 * 448)


def test_only_the_adapters_train():
    # r·(n_in + n_out) per matrix: 2·104 = 208 a layer, 416 for the two (tp 1, one stage)
    p = prof()
    assert adapter_params(p, S.Layout(lora_rank=2)) == (Fraction(416), Fraction(0))
    # dp 2, ZeRO-0, bf16 gradients: the all-reduce sends 2·(1/2)·2·416 = 832 bytes
    v = volumes(p, S.Layout(dp=2, lora_rank=2, global_batch=2))["dp"]
    assert v.bytes == 832 and "weights' gradients" in v.collectives


def test_a_lora_step_is_faster_than_full_fine_tuning(cli):
    base = ["step", "llama-3.1-8b", "--accelerator", "h100", "--count", 8, "--global-batch", 8,
            "--seq", 4096, "--micro-batch", 1, "--recompute", "none", "--dropout", "off",
            "-f", "json"]
    full, lora = cli(*base).json(), cli(*base, "--lora-rank", 16).json()
    assert lora["time"]["step_seconds"]["estimate"] < full["time"]["step_seconds"]["estimate"]
    assert lora["memory"]["optimizer"] < full["memory"]["optimizer"] / 100
    qlora = cli(*base, "--lora-rank", 16, "--qlora").json()
    assert qlora["memory"]["weights"] < lora["memory"]["weights"]


def test_qlora_needs_a_rank(cli):
    r = cli("step", "llama-3.1-8b", "--accelerator", "h100", "--global-batch", 8, "--qlora")
    assert r.code == 2 and "give --lora-rank R too" in r.err


def test_a_rank_above_the_narrowest_matrix_is_one_line(cli):
    # tiny.yaml's widest matrices are 8 -> 16 and 16 -> 8: min(n_in, n_out) is at most 8, so a
    # rank above 8 adds nothing to any of them
    for command in (["memory", TINY], ["step", TINY, "--accelerator", "h100",
                                       "--global-batch", 8]):
        r = cli(*command, "--lora-rank", "1e30")
        assert r.code == 2 and r.err.count("\n") == 1, r.err
        assert "is more than every adapted matrix's width (at most 8)" in r.err
    assert cli("memory", TINY, "--lora-rank", 9).code == 2
    assert cli("memory", TINY, "--lora-rank", 8).code == 0


def test_virtual_stages_in_memory_need_stages_to_split(cli):
    r = cli("memory", TINY, "--vp", 2)
    assert r.code == 2 and "--vp needs --pp > 1" in r.err
    assert cli("memory", TINY, "--pp", 2, "--vp", 2).code == 2  # 1 layer a stage
