"""What one engine step costs a device, and how long it takes: the FLOPs and bytes of a forward
on one of `tp` tensor-parallel devices, the collectives it waits for, and two times: a roofline
bound and an estimate.

- FLOPs: the step's FLOPs (`counting.model`) divided by `tp`: tensor parallelism splits every
  matmul (heads, the feed-forward width, the vocabulary); pipeline stages run one after
  another, so a token's time is that of one device doing 1/tp of every stage.
- Bytes: each parameter tensor's share on a device (column, row and vocabulary-split tensors
  1/tp; routed experts 1/ep with expert parallelism, else 1/tp; norms and routers whole), of a
  mixture of experts the expected share of experts the step's tokens are routed to (uniform
  routing), of a lookup table the rows read; the KV cache a device holds (`engine` pages:
  KV heads split or replicated, a latent never split) for the keys each layer attends over,
  the new tokens' K/V, and each recurrent state read and written once.
- Collectives (Megatron-LM's tensor parallelism, Shoeybi et al. 2019 §3): one all-reduce of
  the T × d activations after every sublayer whose output projection is row-parallel (two per
  layer of attention and MLP); with expert parallelism a mixture of experts dispatches and
  combines its tokens by two all-to-alls of T·k·d values instead; pipeline stages pass T × d
  on. A ring all-reduce sends 2(n−1)/n of the buffer per device, an all-to-all (n−1)/n, a
  point-to-point send all of it (nccl-tests `doc/PERFORMANCE.md`); activations are 2 bytes.
- Bound: max(FLOPs / peak, bytes / bandwidth) + collective bytes / link bandwidth (the
  network preset's raw scale-up links, or its NICs for a group wider than a node): nothing
  faster is possible when the collectives sit on the critical path, as tensor parallelism's
  do. Estimate: compute at `compute_efficiency` of the peak, memory at `memory_efficiency`
  of the bandwidth, each collective as NCCL's alpha-beta model times it on the preset
  (`predict.collectives`: latency per step, the measured share of the links).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from ..kinds.base import EXPERT, REPLICATED, Part
from ..models.spec import ModelSpec
from ..models.networks import NetworkSpec
from .collectives import Net, collective, p2p
from ..engines.vllm import Engine, state_bytes, token_bytes
from ..counting.model import decode_flops

ACTIVATION_BYTES = 2  # bf16 activations between devices


@dataclass(frozen=True)
class Network:
    """The links between the devices of one replica: a network preset (`presets/networks/`,
    `models.networks.NetworkSpec`), or None when collectives are not timed."""

    name: str
    spec: Optional[NetworkSpec]

    def bound_s(self, c: "Collective") -> Fraction:
        """The collective's bytes per device over the raw link (no latency, no efficiency): a
        group inside one fast domain uses the scale-up links, a larger one its share of the
        NICs."""
        if self.spec is None:
            return Fraction(0)
        n = self.spec
        bw = n.scale_up_bandwidth if c.ranks <= n.domain_size else min(
            n.scale_up_bandwidth, n.domain_size * n.scale_out_bandwidth)
        return c.count * c.sent / bw

    def estimate_s(self, c: "Collective") -> Fraction:
        """NCCL's alpha-beta model on the preset (`predict.collectives`)."""
        if self.spec is None:
            return Fraction(0)
        net = Net.of(self.spec)
        per_domain = min(c.ranks, self.spec.domain_size)
        if c.kind == "p2p":
            t = p2p(c.size, c.ranks > self.spec.domain_size, net)
        else:
            t = collective(c.kind, c.size, c.ranks, per_domain, net)
        return c.count * Fraction(t)


@dataclass(frozen=True)
class Collective:
    """`count` collectives of one kind over `ranks` devices, each on a buffer of `size`
    bytes: `allreduce`, `alltoall`, or `p2p` (a send to the next pipeline stage)."""

    kind: str
    size: int
    ranks: int
    count: int

    @property
    def sent(self) -> Fraction:
        """Bytes one device sends per collective (nccl-tests' bus-bandwidth factor)."""
        if self.kind == "p2p":
            return Fraction(self.size)
        f = 2 * (self.ranks - 1) if self.kind == "allreduce" else self.ranks - 1
        return Fraction(f * self.size, self.ranks)


@dataclass(frozen=True)
class Speeds:
    """What a device does per second: dense peak FLOP/s, memory bytes/s, and the shares of
    each the estimate assumes."""

    peak: int
    bandwidth: int
    compute_efficiency: Fraction
    memory_efficiency: Fraction


@dataclass(frozen=True)
class Step:
    """One forward on one device: FLOPs, bytes from memory, and the collectives it waits
    for."""

    flops: Fraction
    bytes: Fraction
    comms: tuple[Collective, ...] = ()

    def __add__(self, other: "Step") -> "Step":
        return Step(self.flops + other.flops, self.bytes + other.bytes,
                    self.comms + other.comms)

    @property
    def comm_bytes(self) -> Fraction:
        return sum((c.count * c.sent for c in self.comms), Fraction(0))

    @property
    def collectives(self) -> int:
        return sum(c.count for c in self.comms)

    def compute_s(self, s: Speeds, estimate: bool) -> Fraction:
        return self.flops / (s.peak * (s.compute_efficiency if estimate else 1))

    def memory_s(self, s: Speeds, estimate: bool) -> Fraction:
        return self.bytes / (s.bandwidth * (s.memory_efficiency if estimate else 1))

    def comm_s(self, net: Network, estimate: bool) -> Fraction:
        f = net.estimate_s if estimate else net.bound_s
        return sum((f(c) for c in self.comms), Fraction(0))

    def seconds(self, s: Speeds, net: Network, estimate: bool) -> Fraction:
        return (max(self.compute_s(s, estimate), self.memory_s(s, estimate))
                + self.comm_s(net, estimate))

    def binds(self, s: Speeds) -> str:
        return "compute" if self.compute_s(s, False) >= self.memory_s(s, False) else "memory"


@dataclass(frozen=True)
class Layout:
    """How one replica is split: tensor, pipeline and expert parallelism."""

    tp: int = 1
    pp: int = 1
    ep: int = 1


def share(p: Part, layout: Layout) -> Fraction:
    """The fraction of a tensor one device of the replica holds (summed over the pipeline
    stages a token passes: the whole model's share)."""
    if p.role == REPLICATED:
        return Fraction(1)
    if p.role == EXPERT and layout.ep > 1:
        return Fraction(1, layout.ep)
    return Fraction(1, layout.tp)


class DeviceCosts:
    """Per-device costs of a model's forwards under a layout, weights in `fmt` (routed experts
    in `experts`), caches as `engine` pages them."""

    def __init__(self, spec: ModelSpec, layout: Layout, engine: Engine, fmt: Any,
                 experts: Optional[str] = None):
        from ..models.quantization import Plan, plan_from_flags
        from ..counting.storage import stored

        self.spec, self.layout, self.engine = spec, layout, engine
        plan = fmt if isinstance(fmt, Plan) else plan_from_flags(fmt, experts)
        self.fmt, self.experts = fmt, experts
        self.fixed = Fraction(0)  # every tensor but routed experts and lookup tables
        self.lookups: list[tuple[Fraction, int]] = []  # (device bytes, rows)
        # per MoE kind and its layers' bytes: [layers, kind, device bytes of all its experts]
        moe: dict[tuple[int, Fraction], list[Any]] = {}
        per_layer: dict[tuple[int, int], list[Any]] = {}
        for s in stored(spec, plan):
            b = s.bytes * share(s.part, layout)
            if s.part.lookup:
                self.lookups.append((b, s.part.shape[0]))
            elif s.part.role != EXPERT:
                self.fixed += b
            elif s.layer is not None:
                per_layer.setdefault((s.layer, id(s.kind)), [s.kind, Fraction(0)])[1] += b
        for kind, b in per_layer.values():  # identical layers gathered: one reads() each
            moe.setdefault((id(kind), b), [0, kind, b])[0] += 1
        self.moe = [tuple(m) for m in moe.values()]
        sparse = any(c.layout == "indexer" for g in spec.groups("decoder")
                     for _, k in g.layer.slots() for c in k.engine_cache(layout.tp))
        # per decoder group: (layers, kind, device bytes per cached value, token bytes, state)
        self.caches = []
        for g in spec.groups("decoder"):
            for _, kind in g.layer.slots():
                caches = kind.engine_cache(layout.tp)
                tok = sum(token_bytes(c, engine, sparse) for c in caches if c.layout != "state")
                st = sum(state_bytes(c, engine) for c in caches if c.layout == "state")
                per_value = Fraction(tok, kind.cache().per_token) if kind.cache().per_token \
                    else Fraction(0)
                self.caches.append((g.count, kind, per_value, tok, st))
        self.sublayers = sum(g.count * len(g.layer.sublayers()) for g in spec.groups("decoder"))
        self.moe_sublayers = sum(count for count, _, _ in self.moe)

    # ------------------------------------------------------------------------------ bytes

    def weight_bytes(self, tokens: int) -> Fraction:
        """Weight bytes a device reads in a forward over `tokens` tokens."""
        total = self.fixed + sum((b * min(tokens, rows) / rows for b, rows in self.lookups),
                                 Fraction(0))
        for count, kind, b in self.moe:
            reads = kind.reads(self.spec.d_model, tokens)
            total += count * b * Fraction(reads.expected) / reads.experts
        return total

    def held_weight_bytes(self) -> Fraction:
        """Weight bytes one device of the replica holds, summed over pipeline stages."""
        return (self.fixed + sum((b for b, _ in self.lookups), Fraction(0))
                + sum((count * b for count, _, b in self.moe), Fraction(0)))

    @property
    def token_bytes(self) -> int:
        """Cache bytes one token adds on a device, every layer."""
        return sum(count * tok for count, _, _, tok, _ in self.caches)

    @property
    def state_bytes(self) -> int:
        """Fixed state bytes of one sequence on a device, every layer."""
        return sum(count * st for count, _, _, _, st in self.caches)

    def kv_read_bytes(self, first: int, last: int) -> Fraction:
        """Cache bytes one sequence's decode steps at positions first..last read on a
        device: each layer's attended keys (`Kind.cache_reads`), at the device's bytes per
        cached value."""
        return sum((count * kind.cache_reads(first, last) * per_value
                    for count, kind, per_value, _, _ in self.caches), Fraction(0))

    def held_kv_bytes(self, tokens: int) -> int:
        """Cache bytes of one sequence of `tokens` tokens on a device (windows hold their
        last w)."""
        return sum(count * kind.cache().tokens_held(tokens) * tok
                   for count, kind, _, tok, _ in self.caches)

    # ------------------------------------------------------------------------ collectives

    def comm(self, tokens: int) -> tuple[Collective, ...]:
        """The collectives a device waits for in a forward over `tokens` tokens."""
        t = self.layout
        buffer = tokens * self.spec.d_model * ACTIVATION_BYTES
        dense = self.sublayers - (self.moe_sublayers if t.ep > 1 else 0)
        out = []
        if t.tp > 1 and dense:
            out.append(Collective("allreduce", buffer, t.tp, dense))
        if t.ep > 1:
            for n, kind, _ in self.moe:
                k = kind.reads(self.spec.d_model, 1).top_k
                out.append(Collective("alltoall", buffer * k, t.ep, 2 * n))
        if t.pp > 1:
            out.append(Collective("p2p", buffer, t.pp, t.pp - 1))
        return tuple(out)

    # ------------------------------------------------------------------------------ steps

    def decode(self, first: int, last: int, batch: int) -> Step:
        """The decode step that feeds tokens at positions first..last of each of `batch`
        sequences at once (one position: a plain decode step; k + 1: a speculative verify)."""
        n = last - first + 1
        flops = Fraction(sum(p.value for p in decode_flops(self.spec, first, last, batch)),
                         self.layout.tp)
        kv = batch * self.kv_read_bytes(last, last)  # the context, read once
        written = batch * n * self.token_bytes
        states = 2 * batch * self.state_bytes
        return Step(flops, self.weight_bytes(batch * n) + kv + written + states,
                    self.comm(batch * n))

    def decode_steps(self, first: int, last: int, batch: int) -> Step:
        """The plain decode steps at positions first..last, one after another, summed (a draft
        model's k steps): `decode(i, i, batch)` for each i, in closed form in the step count
        (the FLOPs and the keys read are sums over positions; the rest is n times a step's)."""
        n = last - first + 1
        flops = Fraction(sum(p.value for p in decode_flops(self.spec, first, last, batch)),
                         self.layout.tp)
        kv = batch * self.kv_read_bytes(first, last)
        per_step = self.weight_bytes(batch) + batch * self.token_bytes + 2 * batch * \
            self.state_bytes
        comms = tuple(replace(c, count=c.count * n) for c in self.comm(batch))
        return Step(flops, n * per_step + kv, comms)

    def prefill_chunk(self, flops: int, start: int, end: int) -> Step:
        """A prefill chunk of one sequence, tokens start+1..end (`flops` of the whole model):
        the weights once, the cache of the first `start` tokens read, the chunk's written."""
        tokens = end - start
        kv = self.held_kv_bytes(start) + tokens * self.token_bytes + 2 * self.state_bytes
        return Step(Fraction(flops, self.layout.tp), self.weight_bytes(tokens) + kv,
                    self.comm(tokens))
