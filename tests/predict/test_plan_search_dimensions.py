"""`plan` searches expert tensor parallelism, the token dispatcher, the pipeline schedule and the
fp8 recipe: the pruned search answers as timing every layout does, on a space enumerated here
from the rules `predict/plans.py` states (not from its code), each layout timed through the
public `step_time` and sized through `memory_bytes`; the dimensions it offers are ones the
layout can run; and an absurd device count costs no more than the model allows.

The model is test_communication's mixture of experts: 4 layers, d 64, 4 heads, 4 experts of
which 2 are active, at 32 tokens; the machine test_steptime's (one domain of 64 devices)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace

import pytest

from flopcalc.models.registry import load_model
from flopcalc.predict import plans as P
from flopcalc.predict import steptime as S

from tests.predict.test_communication import MOE
from tests.predict.test_steptime import MC

pytestmark = pytest.mark.invariant

BIG = 10 ** 18  # every layout fits
RECOMPUTE = ("none", "selective", "full")
FP8 = replace(MC, matmul_bytes=1)  # fp8 matmuls: the recipes' casts count
HOPPER_RECIPES = ("tensorwise", "delayed", "rowwise", "blockwise")


@pytest.fixture(scope="module")
def moe_yaml(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan_dimensions") / "moe.yaml"
    path.write_text(MOE)
    return path


@pytest.fixture(scope="module")
def spec(moe_yaml):
    return load_model(str(moe_yaml)).spec


@pytest.fixture(scope="module")
def prof(spec):
    return S.profile(spec, 32)


def divs(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def schedules(pp: int, m: int, layers: int = 4) -> list[tuple[str, int]]:
    """(schedule, vp) a pipeline of pp stages of ⌈layers/pp⌉ layers with m micro-batches runs:
    1F1B; interleaved with v virtual stages of a layer or more and m a multiple of pp;
    ZB-H1; DualPipe (pp even) and DualPipeV with m >= 2·pp (the DualPipe repository's
    `num_chunks >= num_ranks * 2`)."""
    if pp == 1:
        return [("1f1b", 1)]
    out = [("1f1b", 1)]
    out += [("interleaved", v) for v in (2, 3, 4, 6, 8)
            if v <= -(-layers // pp) and m % pp == 0]
    out.append(("zero-bubble", 1))
    if m >= 2 * pp:
        out += [("dualpipe", 1)] * (pp % 2 == 0) + [("dualpipev", 1)]
    return out


def brute_force(spec, devices: int, batch: int, capacity: int, recipes=("",),
                fp8: bool = False, layers: int = 4) -> dict[S.Layout, int]:
    """Every layout that fits, with its bytes: tp dividing the 4 heads, pp the layers, no
    cp (32 tokens), ep dividing the 4 experts and tp·dp, etp dividing tp with ep·etp dividing
    tp·dp, ZeRO 0-3 with dp > 1, micro-batches dividing the replica's batch (up to 16), the
    schedules above, each dispatcher with ep > 1, each recipe; the least recomputation that
    fits 1F1B, which interleaving and ZB-H1 keep (and drop the layout where it then does not
    fit), DualPipe and DualPipeV their own least."""
    out = {}

    def used(lay):
        return P.memory_bytes(spec, P.setup_of(32, lay, fp8=fp8))

    for tp in (1, 2, 4):
        for pp in range(1, layers + 1):  # every depth up to the layers
            if devices % (tp * pp):
                continue
            dp = devices // (tp * pp)
            if batch % dp:
                continue
            for ep in divs(math.gcd(tp * dp, 4)):
                for etp in [e for e in divs(tp) if (tp * dp) % (ep * e) == 0]:
                    for zero in ((0, 1, 2, 3) if dp > 1 else (0,)):
                        for mb in [b for b in divs(batch // dp) if b <= 16]:
                            m = batch // (dp * mb)
                            base = S.Layout(tp=tp, pp=pp, dp=dp, ep=ep, etp=etp, zero=zero,
                                            micro_batch=mb, global_batch=batch,
                                            sequence_parallel=tp > 1, tp_overlap=True)
                            least = next((r for r in RECOMPUTE
                                          if used(replace(base, recompute=r)) <= capacity),
                                         None)
                            for sched, vp in schedules(pp, m, layers):
                                lay = replace(base, schedule=sched, vp=vp)
                                if sched.startswith("dualpipe"):
                                    rec = next((r for r in RECOMPUTE if used(
                                        replace(lay, recompute=r)) <= capacity), None)
                                else:
                                    rec = least
                                if rec is None:
                                    continue
                                lay = replace(lay, recompute=rec)
                                if used(lay) > capacity:
                                    continue
                                for disp in (("alltoall", "allgather", "flex") if ep > 1
                                             else ("alltoall",)):
                                    for recipe in recipes:
                                        out[replace(lay, dispatcher=disp,
                                                    fp8_recipe=recipe)] = used(lay)
    return out


@pytest.fixture(scope="module")
def spec3(tmp_path_factory):
    """The same with 3 layers: an odd number of pipeline stages."""
    path = tmp_path_factory.mktemp("plan_dimensions") / "moe3.yaml"
    path.write_text(MOE.replace("n_layers: 4", "n_layers: 3"))
    return load_model(str(path)).spec


@pytest.mark.parametrize("layers, devices, capacity, machine, recipes", [
    (4, 8, BIG, MC, ()),
    (4, 8, "tight", MC, ()),
    (4, 8, BIG, FP8, HOPPER_RECIPES),
    (3, 6, BIG, MC, ()),
])
def test_the_search_finds_what_timing_every_layout_finds(spec, spec3, layers, devices,
                                                         capacity, machine, recipes):
    spec = spec if layers == 4 else spec3
    prof = S.profile(spec, 32)
    fp8 = bool(recipes)
    if capacity == "tight":  # a capacity that rules out some layouts and recomputes others
        sizes = sorted(brute_force(spec, devices, 16, BIG).values())
        capacity = sizes[len(sizes) // 3]
    every = brute_force(spec, devices, 16, capacity, recipes or ("",), fp8, layers)
    timed = {lay: S.step_time(prof, lay, machine, "estimate").total for lay in every}
    ranked = sorted(timed.values())
    # the enumeration is this one, layout for layout, memory byte for byte
    listed = P.candidates(spec, prof, machine, devices, 16, capacity, False, False, True,
                          recipes=recipes, fp8=fp8)
    assert dict(listed) == every and len(listed) == len(every)
    best, fitting = P.search(spec, prof, machine, devices, 16, capacity, False, False, True,
                             top=7, recipes=recipes, fp8=fp8)
    assert fitting == len(every)
    assert [c.time.total for c in best] == ranked[:7]
    for c in best:
        assert timed[c.layout] == c.time.total and every[c.layout] == c.memory
    # what the search prunes with is a lower bound of every layout's estimate: the compute,
    # the bubble and the never-hidden communication, the optimizer and the data-parallel
    # buckets (`_best`'s member bound, the strongest)
    for lay, t in timed.items():
        comp = S.stage_compute(prof, lay, machine, "estimate", last=True)
        bound = (P._bound(lay, comp, P._floor(prof, lay, machine, lay.dispatcher))
                 + P._optimizer_floor(prof, lay, machine) + P._dp_floor(prof, lay, machine))
        assert bound <= t * (1 + 1e-12), lay
        assert P.lower_bound(prof, lay, machine) <= bound * (1 + 1e-12)


def test_the_new_dimensions_are_searched_and_each_can_run(spec, prof):
    every = P.candidates(spec, prof, MC, 8, 16, BIG, False, False, True)
    lays = [lay for lay, _ in every]
    assert {lay.schedule for lay in lays} == {"1f1b", "interleaved", "zero-bubble", "dualpipe",
                                              "dualpipev"}
    assert {lay.dispatcher for lay in lays if lay.ep > 1} == {"alltoall", "allgather", "flex"}
    assert {lay.etp for lay in lays if lay.tp == 4} == {1, 2, 4}
    for lay in lays:
        assert lay.tp % lay.etp == 0
        if lay.schedule == "dualpipe":
            assert lay.pp % 2 == 0  # two directions pair the stages
        if lay.schedule.startswith("dualpipe"):
            assert lay.micro_batches >= 2 * lay.pp
        assert (lay.vp > 1) == (lay.schedule == "interleaved")
        if lay.pp == 1:
            assert lay.schedule == "1f1b"


def test_mxfp8_only_where_the_device_has_microscaling_formats():
    from flopcalc.models.accelerators import resolve_hardware

    def hw(name):
        return resolve_hardware(name, "fp8", 8)

    assert P.fp8_recipes(hw("h100"), "fp8") == HOPPER_RECIPES
    assert P.fp8_recipes(hw("b200"), "fp8") == HOPPER_RECIPES + ("mxfp8",)
    assert P.fp8_recipes(hw("mi355x"), "fp8") == HOPPER_RECIPES + ("mxfp8",)  # CDNA 4
    assert P.fp8_recipes(hw("b200"), "bf16") == ()


def test_plan_prints_the_new_dimensions_within_100_columns(cli, moe_yaml, monkeypatch):
    args = ("plan", str(moe_yaml), "--accelerator", "h100", "--count", "8", "--global-batch",
            "16", "--dtype", "fp8", "--top", "5")
    doc = json.loads(cli(*args, "--format", "json").out)
    for p in doc["plans"]:
        lay = p["layout"]
        assert lay["fp8_recipe"] in HOPPER_RECIPES  # never mxfp8 on Hopper
        assert lay["schedule"] in ("1f1b", "interleaved", "zero-bubble", "dualpipe",
                                   "dualpipev")
        assert {"etp", "dispatcher"} <= set(lay)
    monkeypatch.setenv("COLUMNS", "100")
    table = cli(*args, "--format", "table")
    assert table.code == 0
    assert max(len(line) for line in table.out.splitlines()) <= 100
    words = " ".join(table.out.split())
    best = doc["plans"][0]["layout"]
    assert f"fp8-{best['fp8_recipe']}" in words
    if best["pp"] > 1:
        assert best["schedule"] in words or best["vp"] > 1  # vp8: interleaved
    csv = cli(*args, "--format", "csv").out.splitlines()
    assert csv[0].endswith(",etp,dispatcher,schedule,fp8_recipe")


def test_an_absurd_device_count_is_answered_quickly(cli, moe_yaml):
    # the search is bounded by the model's heads, layers and experts, not by --count
    for batch in ("1e12", "8"):
        start = time.perf_counter()
        r = cli("plan", str(moe_yaml), "--accelerator", "h100", "--count", "1e12",
                "--global-batch", batch, "--format", "json")
        assert time.perf_counter() - start < 60  # a loaded 2-core machine; ~1 s idle
        assert r.code == 0, r.err
        doc = json.loads(r.out)
        assert (doc["fitting"] > 0) == (batch == "1e12")
    r = cli("plan", str(moe_yaml), "--accelerator", "h100", "--count", "1e40",
            "--global-batch", "8")
    assert r.code in (0, 2) and len(r.err.strip().splitlines()) <= 1
