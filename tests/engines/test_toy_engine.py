"""A serving engine defined in the tests alone: an entry in the engine registry (its overheads
under load, a capacity hook of its own in this file) is all `serve --engine` needs, on the
command line and from Python."""

from __future__ import annotations

import pytest

pytest.importorskip("simpy")

import flopcalc  # noqa: E402
from flopcalc.engines.registry import ENGINES, ServingEngine, register, unregister  # noqa: E402
from flopcalc.errors import FlopcalcError  # noqa: E402

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

RUN = ["serve", "gpt2", "--accelerator", "h100", "--prompt", "128", "--gen", "16",
       "--concurrency", "4", "-f", "json"]


def toy_capacity(report, loaded, hw, values):
    """The toy's own capacity: a pool of 1,000 tokens per device, said in the conventions."""
    report.conventions.append(f"toy: a pool of 1,000 tokens on each of {values['tp']} device(s)")


# vLLM's CUDA-graph rule, none of its overheads
TOY = ServingEngine("toy", "Toy (no overhead)", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                    "a test's engine", (0.0, 0.0, 0.0), graph_prefill_tokens=512,
                    capacity=(__name__, "toy_capacity"))


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister("toy")


def test_a_toy_engine_is_served(toy, cli):
    mine, vllm = cli(*RUN, "--engine", "toy"), cli(*RUN)
    assert mine.code == vllm.code == 0, mine.err
    a, b = mine.json(), vllm.json()
    assert a["performance"]["engine"] == "Toy (no overhead)"
    assert "toy: a pool of 1,000 tokens on each of 1 device(s)" in a["conventions"]
    # the same kernels; vLLM's entry adds 1.5 ms per step and 20 µs per layer at the estimate
    # (0.8 ms and 12 µs at the low end), the toy nothing: every time is shorter, and the load
    # model says whose overheads it took
    for key in ("steady_step_seconds", "tpot_seconds", "ttft_seconds"):
        for end in ("low", "estimate", "high"):
            assert a["performance"][key][end] < b["performance"][key][end], (key, end)
    assert any("a test's engine" in line for line in a["performance"]["model"])
    assert flopcalc.serve("gpt2", accelerator="h100", prompt=128, gen=16, concurrency=4,
                          engine="TOY").to_dict() == a


def test_an_unknown_engine_names_the_known_ones(toy, cli):
    r = cli(*RUN, "--engine", "toy2")
    assert r.code == 2 and "one of vllm, sglang, trtllm, toy" in r.err
    with pytest.raises(ValueError, match="exists"):
        register(ServingEngine("vllm", "again", (0, 0, 0), (0, 0, 0), ""))


def test_an_engines_own_option_needs_that_engine():
    assert ENGINES["sglang"].options  # SGLang's options are its own
    with pytest.raises(FlopcalcError, match="--page-size is SGLang's option"):
        flopcalc.serve("gpt2", accelerator="h100", page_size=16)
