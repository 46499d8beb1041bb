"""Communication volumes, collective times and the pipeline bubble of `flopcalc step`, against
figures worked by hand in the comments (from the papers' formulas, never from the code under
test).

Formulas: Narayanan et al. 2021 §3.3 (tensor parallelism: an all-reduce of b·s·h elements
twice in forward and twice in backward per layer) and §2.2 (bubble (p−1)/m, interleaved
(p−1)/(v·m));
Korthikanti et al. 2022 §4.2.2 (sequence parallelism: all-gather + reduce-scatter, same bytes);
Rajbhandari et al. 2020 §7 (DDP 2Ψ, ZeRO-1/2 2Ψ, ZeRO-3 3Ψ per device); NCCL's cost model
(nccl-tests doc/PERFORMANCE.md: all-reduce sends 2(n−1)/n·S per rank, the others (n−1)/n·S;
src/graph/tuning.cc: ring latency base + steps·per-step latency).

The model: 4 layers, d = 64, 4 heads of 16 (MHA), a plain MLP of 256, RMSNorm, no biases, no
position table, vocabulary 128, tied; seq 32. Per layer: attention 4·64² = 16,384 and MLP
2·64·256 = 32,768 split by tensor parallelism, two norms 2·64 = 128 replicated.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from flopcalc.predict.collectives import Net, collective, factor, ring
from flopcalc.predict.communication import _b, volumes
from flopcalc.predict.steptime import Layout, profile, step_time
from flopcalc.models.networks import load_network
from flopcalc.models.registry import load_model

pytestmark = pytest.mark.hand

MODEL = """title: hand
n_layers: 4
d_model: 64
n_heads: 4
d_ff: 256
mlp: plain
activation: gelu
norm: rmsnorm
bias: false
positions: none
max_seq_len: 32
vocab_size: 128
tie_embeddings: true
"""

MOE = MODEL.replace("d_ff: 256\nmlp: plain\nactivation: gelu\n",
                    "d_ff: 256\nmlp: gated\nactivation: silu\nmoe:\n  experts: 4\n  top_k: 2\n"
                    "  d_ff: 128\n")


@pytest.fixture
def prof(tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(MODEL)
    return profile(load_model(str(path)).spec, 32)


def lay(**kw) -> Layout:
    base = dict(tp=2, pp=2, dp=2, micro_batch=2, global_batch=8)
    return Layout(**{**base, **kw})


# ------------------------------------------------------------------------- per-axis volumes


def test_tensor_parallel_all_reduce(prof):
    # T = b·s = 2·32 = 64 tokens; an all-reduce buffer is T·d·2 bytes = 8,192. The stage holds
    # 2 layers, each 2 sublayers: 4 all-reduces forward, 4 backward per micro-batch; m = 8 /
    # (dp 2 · mb 2) = 2. Each rank sends 2(t−1)/t·S = S per all-reduce at t = 2:
    # 2 · (4 + 4) · 8,192 = 131,072 bytes.
    v = volumes(prof, lay())
    assert v["tp"].bytes == 131_072
    assert v["tp"].collectives == ("all-reduce: 4 forward and 4 backward per micro-batch over "
                                   "2 ranks, 8.19 kB each")  # 8,192 B
    # Full recomputation repeats the forward's 4: 2 · (4 + 8) · 8,192 = 196,608.
    assert volumes(prof, lay(recompute="full"))["tp"].bytes == 196_608


def test_sequence_parallel_same_bytes_per_collective_pair(prof):
    # With sequence parallelism each sublayer has an all-gather and a reduce-scatter forward
    # (2·4 = 8 per stage) and, as Megatron-LM runs it, all-gather, reduce-scatter and the
    # input's all-gather again backward (3·4 = 12); each sends (t−1)/t·S = 4,096:
    # m · 20 · 4,096 = 163,840.
    v = volumes(prof, lay(sequence_parallel=True))
    assert v["tp"].bytes == 163_840
    assert v["tp"].collectives.startswith("all-gather + reduce-scatter: 8 forward and 12 "
                                          "backward per micro-batch over 2 ranks")


def test_pipeline_sends(prof):
    # 2·v·m = 4 sends per step (activation forward, gradient backward per micro-batch), each
    # S/t = 4,096 bytes (Narayanan §4.1 scatter/gather), then an all-gather of S over the t
    # ranks: 4 · 4,096 + 4 · (1/2) · 8,192 = 32,768. Interleaving with v = 2 doubles it.
    assert volumes(prof, lay())["pp"].bytes == 32_768
    assert volumes(prof, lay(vp=2))["pp"].bytes == 65_536


def test_data_parallel_zero_stages(prof):
    # The last stage's device: 2 layers × (49,152 / 2 + 128) + the final norm 64 = Ψ = 49,472.
    # Over n = 2 ranks, 2-byte gradients: DDP all-reduce 2·(1/2)·Ψ·2 = 2Ψ = 98,944; ZeRO-1
    # reduce-scatter (1/2)·Ψ·2 + all-gather (1/2)·Ψ·2 = 98,944 as well. The tied embedding's
    # gradient (V·d/t·2 = 8,192) is all-reduced between the first and last stage.
    psi = 2 * (49_152 // 2 + 128) + 64
    tied = 128 * 64 // 2 * 2
    assert volumes(prof, lay(zero=0))["dp"].bytes == 2 * psi + tied
    assert volumes(prof, lay(zero=1))["dp"].bytes == 2 * psi + tied
    # ZeRO-2 reduce-scatters every micro-batch: m·Ψ + Ψ = 3Ψ; ZeRO-3 all-gathers the weights
    # forward and backward and reduce-scatters the gradients every micro-batch:
    # m · (2·Ψ + Ψ) = 6Ψ (1.5 × DDP per micro-batch, Rajbhandari et al. §7.2.2).
    assert volumes(prof, lay(zero=2))["dp"].bytes == 3 * psi + tied
    assert volumes(prof, lay(zero=3))["dp"].bytes == 6 * psi + tied
    # and the collectives say so
    assert "reduce-scatter of the weights' gradients every micro-batch and all-gather" in \
        volumes(prof, lay(zero=2))["dp"].collectives
    assert "reduce-scatter of the weights' gradients once per step and all-gather" in \
        volumes(prof, lay(zero=1))["dp"].collectives
    # fp32 gradients double the gradient bytes: DDP 4Ψ.
    assert volumes(prof, lay(zero=0, grad_fp32=True))["dp"].bytes == 4 * psi + 2 * tied


def test_one_rank_axes_carry_nothing_and_say_so(prof):
    # tp 1, pp 1: no tensor- or pipeline-parallel traffic, and the report names why
    v = volumes(prof, lay(tp=1, pp=1))
    assert (v["tp"].bytes, v["tp"].collectives) == (0, "none (tp 1)")
    assert (v["pp"].bytes, v["pp"].collectives) == (0, "none (pp 1)")


def test_context_parallel_ring(prof):
    # cp = 2 (flash): T = 2·32/2 = 32 tokens per device; K and V are 2·64 = 128 values per
    # token, split by t = 2: 32·128·2/2 = 4,096 bytes per ring step. Per micro-batch (cp−1) =
    # 1 step per layer forward, 2 backward, 2 layers: 6 steps; m = 8 / (2·2) = 2: 49,152.
    v = volumes(prof, lay(cp=2, flash=True))
    assert v["cp"].bytes == 2 * 6 * 4_096


def test_expert_all_to_all(tmp_path):
    # MoE: 4 experts, top-2. ep = 2, tp = 1, dp = 2, mb 2, pp 1: m = 2. T = 64 tokens; one
    # all-to-all buffer is T·k·d·2 = 64·2·64·2 = 16,384 bytes, of which (e−1)/e = 1/2
    # leaves the device. 4 MoE layers × (2 forward + 2 backward) per micro-batch:
    # 2 · 16 · 8,192 = 262,144.
    path = tmp_path / "moe.yaml"
    path.write_text(MOE)
    p = profile(load_model(str(path)).spec, 32)
    v = volumes(p, Layout(tp=1, pp=1, dp=2, ep=2, micro_batch=2, global_batch=8))
    assert v["ep"].bytes == 262_144


def test_dense_and_expert_gradients_are_reduced_over_their_own_ranks(tmp_path):
    # The MoE model: per layer q, k, v, o 4·64² = 16,384, two norms 128, the router 64·4 =
    # 256; 4 layers, the tied table 128·64 = 8,192 and the final norm 64: 75,328 dense.
    # Experts: 4 × 3·64·128 = 98,304 a layer, 393,216 in all, 196,608 a device at ep 2.
    # dp 4, ZeRO 0, bf16 gradients: the dense all-reduce over 4 sends 2·3/4 · 2 · 75,328 =
    # 225,984 bytes; the experts' over 4 / 2 = 2 ranks sends 2·1/2 · 2 · 196,608 = 393,216.
    path = tmp_path / "moe.yaml"
    path.write_text(MOE)
    p = profile(load_model(str(path)).spec, 32)
    v = volumes(p, Layout(tp=1, pp=1, dp=4, ep=2, micro_batch=2, global_batch=8))["dp"]
    assert v.bytes == 225_984 + 393_216
    assert "over 4" in v.collectives and "expert weights' gradients once per step over 2" \
        in v.collectives


# ------------------------------------------------------------------------------ collectives


def test_nccl_ring_latency_and_bus_bandwidth():
    net = Net.of(load_network("dgx-h100").spec)
    # NCCL tuning.cc: base 8.4 µs + 2(n−1) = 14 steps × 3.4 µs on NVLink = 56 µs.
    assert ring("allreduce", 1e-30, 8, 1.0, net.base, net.lat_up) == pytest.approx(56e-6)
    # A 16 GiB all-reduce on 8 GPUs: latency + 2·7/8·S / (450 GB/s × 80%).
    size = 16 * 2**30
    t = collective("allreduce", size, 8, 8, net)
    assert t == pytest.approx(56e-6 + 2 * 7 / 8 * size / 360e9)
    # all-reduce = reduce-scatter + all-gather in bytes: factor 2(n−1)/n = 2 × (n−1)/n
    assert factor("allreduce", 64) == 2 * factor("reducescatter", 64)
    # Two nodes of 8: a flat ring at min(360, 8 × 40) = 320 GB/s each way per rank.
    t16 = collective("allreduce", size, 16, 8, net)
    assert t16 <= 2 * 15 / 16 * size / 320e9 + 1e-3


def test_mesh_uses_the_links_of_the_group():
    # MI300X: 7 Infinity Fabric links of 64 GB/s each way; a pair uses one of them.
    net = Net.of(load_network("mi300x").spec)
    assert net.up_for(2) == pytest.approx(net.up / 7)
    assert net.up_for(8) == net.up


# ------------------------------------------------------------------------------- the bubble


@pytest.mark.parametrize("p, v, m", [(2, 1, 4), (2, 2, 4)])
def test_bubble_fraction(tmp_path, p, v, m):
    # 1F1B: bubble = (p−1)·(t_f + t_b), the m micro-batches m·(t_f + t_b): ratio (p−1)/m;
    # interleaved (p−1)/(v·m) (Narayanan et al. 2021 §2.2). tp 1, dp 1, cp 1: no
    # communication inside a micro-batch, so the compute lines are the m micro-batches'.
    path = tmp_path / "hand.yaml"
    path.write_text(MODEL.replace("n_layers: 4", "n_layers: 8"))
    prof = profile(load_model(str(path)).spec, 32)
    from flopcalc.commands.common import machine as _machine

    _, res = _machine("h100", "bf16", p, None, None, None)
    # a graph replays the step: this toy's kernels are shorter than their launches, and the
    # device's wait for the host is not compute
    lay = Layout(tp=1, pp=p, vp=v, dp=1, micro_batch=1, global_batch=m, cuda_graph=True)
    t = step_time(prof, lay, res.machine, "estimate")
    busy = sum(t.compute.values())
    assert Fraction(t.bubble / busy).limit_denominator(100) == Fraction(p - 1, v * m)


@pytest.mark.parametrize("kind", ["all-reduce", "ALLREDUCE", "p2p", None])
def test_a_collective_is_one_of_four(kind):
    # the formulas compare the kind with "allreduce" and "alltoall": another name would be
    # timed silently as an all-gather
    net = Net.of(load_network("dgx-h100").spec)
    with pytest.raises(ValueError) as raised:
        collective(kind, 1e6, 8, 8, net)
    assert str(raised.value) == ("a collective is one of allreduce, reducescatter, allgather, "
                                 f"alltoall, got {kind!r}")


@pytest.mark.parametrize("kind", ["allreduce", "reducescatter", "allgather", "alltoall"])
def test_a_collective_over_one_rank_or_no_bytes_takes_no_time(kind):
    # nothing leaves the rank: not even the ring's base latency is paid
    net = Net.of(load_network("dgx-h100").spec)
    assert collective(kind, 1e6, 1, 8, net) == 0.0
    assert collective(kind, 0, 8, 8, net) == 0.0
    assert collective(kind, 0, 16, 8, net) == 0.0  # two domains: no latency either
    assert collective(kind, 1e6, 2, 8, net) > 0


def test_pipeline_sends_gather_only_after_a_tensor_parallel_split(prof):
    # tp 1: the whole activation goes to the next stage and nothing is gathered after it:
    # 4 sends of S = 2·32·64·2 = 8,192 bytes
    v = volumes(prof, lay(tp=1))["pp"]
    assert v.bytes == 4 * 8_192
    assert "all-gather" not in v.collectives
    assert "all-gather" in volumes(prof, lay())["pp"].collectives
    assert "all-gather" not in volumes(prof, lay(sequence_parallel=True))["pp"].collectives


def test_a_group_that_spills_into_a_second_domain_crosses_it():
    # 12 ranks, 8 to a domain: they span k = 2 domains, so the all-gather of S = 1e6 bytes is
    # two-level, never the single in-domain ring (1e-5 + 11 µs + 11/12·S/1e9 = 937.7 µs):
    # flat: 11 steps, 1 across, 11/12 of S at min(1e9, 8·1e10): 25 µs + 916.7 µs;
    # hierarchy: 8 ranks inside (10 + 7 µs + 7/8·S/1e9) and 2 across (10 + 5 µs + ½·(S/8)/1e10)
    # = 913.25 µs, the faster
    net = Net(domain=8, up=1e9, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6)
    flat = 1e-5 + 10 * 1e-6 + 5e-6 + 11 / 12 * 1e6 / 1e9
    hier = (1e-5 + 7 * 1e-6 + 7 / 8 * 1e6 / 1e9) + (1e-5 + 5e-6 + 1e6 / 8 / 2 / 1e10)
    assert collective("allgather", 1e6, 12, 8, net) == pytest.approx(min(flat, hier), rel=1e-12)
    assert min(flat, hier) == pytest.approx(913.25e-6, rel=1e-12)


def test_two_level_collectives_by_hand():
    # 16 ranks, 8 to a domain (k = 2 domains): scale-up 1e9 B/s, NICs 1e10 B/s, base 10 µs,
    # 1 µs a step inside, 5 µs across. An all-to-all of S = 1e6 bytes: base + n·5 µs + the
    # slower of 7/16 of S over the links (437.5 µs) and 8/16 of S through the NICs (50 µs)
    net = Net(domain=8, up=1e9, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6)
    assert collective("alltoall", 1e6, 16, 8, net) == pytest.approx(
        1e-5 + 16 * 5e-6 + 7 / 16 * 1e6 / 1e9, rel=1e-12)
    fast_links = Net(domain=8, up=1e11, out=1e9, base=1e-5, lat_up=1e-6, lat_out=5e-6)
    assert collective("alltoall", 1e6, 16, 8, fast_links) == pytest.approx(
        1e-5 + 16 * 5e-6 + 8 / 16 * 1e6 / 1e9, rel=1e-12)
    # an all-reduce: the least of a flat ring (30 steps, 2 of them across, × 1.4 latency, at
    # min(up, 8·out)), the hierarchy (reduce-scatter in the domain, all-reduce of S/8 across,
    # all-gather back) and the double binary tree
    # with slow NICs (1e9 against 1e10 links) the flat ring wins for large buffers
    for up, out in ((1e9, 1e10), (1e10, 1e9)):
        net = Net(domain=8, up=up, out=out, base=1e-5, lat_up=1e-6, lat_out=5e-6)
        for S in (1e2, 1e6, 1e9):
            flat_bw = min(up, 8 * out)
            flat = (1e-5 + 28 * 1e-6 + 2 * 5e-6) * 1.4 + 2 * 15 / 16 * S / flat_bw
            hier = ((1e-5 + 7 * 1e-6 + 7 / 8 * S / up) + (1e-5 + 2 * 5e-6 + S / 8 / out)
                    + (1e-5 + 7 * 1e-6 + 7 / 8 * S / up))
            tree = 1e-5 + 2 * (7 * 1e-6 + 1 * 5e-6) + 2 * S / (0.92 * flat_bw)
            assert collective("allreduce", S, 16, 8, net) == pytest.approx(
                min(flat, hier, tree), rel=1e-12)
            # an all-gather: flat (15 steps, 1 across) or the hierarchy
            flat = 1e-5 + 14 * 1e-6 + 5e-6 + 15 / 16 * S / flat_bw
            hier = (1e-5 + 7 * 1e-6 + 7 / 8 * S / up) + (1e-5 + 5e-6 + S / 8 / 2 / out)
            assert collective("allgather", S, 16, 8, net) == pytest.approx(min(flat, hier),
                                                                           rel=1e-12)


def test_collective_sizes_in_the_report_are_decimal_units_to_three_figures():
    assert [_b(Fraction(x)) for x in (0, 999, 1000, 999_999, 10**6, 1_234_567, 10**9,
                                      2_250_000_000)] == [
        "0 B", "999 B", "1 kB", "1e+03 kB", "1 MB", "1.23 MB", "1 GB", "2.25 GB"]
