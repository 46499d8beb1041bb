"""The step-time model's arithmetic, piece by piece, against figures worked by hand from the
model `predict/steptime.py`'s docstring states (not from its code): one matmul's roofline
with wave quantisation, each tensor-parallel role's local shape, the head and cross-entropy,
one layer's compute under each attention path and recompute mode, and the schedule (overlap,
bubble, pipeline sends, data-parallel reductions under each ZeRO stage, the optimizer).

The machine is made up so that every figure is easy to work: 10¹⁵ FLOP/s at an MAMF share of
0.8, 100 SMs, 4·10¹² B/s of HBM, and one network domain of 64 devices (so that a collective is
NCCL's single ring: base + steps·step latency + factor·S/B, `predict.collectives`).

The model is tests/data/serve/tiny.yaml at 16 tokens: 2 layers, d 8, 2 heads and 1 KV head
of 4, a plain MLP of 16, vocabulary 16, untied. Per layer: q, o 8·8 = 64 parameters, k, v 8·4
= 32, up and down 8·16 = 128 (448 split by tensor parallelism), two RMSNorms (16 replicated);
the embedding and the head 16·8 = 128 each, the final norm 8.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from flopcalc.commands import load
from flopcalc.predict import steptime as S
from flopcalc.predict.collectives import Net
from flopcalc.kinds.base import ATTENTION, COLUMN, EXPERT, REPLICATED, ROW, VOCAB, WEIGHTS, Part

pytestmark = pytest.mark.hand

TINY = str(Path(__file__).resolve().parents[1] / "data" / "serve" / "tiny.yaml")
ENDS3 = ("low", "estimate", "high")
NET = Net(domain=64, up=1e11, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6)
MC = S.Machine(
    matmul_peak=1e15, attention_peak=5e14, hbm=4e12, matmul_share=0.8, sms=100,
    attention_forward=dict(zip(ENDS3, (0.7, 0.6, 0.5))),
    attention_backward=dict(zip(ENDS3, (0.5, 0.4, 0.3))),
    memory_share=dict(zip(ENDS3, (0.9, 0.8, 0.7))), net=NET)
RATE = {"low": 1e15 * 0.8 * 0.90 * 1.0, "estimate": 1e15 * 0.8 * 0.85 * 0.975,
        "high": 1e15 * 0.8 * 0.80 * 0.95}  # peak × MAMF share × shape factor × slowest device
BW = {"low": 4e12 * 0.9, "estimate": 4e12 * 0.8, "high": 4e12 * 0.7}
# element-wise kernels (norms, activations, the cross-entropy) at the estimate: the copy's
# (best) share times Transformer Engine's measured 0.752 of it (steptime.ELEMENTWISE)
EW = 4e12 * 0.9 * 0.752


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=0)


@pytest.fixture(scope="module")
def prof():
    return S.profile(load(TINY).spec, 16)


# ------------------------------------------------------------------------------ one matmul


@pytest.mark.parametrize("end", ENDS3)
def test_a_compute_bound_matmul_runs_at_its_share_of_peak_in_one_partial_wave(end):
    # (256 × 1024)·(1024 × 512): 2·256·512·1024 = 268,435,456 FLOPs; 2 × 2 tiles of 128 × 256
    # on 100 SMs: one wave of which 4/100 is busy. Bytes 2·(256·1024 + 1024·512) + 2·256·512
    # = 1,835,008 take under a microsecond: compute binds.
    assert S.gemm_time(256, 512, 1024, MC, end) == approx(268_435_456 / (RATE[end] * 0.04))


def test_a_memory_bound_matmul_runs_at_hbm_speed():
    # (1 × 4096)·(4096 × 4096): 33,554,432 FLOPs in 16 tiles (3.2e-7 s at 16/100 of the
    # machine); bytes 2·(4,096 + 16,777,216) + 2·4,096 = 33,570,816 at 3.2e12 B/s: 1.05e-5 s
    assert S.gemm_time(1, 4096, 4096, MC, "estimate") == approx(33_570_816 / 3.2e12)


def test_waves_round_up_to_whole_multiples_of_the_sms():
    # 20 × 10 = 200 tiles: two whole waves; 21 × 10 = 210 tiles: three waves, 0.7 of them busy
    n = 2560
    assert S.gemm_time(n, n, n, MC, "low") == approx(2 * n ** 3 / RATE["low"])
    m = n + 1
    assert S.gemm_time(m, n, n, MC, "low") == approx(2 * m * n * n / (RATE["low"] * 0.7))


def test_a_batched_matmul_multiplies_flops_tiles_and_bytes():
    # 3 × (256 × 1024)·(1024 × 512): 12 tiles, 12/100 busy
    assert S.gemm_time(256, 512, 1024, MC, "estimate", 3) == \
        approx(3 * 268_435_456 / (RATE["estimate"] * 0.12))
    assert S.gemm_time(1, 4096, 4096, MC, "estimate", 3) == approx(3 * 33_570_816 / 3.2e12)


@pytest.mark.parametrize("mnk", [(0, 5, 5), (5, 0, 5), (5, 5, 0), (-1, 5, 5)])
def test_an_empty_matmul_takes_no_time(mnk):
    assert S.gemm_time(*mnk, MC, "estimate") == 0.0


@pytest.mark.parametrize("role, shape", [
    (COLUMN, (20, 8.0, 8, 1)), (VOCAB, (20, 8.0, 8, 1)), (ROW, (20, 32, 2.0, 1)),
    (REPLICATED, (20, 32, 8, 1))])
def test_each_role_splits_its_own_side_of_the_matmul(role, shape):
    # 10 tokens of one sequence, 2 sequences, (8 × 32) on 4 tensor-parallel devices
    g = S.Gemm("w", 10, 8, 32, role)
    assert S._gemm_shapes(g, 2, S.Layout(tp=4)) == shape


def test_routed_experts_split_over_expert_and_tensor_parallelism():
    # 20 routed token copies per device (10 per sequence x 2 sequences); tp 4 with sequence
    # parallelism: the device holds 20/4 = 5 of them. 8 experts over ep 2: 4 local.
    # etp 4 (each expert split 4 ways, the tokens of its 4 ranks gathered): 5 x 4 x 2 / 8 = 5
    # tokens per expert; an up projection (8 -> 32) splits its output 4 ways, a down
    # projection (32 -> 8) its input.
    lay = S.Layout(tp=4, ep=2, etp=4)
    assert S._gemm_shapes(S.Gemm("up", 10, 8, 32, EXPERT, 8), 2, lay) == (5.0, 8.0, 8, 4)
    assert S._gemm_shapes(S.Gemm("down", 10, 32, 8, EXPERT, 8), 2, lay) == (5.0, 8, 8.0, 4)
    # etp 1 (whole experts, as Megatron-Bridge's recipes run them): 5 x 1 x 2 / 8 = 1.25
    # tokens per expert, the (8 x 32) weight whole
    lay = S.Layout(tp=4, ep=2, etp=1)
    assert S._gemm_shapes(S.Gemm("up", 10, 8, 32, EXPERT, 8), 2, lay) == (1.25, 32, 8, 4)
    # more ranks than experts: one local expert, 20 x 4 / 2 = 40 tokens
    assert S._gemm_shapes(S.Gemm("up", 10, 8, 8, EXPERT, 2), 2, S.Layout(ep=4)) == \
        (40.0, 8, 8, 1)


# --------------------------------------------------------------------------- the profile


def test_profile_of_the_tiny_model(prof):
    assert (prof.n_layers, prof.d, prof.vocab, prof.tied) == (2, 8, 16, False)
    (lp,) = prof.layers
    assert lp.count == 2
    assert sorted((g.n_in, g.n_out, g.tokens, g.role) for g in lp.gemms) == sorted([
        (8, 8, 16, COLUMN), (8, 4, 16, COLUMN), (8, 4, 16, COLUMN), (8, 8, 16, ROW),
        (8, 16, 16, COLUMN), (16, 8, 16, ROW)])
    assert lp.loose == 0 and lp.scan == 0
    # 32 FLOPs per (query, key) pair: 256 pairs, 136 of them causal
    assert (lp.attention_full, lp.attention_causal) == (8192, 4352)
    assert lp.attention_heads == ((2, 4, 4, 8192),)
    assert (lp.tp_sublayers, lp.kv_per_token, lp.moe) == (2, 8, (0, 0))
    assert (lp.params_split, lp.params_replicated, lp.params_expert) == (448, 16, 0)
    assert prof.head_flops == 2 * 16 * 8 * 16
    assert prof.first_params == (128, 0) and prof.last_params == (128, 8)


# ------------------------------------------------------------------- one layer, the head


def test_the_head_and_its_fp32_cross_entropy(prof):
    # 2 sequences of 16 on tp 2: (32 × 8)·(8 × 8) forward, two matmuls backward, 32·8 logits
    lay = S.Layout(tp=2, micro_batch=2)
    c = S.head_compute(prof, lay, MC, "estimate")
    g = lambda m, n, k: S.gemm_time(m, n, k, MC, "estimate")  # noqa: E731
    assert c.head_f == approx(g(32, 8, 8) + 22 * 256 / EW)
    assert c.head_b == approx(g(32, 8, 8) + g(8, 8, 32) + 33 * 256 / EW)
    c = S.head_compute(prof, replace(lay, cp=2), MC, "estimate")  # 16 tokens a device
    assert c.head_f == approx(g(16, 8, 8) + 22 * 128 / EW)


def test_flash_attention_runs_the_causal_flops_at_the_kernels_shares(prof):
    (lp,) = prof.layers
    c = S.layer_compute(lp, prof, S.Layout(flash=True), MC, "estimate")
    peak = 5e14 * 0.975
    assert c.attn_f == approx(4352 / (peak * 0.6))
    assert c.attn_b == approx(2.5 * 4352 / (peak * 0.4))
    c = S.layer_compute(lp, prof, S.Layout(flash=True, tp=2, micro_batch=3), MC, "high")
    assert c.attn_f == approx(4352 * 3 / 2 / (5e14 * 0.95 * 0.5))


def test_eager_attention_is_two_batched_matmuls_per_head(prof):
    # 2 heads on one device: QKᵀ (16 × 4)·(4 × 16) and AV (16 × 16)·(16 × 4), batch 2;
    # backward dQ, dK: 2 × (16 × 16)·(16 × 4), dV and dP: one of each shape
    (lp,) = prof.layers
    g = lambda m, n, k, b: S.gemm_time(m, n, k, MC, "estimate", b)  # noqa: E731
    c = S.layer_compute(lp, prof, S.Layout(), MC, "estimate")
    assert c.attn_f == approx(g(16, 16, 4, 2) + g(16, 4, 16, 2))
    assert c.attn_b == approx(2 * g(16, 4, 16, 2) + g(16, 16, 4, 2) + g(16, 4, 16, 2))
    c = S.layer_compute(lp, prof, S.Layout(tp=2), MC, "estimate")  # one head a device
    assert c.attn_f == approx(g(16, 16, 4, 1) + g(16, 4, 16, 1))


def test_weight_matmuls_forward_and_both_gradients(prof):
    (lp,) = prof.layers
    g = lambda m, n, k: S.gemm_time(m, n, k, MC, "estimate")  # noqa: E731
    c = S.layer_compute(lp, prof, S.Layout(), MC, "estimate")
    shapes = [(8, 8), (8, 4), (8, 4), (8, 8), (8, 16), (16, 8)]  # (n_in, n_out)
    assert c.gemm_f == approx(sum(g(16, n, k) for k, n in shapes))
    assert c.gemm_b == approx(sum(g(16, k, n) + g(k, n, 16) for k, n in shapes))


def test_memory_bound_kernels_and_recompute_modes(prof):
    (lp,) = prof.layers
    saved = S._activation_bytes(lp.layer, 8, 16, 1, 1, False, False, False)
    none = S.layer_compute(lp, prof, S.Layout(), MC, "estimate")
    assert none.mem_f == approx(1.5 * saved / EW)
    assert none.mem_b == approx(1.5 * 1.5 * saved / EW)
    assert none.recompute == 0.0
    full = S.layer_compute(lp, prof, S.Layout(recompute="full"), MC, "estimate")
    assert full.recompute == approx(none.gemm_f + none.attn_f + none.mem_f)
    sel = S.layer_compute(lp, prof, S.Layout(recompute="selective"), MC, "estimate")
    assert sel.recompute == approx(none.attn_f)
    assert full.backward == approx(none.backward + full.recompute)
    assert none.forward == approx(none.gemm_f + none.attn_f + none.mem_f + none.head_f)


def test_a_stage_holds_its_share_of_layers_and_the_last_the_head(prof):
    lay = S.Layout(pp=2)
    (lp,) = prof.layers
    one = S.layer_compute(lp, prof, lay, MC, "estimate")
    head = S.head_compute(prof, lay, MC, "estimate")
    first = S._stage_compute(prof, lay, MC, "estimate", last=False)
    last = S._stage_compute(prof, lay, MC, "estimate", last=True)
    assert first.gemm_f == approx(one.gemm_f)  # 1 of the 2 layers
    assert last.head_f == approx(head.head_f) and first.head_f == 0.0
    assert S.stage_compute(prof, lay, MC, "estimate", True).forward == approx(last.forward)


def test_a_stage_is_remembered_for_its_own_profile_only(prof):
    lay = S.Layout(pp=2, tp=2)
    once = S.stage_compute(prof, lay, MC, "high", True)
    assert S.stage_compute(prof, lay, MC, "high", True) is once  # remembered
    # an entry left by another profile at the same key (ids are reused once one is freed)
    # is not this profile's: it is worked again
    for key, (_, mc, _) in list(S._STAGES.items()):
        S._STAGES[key] = (object(), mc, "stale")  # type: ignore[assignment]
    again = S.stage_compute(prof, lay, MC, "high", True)
    assert again != "stale" and again.forward == approx(once.forward)
    S._STAGES.clear()  # leave no stale entry to another test


# ------------------------------------------------------------------------------ the schedule


def ring(kind: str, size: float, n: int) -> float:
    """NCCL's ring inside the domain (the working of the collectives module's docstring)."""
    steps = 2 * (n - 1) if kind == "allreduce" else n - 1
    f = 2 * (n - 1) / n if kind == "allreduce" else (n - 1) / n
    return 1e-5 + steps * 1e-6 + f * size / 1e11


COMP = S.Compute(gemm_f=1e-3, gemm_b=2e-3, attn_f=1e-4, attn_b=2e-4, mem_f=3e-5, mem_b=4e-5)
# tp 2, pp 2, dp 2, micro-batch 1 of a global batch of 8: 4 micro-batches per pipeline
LAY = S.Layout(tp=2, pp=2, dp=2, global_batch=8)
# the last stage: 1 layer of (448 / 2 + 16) parameters, the head 128 / 2 and the final norm 8
LAST = 240 + 64 + 8
# a micro-batch: 16 tokens x d 8 x 2 bytes = 256 bytes per tensor-parallel all-reduce, 2
# sublayers each way; the pipeline sends 256 / 2 and all-gathers 256 over the 2 ranks
TP = ring("allreduce", 256, 2)
SEND = 1e-6 + 128 / 1e11 + ring("allgather", 256, 2)


def schedule(lay: S.Layout, end: str, prof, which: str = "last") -> S.StepTime:
    return S._schedule(prof, lay, MC, end, COMP, which, S.placement(lay, NET))


def test_schedule_by_hand_zero_0(prof):
    st = schedule(LAY, "estimate", prof)
    t_f = COMP.forward + 2 * TP
    t_b = COMP.backward + 2 * TP
    red = ring("allreduce", LAST * 2, 2)  # the whole gradient fits one bucket: exposed
    optimizer = (36 + 8) * LAST / 3.2e12
    sends = 2 * (4 + 2 - 1)
    assert st.bubble == approx(t_f + t_b)  # (p - 1) / v of one micro-batch's time
    assert st.exposed["tp"] == approx(4 * 4 * TP)
    assert st.exposed["pp"] == approx(sends * SEND)
    assert st.exposed["dp"] == approx(red)
    assert st.optimizer == approx(optimizer)
    assert st.total == approx(4 * (t_f + t_b) + (t_f + t_b) + sends * SEND + red + optimizer)
    assert st.compute["gemm"] == approx(4 * 3e-3)
    assert st.compute["attention"] == approx(4 * 3e-4)
    assert st.compute["memory_bound"] == approx(4 * 7e-5)
    assert st.comm_all["tp"] == approx(4 * 4 * TP)
    assert st.comm_all["dp"] == approx(red)
    assert st.comm_all["pp"] == approx(sends * SEND)


def test_the_low_end_hides_what_a_mechanism_hides_and_the_high_end_none(prof):
    # without --tp-overlap nothing hides the 4 tensor-parallel collectives of a micro-batch,
    # and 1F1B's blocking sends (2·(v·m + p − 1) = 10) hide behind nothing: exposed at `low`;
    # the gradient reduction (behind the backward) is hidden
    low = schedule(LAY, "low", prof)
    t = COMP.forward + COMP.backward + 4 * TP
    assert low.total == approx(5 * t + 10 * SEND + 44 * LAST / 3.6e12)
    assert low.exposed == approx({"tp": 4 * 4 * TP, "cp": 0.0, "ep": 0.0, "pp": 10 * SEND,
                                  "dp": 0.0, "embedding": 0.0})
    # with --tp-overlap the low end hides them
    assert schedule(replace(LAY, tp_overlap=True), "low", prof).exposed["tp"] == 0.0
    high = schedule(LAY, "high", prof)
    assert high.total == approx(5 * t + 10 * SEND + ring("allreduce", LAST * 2, 2)
                                + 44 * LAST / 2.8e12)


@pytest.mark.parametrize("zero", [1, 2])
def test_zero_1_and_2_reduce_scatter_gradients_and_gather_weights(prof, zero):
    st = schedule(replace(LAY, zero=zero), "high", prof)
    rs, ag = ring("reducescatter", LAST * 2, 2), ring("allgather", LAST * 2, 2)
    reductions = 4 if zero == 2 else 1  # ZeRO-2 reduces every micro-batch's gradients
    assert st.exposed["dp"] == approx(reductions * rs + ag)
    # ZeRO-1 updates half of the parameters; ZeRO-2 also keeps half of the gradients
    grads = LAST / 2 if zero == 2 else LAST
    assert st.optimizer == approx((36 * LAST / 2 + 8 * grads) / 2.8e12)
    est = schedule(replace(LAY, zero=zero), "estimate", prof)
    # the reductions hide under the backward, the gather under the forward: one bucket each
    assert est.exposed["dp"] == approx(reductions * rs + ag)  # the bucket is everything


def test_the_exposed_bucket_grows_with_the_data_parallel_ranks(prof):
    # Megatron-Core's DDP bucket is max(40M, 1M·n) elements: over n = 64 ranks, 64M. The last
    # stage given 10⁸ more replicated parameters (tp 1: the layer's 448 + 16, the head 128 and
    # the norm 8, 600 in all) reduces 2·(10⁸ + 600) bytes; its last 64M-element bucket stays
    # exposed past the backward, and whatever of the whole reduction outlasts the backward.
    big = replace(prof, last_params=(prof.last_params[0],
                                     prof.last_params[1] + 10 ** 8))
    lay = S.Layout(pp=2, dp=64, global_batch=256)
    st = S._schedule(big, lay, MC, "estimate", COMP, "last", S.placement(lay, NET))
    red = ring("allreduce", 2 * (10 ** 8 + 600), 64)
    bucket = ring("allreduce", 2 * 64_000_000, 64)
    assert red > COMP.backward
    assert st.exposed["dp"] == approx(bucket + red - COMP.backward)


def test_zero_3_gathers_each_layer_forward_and_backward(prof):
    st = schedule(replace(LAY, zero=3), "high", prof)
    ag = ring("allgather", LAST * 2, 2)  # one layer a stage: its weights are the stage's
    rs = ring("reducescatter", LAST * 2, 2)
    assert st.exposed["dp"] == approx(4 * (ag + ag + rs))
    assert st.optimizer == approx((36 + 8) * LAST / 2 / 2.8e12)
    est = schedule(replace(LAY, zero=3), "estimate", prof)
    # prefetching one layer ahead: the first gather and the last reduction stay exposed
    assert est.exposed["dp"] == approx(4 * (ag + rs))
    # hidden or not, the axis carries every micro-batch's gathers (forward and backward)
    # and reduction
    assert st.comm_all["dp"] == est.comm_all["dp"] == approx(4 * (ag + ag + rs))


def test_zero_3_gathers_hide_behind_the_forward_ring_steps_too(prof):
    # cp 2 and ZeRO-3 on one stage: the weights are gathered over dp·cp = 2 ranks. The stage
    # holds everything: 2 layers of 448 + 16, the 128 embedding, the 128 head and the 8 norm,
    # 1,192 parameters, so a layer's gather and reduction are 1,192·2 / 2 = 1,192 bytes. The
    # forward a gather hides behind is a layer's share of the matmuls, the attention and the
    # exposed ring steps: per micro-batch 10 µs + 1 µs + 2·(step − 0.5 µs), over 2 layers.
    # (under a graph: the toy's 11 µs forward is shorter than its operators' launches)
    lay = S.Layout(cp=2, global_batch=4, flash=True, zero=3, cuda_graph=True)
    comp = S.Compute(gemm_f=1e-5, gemm_b=1e-3, attn_f=1e-6, attn_b=2e-6, mem_f=0.0, mem_b=0.0)
    st = S._schedule(prof, lay, MC, "estimate", comp, "only", S.placement(lay, NET))
    step = 1e-6 + 128 / 1e11
    cp_f = 2 * (step - 0.5e-6)
    ag, rs = ring("allgather", 1192, 2), ring("reducescatter", 1192, 2)
    lf = (1e-5 + 1e-6 + cp_f) / 2
    assert ag > lf  # partly exposed: the first gather, then what the next layer cannot hide
    # 4 micro-batches; the backward (1 ms) hides all but the first gather's reduction
    assert st.exposed["dp"] == approx(4 * (ag + (ag - lf) + rs))


def test_interleaving_exposes_only_the_fill_and_drain_sends(prof):
    st = schedule(replace(LAY, vp=2), "estimate", prof)
    t = COMP.forward + COMP.backward + 4 * TP
    assert st.bubble == approx(t / 2)  # (p - 1) / v
    assert st.exposed["pp"] == approx(2 * (2 - 1) * SEND)
    assert st.comm_all["pp"] == approx(2 * (2 * 4 + 1) * SEND)


def test_tensor_parallel_overlap_hides_behind_a_share_of_the_matmuls(prof):
    slow = replace(COMP, gemm_f=4e-5)  # ¼ of it: 1e-5, under one collective (1.2e-5)
    lay = replace(LAY, tp_overlap=True)
    st = S._schedule(prof, lay, MC, "estimate", slow, "last", S.placement(lay, NET))
    each_f, each_b = TP - 1e-5, max(0.0, TP - 2e-5)
    assert st.exposed["tp"] == approx(4 * (2 * each_f + 2 * each_b))
    # pp 1: the stage's 2 layers share its matmul time, 8e-5 / 2 a layer, so a collective
    # hides behind ¼ of 4e-5 forward and ½ of it backward; 2 layers × 2 sublayers each way
    lay = replace(LAY, pp=1, tp_overlap=True)
    st = S._schedule(prof, lay, MC, "estimate", replace(COMP, gemm_f=8e-5), "only",
                     S.placement(lay, NET))
    assert st.exposed["tp"] == approx(4 * (4 * each_f + 4 * each_b))


def test_async_tensor_parallelism_hides_the_forwards_collectives_only(prof):
    # PyTorch's async TP is a forward-pass speed-up: the 2 forward collectives of a
    # micro-batch hide as with --tp-overlap (each_f exposed), the 2 backward ones stay whole
    slow = replace(COMP, gemm_f=4e-5)
    each_f = TP - 1e-5
    lay = replace(LAY, tp_overlap=True, async_tp=True)
    st = S._schedule(prof, lay, MC, "estimate", slow, "last", S.placement(lay, NET))
    assert st.exposed["tp"] == approx(4 * (2 * each_f + 2 * TP))
    # full recomputation re-runs the forward's 2 in backward (4 there): those hide as the
    # forward's do, the backward's own 2 stay whole
    lay = replace(lay, recompute="full")
    st = S._schedule(prof, lay, MC, "estimate", slow, "last", S.placement(lay, NET))
    assert st.exposed["tp"] == approx(4 * (2 * each_f + 2 * each_f + 2 * TP))
    # the interval's ends as with --tp-overlap: all hidden at `low`, none at `high`
    assert S._schedule(prof, lay, MC, "low", slow, "last",
                       S.placement(lay, NET)).exposed["tp"] == 0.0
    assert S._schedule(prof, lay, MC, "high", slow, "last",
                       S.placement(lay, NET)).exposed["tp"] == approx(4 * 6 * TP)


def test_the_slowest_stage_decides(prof):
    lay = S.Layout(pp=2, global_batch=4)
    st = S.step_time(prof, lay, MC, "estimate")
    assert st.stage == "last"  # the head makes it the slower
    assert st.total == approx(max(
        S._schedule(prof, lay, MC, "estimate", S.stage_compute(prof, lay, MC, "estimate", w),
                    n, S.placement(lay, NET)).total
        for n, w in (("first", False), ("last", True))))


def test_placement_in_megatrons_order():
    net = replace(NET, domain=8)
    # Dense ranks run tp, cp, dp from the innermost; expert ranks etp, ep, then the expert
    # data-parallel ones (Megatron-Core's expert rank generator), inside each stage. tp 4 x
    # cp 2 x dp 4 = 32 ranks a stage: an expert group of ep 2 is two neighbours (one domain);
    # its expert-data-parallel group, 32 / 2 = 16 ranks spaced by 2, has 8 / 2 = 4 per domain.
    assert S.placement(S.Layout(tp=4, cp=2, dp=4, ep=2), net) == \
        {"tp": 4, "cp": 2, "dp": 2, "ep": 2, "etp": 1, "edp": 4, "pp_across": 1}
    assert S.placement(S.Layout(tp=2, dp=2, ep=2), net) == \
        {"tp": 2, "cp": 1, "dp": 2, "ep": 2, "etp": 1, "edp": 2, "pp_across": 0}
    # expert tensor parallelism 2 spaces an ep 8 group by 2: 4 of its ranks to a domain
    assert S.placement(S.Layout(tp=2, dp=8, ep=8, etp=2), net)["ep"] == 4
    # the gradient reduction spans data and context ranks (Megatron-LM reduces over dp × cp):
    # cp 2 × dp 2 = 4 ranks, all in the domain of 8
    assert S.placement(S.Layout(cp=2, dp=2), net) == \
        {"tp": 1, "cp": 2, "dp": 4, "ep": 1, "etp": 1, "edp": 4, "pp_across": 0}
    # context ranks alone can fill the domain
    assert S.placement(S.Layout(cp=8), net) == \
        {"tp": 1, "cp": 8, "dp": 8, "ep": 1, "etp": 1, "edp": 8, "pp_across": 1}


def test_layout_counts_and_description():
    lay = S.Layout(tp=2, pp=4, vp=2, dp=8, cp=2, ep=4, zero=1, micro_batch=2, global_batch=64,
                   sequence_parallel=True, recompute="selective")
    assert lay.devices == 2 * 4 * 8 * 2
    assert lay.micro_batches == 64 // (8 * 2)
    assert lay.describe() == ("tp 2, pp 4, vp 2, dp 8, cp 2, ep 4, ZeRO-1, mb 2, "
                              "recompute selective, sp")
    assert S.Layout().describe() == "tp 1, pp 1, dp 1, ZeRO-0, mb 1, recompute none"


def test_only_parts_with_a_whole_number_of_rows_are_matmuls():
    # (8 × 4) weights: 64 FLOPs a token; 3 tokens = 192. A part of 197 FLOPs (a bias folded
    # in), one without a shape, a stack of 3 experts' (8 × 4), and an attention part
    parts = [Part("a", 192, WEIGHTS, weight_shape=(8, 4), role=COLUMN),
             Part("b", 197, WEIGHTS, weight_shape=(8, 4), role=COLUMN),
             Part("c", 100, WEIGHTS),
             Part("e", 384, WEIGHTS, weight_shape=(3, 8, 4), role=EXPERT),
             Part("x", 64, WEIGHTS, weight_shape=(3, 8, 4), role=COLUMN),  # a stack, not experts
             Part("s", 1000, ATTENTION)]
    gemms, loose = S._gemms(parts)
    assert gemms == [S.Gemm("a", 3, 8, 4, COLUMN, 1, 192), S.Gemm("e", 6, 8, 4, EXPERT, 3, 384)]
    assert loose == 197 + 100 + 64
    assert S._gemms([Part("z", 0, WEIGHTS, weight_shape=(8, 4), role=COLUMN)]) == ([], 0)


def test_context_parallel_ring_steps_hide_behind_blocks_of_attention(prof):
    # cp 2, 4 sequences on one replica (m = 4): 8 tokens a device keep 8 K/V values each,
    # 8·8·2 = 128 bytes a ring step (a send inside the domain: 1 µs + 128 / 1e11); 1 step
    # per layer forward and 2 backward, 2 layers: 2 forward, 4 backward
    lay = S.Layout(cp=2, global_batch=4, flash=True)
    step = 1e-6 + 128 / 1e11
    comp = replace(COMP, attn_f=1e-6, attn_b=2e-6)  # a block of attention: 0.5 µs
    st = S._schedule(prof, lay, MC, "estimate", comp, "only", S.placement(lay, NET))
    assert st.comm_all["cp"] == approx(4 * 6 * step)
    assert st.exposed["cp"] == approx(4 * (2 * (step - 0.5e-6) + 4 * (step - 0.5e-6)))
    st = S._schedule(prof, lay, MC, "high", comp, "only", S.placement(lay, NET))
    assert st.exposed["cp"] == approx(4 * 6 * step)
    st = S._schedule(prof, lay, MC, "low", comp, "only", S.placement(lay, NET))
    assert st.exposed["cp"] == 0.0 and st.comm_all["cp"] == approx(4 * 6 * step)
    st = S._schedule(prof, lay, MC, "estimate", COMP, "only", S.placement(lay, NET))
    assert st.exposed["cp"] == 0.0  # 50 µs blocks hide every step


def test_expert_parallel_all_to_alls_are_exposed(tmp_path):
    # tiny-moe (4 experts, top 2) on ep 2, dp 2, a batch of 4: m = 2. A micro-batch's 16
    # tokens send 16·2·8·2 = 512-byte buffers, a dispatch and a combine forward per MoE layer
    # and the same backward: 4 + 4 all-to-alls, each a 2-rank ring in the domain
    spec = load(str(Path(TINY).parent / "tiny-moe.yaml")).spec
    prof = S.profile(spec, 16)
    lay = S.Layout(ep=2, dp=2, global_batch=4)
    a2a = ring("alltoall", 512, 2)
    # without --moe-overlap nothing hides them, at the low end either
    for end, exposed in (("estimate", 2 * 8 * a2a), ("high", 2 * 8 * a2a),
                         ("low", 2 * 8 * a2a)):
        st = S._schedule(prof, lay, MC, end, COMP, "only", S.placement(lay, NET))
        assert st.exposed["ep"] == approx(exposed)
        assert st.comm_all["ep"] == approx(2 * 8 * a2a)
