"""`flopcalc plan`'s search and the interval over unknown inputs, against an enumeration of the
layout space written from the rules `predict/plans.py`'s docstring states: tensor-parallel
sizes dividing the heads within a domain, pipeline depths up to the layers, ZeRO 1-3 only with
data parallelism, micro-batches dividing each replica's batch, virtual stages dividing each
stage's layers with micro-batches a multiple of the stages, and the pipeline schedules (ZB-H1,
DualPipe and DualPipeV with one virtual stage).

The model is test_communication's: 4 layers, d 64, 4 heads (MHA), a plain MLP of 256, tied, at
32 tokens; the machine test_steptime's (one domain of 64)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flopcalc.predict import plans as P
from flopcalc.predict import steptime as S
from flopcalc.models.registry import load_model

from tests.predict.test_communication import MODEL
from tests.predict.test_steptime import MC

pytestmark = pytest.mark.invariant

BIG = 10 ** 18  # every layout fits


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("plans") / "hand.yaml"
    path.write_text(MODEL)
    return load_model(str(path)).spec


@pytest.fixture(scope="module")
def prof(spec):
    return S.profile(spec, 32)


def test_divisors():
    assert P.divisors(12) == [1, 2, 3, 4, 6, 12]
    assert P.divisors(12, 5) == [1, 2, 3, 4]
    assert P.divisors(7) == [1, 7]


def test_tensor_parallel_sizes_divide_the_heads_and_fit_the_domain(spec):
    assert P.tp_sizes(spec, 64) == [1, 2, 4]  # 4 heads
    assert P.tp_sizes(spec, 2) == [1, 2]
    # GPT-3's 96 heads (FFN 49,152 wide) in a 72-device NVLink domain: of the sizes tried
    # (powers of two to 64, and 72), those dividing 96 are 1..32; 64 and 72 do not
    import flopcalc

    assert P.tp_sizes(flopcalc.load("gpt3").spec, 72) == [1, 2, 4, 8, 16, 32]


def test_virtual_stages_need_a_layer_each_and_fill_the_micro_batches(prof):
    # Megatron-Core's pipeline_model_parallel_layout places layers unevenly (Llama 3.1 405B's
    # 126 layers on pp 16 x vp 8), so a virtual stage needs one layer, not an equal share
    lay = S.Layout(pp=2, global_batch=8)  # 2 layers a stage, 8 micro-batches
    assert P.valid_vp(prof, lay, 1) is None
    assert P.valid_vp(prof, lay, 2) is None
    assert P.valid_vp(prof, lay, 3) == ("--vp 3 is more than the 2 layers of a pipeline "
                                        "stage; a virtual stage needs a layer")
    assert P.valid_vp(prof, S.Layout(global_batch=8), 2) == \
        "--vp needs --pp > 1 (interleaving splits each pipeline stage)"
    assert P.valid_vp(prof, replace(lay, global_batch=3), 2) == (
        "--vp > 1 (the interleaved schedule) needs the micro-batches per pipeline (3) to be a "
        "multiple of --pp 2")
    assert P.valid_vp(prof, S.Layout(pp=4, global_batch=8), 2) == \
        "--vp 2 is more than the 1 layers of a pipeline stage; a virtual stage needs a layer"


def test_the_least_recomputation_that_fits(spec):
    lay = S.Layout()
    used = {r: P.memory_bytes(spec, P.setup_of(32, replace(lay, recompute=r)))
            for r in ("none", "selective", "full")}
    assert used["none"] > used["selective"] > used["full"]  # eager attention keeps its scores
    assert P.least_recompute(spec, 32, lay, None) == "none"
    assert P.least_recompute(spec, 32, lay, used["none"]) == "none"
    assert P.least_recompute(spec, 32, lay, used["none"] - 1) == "selective"
    assert P.least_recompute(spec, 32, lay, used["selective"] - 1) == "full"
    assert P.least_recompute(spec, 32, lay, used["full"] - 1) is None


def layouts(devices: int, batch: int) -> list[S.Layout]:
    """The search space of the docstring, every layout fitting (no experts, no flash: cp 1)."""
    out = []
    for tp in (1, 2, 4):
        for pp in (1, 2, 4):
            if (devices // tp) % pp or pp > 4:
                continue
            dp = devices // (tp * pp)
            for zero in ((0,) if dp == 1 else (0, 1, 2, 3)):
                for mb in (1, 2, 4, 8, 16):
                    if (batch // dp) % mb:
                        continue
                    m = batch // (dp * mb)
                    for vp in (1, 2, 3, 4, 6, 8):
                        if vp > 1 and (pp == 1 or (4 // pp) % vp or m % pp):
                            continue
                        # vp > 1 is the interleaved schedule; with one virtual stage a
                        # pipeline also runs ZB-H1, and with two micro-batches a stage
                        # DualPipeV, and DualPipe on an even number of stages (the DualPipe
                        # repository's asserts)
                        schedules = ["interleaved"] if vp > 1 else ["1f1b"]
                        if vp == 1 and pp > 1:
                            schedules.append("zero-bubble")
                            if m >= 2 * pp:
                                schedules += ["dualpipe"] * (pp % 2 == 0) + ["dualpipev"]
                        for schedule in schedules:
                            out.append(S.Layout(tp=tp, pp=pp, dp=dp, zero=zero, micro_batch=mb,
                                                global_batch=batch, vp=vp, schedule=schedule,
                                                sequence_parallel=tp > 1))
    return out


def test_the_search_tries_the_whole_space_and_ranks_by_the_estimate(spec, prof):
    every = layouts(8, 8)
    best, fit = P.search(spec, prof, MC, 8, 8, BIG, flash=False, grad_fp32=False,
                         tp_overlap=False, top=len(every) + 5)
    assert fit == len(every)
    assert {c.layout for c in best} == set(every)
    totals = [c.time.total for c in best]
    assert totals == sorted(totals)
    for c in best[:5]:
        assert c.time.total == S.step_time(prof, c.layout, MC, "estimate").total
        assert c.memory == P.memory_bytes(spec, P.setup_of(32, c.layout))
    top3, fit3 = P.search(spec, prof, MC, 8, 8, BIG, flash=False, grad_fp32=False,
                          tp_overlap=False, top=3)
    assert fit3 == fit and [c.layout for c in top3] == [c.layout for c in best[:3]]


def test_the_search_takes_the_least_recomputation_and_drops_what_never_fits(spec, prof):
    one = S.Layout(tp=1, pp=1, dp=8, zero=0, micro_batch=1, global_batch=8)
    need = P.memory_bytes(spec, P.setup_of(32, one))
    best, fit = P.search(spec, prof, MC, 8, 8, need - 1, flash=False, grad_fp32=False,
                         tp_overlap=False, top=10_000)
    assert all(c.memory <= need - 1 for c in best)
    chosen = {c.layout: c.layout.recompute for c in best}
    assert chosen.get(replace(one, recompute="selective")) == "selective"
    assert replace(one, recompute="none") not in chosen
    assert P.search(spec, prof, MC, 8, 8, 1, flash=False, grad_fp32=False,
                    tp_overlap=False)[1] == 0


def test_context_parallelism_needs_flash_and_1024_tokens_a_device(tmp_path):
    path = tmp_path / "long.yaml"
    path.write_text(MODEL.replace("max_seq_len: 32", "max_seq_len: 4096"))
    spec = load_model(str(path)).spec
    prof = S.profile(spec, 4096)
    best, _ = P.search(spec, prof, MC, 4, 4, BIG, flash=True, grad_fp32=False,
                       tp_overlap=False, top=10_000)
    assert {c.layout.cp for c in best} == {1, 2, 4}  # 4096 / 4 = 1024 tokens a device
    best, _ = P.search(spec, prof, MC, 4, 4, BIG, flash=False, grad_fp32=False,
                       tp_overlap=False, top=10_000)
    assert {c.layout.cp for c in best} == {1}


def test_context_parallelism_goes_up_to_32(tmp_path):
    # 32,768 tokens on 32 devices, a batch of 1 (no data parallelism): 1,024 tokens a device
    # at cp 32, the largest the search tries; cp 1 would need tp·pp = 32, past tp 4 (4 heads)
    # × pp 4 (4 layers)
    path = tmp_path / "longer.yaml"
    path.write_text(MODEL.replace("max_seq_len: 32", "max_seq_len: 32768"))
    spec = load_model(str(path)).spec
    best, _ = P.search(spec, S.profile(spec, 32768), MC, 32, 1, BIG, flash=True,
                       grad_fp32=False, tp_overlap=False, top=10_000)
    assert {c.layout.cp for c in best} == {2, 4, 8, 16, 32}
    # ZeRO shards over the dp·cp ranks: with dp 1, the 32 context ranks still split the
    # optimizer states, gradients and weights
    assert {c.layout.zero for c in best if c.layout.cp == 32} == {0, 1, 2, 3}


@pytest.mark.parametrize("unknown, considered", [
    ((), 1), (("micro_batch",), 3), (("recompute",), 3), (("dropout",), 2), (("vp",), 2),
    (("micro_batch", "dropout", "recompute", "vp"), 3 * 2 * 3 * 2)])
def test_the_interval_spans_every_value_of_the_unknowns(spec, prof, unknown, considered):
    # pp 2, a batch of 8 on one replica: micro-batches 1, 2, 4 leave >= 2 per pipeline (8
    # would leave 1); vp 1 or 2 (2 layers a stage, 8 / mb micro-batches even)
    lay = S.Layout(pp=2, global_batch=8)
    out = P.evaluate(spec, prof, lay, MC, None, unknown)
    assert out.considered == considered
    assert out.estimate.total == S.step_time(prof, lay, MC, "estimate").total
    cands = [replace(lay, micro_batch=mb, dropout=d, recompute=r, vp=v)
             for mb in ((1, 2, 4) if "micro_batch" in unknown else (1,))
             for d in ((False, True) if "dropout" in unknown else (False,))
             for r in (("none", "selective", "full") if "recompute" in unknown else ("none",))
             for v in ((1, 2) if "vp" in unknown else (1,))]
    assert len(cands) == considered
    assert out.low.total == min(S.step_time(prof, c, MC, "low").total for c in cands)
    assert out.high.total == max(S.step_time(prof, c, MC, "high").total for c in cands)
    assert S.step_time(prof, out.low_layout, MC, "low").total == out.low.total
    assert S.step_time(prof, out.high_layout, MC, "high").total == out.high.total
    assert out.fits is None and out.memory == P.memory_bytes(spec, P.setup_of(32, lay))


def test_an_interval_where_nothing_fits_is_the_layouts_own(spec, prof):
    lay = S.Layout(pp=2, global_batch=8)
    out = P.evaluate(spec, prof, lay, MC, 1, ("micro_batch", "recompute"))
    assert out.considered == 0 and out.fits is False
    assert out.low.total == S.step_time(prof, lay, MC, "low").total
    assert out.high.total == S.step_time(prof, lay, MC, "high").total
    assert out.low_layout == out.high_layout == lay
    assert P.evaluate(spec, prof, lay, MC, BIG, ()).fits is True


def test_the_interval_keeps_a_value_that_fills_memory_exactly(spec, prof):
    # with exactly selective recomputation's bytes, selective and full fit and none does not
    lay = S.Layout(pp=2, global_batch=8)
    used = {r: P.memory_bytes(spec, P.setup_of(32, replace(lay, recompute=r)))
            for r in ("none", "selective", "full")}
    assert used["none"] > used["selective"]
    assert P.evaluate(spec, prof, lay, MC, used["selective"], ("recompute",)).considered == 2
    assert P.evaluate(spec, prof, lay, MC, used["selective"] - 1,
                      ("recompute",)).considered == 1


def test_a_layouts_memory_setup_carries_fp8_and_the_optimizer(spec, tmp_path):
    # what `plan` and `step` fit is `flopcalc memory`'s figure of the same options: fp8 adds
    # a 1-byte copy of each matrix, 4 layers × (4·64² + 2·64·256) = 196,608 bytes
    import flopcalc

    path = tmp_path / "hand.yaml"
    path.write_text(MODEL)
    lay = S.Layout()
    for options in ({}, {"fp8": True}, {"optimizer": "sgd"}, {"precision": "fp32"}):
        want = flopcalc.memory(str(path), seq=32, batch=1, flash=False,  # as Layout()
                               **options).to_dict()["memory"]
        assert P.memory_bytes(spec, P.setup_of(32, lay, **options)) == want["total"], options
        # the interval's evaluation reports, and fits, that same figure
        prof = S.profile(spec, 32)
        out = P.evaluate(spec, prof, lay, MC, want["total"], (), **options)
        assert (out.memory, out.fits) == (want["total"], True), options
        assert P.evaluate(spec, prof, lay, MC, want["total"] - 1, (), **options).fits is False
    fp8 = flopcalc.memory(str(path), seq=32, batch=1, fp8=True).to_dict()
    assert fp8["memory"]["total"] - sum(fp8["memory"][k] for k in (
        "weights", "gradients", "optimizer", "activations")) == 196_608
