"""Megatron-Core's 1F1B expert all-to-all overlap as its code schedules it, worked by hand.

`TransformerLayerSchedulePlan.run` (megatron/core/models/common/model_chunk_schedule_plan.py at
Megatron-LM d98e8a64) pairs one micro-batch's forward of a routed layer with another's backward
in three phases, each ending when both streams have:

    comm: combine_bwd    | dispatch_fwd -> dispatch_bwd     | combine_fwd
    comp: pre_dispatch_f | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | pre_dispatch_b

so an all-to-all hides under the block beside it only, not under the pair's whole compute.
The chunks that run unpaired (schedules.py `get_pp_rank_microbatches`, and
`combined_1f1b_schedule_for_no_pipelining` without a pipeline) expose theirs whole.
"""

from __future__ import annotations

import pytest

from flopcalc.predict import steptime as S

pytestmark = [pytest.mark.hand]


def _comp(f_pre, f_mlp, b_pre, b_mlp, b_w, layers=1):
    c = S.Compute(moe_layers=layers, pre_f=f_pre * layers, pre_b=b_pre * layers,
                  mlp_f=f_mlp * layers, mlp_b=b_mlp * layers, mlp_w=b_w * layers)
    return c


def test_each_all_to_all_hides_only_under_the_block_beside_it():
    # one routed layer, ms: F_pre 1, F_mlp 1, B_pre 2, B_mlp 2 (of it B_w 1, B_x 1); each
    # dispatch and combine 1.5 (forward 3, backward 3 per micro-batch). The pair's compute, 6,
    # equals its 6 of all-to-all, which the whole-pair rule hid entirely. By phase:
    #   1: max(combine_bwd 1.5, F_pre 1) = 1.5
    #   2: comm max(1.5, B_x 1) + 1.5 = 3; comp max(B_x + B_w 2, 1.5) + F_mlp 1 = 3 -> 3
    #   3: max(combine_fwd 1.5, B_pre 2) = 2
    # 6.5 for 6 of compute: 0.5 exposed per pair. 4 micro-batches without a pipeline: the
    # first forward and the last backward unpaired, u = 1/4 of the chunks each way, exposing
    # their 6 whole: 1/4·6 + 3/4·0.5 = 1.875, split as forward 3 : backward 3.
    lay = S.Layout(dp=1, ep=8, global_batch=4, moe_overlap=True)
    f, b = S._paired_a2a(_comp(1, 1, 2, 2, 1), lay, 3.0, 3.0, 0.0)
    assert (f, b) == pytest.approx((0.9375, 0.9375))


def test_a_hidden_all_to_all_still_costs_its_sms_share():
    # the same pair at 10 layers with 20 of 100 SMs held by the hidden kernels: per pair
    # 0.5 exposed + 0.2 · 5.5 hidden = 1.6; per layer 1/4·6 + 3/4·1.6 = 2.7; 10 layers: 27
    lay = S.Layout(dp=1, ep=8, global_batch=4, moe_overlap=True)
    f, b = S._paired_a2a(_comp(1, 1, 2, 2, 1, layers=10), lay, 30.0, 30.0, 0.2)
    assert f + b == pytest.approx(27.0)


@pytest.mark.parametrize("pp, vp, micro, expected", [
    (1, 1, 128, 1),  # no pipeline: the first forward alone
    (8, 4, 128, 39),  # rank 0: 2·7 + 3·8 + 1 (the model zoo's Qwen3-235B cross-node layout)
    (2, 12, 64, 2 + 11 * 2 + 1),  # 25
    (4, 2, 2, 4),  # 2·3 + 1·4 + 1 = 11 exceeds the 2·2 chunks of the step: all of them
    (4, 1, 16, 4),  # without interleaving p − 1, with the overlap's extra forward
])
def test_unpaired_chunks_are_the_first_ranks_warm_up(pp, vp, micro, expected):
    lay = S.Layout(pp=pp, vp=vp, dp=1, global_batch=micro, ep=8, moe_overlap=True)
    assert S.unpaired_chunks(lay) == expected
