"""The plan search's floor on the expert all-to-all a schedule overlaps (`exposed_floor`): the
unpaired chunks expose theirs whole, so at least min(1, p/m) of it stays, whatever the
virtual-stage count; the rest keeps the SMs' share. The floor must never pass what the estimate
exposes, or the search would prune a winner: checked here against `unpaired_chunks` and
`_paired_a2a` (tests/predict/test_plan_search_ranking.py checks the search against timing every
layout)."""

from __future__ import annotations

import pytest

from flopcalc.predict import steptime as S

pytestmark = [pytest.mark.hand]


@pytest.mark.parametrize("pp, vp, m", [(1, 1, 4), (2, 1, 8), (4, 2, 16), (8, 4, 128)])
def test_the_unpaired_share_bounds_every_virtual_stage_count(pp, vp, m):
    # unpaired_chunks / (m·v) against min(1, p/m): 1/4 = 1/4 at p 1; (2, 1, 8): 2/8 = 2/8;
    # (4, 2, 16): (2·3 + 1·4 + 1) / 32 = 11/32 ≥ 4/16; (8, 4, 128): 39/512 ≥ 8/128 = 32/512
    lay = S.Layout(pp=pp, vp=vp, dp=1, ep=8, global_batch=m, moe_overlap=True)
    assert lay.micro_batches == m
    assert S.unpaired_chunks(lay) / (m * vp) >= min(1.0, pp / m)


def test_the_floor_keeps_the_unpaired_share():
    # the paired rule with no compute to hide under exposes every all-to-all: paired = comm;
    # with compute that hides everything, paired = share·comm. The floor at p 2, m 8:
    # u = 2/8, floor = t·(1/4 + 3/4·share) ≤ u·t + (1 − u)·share·t, the estimate's least
    lay = S.Layout(pp=2, dp=1, ep=8, global_batch=8, moe_overlap=True)
    u = min(1.0, lay.pp / lay.micro_batches)
    share = 0.15
    comp = S.Compute(moe_layers=1, pre_f=100.0, pre_b=100.0, mlp_f=100.0, mlp_b=100.0,
                     mlp_w=50.0)
    f, b = S._paired_a2a(comp, lay, 1.0, 1.0, share)  # everything hides: the least exposed
    assert f + b >= 2.0 * (u + (1 - u) * share) - 1e-12
    assert u == 0.25


@pytest.fixture(scope="module")
def moe_prof(tmp_path_factory):
    from flopcalc.models.registry import load_model
    from tests.predict.test_communication import MOE

    path = tmp_path_factory.mktemp("overlap_floor") / "moe.yaml"
    path.write_text(MOE)
    return S.profile(load_model(str(path)).spec, 32)


@pytest.mark.parametrize("pp, m", [(1, 4), (2, 8), (2, 2)])
def test_the_searchs_floor_takes_the_unpaired_share(moe_prof, pp, m):
    # tp 1: the floor is the all-to-all alone, t without an overlapping schedule; with one,
    # t·(u + (1 − u)·share), u = min(1, p/m), share = COMM_SMS / the device's SMs:
    # (1, 4): 1/4 + 3/4·share; (2, 8): 1/4 + 3/4·share; (2, 2): all of it
    from tests.predict.test_steptime import MC

    base = dict(pp=pp, dp=1, ep=8, global_batch=m)
    plain = S.exposed_floor(moe_prof, S.Layout(**base), MC)
    overlapped = S.exposed_floor(moe_prof, S.Layout(**base, moe_overlap=True), MC)
    u = min(1.0, pp / m)
    share = min(1.0, S.COMM_SMS / MC.sms)
    assert plain > 0
    assert overlapped == pytest.approx(plain * (u + (1 - u) * share))
