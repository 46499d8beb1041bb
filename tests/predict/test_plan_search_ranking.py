"""`plan`'s pruned search ranks as timing every layout does: the same layouts, in the same
order, with the same memory, ties (equal estimates: layouts that split the same tokens per
device differently tie exactly) in the order the search meets them, over several models,
device counts, memory capacities, recomputation and fp8 recipes. The expected ranking times
every layout `candidates` enumerates (itself checked against an enumeration written from the
rules in test_plan_search_dimensions.py) through the public `step_time` and sorts by the
estimate, then the enumeration's order: what is under test is the search's bounds, its heap
and its caches, none of which the expected ranking uses."""

from __future__ import annotations

from dataclasses import replace

import pytest

import flopcalc
from flopcalc.commands.common import machine
from flopcalc.models.registry import load_model
from flopcalc.predict import plans as P
from flopcalc.predict import steptime as S

from tests.predict.test_communication import MOE
from tests.predict.test_steptime import MC

pytestmark = pytest.mark.invariant

BIG = 10 ** 18  # every layout fits
FP8 = replace(MC, matmul_bytes=1)  # fp8 matmuls: the recipes' casts count
HOPPER_RECIPES = ("tensorwise", "delayed", "rowwise", "blockwise")
TOP = 25


def exhaustive(spec, prof, mc, devices, batch, capacity, flash, **kw):
    """The best TOP of every layout the search enumerates, each timed, and how many fit."""
    listed = P.candidates(spec, prof, mc, devices, batch, capacity, flash, False, True, **kw)
    timed = sorted((S.step_time(prof, lay, mc, "estimate").total, i, lay, used)
                   for i, (lay, used) in enumerate(listed))
    return [(t, lay, used) for t, _, lay, used in timed[:TOP]], len(listed)


def searched(spec, prof, mc, devices, batch, capacity, flash, **kw):
    best, fitting = P.search(spec, prof, mc, devices, batch, capacity, flash, False, True,
                             top=TOP, **kw)
    return [(c.time.total, c.layout, c.memory) for c in best], fitting


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan_ranking") / "moe.yaml"
    path.write_text(MOE)
    return load_model(str(path)).spec


@pytest.mark.parametrize("devices, batch, capacity, mc, recipes", [
    (8, 16, BIG, MC, ()),
    (16, 32, BIG, MC, ()),
    (8, 16, "tight", MC, ()),
    (8, 16, BIG, FP8, HOPPER_RECIPES),
])
def test_the_search_ranks_the_hand_model_as_timing_every_layout(moe, devices, batch, capacity,
                                                                 mc, recipes):
    prof = S.profile(moe, 32)
    fp8 = bool(recipes)
    if capacity == "tight":  # rules out some layouts and recomputes others
        sizes = sorted(used for _, used in P.candidates(moe, prof, mc, devices, batch, BIG,
                                                        False, False, True))
        capacity = sizes[len(sizes) // 3]
    expected, fitting = exhaustive(moe, prof, mc, devices, batch, capacity, False,
                                   recipes=recipes, fp8=fp8)
    assert len(expected) == TOP
    assert searched(moe, prof, mc, devices, batch, capacity, False, recipes=recipes,
                    fp8=fp8) == (expected, fitting)


@pytest.mark.parametrize("name, devices, batch, seq, dtype", [
    ("llama-3.1-8b", 16, 16, 8192, "bf16"),  # context parallelism up to 8
    ("qwen3-30b-a3b", 8, 16, 4096, "bf16"),  # experts: ep, etp and the dispatchers
    ("qwen3-30b-a3b", 8, 8, 4096, "fp8"),  # and each fp8 recipe
])
def test_the_search_ranks_presets_as_timing_every_layout(name, devices, batch, seq, dtype):
    spec = flopcalc.load(name).spec
    hw, res = machine("h100", dtype, devices, None, None, None)
    prof = S.profile(spec, seq)
    kw = dict(recipes=P.fp8_recipes(hw, dtype), fp8=dtype == "fp8")
    expected, fitting = exhaustive(spec, prof, res.machine, devices, batch, hw.memory_bytes,
                                   True, **kw)
    assert len(expected) == TOP
    # ties are there to be broken: the order of the enumeration decides them
    assert len({t for t, _, _ in expected}) < TOP - 10
    assert searched(spec, prof, res.machine, devices, batch, hw.memory_bytes, True,
                    **kw) == (expected, fitting)


def test_the_searchs_memory_is_counting_memorys_across_context_parallel_sizes():
    # the search keeps a layout's weights' split across cp (ZeRO shards over dp·cp): every
    # layout's bytes, cp 1 to 8 among them, as counting.memory counts them
    spec = flopcalc.load("llama-3.1-8b").spec
    hw, res = machine("h100", "bf16", 16, None, None, None)
    prof = S.profile(spec, 8192)
    listed = P.candidates(spec, prof, res.machine, 16, 16, hw.memory_bytes, True, False, True)
    assert {lay.cp for lay, _ in listed} == {1, 2, 4, 8}
    for lay, used in listed[::7]:
        assert used == P.memory_bytes_slow(spec, P.setup_of(8192, lay)), lay
