"""The serving step's cost model (`predict/latency.py`) in small pieces, each worked by hand:
bytes a collective sends per device (nccl-tests' bus-bandwidth factors), the raw-link bound
inside and across a domain, a step's roofline and which side binds, each tensor's share of a
device, and the collectives a forward waits for under tensor, expert and pipeline
parallelism."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from flopcalc.commands import load
from flopcalc.predict import latency as L
from flopcalc.engines.vllm import Engine
from flopcalc.kinds.base import COLUMN, EXPERT, REPLICATED, ROW, VOCAB, WEIGHTS, Part
from flopcalc.models.networks import load_network

pytestmark = pytest.mark.hand

DATA = Path(__file__).resolve().parents[1] / "data" / "serve"


@pytest.mark.parametrize("kind, sent", [("allreduce", 150), ("alltoall", 75), ("p2p", 100)])
def test_bytes_each_device_sends(kind, sent):
    # a 100-byte buffer on 4 ranks: all-reduce 2·3/4, all-to-all 3/4, a send all of it
    c = L.Collective(kind, 100, 4, 3)
    assert c.sent == sent
    assert L.Step(Fraction(0), Fraction(0), (c,)).comm_bytes == 3 * sent


def test_the_raw_link_bound_inside_and_across_a_domain():
    spec = load_network("dgx-h100").spec
    net = L.Network("dgx-h100", spec)
    inside = L.Collective("allreduce", 1000, spec.domain_size, 2)
    # 2 x 2(n - 1)/n x 1000 bytes over one device's scale-up links
    n = spec.domain_size
    assert net.bound_s(inside) == Fraction(2 * 2 * (n - 1) * 1000, n) / spec.scale_up_bandwidth
    across = L.Collective("allreduce", 1000, 2 * n, 1)
    bw = min(spec.scale_up_bandwidth, n * spec.scale_out_bandwidth)
    assert net.bound_s(across) == Fraction(2 * (2 * n - 1) * 1000, 2 * n) / bw
    none = L.Network("none", None)
    assert none.bound_s(inside) == 0 and none.estimate_s(inside) == 0
    assert net.estimate_s(inside) > net.bound_s(inside)  # latency and the links' share


def test_a_steps_roofline_and_what_binds():
    s = L.Speeds(peak=100, bandwidth=10, compute_efficiency=Fraction(1, 2),
                 memory_efficiency=Fraction(1, 4))
    step = L.Step(Fraction(200), Fraction(30))
    assert step.compute_s(s, False) == 2 and step.compute_s(s, True) == 4
    assert step.memory_s(s, False) == 3 and step.memory_s(s, True) == 12
    none = L.Network("none", None)
    assert step.seconds(s, none, False) == 3 and step.seconds(s, none, True) == 12
    assert step.binds(s) == "memory"
    assert L.Step(Fraction(300), Fraction(30)).binds(s) == "compute"  # a tie binds compute
    both = step + L.Step(Fraction(1), Fraction(2), (L.Collective("p2p", 5, 2, 1),))
    assert (both.flops, both.bytes, both.collectives) == (201, 32, 1)


@pytest.mark.parametrize("role, tp, ep, part", [
    (REPLICATED, 4, 1, 1), (COLUMN, 4, 1, Fraction(1, 4)), (ROW, 4, 1, Fraction(1, 4)),
    (VOCAB, 4, 1, Fraction(1, 4)), (EXPERT, 4, 1, Fraction(1, 4)), (EXPERT, 4, 8, Fraction(1, 8)),
    (COLUMN, 4, 8, Fraction(1, 4))])
def test_the_share_of_a_tensor_one_device_holds(role, tp, ep, part):
    p = Part("w", 10, WEIGHTS, role=role)
    assert L.share(p, L.Layout(tp=tp, ep=ep)) == part


def test_the_collectives_of_a_forward():
    # tiny-moe: 2 layers of attention and a mixture of 4 experts (top 2), d 8. A forward of 3
    # tokens moves 3 x 8 x 2 = 48-byte activations. tp 2, ep 2, pp 2: the attention sublayers
    # all-reduce (2 of the 4 sublayers: the MoE ones dispatch instead), each MoE layer
    # dispatches and combines its tokens' 2 copies (96 bytes), one send between the 2 stages
    spec = load(str(DATA / "tiny-moe.yaml")).spec
    costs = L.DeviceCosts(spec, L.Layout(tp=2, pp=2, ep=2), Engine(max_model_len=64), "bf16")
    assert costs.comm(3) == (L.Collective("allreduce", 48, 2, 2),
                             L.Collective("alltoall", 96, 2, 4),
                             L.Collective("p2p", 48, 2, 1))
    # without expert parallelism every sublayer all-reduces
    costs = L.DeviceCosts(spec, L.Layout(tp=2), Engine(max_model_len=64), "bf16")
    assert costs.comm(3) == (L.Collective("allreduce", 48, 2, 4),)
    assert L.DeviceCosts(spec, L.Layout(), Engine(max_model_len=64), "bf16").comm(3) == ()


def test_weight_bytes_read_by_a_forward_by_hand():
    # tiny-moe in bf16 on one device: every tensor but the experts and the embedding table
    # (attention 192 + norms 16 + router 32 per layer, the head 128, final norm 8: 616
    # parameters, 1,232 bytes); the table's rows read (16 bytes each of 16 rows); per MoE layer
    # 4 experts of 192 parameters (1,536 bytes), of which one token reads its 2: 768 bytes
    spec = load(str(DATA / "tiny-moe.yaml")).spec
    costs = L.DeviceCosts(spec, L.Layout(), Engine(max_model_len=64), "bf16")
    assert costs.fixed == 1232
    assert costs.weight_bytes(1) == 1232 + 16 + 2 * 768
    # 100 tokens read every row; an expert stays unread with probability (C(3,2)/C(4,2))^100
    assert costs.weight_bytes(100) == 1232 + 256 + 2 * 1536 * (1 - Fraction(1, 2) ** 100)
    assert costs.held_weight_bytes() == 1232 + 256 + 2 * 1536
    # the cache: 1 KV head x (4 + 4) values x 2 bytes = 16 bytes a token and layer
    assert costs.token_bytes == 32 and costs.state_bytes == 0
    assert costs.held_kv_bytes(10) == 320
    # routed experts stored in fp8, the rest in bf16: each layer's 4 experts 768 bytes
    fp8 = L.DeviceCosts(spec, L.Layout(), Engine(max_model_len=64), "bf16", "fp8")
    assert fp8.fixed == 1232 and fp8.held_weight_bytes() == 1232 + 256 + 2 * 768
    assert fp8.weight_bytes(1) == 1232 + 16 + 2 * 384
    assert costs.kv_read_bytes(5, 6) == 2 * (5 + 6) * 16
