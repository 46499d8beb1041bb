"""Expert parallelism as Megatron-Core lays it out: expert groups drawn from the t·c·n ranks
of a pipeline stage (ep may exceed dp), expert tensor parallelism, the dispatch volume of the
tokens a device holds under sequence parallelism, the dispatchers, and which ranks share a
node, checked against Megatron-Core's own rank generator where it is installed.

Figures are worked by hand in the comments from the formulas the docstrings of
`predict/communication.py` and `predict/collectives.py` state (the papers' and NCCL's), not
from the code. The model is tests/predict/test_communication.py's MoE: 4 layers, d 64, 4
experts, top-2, seq 32.
"""

from __future__ import annotations

import pytest

from flopcalc.predict import steptime as S
from flopcalc.predict.collectives import Net, collective, dispatch
from flopcalc.predict.communication import volumes
from flopcalc.models.registry import load_model

from tests.predict.test_communication import MOE

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

NET = Net(domain=2, up=1e11, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6)


@pytest.fixture
def moe(tmp_path):
    path = tmp_path / "moe.yaml"
    path.write_text(MOE)
    return S.profile(load_model(str(path)).spec, 32)


def test_dispatch_carries_the_tokens_a_device_holds_under_sequence_parallelism(moe):
    # tp 2, dp 2, ep 4 (4 divides tp x dp = 4, though not dp), mb 2, global batch 8:
    # m = 8 / (2·2) = 2 micro-batches. A device holds T/t = 2·32/2 = 32 tokens; their top-2
    # copies are 32·2·64·2 = 8,192 bytes, of which (4−1)/4 = 6,144 leave it per dispatch (or
    # combine). 4 MoE layers × (2 forward + 2 backward) × m 2 = 32 of them: 196,608 bytes.
    lay = S.Layout(tp=2, dp=2, ep=4, micro_batch=2, global_batch=8, sequence_parallel=True)
    assert volumes(moe, lay)["ep"].bytes == 196_608
    # The same 8 sequences at tp 1, dp 4: T = 64 tokens a device, m = 1: 16,384 bytes a
    # buffer, 12,288 out, 16 dispatches: the same 196,608. (Without the division by t, tp 2
    # would send twice as much for the same tokens.)
    assert volumes(moe, S.Layout(dp=4, ep=4, micro_batch=2,
                                 global_batch=8))["ep"].bytes == 196_608


def test_expert_tensor_parallelism_gathers_the_dispatched_tokens(moe):
    # etp 2 adds, per dispatch, an all-gather of the 2 ranks' routed tokens: (2−1)·8,192 =
    # 8,192 bytes out; 32 of them: 262,144 on top of the all-to-all's 196,608 (ep 2 of the
    # 4 ranks: (2−1)/2 · 8,192 = 4,096 each, 131,072 in all).
    lay = S.Layout(tp=2, dp=2, ep=2, etp=2, micro_batch=2, global_batch=8,
                   sequence_parallel=True)
    assert volumes(moe, lay)["ep"].bytes == 131_072 + 262_144


def test_flex_dispatch_crosses_to_each_other_domain_once():
    # ep 4 over domains of 2: 2 domains. A token's 2 copies reach the other domain with
    # probability 1 − (1/2)² = 3/4, so the NIC carries 8,192 / 2 · 3/4 = 3,072 bytes (3.072e-7
    # s at 1e10 B/s); the fast domain a token once per other rank it reaches: 4·(1 − (3/4)²)
    # = 7/4 ranks hit, 3/4 of them other ranks: 4,096 · 7/4 · 3/4 = 5,376 bytes (5.376e-8 s).
    # Latency: base 1e-5 + 2 domains × 5e-6.
    assert dispatch("flex", 8192, 2, 4, 2, NET) == pytest.approx(2e-5 + 3.072e-7, rel=1e-12)
    # The all-to-all sends (4−2)/4 of the buffer, 4,096 bytes, through the NIC: 4.096e-7 s
    # after base + 4 ranks × 5e-6
    assert dispatch("alltoall", 8192, 2, 4, 2, NET) == pytest.approx(3e-5 + 4.096e-7, rel=1e-12)
    assert dispatch("alltoall", 8192, 2, 4, 2, NET) == collective("alltoall", 8192, 4, 2, NET)
    # inside one domain flex is an all-to-all of each token once per rank it reaches:
    # 2·(1 − (1/2)²) = 3/2 ranks of 2, a buffer of 4,096 · 3/2 = 6,144 bytes (not 8,192)
    assert dispatch("flex", 8192, 2, 2, 2, NET) == collective("alltoall", 6144, 2, 2, NET)
    # the all-gather dispatcher gathers the uncopied tokens, 4,096 bytes from each of 4
    assert dispatch("allgather", 8192, 2, 4, 2, NET) == collective("allgather", 16_384, 4, 2,
                                                                    NET)


def test_flex_dispatch_bound_by_the_fast_domain_sends_each_token_once_per_rank():
    # the same group with a NIC ten times NVLink: the fast domain decides. A token reaches
    # 4·(1 − (3/4)²) = 7/4 of the 4 ranks, 3/4 of them other ranks: 4,096 · 7/4 · 3/4 = 5,376
    # bytes at 1e11 B/s (every copy would be 6,144); latency base 1e-5 + 2 domains × 5e-6
    net = Net(domain=2, up=1e11, out=1e12, base=1e-5, lat_up=1e-6, lat_out=5e-6)
    assert dispatch("flex", 8192, 2, 4, 2, net) == pytest.approx(2e-5 + 5.376e-8, rel=1e-12)


def test_the_other_micro_batch_hides_the_dispatch(moe):
    mc = S.Machine(matmul_peak=1e15, attention_peak=5e14, hbm=4e12, matmul_share=0.8,
                   sms=100, attention_forward=dict.fromkeys(S.ENDS, 0.6),
                   attention_backward=dict.fromkeys(S.ENDS, 0.4),
                   memory_share=dict.fromkeys(S.ENDS, 0.8),
                   net=Net(domain=1, up=1e11, out=1e6, base=0, lat_up=0, lat_out=0))
    lay = S.Layout(dp=4, ep=4, micro_batch=1, global_batch=8, dispatcher="alltoall")
    shown = S.step_time(moe, lay, mc, "estimate")
    hidden = S.step_time(moe, S.Layout(**{**lay.__dict__, "moe_overlap": True}), mc,
                         "estimate")
    assert shown.exposed["ep"] == pytest.approx(shown.comm_all["ep"])  # all of it exposed
    # every layer is routed; the head is no part of one and hides nothing
    routed = shown.compute["gemm"] + shown.compute["attention"] + shown.compute["memory_bound"]
    # Megatron-Core's combined 1F1B pairs a forward with another micro-batch's backward, each
    # all-to-all beside one block of the pair's compute; at 10⁶ B/s every all-to-all outlasts
    # the block beside it, so a pair hides all its compute's time under its dispatches, less
    # the 20 of the 100 SMs their kernels hold meanwhile (DeepSeek-V3 Technical Report
    # §3.2.2). Of the 2 micro-batches the first forward and the last backward run unpaired:
    # half of the compute hides, at 80%
    assert hidden.exposed["ep"] == pytest.approx(shown.exposed["ep"] - routed / 2 * 0.8)


@pytest.mark.parametrize("args, ep", [
    # the Megatron-MoE model zoo's Qwen3-235B layouts: TP2 EP32 DP16 and TP2 PP32 EP8 DP4
    # (ep > dp in both), which `--ep must divide --dp` refused
    (["--tp", 2, "--pp", 8, "--vp", 4, "--ep", 32, "--count", 256], 32),
    (["--tp", 2, "--pp", 32, "--vp", 3, "--ep", 8, "--count", 256], 8),
    # expert tensor parallelism 2 under tp 2: ep 8 x etp 2 = 16 of the 32 ranks of a stage
    (["--tp", 2, "--pp", 8, "--ep", 8, "--etp", 2, "--count", 256], 8),
])
def test_layouts_that_ran_are_accepted(cli, args, ep):
    r = cli("step", "qwen3-235b-a22b", "--accelerator", "h100", "--global-batch", 2048,
            "--micro-batch", 1, "--recompute", "full", "--dropout", "off", "--seq", 4096,
            *map(str, args), "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["layout"]["ep"] == ep


@pytest.mark.parametrize("args, message", [
    (["--tp", 2, "--etp", 4, "--ep", 2, "--count", 16],
     "--etp 4 must divide --tp 2: an expert's tensor-parallel group lies inside the "
     "attention's"),
    (["--tp", 2, "--ep", 64, "--count", 32],  # 64 > tp x dp = 32
     "--ep 64 x --etp 1 = 64 must divide the tp x cp x dp = 32 devices of a pipeline stage"),
])
def test_bad_expert_layouts_are_one_line(cli, args, message):
    r = cli("step", "qwen3-30b-a3b", "--accelerator", "h100", "--global-batch", 64,
            *map(str, args))
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert message in r.err


LAYOUTS = [  # (tp, cp, dp, pp, ep, etp), world = tp·cp·dp·pp
    (2, 1, 16, 8, 32, 1), (1, 1, 32, 4, 32, 1), (4, 1, 8, 8, 8, 1), (2, 1, 8, 2, 8, 2),
    (1, 2, 8, 1, 8, 1), (8, 1, 4, 2, 16, 2), (2, 2, 4, 1, 4, 4),
]


@pytest.mark.torch
@pytest.mark.engine
@pytest.mark.parametrize("tp, cp, dp, pp, ep, etp", LAYOUTS)
def test_expert_groups_share_nodes_as_megatron_lays_them_out(tp, cp, dp, pp, ep, etp):
    # Megatron-Core's own rank generator (megatron-core on the package index, pure Python
    # over torch): the most ranks of one expert group, and of one expert-data-parallel group,
    # inside an 8-GPU node, against the placement the step model prices.
    parallel_state = pytest.importorskip("megatron.core.parallel_state")
    edp = tp * cp * dp // (ep * etp)
    gen = parallel_state.RankGenerator(tp=etp, ep=ep, dp=edp, pp=pp, cp=1,
                                       order="tp-cp-ep-dp-pp")

    def per_node(groups):
        return max(max(sum(1 for r in g if r // 8 == node) for node in {r // 8 for r in g})
                   for g in groups)

    where = S.placement(S.Layout(tp=tp, cp=cp, dp=dp, pp=pp, ep=ep, etp=etp),
                        Net(domain=8, up=1, out=1, base=0, lat_up=0, lat_out=0))
    assert where["ep"] == per_node(gen.get_ranks("ep"))
    assert where["edp"] == per_node(gen.get_ranks("dp"))


def test_llama_405b_on_1024_h100_fits_without_recomputation(cli):
    # Megatron-Bridge's Llama 3.1 405B on 1,024 H100 (tp 8, pp 8, cp 2, vp 8, FP8, 26.04-26.06)
    # runs without recomputation. Counted as Megatron-Core keeps its tensors (the fused SwiGLU
    # saves its gate-and-up input and its output: 3 hidden tensors, not eager PyTorch's 4) the
    # first stage needs 83.2 GB of the 85.5 GB an H100 offers; with 4 it was 90.1 GB and the
    # estimate switched to full recomputation.
    r = cli("memory", "llama-3.1-405b", "--accelerator", "h100", "--tp", 8, "--pp", 8, "--cp", 2,
            "--count", 1024, "--batch", 1, "--seq", 8192, "--fp8", "--zero", 1,
            "--sequence-parallel", "--grad-fp32", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["fits"] is True
    s = cli("step", "llama-3.1-405b", "--accelerator", "h100", "--tp", 8, "--pp", 8, "--cp", 2,
            "--vp", 8, "--count", 1024, "--global-batch", 1536, "--micro-batch", 1, "--seq",
            8192, "--dtype", "fp8", "--zero", 1, "--sequence-parallel", "--grad-fp32",
            "--dropout", "off", "-f", "json")
    assert s.code == 0, s.err
    assert s.json()["layout"]["recompute"] == "none"
