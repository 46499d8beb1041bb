"""Time of one collective on a two-level network: the alpha-beta model NCCL's own tuner uses.

Conventions (NVIDIA/nccl-tests doc/PERFORMANCE.md, lines 52-63, 73-79, 91-97, 134-145 at
a0b82b2): a collective over a buffer of S bytes on n ranks sends factor(n)·S bytes per rank,
with factor = 2(n-1)/n for all-reduce and (n-1)/n for reduce-scatter, all-gather and
all-to-all; at a bus bandwidth B its time is factor(n)·S / B.

Latency (NVIDIA/nccl src/graph/tuning.cc at 5067397c): a ring of n ranks takes nsteps = 2(n-1)
steps for all-reduce, n-1 otherwise (line 289); its latency is base + (nsteps - inter)·intra +
inter·inter_step, inter = the steps that cross domains (line 412), ×1.4 for multi-node
all-reduce rings ("plateau effect", line 649); a double binary tree (all-reduce only) costs
base + 2·((g-1)·intra + log2(k)·inter_step) (line 416) at 0.92 of the ring's bus bandwidth
(line 331) and twice its bytes per rank (algbw = busBw/2, line 380).

Two levels: a group of n ranks with g of them in each fast domain (k = ⌈n/g⌉ domains; a
group that leaves its last domain part-empty is costed as if it filled it). The model
takes the fastest of
  - a flat ring at min(B_up, g·B_out): each rank's NIC carries a 1/g share of the traffic that
    leaves the domain (NCCL builds one ring per NIC);
  - a hierarchical scheme: reduce-scatter inside the domain, the collective of S/g across the
    domains over every rank's NIC, all-gather inside the domain;
  - for all-reduce, a double binary tree;
as NCCL's tuner does with the same model. All-to-all sends (n-g)/n of S through the NIC and
(g-1)/n over the fast domain. A point-to-point send costs one step's latency plus S / B.

Bandwidths are the network preset's achievable ones (datasheet × measured share). On a mesh
(MI300X) a group of g < domain ranks inside the domain uses g-1 of the links.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..records import dataclass
from ..kinds.base import cdiv
from ..models.networks import NetworkSpec

KINDS = ("allreduce", "reducescatter", "allgather", "alltoall")
PLATEAU = 1.4  # NCCL tuning.cc: multi-node ring all-reduce latency factor (sm80 and later)
TREE_BW = 0.92  # NCCL tuning.cc: tree bus bandwidth relative to the ring's


def factor(kind: str, n: int) -> float:
    """Bytes each rank sends per byte of the buffer (NCCL's bus-bandwidth factor; 0 on one
    rank)."""
    return 2 * (n - 1) / n if kind == "allreduce" else (n - 1) / n


@dataclass(frozen=True)
class Net:
    """The figures the model reads, in seconds and bytes/s."""

    domain: int
    up: float  # achievable scale-up bandwidth per device, each way
    out: float  # achievable scale-out bandwidth per device, each way
    base: float
    lat_up: float
    lat_out: float
    mesh: bool = False

    @classmethod
    def of(cls, spec: NetworkSpec) -> "Net":
        return cls(spec.domain_size, spec.up, spec.out, spec.latency_base_ns * 1e-9,
                   spec.latency_scale_up_ns * 1e-9, spec.latency_scale_out_ns * 1e-9,
                   spec.topology == "mesh")

    def up_for(self, g: int) -> float:
        """Scale-up bandwidth a group of g ranks of one domain reaches (a mesh: g-1 links)."""
        if self.mesh and 1 < g < self.domain:
            return self.up * (g - 1) / (self.domain - 1)
        return self.up


def ring(kind: str, size: float, n: int, bw: float, base: float, step: float) -> float:
    """A ring collective of `size` bytes over n ranks at `bw` bytes/s each way."""
    if n <= 1 or size <= 0:
        return 0.0
    steps = 2 * (n - 1) if kind == "allreduce" else n - 1
    return base + steps * step + factor(kind, n) * size / bw


_TIMES: dict[tuple, float] = {}


def collective(kind: str, size: float, n: int, per_domain: int, net: Net) -> float:
    """Seconds for one collective of `size` bytes (the whole buffer) over n ranks, of which
    `per_domain` share each fast domain (remembered: a plan's search asks the same ones for
    many layouts; the size's type is in the key, as a Fraction and a float of one value may
    round differently)."""
    key = (kind, type(size), size, n, per_domain, net)
    found = _TIMES.get(key)
    if found is None:
        if len(_TIMES) > 100_000:
            _TIMES.clear()
        found = _TIMES[key] = _collective(kind, size, n, per_domain, net)
    return found


def _collective(kind: str, size: float, n: int, per_domain: int, net: Net) -> float:
    if kind not in KINDS:  # the formulas below compare kinds: another would pass as one
        raise ValueError(f"a collective is one of {', '.join(KINDS)}, got {kind!r}")
    if size <= 0:
        return 0.0
    g = max(1, min(per_domain, n))
    k = cdiv(n, g)  # domains the group spans (12 ranks, 8 to a domain: 2)
    up = net.up_for(g)
    if k == 1:
        return ring(kind, size, n, up, net.base, net.lat_up)
    if kind == "alltoall":
        return (net.base + n * net.lat_out
                + max((g - 1) / n * size / up, (n - g) / n * size / net.out))
    flat_bw = min(up, g * net.out)
    steps = 2 * (n - 1) if kind == "allreduce" else n - 1
    inter = 2 * (k - 1) if kind == "allreduce" else k - 1
    lat = net.base + (steps - inter) * net.lat_up + inter * net.lat_out
    if kind == "allreduce":
        lat *= PLATEAU
    flat = lat + factor(kind, n) * size / flat_bw
    if kind == "allreduce":
        hier = (ring("reducescatter", size, g, up, net.base, net.lat_up)
                + ring("allreduce", size / g, k, net.out, net.base, net.lat_out)
                + ring("allgather", size, g, up, net.base, net.lat_up))
        tree = (net.base + 2 * ((g - 1) * net.lat_up + math.log2(k) * net.lat_out)
                + 2 * size / (TREE_BW * flat_bw))
        return min(flat, hier, tree)
    hier = (ring(kind, size, g, up, net.base, net.lat_up)
            + ring(kind, size / g, k, net.out, net.base, net.lat_out))
    return min(flat, hier)


def p2p(size: float, across: bool, net: Net) -> float:
    """One point-to-point send of `size` bytes, across domains (NIC) or inside one (callers
    send only what exists: a stage's activations, a ring step's K/V)."""
    return (net.lat_out + size / net.out) if across else (net.lat_up + size / net.up)


DISPATCHERS = ("alltoall", "allgather", "flex")


ROUTINGS = ("uniform", "contiguous")


@lru_cache(maxsize=256)
def groups_hit(routing: str, top_k: float, experts: int, groups: int) -> float:
    """Expected number of `groups` equal groups of the routed experts (the ranks of an expert
    group, or its fast domains; experts spread evenly and in order over them) that one
    token's k routed copies reach:
    - `uniform`: the k experts chosen uniformly (a balanced router on average; Megatron-Core's
      --moe-router-force-load-balancing draws random logits): G·(1 − (1 − 1/G)^k);
    - `contiguous`: token t takes experts t·k … t·k + k − 1 (mod E), NeMo AutoModel's
      FakeBalancedGate (nemo_automodel/components/moe/layers.py at 89e3a9f: `indices =
      arange(tokens·k).view(-1, k) % n_experts`), which its benchmark configurations set
      (`fake_balanced_gate: true`): the mean over the E / gcd(E, k) windows it cycles through,
      exact.
    By symmetry a token's own group is among those hit with probability hit / G."""
    if groups <= 1:
        return float(groups)
    if routing == "contiguous" and experts >= groups and float(top_k).is_integer() and \
            float(experts).is_integer():
        k, experts = int(top_k), int(experts)
        per = experts / groups
        starts = experts // math.gcd(experts, k)
        total = sum(len({int(((s * k + i) % experts) // per) for i in range(k)})
                    for s in range(starts))
        return total / starts
    return groups * (1 - (1 - 1 / groups) ** top_k)


def _domains_hit(top_k: float, domains: int, routing: str = "uniform",
                 experts: int = 0) -> float:
    """Expected fast domains other than its own that a token's k routed copies reach:
    hit·(D−1)/D (`groups_hit`; uniform routing: (D−1)·(1 − (1 − 1/D)^k))."""
    if domains <= 1:
        return 0.0
    return groups_hit(routing, top_k, experts, domains) * (domains - 1) / domains


def _ranks_hit(top_k: float, n: int, routing: str, experts: int) -> float:
    """Expected ranks of an expert group of n other than its own that receive a token
    (DeepEP sends a token once to each rank holding one of its experts: `get_dispatch_layout`'s
    num_tokens_per_rank and is_token_in_rank, deep_ep/buffer.py)."""
    return groups_hit(routing, top_k, experts, n) * (n - 1) / n


def dispatch_bytes(dispatcher: str, size: float, top_k: float, ep: int,
                   routing: str = "uniform", experts: int = 0) -> float:
    """Bytes one device sends per dispatch (or combine) of its routed tokens (`size`: the
    buffer of its tokens' k copies) over an expert group of `ep` devices, in NCCL's convention:
    the all-to-all sends (ep−1)/ep of it; the all-gather dispatcher (Megatron-Core's
    `allgather`) sends each token once, uncopied, to every other rank: (ep−1)·size/k; `flex`
    (DeepEP) sends each token once to each other rank its experts sit on (`_ranks_hit`),
    and across domains once per domain (`dispatch`)."""
    if ep <= 1 or size <= 0:
        return 0.0
    if dispatcher == "allgather":
        return (ep - 1) * size / top_k
    if dispatcher == "flex":
        return size / top_k * _ranks_hit(top_k, ep, routing, experts)
    return (ep - 1) / ep * size


def dispatch(dispatcher: str, size: float, top_k: float, n: int, per_domain: int,
             net: Net, routing: str = "uniform", experts: int = 0) -> float:
    """Seconds of one dispatch (or combine) of the routed copies of a device's tokens
    (`size` bytes, k copies per token) over an expert group of n devices, `per_domain` of
    them to a fast domain:
    - `alltoall`: one all-to-all (Megatron-Core's default dispatcher);
    - `allgather`: an all-gather of the uncopied tokens over the group (each device keeps the
      ones its experts take), size/k bytes from each;
    - `flex` (DeepEP, as DeepSeek-V3 trains: its technical report §3.2.2): a token crosses to
      each other domain its experts sit in once, over the NIC, and reaches each rank holding
      one of its experts once over the fast domain (from its own rank, or forwarded on
      arrival): NIC bytes (size/k)·E[other domains hit], fast-domain bytes
      (size/k)·E[other ranks hit]; inside one domain an all-to-all of those bytes.
    Where the copies land follows `routing` (`groups_hit`; `experts` per layer).
    """
    if dispatcher not in DISPATCHERS:
        raise ValueError(f"a dispatcher is one of {', '.join(DISPATCHERS)}, got {dispatcher!r}")
    if n <= 1 or size <= 0:
        return 0.0
    if dispatcher == "allgather":
        return collective("allgather", n * size / top_k, n, per_domain, net)
    g = max(1, min(per_domain, n))
    k = cdiv(n, g)
    if dispatcher == "alltoall":
        return collective("alltoall", size, n, per_domain, net)
    ranks = size / top_k * groups_hit(routing, top_k, experts, n)  # once per rank hit
    if k == 1:
        return collective("alltoall", ranks, n, per_domain, net)
    nic = size / top_k * _domains_hit(top_k, k, routing, experts)
    fast = ranks * (n - 1) / n  # to its own domain's ranks, and forwarding on arrival
    return net.base + k * net.lat_out + max(fast / net.up_for(g), nic / net.out)
