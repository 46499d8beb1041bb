"""A mixture of experts in the feed-forward slot: a router d → E (with a bias in gpt-oss), E
routed experts of which each token uses top-k, and optionally shared experts every token uses
(Qwen2-MoE's with a sigmoid gate d → 1).

Per token the forward runs the router, k routed experts and the shared experts: what
FlopCounterMode counts with transformers' eager experts, since every token visits k distinct
experts. Routing's softmax and top-k selection are element-wise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..declare import Min
from .base import (ELEMENTWISE, LAYERS, REPLICATED, WEIGHTS, Keeping, Kind, Part, Published, Span,
                   prefixed)
from .mlp import Mlp
from .registry import Entry

EXACT_ROUTING_BATCH = 65_536  # beyond this many tokens (1 − k/E)^B is taken in floating point
ROUTER_PER_LOGIT = 4  # softmax over the experts: max-subtract, exp, sum, divide
SIGMOID = 4  # negate, exp, add, divide


@dataclass(frozen=True)
class ExpertReads:
    """Routed experts read per MoE layer by one forward over some tokens."""

    experts: int
    top_k: int
    least: int  # every token picks the same k
    expected: Fraction  # uniform routing: E·(1 − (1 − k/E)^tokens)
    most: int  # every token picks different ones: min(E, tokens·k)
    exact: bool  # False when `expected` was computed in floating point
    per_expert: int  # parameters of one routed expert


@dataclass(frozen=True)
class Moe(Kind):
    """`shared` (when given) is an MLP every token uses: `shared_count` experts fused into one
    as Hugging Face builds them; `shared_gate` is Qwen2-MoE's sigmoid gate d → 1 on it."""

    experts: int
    top_k: int
    expert: Mlp
    shared: Optional[Mlp] = None
    shared_count: int = 0
    shared_gate: bool = False
    router_bias: bool = False
    slot = "mlp"
    routed = True

    def __post_init__(self) -> None:
        if self.top_k > self.experts:
            raise ValueError(f"moe.top_k={self.top_k} must not exceed moe.experts="
                             f"{self.experts}")
        if (self.shared is None) != (self.shared_count == 0):
            raise ValueError("moe: shared experts need both a count and a width")
        if self.shared_gate and self.shared is None:
            raise ValueError("moe.shared_gate needs shared experts")

    def params(self, d: int, active: bool = False) -> list[Part]:
        """Router, every routed expert (only the top-k a token uses when `active`), shared
        experts and their gate."""
        parts = [Part("router.weight", d * self.experts, LAYERS, (d, self.experts), REPLICATED)]
        if self.router_bias:
            parts.append(Part("router.bias", self.experts, LAYERS, (self.experts,), REPLICATED))
        parts += prefixed("experts", self.expert.params(
            d, copies=self.top_k if active else self.experts, expert=True))
        if self.shared is not None:
            parts += prefixed("shared", self.shared.params(d))
            if self.shared_gate:
                parts.append(Part("shared_gate.weight", d, LAYERS, (d, 1), REPLICATED))
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.flops(d, x.tokens)

    def flops(self, d: int, tokens: int) -> list[Part]:
        """Router (T×d)·(d×E); each token's k routed experts; the shared experts and their gate
        (T×d)·(d×1) on every token."""
        parts = [Part("router", 2 * tokens * d * self.experts, WEIGHTS)]
        parts += prefixed("experts", self.expert.flops(d, tokens * self.top_k))
        if self.shared is not None:
            parts += prefixed("shared", self.shared.flops(d, tokens))
            if self.shared_gate:
                parts.append(Part("shared_gate", 2 * tokens * d, WEIGHTS))
        return parts

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.flops(d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The experts' bias adds and activations; routing: softmax over the E router logits,
        each token's k expert outputs scaled and summed (2·k·d), the shared output added (d),
        Qwen2-MoE's sigmoid gate (4 + d)."""
        tokens = x.tokens
        routed = tokens * self.top_k
        activation = self.expert.activation_flops(routed)
        bias = self.expert.bias_adds(d, routed) + (tokens * self.experts if self.router_bias
                                                   else 0)
        routing = tokens * (ROUTER_PER_LOGIT * self.experts + 2 * self.top_k * d)
        if self.shared is not None:
            activation += self.shared.activation_flops(tokens)
            bias += self.shared.bias_adds(d, tokens)
            routing += tokens * d
            if self.shared_gate:
                routing += tokens * (SIGMOID + d)
        parts = [Part("elementwise.bias", bias, ELEMENTWISE)] if bias else []
        return parts + [Part("elementwise.activation", activation, ELEMENTWISE),
                        Part("elementwise.routing", routing, ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """Each token's k expert inputs and hidden tensors, the router's logits in fp32, and the
        shared experts' hidden tensors. Expert parallelism does not shrink them: the ep devices
        are data-parallel ranks with their own micro-batches, and the all-to-all brings each
        about as many routed copies as it sends."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        routed = sb * self.top_k
        out = [("router_logits", Fraction(4 * sb * self.experts)),
               ("expert_inputs", Fraction(2 * routed * d)),
               ("experts.hidden", self.expert.hidden_bytes(routed, split))]
        if self.shared is not None:
            out.append(("shared.hidden", self.shared.hidden_bytes(sb, split)))
        return out

    def expert_params(self, d: int) -> int:
        """Parameters of one routed expert (weights and biases)."""
        return sum(p.value for p in self.expert.params(d))

    def reads(self, d: int, tokens: int) -> ExpertReads:
        """Routed experts a forward over `tokens` tokens reads: k when all pick the same ones,
        min(E, tokens·k) when all differ, E·(1 − (1 − k/E)^tokens) on average under uniform
        routing."""
        e, k = self.experts, self.top_k
        if tokens <= EXACT_ROUTING_BATCH:
            expected = e - Fraction((e - k) ** tokens, e ** (tokens - 1))
            exact = True
        else:
            expected = Fraction(e * (1 - (1 - k / e) ** tokens)).limit_denominator(10**6)
            exact = False
        return ExpertReads(e, k, k, expected, min(e, tokens * k), exact, self.expert_params(d))

    def ep_units(self) -> int:
        """Expert parallelism must divide the routed experts."""
        return self.experts

    def published(self, d: int) -> Published:
        return Published(ffn="moe", experts=self.experts, top_k=self.top_k,
                         expert_width=self.expert.d_ff, departures=(
            "assumes a dense MLP; this model has a mixture of experts (Megatron-LM's later code "
            "counts the top-k routed and the shared experts, but no router)",))

    def notes(self) -> list[str]:
        return ["mixture of experts: per token the router 2·d·E, its k routed experts and the "
                "shared experts (what FlopCounterMode counts with transformers' eager experts)"]

    def decode_notes(self) -> list[str]:
        return ["mixture of experts: every expert resident; a step's FLOPs follow the router, k "
                "routed and the shared experts per token; its weight bytes are the expectation "
                "under uniform routing, E·(1 − (1 − k/E)^B) experts per layer (least k, most "
                "min(E, B·k)), which the roofline uses"]

    def describe(self) -> str:
        shared = f" + {self.shared_count} shared" if self.shared else ""
        return f"MoE {self.experts} experts top-{self.top_k}{shared}"


@dataclass(frozen=True)
class MoeConfig:
    """`moe:` in a model file: a mixture of experts in place of the MLP, on the layers
    `first_dense`, `every` and `dense_layers` pick. Experts use the model's `mlp` kind and
    `activation`."""

    experts: Annotated[int, Min(1)]
    top_k: Annotated[int, Min(1)]
    d_ff: Annotated[int, Min(1)]  # each routed expert's width
    shared_experts: Annotated[int, Min(0)] = 0
    shared_d_ff: Optional[Annotated[int, Min(1)]] = None  # each shared expert's; default d_ff
    shared_gate: bool = False  # Qwen2-MoE: a sigmoid gate d → 1 on the shared expert
    router_bias: bool = False  # gpt-oss
    first_dense: Annotated[int, Min(0)] = 0  # DeepSeek's first_k_dense_replace
    every: Annotated[int, Min(1)] = 1  # MoE on layers with (i + 1) % every == 0
    dense_layers: list[Annotated[int, Min(0)]] = field(default_factory=list)  # mlp_only_layers


def from_config(cfg: Any) -> Moe:
    """The mixture a model config's `moe` block describes (experts of the model's MLP kind)."""
    from .mlp import from_config as mlp

    m = cfg.moe
    expert = mlp(cfg, m.d_ff)
    count = m.shared_experts
    shared = mlp(cfg, count * (m.shared_d_ff or m.d_ff)) if count else None
    return Moe(experts=m.experts, top_k=m.top_k, expert=expert, shared=shared,
               shared_count=count, shared_gate=m.shared_gate, router_bias=m.router_bias)


def routed_layers(m: MoeConfig, n_layers: int) -> list[bool]:
    """Which layers are mixtures of experts: not among the first `first_dense`, not in
    `dense_layers`, and on every `every`-th layer ((i + 1) % every == 0, as Qwen's
    decoder_sparse_step and Llama 4's interleave step count)."""
    dense = set(m.dense_layers)
    bad = sorted(i for i in dense if not 0 <= i < n_layers)
    if bad:
        raise ValueError(f"moe.dense_layers {bad} are not layers of this model (0 to "
                         f"{n_layers - 1})")
    flags = [i >= m.first_dense and i not in dense and (i + 1) % m.every == 0
             for i in range(n_layers)]
    if not any(flags):
        raise ValueError("moe: no layer is a mixture of experts (check first_dense, every and "
                         "dense_layers)")
    return flags


REGISTER = Entry(blocks=(("moe", MoeConfig),))
