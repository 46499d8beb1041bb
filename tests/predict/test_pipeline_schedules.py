"""Pipeline schedules (`--schedule`): each one's bubble against its paper's formula and the
activation memory it keeps, worked by hand; layouts a schedule cannot run are one line.

Bubbles (F, B, W: one stage's forward, backward and weight-gradient time per micro-batch):
1F1B (p − 1)(F + B) and interleaved (p − 1)(F + B)/v (Narayanan et al. 2021 §2.2); ZB-H1
(p − 1)(F + B − 2W) (Qi et al. 2023; "ZB1P" in the DualPipe repository's table); DualPipe
(p/2 − 1)(F&B + B − 3W) (DeepSeek-V3 Technical Report, Table 2), F&B = F + B; DualPipeV the
same over 2p half-stages on p devices."""

from __future__ import annotations

from fractions import Fraction

import pytest

from flopcalc.counting.memory import Setup
from flopcalc.predict.steptime import pipeline_bubble

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

# made-up stage times: F = 3, B = 6 (of which W = 3) seconds
F, B, W = 3.0, 6.0, 3.0


@pytest.mark.parametrize("schedule, p, v, bubble", [
    ("1f1b", 8, 1, 7 * 9.0),  # (8 − 1)·(3 + 6) = 63
    ("interleaved", 8, 4, 7 * 9.0 / 4),  # 63 / 4 = 15.75
    ("zero-bubble", 8, 1, 7 * (9.0 - 6.0)),  # (8 − 1)·(3 + 6 − 2·3) = 21
    ("dualpipe", 8, 1, 3 * (9.0 + 6.0 - 9.0)),  # (8/2 − 1)·((3 + 6) + 6 − 3·3) = 18
    ("dualpipev", 8, 1, 7 * (9.0 + 6.0 - 9.0) / 2),  # (16/2 − 1)·(1.5 + 3 + 3 − 4.5) = 21
    ("1f1b", 1, 1, 0.0),  # one stage: no pipeline
    ("dualpipe", 2, 1, 0.0),  # (2/2 − 1) = 0
])
def test_bubble_as_each_paper_writes_it(schedule, p, v, bubble):
    assert pipeline_bubble(schedule, p, v, F, B, W) == pytest.approx(bubble, rel=1e-12)


@pytest.mark.parametrize("schedule, vp, in_flight", [
    ("1f1b", 1, Fraction(8)),  # p micro-batches in flight on the first stage
    ("zero-bubble", 1, Fraction(8)),  # ZB-H1 keeps 1F1B's peak
    ("1f1b", 4, 8 + Fraction(7, 4)),  # interleaved: p + (p − 1)/v = 9.75
    ("dualpipe", 1, Fraction(9)),  # PP + 1
    ("dualpipev", 1, Fraction(17, 2)),  # 2p + 1 half-stage chunks = 8.5 stages
])
def test_micro_batches_in_flight(schedule, vp, in_flight):
    assert Setup(seq=8, batch=1, pp=8, vp=vp, schedule=schedule).in_flight == in_flight


def test_dualpipe_holds_two_stages_and_one_more_micro_batch(cli):
    # Llama 3.1 8B, pp 4: DualPipe holds the layers' parameters twice (a stage of each
    # direction) and p + 1 = 5 micro-batches of activations against 1F1B's 4
    base = ["memory", "llama-3.1-8b", "--pp", 4, "--seq", 4096, "-f", "json"]
    one = cli(*base).json()
    dual = cli(*base, "--schedule", "dualpipe").json()
    assert dual["activations"]["per_layer"] == one["activations"]["per_layer"]
    layers = lambda d: sum(v for k, v in d["activations"]["components"].items()  # noqa: E731
                           if k.startswith("layers."))
    assert layers(dual) * 4 == layers(one) * 5
    assert dual["params"]["device"] > one["params"]["device"]


@pytest.mark.parametrize("args, message", [
    (["--pp", 3, "--schedule", "dualpipe"], "--pp 3 must be even"),
    (["--schedule", "zero-bubble"], "give --pp > 1"),
    (["--pp", 4, "--vp", 2, "--schedule", "zero-bubble"], "give --vp 1"),
    (["--pp", 4, "--vp", 1, "--schedule", "interleaved"], "needs --vp > 1"),
])
def test_a_schedule_the_layout_cannot_run_is_one_line(cli, args, message):
    r = cli("step", "llama-3.1-8b", "--accelerator", "h100", "--global-batch", 64,
            *map(str, args))
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1, r.err
    assert message in r.err


def test_step_reports_the_schedules_bubble(cli):
    # the same layout under 1F1B and ZB-H1: the zero-bubble step is shorter, by the weight
    # gradients that fill the drain
    base = ["step", "llama-3.1-8b", "--accelerator", "h100", "--pp", 4, "--count", 4,
            "--global-batch", 16, "--micro-batch", 1, "--recompute", "none", "--dropout", "off",
            "-f", "json"]
    one, zb = cli(*base).json(), cli(*base, "--schedule", "zero-bubble").json()
    assert zb["time"]["step_seconds"]["estimate"] < one["time"]["step_seconds"]["estimate"]
    assert zb["layout"]["schedule"] == "zero-bubble"


def test_plans_fast_memory_follows_the_schedule():
    # plan's FastMemory remembers activations by what they read: the schedule's micro-batches
    # in flight among them (p + (p - 1)/v interleaved), as counting.memory counts them
    import flopcalc
    from flopcalc.predict.plans import memory_bytes, memory_bytes_slow

    spec = flopcalc.load("llama-3.1-8b").spec
    seen = set()
    for vp, schedule in ((1, "1f1b"), (2, "1f1b"), (4, "1f1b"), (1, "dualpipe"),
                         (1, "dualpipev")):
        setup = Setup(seq=4096, batch=1, pp=4, vp=vp, schedule=schedule, flash=True)
        fast = memory_bytes(spec, setup)
        assert fast == memory_bytes_slow(spec, setup)
        seen.add(fast)
    assert len(seen) == 5
