"""Lengths drawn per request as `vllm bench serve --random-range-ratio` draws them
(vllm/benchmarks/datasets.py `_get_sampling_params`: prompts uniform over the integers
[floor(P(1 - r)), ceil(P(1 + r))], outputs over [max(1, floor(G(1 - r))), ceil(G(1 + r))]),
through the scheduler, the metrics and the command line."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

pytest.importorskip("simpy")

from flopcalc import api  # noqa: E402
from flopcalc.errors import FlopcalcError  # noqa: E402
from flopcalc.predict.scheduler import Workload, length_bounds, metrics, simulate  # noqa: E402


class Stub:
    """A step of 1 s when it prefills anything, 0.5 s when it only decodes."""

    def time(self, batch, ctx, chunks=(), pre=None):
        t = 1.0 if chunks else 0.5
        return (t, t, t)


def test_bounds_are_vllms():
    # 1024 x 0.2 = 204.8 → [floor 204, ceil 1843.2 → 1844]; 256 x 0.2 = 51.2 → [51, 461]
    assert length_bounds(1024, 0.8) == (204, 1844)
    assert length_bounds(256, 0.8, least=1) == (51, 461)
    # an output of 10 at 0.95: floor(0.5) = 0, raised to vLLM's least output of 1
    assert length_bounds(10, 0.95, least=1) == (1, 20)
    assert length_bounds(100, 0.0) == (100, 100)


def test_drawn_lengths_stay_in_bounds_and_feed_the_metrics():
    w = Workload(prompt=100, gen=20, max_num_seqs=8, max_num_batched_tokens=4096, slots=8,
                 concurrency=4, requests=200, range_ratio=0.5)
    run = simulate(Stub(), w, 1)  # type: ignore[arg-type]
    prompts = [r.prompt for r in run.requests]
    gens = [r.gen for r in run.requests]
    assert min(prompts) >= 50 and max(prompts) <= 150 and min(gens) >= 10 and max(gens) <= 30
    assert len(set(prompts)) > 50 and len(set(gens)) > 10  # drawn, not fixed
    m = metrics(run)
    # output tokens/s: every request's own output length over the run's duration
    assert m["throughput"]["output_tokens_per_s"] == pytest.approx(sum(gens) / run.duration)
    # TPOT per request: (finish − first) / (its gen − 1), a decode step of 0.5 s a token when
    # nothing prefills alongside: between 0.5 and 1 s a token
    assert 0.5 <= m["tpot"]["p50"] <= 1.0


def test_the_same_random_state_draws_the_same_lengths():
    def lengths(state: int) -> list[tuple[int, int]]:
        w = Workload(prompt=64, gen=8, max_num_seqs=4, max_num_batched_tokens=512, slots=4,
                     concurrency=2, requests=30, range_ratio=0.25, random_state=state)
        return sorted((r.prompt, r.gen) for r in simulate(Stub(), w, 1).requests)

    assert lengths(3) == lengths(3) != lengths(4)


def test_a_ratio_of_zero_is_fixed_lengths():
    w = Workload(prompt=16, gen=4, max_num_seqs=4, max_num_batched_tokens=64, slots=4,
                 concurrency=2, requests=10)
    assert {(r.prompt, r.gen) for r in simulate(Stub(), w, 1).requests} == {(16, 4)}


SERVE = dict(accelerator="h100", prompt=1024, gen=256, concurrency="16")


def test_the_command_draws_lengths_and_says_so():
    fixed = api.serve("llama-3.1-8b", **SERVE)
    drawn = api.serve("llama-3.1-8b", **SERVE, range_ratio="0.5")
    assert drawn.performance.output_tokens_per_second.estimate != \
        fixed.performance.output_tokens_per_second.estimate
    assert any("--random-range-ratio" in line for line in drawn.performance.model)
    assert not any("--random-range-ratio" in line for line in fixed.performance.model)


@pytest.mark.parametrize("extra, words", [
    (dict(range_ratio="1"), "must be below 1"),
    (dict(range_ratio="0.5", max_model_len="1300"), "up to 1,920 tokens"),  # 1536 + 384
])
def test_bad_ratios_are_refused(extra, words):
    with pytest.raises(FlopcalcError, match=words):
        api.serve("llama-3.1-8b", **{**SERVE, **extra})


def test_a_ratio_without_load_is_refused(cli):
    r = cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--prompt", "1024",
            "--range-ratio", "0.5")
    assert r.code == 2 and "--range-ratio" in r.err and len(r.err.strip().splitlines()) == 1
