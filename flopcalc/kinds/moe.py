"""A mixture of experts in the feed-forward slot: a router d → E (with a bias in gpt-oss), E
routed experts of which each token uses top-k, and optionally shared experts every token uses
(Qwen2-MoE's with a sigmoid gate d → 1).

Per token the forward runs the router, k routed experts and the shared experts: what
FlopCounterMode counts with transformers' eager experts, since every token visits k distinct
experts. Routing's softmax and top-k selection are element-wise.
"""

from __future__ import annotations

from dataclasses import field, replace
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (ELEMENTWISE, EXPERT, LAYERS, REPLICATED, Keeping, Kind, Part, Published,
                   Span, gemm, linear, prefixed)
from .mlp import Mlp
from .norm import Norm
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
    as Hugging Face builds them; `shared_gate` is Qwen2-MoE's sigmoid gate d → 1 on it (which
    transformers builds and runs even when the shared expert is 0 wide, with no `shared`)."""

    experts: int
    top_k: int
    expert: Mlp
    shared: Optional[Mlp] = None
    shared_count: int = 0
    shared_gate: bool = False
    router_bias: bool = False
    # Nemotron 3's latent MoE (transformers `models/nemotron_h/modeling_nemotron_h.py`
    # NemotronHMoE): the routed experts work at width `latent`, between fc1 d → latent and fc2
    # latent → d (with biases when `latent_bias`); the router and the shared experts read d.
    latent: Optional[int] = None
    latent_bias: bool = False
    # scalar multiplies (`kinds.multipliers`): `output`, the summed output (T·d; Granite's
    # residual_multiplier); element-wise only
    multipliers: tuple[str, ...] = ()
    # JetMoE (`models/jetmoe/modeling_jetmoe.py` JetMoeMoE): one d-wide bias added to the
    # combined output
    output_bias: bool = False
    # LongCat-Flash's zero-computation experts (Meituan, "LongCat-Flash Technical Report",
    # arXiv:2509.01322; transformers `models/longcat_flash/modeling_longcat_flash.py`): the
    # router also scores `zero_experts` identity experts, whose picks cost no matmul. Which
    # experts a token picks depends on the data: the count is the expectation under uniform
    # routing over all E + Z, k·E/(E + Z) computing experts per token (the average the
    # router's bias steers to: 8 of 12 for LongCat-Flash, its "27B activated on average"),
    # which must be whole. `zero_gate_up`: transformers allocates gate/up rows for them too,
    # never used.
    zero_experts: int = 0
    zero_gate_up: bool = False
    # A.X-K1 (`models/axk1/modular_axk1.py` AXK1MoE): the model's norm over the block's summed
    # output (routed + shared), d wide, in every mixture layer
    output_norm: Optional[Norm] = None
    # ERNIE 4.5 VL (`models/ernie4_5_vl_moe/modeling_ernie4_5_vl_moe.py`
    # Ernie4_5_VLMoeMoeBlock): a second set of `experts` experts this wide with a router of its
    # own (and its bias), which only image and video tokens run: held, never run by text
    idle_d_ff: Optional[int] = None
    slot = "mlp"
    routed = True

    def __post_init__(self) -> None:
        if self.top_k > self.experts + self.zero_experts:
            raise ValueError(f"moe.top_k={self.top_k} must not exceed moe.experts="
                             f"{self.experts}" + (f" + zero_experts={self.zero_experts}"
                                                   if self.zero_experts else ""))
        if (self.shared is None) != (self.shared_count == 0):
            raise ValueError("moe: shared experts need both a count and a width")
        if (self.top_k * self.experts) % self.choices:
            raise ValueError(f"moe: with zero_experts, top_k·experts/(experts + zero_experts) "
                             f"= {self.top_k}·{self.experts}/{self.choices} computing experts "
                             "per token must be whole (flopcalc counts that expectation)")
        if self.zero_gate_up and not self.zero_experts:
            raise ValueError("moe.zero_expert_gate_up needs zero_experts")

    @property
    def choices(self) -> int:
        """What the router scores: the routed experts and the zero-computation ones."""
        return self.experts + self.zero_experts

    @property
    def computing(self) -> int:
        """Routed experts that compute per token: k, or k·E/(E + Z) with zero experts (the
        expectation under uniform routing)."""
        return self.top_k * self.experts // self.choices

    def width(self, d: int) -> int:
        """The routed experts' input and output width: the latent, else d."""
        return self.latent or d

    def params(self, d: int, active: bool = False) -> list[Part]:
        """Router, the latent projections, every routed expert (only the top-k a token uses when
        `active`), shared experts and their gate, the output bias; with zero experts their
        unused gate/up rows when transformers allocates them (not `active`)."""
        n = self.choices
        parts = [Part("router.weight", d * n, LAYERS, (d, n), REPLICATED, matmul=True,
                      module="router")]
        if self.router_bias:
            parts.append(Part("router.bias", n, LAYERS, (n,), REPLICATED, module="router"))
        if self.latent:  # small; kept whole on every tensor-parallel rank
            parts += linear("latent_in", d, self.latent, self.latent_bias, REPLICATED)
            parts += linear("latent_out", self.latent, d, self.latent_bias, REPLICATED)
        parts += prefixed("experts", self.expert.params(
            self.width(d), copies=self.computing if active else self.experts, expert=True))
        if self.zero_gate_up and not active:  # Z × (gate and up) × d, never read
            z, width = self.zero_experts, self.width(d)
            rows = sum(n_out for name, _, n_out in self.expert.matrices(width) if name != "down")
            parts.append(Part("zero_experts.gate_up.weight", z * rows * width, LAYERS,
                              (z, rows, width), EXPERT, matmul=True))
        if self.shared is not None:
            parts += prefixed("shared", self.shared.params(d))
        if self.shared_gate:
            parts.append(Part("shared_gate.weight", d, LAYERS, (d, 1), REPLICATED, matmul=True))
        if self.output_bias:  # held by the block itself
            parts.append(Part("output_bias", d, LAYERS, (d,), REPLICATED, module=""))
        if self.output_norm is not None:
            parts += self.output_norm.params(d, "output_norm")
        if self.idle_d_ff and not active:  # a text token reads none of the idle set
            parts.append(Part("idle_router.weight", d * n, LAYERS, (d, n), REPLICATED,
                              matmul=True, module="idle_router"))
            if self.router_bias:
                parts.append(Part("idle_router.bias", n, LAYERS, (n,), REPLICATED,
                                  module="idle_router"))
            idle = replace(self.expert, d_ff=self.idle_d_ff)
            parts += prefixed("idle_experts", idle.params(self.width(d), copies=self.experts,
                                                         expert=True))
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.flops(d, x.tokens)

    def flops(self, d: int, tokens: int) -> list[Part]:
        """Router (T×d)·(d×(E + Z)); each token's k routed experts (k·E/(E + Z) with zero
        experts); the shared experts and their gate (T×d)·(d×1) on every token."""
        parts = [gemm("router", tokens, d, self.choices, REPLICATED)]
        if self.latent:  # (T×d)·(d×r) before the experts, (T×r)·(r×d) after
            parts += [gemm("latent_in", tokens, d, self.latent, REPLICATED),
                      gemm("latent_out", tokens, self.latent, d, REPLICATED)]
        parts += prefixed("experts", self.expert.flops(self.width(d), tokens * self.computing,
                                                       self.experts, expert=True))
        if self.shared is not None:
            parts += prefixed("shared", self.shared.flops(d, tokens))
        if self.shared_gate:  # (T×d)·(d×1)
            parts.append(gemm("shared_gate", tokens, d, 1, REPLICATED))
        return parts

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.flops(d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """The experts' bias adds and activations; routing: softmax over the E router logits,
        each token's k expert outputs scaled and summed (2·k·d), the shared output added (d),
        Qwen2-MoE's sigmoid gate (4 + d), the output bias (d). Zero experts' picks are scaled
        and summed too (their output is their input)."""
        tokens, width = x.tokens, self.width(d)
        routed = tokens * self.computing
        activation = self.expert.activation_flops(routed)
        bias = self.expert.bias_adds(width, routed) + (tokens * self.choices if self.router_bias
                                                       else 0)
        if self.latent and self.latent_bias:
            bias += tokens * (self.latent + d)
        if self.output_bias:
            bias += tokens * d
        routing = tokens * (ROUTER_PER_LOGIT * self.choices + 2 * self.top_k * width)
        if self.shared is not None:
            activation += self.shared.activation_flops(tokens)
            bias += self.shared.bias_adds(d, tokens)
            routing += tokens * d
        if self.shared_gate:  # the gate's sigmoid and product (a 0-wide expert's zeros added too)
            routing += tokens * (SIGMOID + d) + (0 if self.shared is not None else tokens * d)
        parts = [Part("elementwise.bias", bias, ELEMENTWISE)] if bias else []
        parts += [Part("elementwise.activation", activation, ELEMENTWISE),
                  Part("elementwise.routing", routing, ELEMENTWISE)]
        if "output" in self.multipliers:
            parts.append(Part("elementwise.multipliers", tokens * d, ELEMENTWISE))
        if self.output_norm is not None:
            parts.append(Part("elementwise.output_norm", self.output_norm.per_element * tokens * d,
                              ELEMENTWISE))
        return parts

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """Each token's k expert inputs and hidden tensors, the router's logits in fp32, and the
        shared experts' hidden tensors. Expert parallelism does not shrink them: the devices of
        an expert group each hold their own tokens (data-parallel ranks' micro-batches, or
        sequence-parallel shares of one), and the dispatch brings each about as many routed
        copies as it sends. Under sequence parallelism a device routes its 1/t of the tokens
        (Megatron-Core runs MoE layers sequence-parallel) to whole experts (expert tensor
        parallelism 1), so every tensor here is 1/t of the sequence's."""
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        sp = split if k.sequence_parallel else Fraction(1)
        routed = sb * self.computing
        out = [("router_logits", 4 * sb * self.choices * sp),
               ("expert_inputs", 2 * routed * self.width(d) * sp),
               ("experts.hidden", self.expert.hidden_bytes(routed, split))]
        if self.latent:  # fc2's input: the experts' combined latent output
            out.append(("latent_output", Fraction(2 * sb * self.latent)))
        if self.shared is not None:
            out.append(("shared.hidden", self.shared.hidden_bytes(sb, split)))
        return out

    def expert_params(self, d: int) -> int:
        """Parameters of one routed expert (weights and biases)."""
        return sum(p.value for p in self.expert.params(self.width(d)))

    def reads(self, d: int, tokens: int) -> ExpertReads:
        """Routed experts a forward over `tokens` tokens reads: k when all pick the same ones,
        min(E, tokens·k) when all differ, E·(1 − (1 − k/E)^tokens) on average under uniform
        routing. With Z zero experts a token picks its k of E + Z: E·(1 − (1 − k/(E + Z))^tokens)
        routed experts on average, at least k − Z (none when k ≤ Z)."""
        e, k, n = self.experts, self.top_k, self.choices
        if tokens <= EXACT_ROUTING_BATCH:
            expected = e - Fraction(e * (n - k) ** tokens, n ** tokens)
            exact = True
        else:
            expected = Fraction(e * (1 - (1 - k / n) ** tokens)).limit_denominator(10**6)
            exact = False
        return ExpertReads(e, self.computing, max(0, k - self.zero_experts), expected,
                           min(e, tokens * k), exact, self.expert_params(d))

    def ep_units(self) -> int:
        """Expert parallelism must divide the routed experts."""
        return self.experts

    def published(self, d: int) -> Published:
        return Published(ffn="moe", experts=self.experts, top_k=self.computing,
                         expert_width=self.expert.d_ff, departures=(
            "assumes a dense MLP; this model has a mixture of experts (Megatron-LM's later code "
            "counts the top-k routed and the shared experts, but no router)",))

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under the codebases' MoE terms, with m matrices per expert
        (the expert MLP's: `Mlp.formula`), k routed experts of width f and shared experts f_s
        wide together. Megatron-LM (`megatron/training/training.py` at d98e8a64,
        transformer_flops' MLP term, hybrid_flops' moe_layer_flops): 2·m·d·k·f + 2·m·d·f_s, no
        router; with a latent r (moe_latent_size) the routed experts read r, 2·m·r·k·f, plus
        4·d·r for the projections in and out. MaxText (`src/maxtext/utils/maxtext_utils.py`
        at e591f30c, calculate_routed_and_shared_ffn_tflops_per_device and its simpler
        branch): the router 2·d·E, 2·m·d·k·f and the shared experts 2·m·d·f_s. Neither can
        build zero-computation experts; MaxText has no latent MoE."""
        if name not in ("megatron_lm", "megatron_lm_hybrid", "maxtext") or self.zero_experts:
            return None
        if name == "maxtext":
            if self.latent:
                return None
            m = len(self.expert.matrices(d))
            shared = 2 * m * d * self.shared.d_ff if self.shared is not None else 0
            # router (T×d)·(d×E); each of k experts' m matrices (T×d)·(d×f)
            return Fraction(2 * d * self.experts + 2 * m * d * self.top_k * self.expert.d_ff
                            + shared)
        m = self.expert.megatron_matrices()  # one --swiglu flag for routed and shared experts
        shared = 2 * m * d * self.shared.d_ff if self.shared is not None else 0
        if self.latent:
            r = self.latent
            return Fraction(2 * m * r * self.top_k * self.expert.d_ff + 4 * d * r + shared)
        return Fraction(2 * m * d * self.top_k * self.expert.d_ff + shared)

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        if self.formula(name, d, s, local) is None:
            return []
        notes = []
        if name != "maxtext":
            notes.append("mixture of experts: no term for the router (2·d·E per token)")
            if self.expert.gated and self.expert.megatron_matrices() == 2:
                notes.append(f"mixture of experts: Megatron-LM counts three matrices per "
                             f"expert only with --swiglu; this model's gated "
                             f"{self.expert.activation} experts are counted as two")
        if self.shared_gate:
            notes.append("mixture of experts: no term for the shared expert's sigmoid gate "
                         "(2·d per token)")
        if name == "maxtext" and self.shared is not None and \
                self.shared.d_ff % self.expert.d_ff:
            notes.append(f"mixture of experts: MaxText sizes shared experts as shared_experts x "
                         f"moe_mlp_dim; this model's shared width {self.shared.d_ff:,} is not a "
                         f"multiple of {self.expert.d_ff:,} (counted at its own width)")
        return notes

    def notes(self) -> list[str]:
        notes = ["mixture of experts: per token the router 2·d·E, its k routed experts and the "
                 "shared experts (what FlopCounterMode counts with transformers' eager experts)"]
        if self.zero_experts:
            notes.append(f"zero-computation experts: the router scores {self.experts} routed and "
                         f"{self.zero_experts} identity experts; which a token picks depends on "
                         f"the data, so the count is the expectation under uniform routing, "
                         f"{self.computing} of its {self.top_k} picks computing (the picks of "
                         "identity experts cost no matmul)")
        return notes

    def decode_notes(self) -> list[str]:
        return ["mixture of experts: every expert resident; a step's FLOPs follow the router, k "
                "routed and the shared experts per token; its weight bytes are the expectation "
                "under uniform routing, E·(1 − (1 − k/E)^B) experts per layer (least k, most "
                "min(E, B·k)), which the roofline uses"]

    def describe(self) -> str:
        shared = f" + {self.shared_count} shared" if self.shared else ""
        latent = f", latent {self.latent:,}" if self.latent else ""
        zero = f" + {self.zero_experts} zero-computation" if self.zero_experts else ""
        return f"MoE {self.experts} experts{zero} top-{self.top_k}{shared}{latent}"


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
    shared_gate: bool = False  # Qwen2-MoE: a sigmoid gate d → 1 on the shared expert (also
    # built, on a 0-wide expert, when shared_experts is 0)
    router_bias: bool = False  # gpt-oss
    first_dense: Annotated[int, Min(0)] = 0  # DeepSeek's first_k_dense_replace
    every: Annotated[int, Min(1)] = 1  # MoE on layers with (i + 1) % every == 0
    dense_layers: list[Annotated[int, Min(0)]] = field(default_factory=list)  # mlp_only_layers
    # Nemotron 3: routed experts at this width between d → latent and latent → d projections
    latent_size: Optional[Annotated[int, Min(1)]] = None
    expert_bias: Optional[bool] = None  # routed experts' biases; None: as bias.mlp
    output_bias: bool = False  # JetMoE: one d-wide bias added to the combined output
    # LongCat-Flash: identity experts the router also picks (counted as the expectation,
    # top_k·experts/(experts + zero_experts) computing experts per token, which must be whole)
    zero_experts: Annotated[int, Min(0)] = 0
    zero_expert_gate_up: bool = False  # transformers allocates them unused gate/up rows
    output_norm: bool = False  # A.X-K1: the model's norm over the mixture's output
    # ERNIE 4.5 VL: a second set of `experts` experts this wide, with its own router, that
    # only image and video tokens run (held with the model, never run by text tokens)
    idle_d_ff: Optional[Annotated[int, Min(1)]] = None
    # An encoder-decoder's mixtures (Switch Transformers): the routed layers of each stack by
    # index, in place of first_dense/every/dense_layers (None: those pick the decoder's;
    # the encoder's are all dense)
    layers: Optional[list[Annotated[int, Min(0)]]] = None
    encoder_layers: Optional[list[Annotated[int, Min(0)]]] = None


def from_config(cfg: Any) -> Moe:
    """The mixture a model config's `moe` block describes (experts of the model's MLP kind)."""
    from .mlp import from_config as mlp

    from dataclasses import replace

    from .norm import model_norm
    from .multipliers import scales

    m = cfg.moe
    expert = mlp(cfg, m.d_ff)
    if m.expert_bias is not None:
        expert = replace(expert, bias=m.expert_bias)
    count = m.shared_experts
    shared = mlp(cfg, count * (m.shared_d_ff or m.d_ff)) if count else None
    return Moe(experts=m.experts, top_k=m.top_k, expert=expert, shared=shared,
               shared_count=count, shared_gate=m.shared_gate, router_bias=m.router_bias,
               latent=m.latent_size, latent_bias=cfg.bias.mlp,
               multipliers=tuple(x for x in scales(cfg, "mlp") if x == "output"),
               output_bias=m.output_bias, zero_experts=m.zero_experts,
               zero_gate_up=m.zero_expert_gate_up,
               output_norm=model_norm(cfg) if m.output_norm else None,
               idle_d_ff=m.idle_d_ff)


def routed_layers(m: MoeConfig, n_layers: int) -> list[bool]:
    """Which layers are mixtures of experts: not among the first `first_dense`, not in
    `dense_layers`, and on every `every`-th layer ((i + 1) % every == 0, as Qwen's
    decoder_sparse_step and Llama 4's interleave step count)."""
    if m.layers is not None:  # listed by index (an encoder-decoder's, which may have none)
        return _listed(m.layers, n_layers, "moe.layers")
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


def _listed(indices: list[int], n_layers: int, key: str) -> list[bool]:
    bad = sorted(i for i in indices if not 0 <= i < n_layers)
    if bad:
        raise ValueError(f"{key} {bad} are not layers of this stack (0 to {n_layers - 1})")
    chosen = set(indices)
    return [i in chosen for i in range(n_layers)]


def encoder_routed_layers(m: MoeConfig, n_layers: int) -> list[bool]:
    """Which encoder layers of an encoder-decoder are mixtures: `encoder_layers` (none when
    absent)."""
    return _listed(m.encoder_layers or [], n_layers, "moe.encoder_layers")


REGISTER = Entry(blocks=(("moe", MoeConfig),))
