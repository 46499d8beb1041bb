"""Which of Megatron-Bridge's published runs replay a full-iteration CUDA graph: from 26.06 the
rows whose release overlaps the expert all-to-all do it inside one (Megatron-Bridge v0.5.0's
workload configs; the perf_recipes at the pages' commit call `_enable_*_full_iteration_mxfp8`,
which set cuda_graph_impl = "full_iteration"), so the host's launches do not bound them; every
earlier or non-overlapping row runs eagerly. Qwen3-30B-A3B on 8 GB300 in MXFP8 is one of each
(26.04 eager, 26.06 graphed); on 8 B200 at micro-batch 1 (26.02) eager and host-bound."""

from __future__ import annotations

import pytest

from tests.bridge_runs import options, predict, runs

pytestmark = pytest.mark.published


def _row(release: str, system: str) -> dict:
    (row,) = [r for r in runs() if r["release"] == release and r["model"] == "Qwen3_30B_a3B"
              and r["system"] == system]
    return row


@pytest.mark.parametrize("release,graphed", [("26.02", False), ("26.04", False),
                                             ("26.06", True), ("26.08", True)])
def test_the_release_recipe_decides_the_graph(release: str, graphed: bool) -> None:
    assert bool(options(_row(release, "DGX-GB300")).get("cuda_graph")) is graphed


def test_an_eager_run_waits_on_the_host_and_a_graphed_one_does_not() -> None:
    eager = predict(_row("26.02", "DGX-B200"))["report"]["time"]["breakdown"]
    graphed = predict(_row("26.06", "DGX-GB300"))["report"]["time"]["breakdown"]
    assert eager["high"]["exposed"]["host"] > 0
    assert all("host" not in graphed[end]["exposed"] for end in ("low", "estimate", "high"))
