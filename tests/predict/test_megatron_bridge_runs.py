"""`flopcalc step` on Megatron-Bridge's published runs (tests/data/training/megatron-bridge.json,
every row of its performance pages, 25.11 to 26.08): each layout as published is accepted, and
the measured step time is inside the interval for most of them. The estimate's error per run
is in docs/validation-training.md (`python tests/bridge_runs.py` prints it)."""

from __future__ import annotations

import pytest

from tests.bridge_runs import evaluate, runs

pytestmark = pytest.mark.published

ROWS = runs()


@pytest.fixture(scope="module")
def results():
    return evaluate(ROWS)


def test_the_pages_are_all_here():
    # 296 rows in the pages (two runs for a cell written `A (B)`); 199 of them are
    # pre-training runs of a model with a preset, a stated precision and a known system
    assert len(ROWS) == 199


def test_no_published_layout_is_refused(results):
    # ep above dp (TP2 EP32 DP16), vp over uneven stages (126 layers on pp 16 x vp 8), cp
    # without naming the flash kernel, NVFP4 on Blackwell: each ran, so each is accepted
    assert [r["id"] for r in results if "refused" in r] == []


def test_most_measurements_fall_inside_the_interval(results):
    # with recomputation as the recipes state it (none) the interval no longer ranges over
    # none..full: narrower (median 1.65x), and 58% of the runs inside it, 88% of the dense
    # ones (docs/validation-training.md lists each)
    done = [r for r in results if "refused" not in r]
    inside = sum(r["inside"] for r in done)
    assert inside >= 0.55 * len(done), f"{inside} of {len(done)}"
    dense = [r for r in done if not r["moe"]]
    assert sum(r["inside"] for r in dense) >= 0.85 * len(dense)


def test_the_model_zoos_layouts_are_accepted():
    # the Megatron-MoE model zoo's six Qwen3 layouts (ep 32 over dp 16, tp 4 with ep 8, FSDP,
    # pp 32 with vp 3) all run; their errors are in docs/validation-training.md
    from tests.bridge_runs import zoo_runs

    rows = evaluate(zoo_runs())
    assert len(rows) == 6 and not [r for r in rows if "refused" in r]
