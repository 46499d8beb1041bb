"""The ends of a routed (MoE) step's interval, worked by hand from the model that
`predict/steptime.py`'s docstring states:

- the low end hides only what a mechanism of the layout hides: the expert all-to-all without
  --moe-overlap (or DualPipe) and the tied-embedding all-reduce are exposed there as in the
  estimate;
- the host's synchronisation in each routed layer's forward (the dispatcher's split sizes
  copied to the host before the all-to-all) leaves the host no lead: at the high end the
  routed layers' forward issuing runs in series with the device (HOST_SYNC_SERIAL), where the
  estimate keeps the max of the two.

The machine and the tiny model are test_steptime.py's: one domain of 64 devices at 10¹¹ B/s,
base latency 10 µs and 1 µs a ring step; tests/data/serve/tiny-moe.yaml at 16 tokens (2
layers, each attention and a routed feed-forward of 4 experts, top 2, d 8).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from flopcalc.commands import load
from flopcalc.predict import steptime as S
from tests.predict.test_steptime import MC, NET  # the machine these tests work on

pytestmark = pytest.mark.hand

TINY_MOE = str(Path(__file__).resolve().parents[1] / "data" / "serve" / "tiny-moe.yaml")
ENDS3 = ("low", "estimate", "high")
# a micro-batch's device time (no routed-layer split: no overlap pairing)
COMP = S.Compute(gemm_f=1e-3, gemm_b=2e-3)
# ep 2, dp 2, a batch of 4: m = 2 micro-batches of 16 tokens
LAY = S.Layout(ep=2, dp=2, global_batch=4)
# one all-to-all of a micro-batch's 16·2 copies × 8 × 2 bytes = 512 bytes over 2 ranks in
# the domain: NCCL's ring, base + 1 step + (1/2)·512 / 10¹¹
A2A = 1e-5 + 1e-6 + 0.5 * 512 / 1e11


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=0)


@pytest.fixture(scope="module")
def prof():
    return S.profile(load(TINY_MOE).spec, 16)


def _schedule(prof, lay, end, comp=COMP):
    return S._schedule(prof, lay, MC, end, comp, "only", S.placement(lay, NET))


def test_the_low_end_exposes_an_all_to_all_only_when_nothing_overlaps_it(prof):
    # 2 layers × (dispatch + combine) forward and as many backward: 8 all-to-alls a
    # micro-batch, 2 micro-batches: 16 at every end, the low end included
    for end in ENDS3:
        assert _schedule(prof, LAY, end).exposed["ep"] == approx(16 * A2A)
    # with --moe-overlap (2 routed layers' compute to pair with) only the low end hides it all
    comp = replace(COMP, moe_layers=2.0, pre_f=5e-4, pre_b=1e-3, mlp_f=5e-4, mlp_b=1e-3,
                   mlp_w=5e-4)
    lay = replace(LAY, moe_overlap=True)
    assert _schedule(prof, lay, "low", comp).exposed["ep"] == 0.0
    assert _schedule(prof, lay, "high", comp).exposed["ep"] == approx(16 * A2A)


def test_synced_host_is_the_routed_layers_forward_issuing(prof):
    # tiny-moe's layer: attention 16 + a routed feed-forward's 40 less its 2 grouped GEMMs
    # (54), plus 2 GEMMs per local expert (4 / ep 2 = 2): 58 operators; 2 layers: 116, at
    # 5 / 15 / 30 µs
    for end, each in zip(ENDS3, (5e-6, 15e-6, 30e-6)):
        assert S.synced_host(prof, LAY, end, 2) == approx(116 * each)
    assert S.synced_host(prof, replace(LAY, cuda_graph=True), "high", 2) == 0.0
    # a dense model has no routed layer to synchronise in
    dense = S.profile(load(str(Path(TINY_MOE).with_name("tiny.yaml"))).spec, 16)
    assert S.synced_host(dense, S.Layout(dp=2, global_batch=4), "high", 2) == 0.0


def test_the_high_end_issues_a_routed_forward_in_series_with_the_device(prof):
    # host per micro-batch: forward 116 operators, backward 2·54 + 2·4·2 = 124 per layer,
    # 248; the device: forward 1 ms + 4 all-to-alls, backward 2 ms + 4.
    d_f, d_b = 1e-3 + 4 * A2A, 2e-3 + 4 * A2A
    # high (30 µs): forward 3.48 ms of host in series with the device, backward the host's
    # 7.44 ms against the device's d_b: the device waits 3.48 + (7.44 − d_b) ms a micro-batch
    high = _schedule(prof, LAY, "high")
    assert high.exposed["host"] == approx(2 * (116 * 30e-6 + (248 * 30e-6 - d_b)))
    graphed = _schedule(prof, replace(LAY, cuda_graph=True), "high")
    assert high.total - graphed.total == approx(2 * (116 * 30e-6 + 248 * 30e-6 - d_b))
    # the estimate (15 µs) keeps the max: 1.74 ms against d_f, 3.72 ms against d_b
    est = _schedule(prof, LAY, "estimate")
    assert est.exposed["host"] == approx(2 * ((116 * 15e-6 - d_f) + (248 * 15e-6 - d_b)))


def test_the_low_end_exposes_the_tied_embedding_all_reduce():
    # tests/data/serve/tiny.yaml with tied embeddings on 2 stages: the first and last stage
    # all-reduce the embedding's gradient, 16·8 values × 2 bytes = 256 bytes over 2 ranks,
    # taken one to a domain (the two stages' ranks). Nothing hides it. The fastest of NCCL's
    # schemes is the ring across the domains: base 10 µs + 2 steps × 5 µs + (2·1/2)·256 /
    # 10¹⁰ B/s (the hierarchical scheme with one rank a domain; the flat ring pays the
    # multi-node plateau 1.4, the tree 2·S at 0.92)
    spec = load(str(Path(TINY_MOE).with_name("tiny.yaml"))).spec
    tied = S.profile(replace(spec, tie_embeddings=True), 16)
    lay = S.Layout(pp=2, dp=2, global_batch=8)
    comp = S.Compute(gemm_f=1e-3, gemm_b=2e-3)
    low = S._schedule(tied, lay, MC, "low", comp, "last", S.placement(lay, NET))
    assert low.exposed["embedding"] == approx(1e-5 + 2 * 5e-6 + 256 / 1e10)
