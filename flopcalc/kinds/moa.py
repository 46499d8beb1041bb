"""Mixture of attention heads (MoA: Zhang et al. 2022, "Mixture of Attention Heads: Selecting
Attention Heads Per Token", arXiv:2210.05144; JetMoE: Shen et al. 2024, arXiv:2404.07413;
transformers 5.24 `models/jetmoe/modeling_jetmoe.py`, `JetMoeAttention` and `JetMoeMoA`).

A router d → E (no bias) picks each token's top-k of E attention experts. Expert e owns a query
projection d → h_kv·d_h and an output projection h_kv·d_h → d; the keys and values are one
shared projection d → 2·h_kv·d_h. A token's k experts give it k·h_kv query heads, each scoring
the h_kv shared key heads (repeated k times: GQA with k query heads per key head); the k
experts' outputs are scaled by their softmaxed router logits, summed, and one d-wide bias
added.

Per token that is exactly the matmuls of grouped-query attention with h = k·h_kv heads (the q
projection 2·d·k·h_kv·d_h, the output 2·k·h_kv·d_h·d) plus the router 2·d·E, with E/k times
the query and output weights stored. The cache keeps the shared keys and values (h_kv heads).
"""

from __future__ import annotations

from dataclasses import fields, replace
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import Attention
from .base import (COLUMN, ELEMENTWISE, EXPERT, LAYERS, REPLICATED, WEIGHTS, Keeping, Part,
                   Published, Span, gemm)
from .moe import EXACT_ROUTING_BATCH, ROUTER_PER_LOGIT, ExpertReads
from .registry import Entry


@dataclass(frozen=True)
class MixtureOfAttentionHeads(Attention):
    """`heads` = top_k·kv_heads query heads per token, from `experts` attention experts of
    kv_heads heads each."""

    experts: int = 1
    top_k: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.top_k > self.experts:
            raise ValueError(f"moa.top_k={self.top_k} must not exceed moa.experts="
                             f"{self.experts}")
        if self.heads != self.kv_heads * self.top_k:
            raise ValueError(f"a mixture of attention heads has n_kv_heads × moa.top_k = "
                             f"{self.kv_heads} × {self.top_k} query heads per token; n_heads is "
                             f"{self.heads}")
        extras = [name for name, on in (("bias", self.qkv_bias or self.out_bias),
                                        ("qk_norm", self.qk_norm != "none"),
                                        ("attention_sinks", self.sinks),
                                        ("attention_gate", self.gate),
                                        ("multipliers.attention", bool(self.multipliers)),
                                        ("alibi", self.alibi)) if on]
        if extras:
            raise ValueError(f"moa layers (JetMoE) have no {', '.join(extras)}; remove it")

    @property
    def expert_q(self) -> int:
        """One expert's query width (h_kv·d_h)."""
        return self.kv_heads * self.qk_dim

    @property
    def expert_o(self) -> int:
        """One expert's output-projection input (h_kv·d_v)."""
        return self.kv_heads * self.v_dim

    def params(self, d: int, active: bool = False) -> list[Part]:
        """Router d × E; the experts' query projections E × d × h_kv·d_h and output projections
        E × h_kv·d_v × d (the k a token uses when `active`), split over expert parallelism; the
        shared key and value projections (JetMoE's kv_proj); the output bias d."""
        n = self.top_k if active else self.experts
        return [Part("router.weight", d * self.experts, LAYERS, (d, self.experts), REPLICATED,
                     matmul=True),
                Part("q_experts.weight", n * d * self.expert_q, LAYERS, (n, d, self.expert_q),
                     EXPERT, matmul=True),
                Part("k.weight", d * self.d_k, LAYERS, (d, self.d_k), COLUMN, matmul=True),
                Part("v.weight", d * self.d_v, LAYERS, (d, self.d_v), COLUMN, matmul=True),
                Part("o_experts.weight", n * self.expert_o * d, LAYERS,
                     (n, self.expert_o, d), EXPERT, matmul=True),
                # held by the MoA module itself (JetMoE's `bias`)
                Part("output_bias", d, LAYERS, (d,), REPLICATED, module="")]

    def flops(self, d: int, t_q: int, t_k: int, pairs: int) -> list[Part]:
        """The router (T×d)·(d×E); each token's k query experts (T·k×d)·(d×h_kv·d_h); the shared
        keys and values; the k·h_kv heads' scores and values; each token's k output experts
        (T·k×h_kv·d_v)·(h_kv·d_v×d)."""
        return [
            gemm("router", t_q, d, self.experts, REPLICATED),  # (T×d)·(d×E)
            Part("q", 2 * t_q * self.top_k * d * self.expert_q, WEIGHTS),
            gemm("k", t_k, d, self.d_k),  # (T_k×d)·(d×h_kv·d_h)
            gemm("v", t_k, d, self.d_v),  # (T_k×d)·(d×h_kv·d_v)
            *self.pair_flops(pairs),
            Part("o", 2 * t_q * self.top_k * self.expert_o * d, WEIGHTS),
        ]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The softmax over the scores; routing as a mixture of experts counts it (softmax over
        the E router logits, 4 each; the k expert outputs scaled and summed, 2·k·d); the output
        bias (d)."""
        parts = super().elementwise(d, x)
        tokens = x.tokens
        return parts + [
            Part("elementwise.bias", tokens * d, ELEMENTWISE),
            Part("elementwise.routing",
                 tokens * (ROUTER_PER_LOGIT * self.experts + 2 * self.top_k * d), ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """Attention's, and the router's logits in fp32."""
        return super().activations(d, k) + [
            ("router_logits", Fraction(4 * k.seq * k.batch * self.experts))]

    def reads(self, d: int, tokens: int) -> ExpertReads:
        """Attention experts a forward over `tokens` tokens reads (as a mixture of experts:
        least k, most min(E, tokens·k), E·(1 − (1 − k/E)^tokens) under uniform routing)."""
        e, k = self.experts, self.top_k
        if tokens <= EXACT_ROUTING_BATCH:
            expected, exact = e - Fraction((e - k) ** tokens, e ** (tokens - 1)), True
        else:
            expected = Fraction(e * (1 - (1 - k / e) ** tokens)).limit_denominator(10**6)
            exact = False
        per_expert = d * self.expert_q + self.expert_o * d
        return ExpertReads(e, k, k, expected, min(e, tokens * k), exact, per_expert)

    def ep_units(self) -> int:
        return self.experts

    def published(self, d: int) -> Published:
        base = super().published(d)
        return replace(base, departures=base.departures + (
            f"a mixture of attention heads: each token's query and output projections are its "
            f"{self.top_k} of {self.experts} experts (plus a router)",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """None: neither Megatron-LM nor MaxText builds a mixture of attention heads, so their
        formulas have no term for one (the attention term it inherits would count dense
        heads)."""
        return None

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        return []

    def describe(self) -> str:
        return (f"mixture of attention heads, {self.experts} experts top-{self.top_k}, "
                f"{self.mask.describe()}")

    def notes(self) -> list[str]:
        return ["mixture of attention heads (JetMoE): per token the router 2·d·E and the query "
                "and output projections of its k experts (k·h_kv heads over shared keys and "
                "values), what FlopCounterMode counts"]


@dataclass(frozen=True)
class MoaConfig:
    """`moa:` in a model file: the attention experts of the `moa` layers (n_heads must be
    n_kv_heads × top_k)."""

    experts: Annotated[int, Min(1)]
    top_k: Annotated[int, Min(1)]


def build(cfg: Any, name: str) -> MixtureOfAttentionHeads:
    from .attention_layers import build as attention

    block: Optional[MoaConfig] = cfg.moa
    if block is None:
        raise ValueError("moa layers need a moa block (experts, top_k)")
    if cfg.latent_attention is not None:
        raise ValueError("moa layers are softmax attention; remove latent_attention")
    base = attention(cfg, "full")
    return MixtureOfAttentionHeads(**{f.name: getattr(base, f.name) for f in fields(base)},
                                   experts=block.experts, top_k=block.top_k)


REGISTER = Entry(layer_types=("moa",), build=build, blocks=(("moa", MoaConfig),))
