"""The dense feed-forward sublayer: plain (up d → f, activation, down f → d) or gated (gate and
up d → f, their product, down f → d: SwiGLU/GeGLU). Gate and up are column-parallel, down
row-parallel (Megatron-LM's layout)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from .base import (COLUMN, ELEMENTWISE, EXPERT, LAYERS, REPLICATED, ROW, Keeping, Kind, Part,
                   Published, Span, gemm)

# ReLU a compare (1); GELU in its tanh form 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): 9;
# SiLU x·sigmoid(x) = x / (1 + exp(−x)): negate, exp, add, divide (4). ReLU² (So et al. 2021,
# "Primer"): max and multiply (2). xIELU (Huang et al. 2024, arXiv:2411.13010; transformers
# `activations.py` XIELUActivation, its Python path): torch.where evaluates both branches, the
# compare (1), αp·x·x + β·x (4) and (expm1(min(x, ε)) − x)·αn + β·x (min 1, expm1 2, subtract 1,
# multiply 1, β·x 1, add 1: 6) → 11.
ACTIVATION_FLOPS = {"relu": 1, "gelu": 9, "silu": 4, "relu2": 2, "xielu": 11}
# Activations with learned parameters: xIELU's alpha_p and alpha_n, one scalar each per MLP
# (beta and eps are buffers).
ACTIVATION_PARAMS = {"xielu": ("alpha_p", "alpha_n")}


@dataclass(frozen=True)
class Mlp(Kind):
    """The dense feed-forward sublayer, `d_ff` wide: plain (up, `activation`, down) or `gated`
    (gate and up, their product, down: SwiGLU/GeGLU); `bias` on every matrix, but on down
    `down_bias` where it is given (GTE: a bias on down only)."""

    gated: bool
    d_ff: int
    activation: str
    bias: bool = False
    down_bias: Optional[bool] = None
    # scalar multiplies (µP: Falcon-H1, Granite; `kinds.multipliers`): the gate projection
    # (T·f), the output (T·d); element-wise only
    multipliers: tuple[str, ...] = ()
    slot = "mlp"

    def matrices(self, d: int) -> list[tuple[str, int, int]]:
        """(name, in, out) of each matrix: gate (when gated) and up d→f, down f→d."""
        f = self.d_ff
        return ([("gate", d, f)] if self.gated else []) + [("up", d, f), ("down", f, d)]

    def params(self, d: int, active: bool = False, copies: int = 1,
               expert: bool = False) -> list[Part]:
        """Parameters, matrix by matrix; `copies` identical MLPs stack as E x in x out (the
        routed experts of a mixture, `expert`: split over the expert-parallel group)."""
        parts = []
        lead = (copies,) if copies > 1 else ()
        for name, n_in, n_out in self.matrices(d):
            role = self.role(name, expert)
            parts.append(Part(f"{name}.weight", copies * n_in * n_out, LAYERS,
                              lead + (n_in, n_out), role, matmul=True, module=name))
            if self.has_bias(name):
                bias_role = REPLICATED if role == ROW else role
                parts.append(Part(f"{name}.bias", copies * n_out, LAYERS, lead + (n_out,),
                                  bias_role, module=name))
        for name in ACTIVATION_PARAMS.get(self.activation, ()):
            parts.append(Part(f"act.{name}", copies, LAYERS, lead + (1,), REPLICATED,
                              module="act"))
        return parts

    def has_bias(self, name: str) -> bool:
        return self.down_bias if name == "down" and self.down_bias is not None else self.bias

    @staticmethod
    def role(name: str, expert: bool = False) -> str:
        """A matrix's tensor-parallel role: down is row-parallel, gate and up column-parallel;
        routed experts' are split over the expert-parallel group."""
        return EXPERT if expert else ROW if name == "down" else COLUMN

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.flops(d, x.tokens)

    def flops(self, d: int, tokens: int, copies: int = 1, expert: bool = False) -> list[Part]:
        """Each matrix (T×in)·(in×out) → 2·T·in·out (`copies`, `expert`: the weights are
        stacked, as in `params`, and T counts every token routed to them)."""
        lead = (copies,) if copies > 1 else ()
        return [gemm(name, tokens, n_in, n_out, self.role(name, expert), lead)
                for name, n_in, n_out in self.matrices(d)]

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.flops(d, batch * (last - first + 1))

    def bias_adds(self, d: int, tokens: int) -> int:
        return tokens * sum(n_out for name, _, n_out in self.matrices(d) if self.has_bias(name))

    def activation_flops(self, tokens: int) -> int:
        """The activation on every hidden element, and a gated MLP's gate product (1)."""
        return (ACTIVATION_FLOPS[self.activation] + (1 if self.gated else 0)) * tokens * \
            self.d_ff

    def elementwise(self, d: int, x: Span) -> list[Part]:
        tokens, parts = x.tokens, []
        if self.bias or self.down_bias:
            parts.append(Part("elementwise.bias", self.bias_adds(d, tokens), ELEMENTWISE))
        parts.append(Part("elementwise.activation", self.activation_flops(tokens), ELEMENTWISE))
        if self.multipliers:  # one multiply per element scaled
            widths = {"gate": self.d_ff, "output": d}
            parts.append(Part("elementwise.multipliers",
                              tokens * sum(widths[m] for m in self.multipliers), ELEMENTWISE))
        return parts

    def hidden_bytes(self, tokens: int, split: Fraction) -> Fraction:
        """The hidden tensors kept for backward, 16-bit, as Megatron-Core keeps them: 2 f-wide
        for a plain MLP (the activation's input and output, the second projection's input);
        3 for a gated one, the fused gated activation's 2f-wide input (gate and up: its
        backward recomputes the rest, megatron/core/fusions/fused_bias_swiglu.py saves only
        its input) and its output, the second projection's input. Eager PyTorch keeps a
        fourth, the activation's output before the product."""
        return 2 * tokens * self.d_ff * (3 if self.gated else 2) * split

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        # the second projection reads one of the 3 (gated) or 2 (plain) f-wide tensors
        read = Fraction(1, 3 if self.gated else 2)
        return [("hidden", self.hidden_bytes(k.seq * k.batch, Fraction(1, k.tp)), read)]

    def published(self, d: int) -> Published:
        gated = ("assumes a two-matrix MLP; this model's MLP is gated (three matrices)",) \
            if self.gated else ()
        return Published(ffn="gated" if self.gated else "plain", ffn_widths=(self.d_ff,),
                         departures=gated)

    def formula(self, name: str, d: int, s: int, local: bool) -> Optional[Fraction]:
        """Forward FLOPs per token under the codebases' MLP terms, 2·m·d·f with m matrices.
        Megatron-LM (`megatron/training/training.py` at d98e8a64: ffn_expansion_factor,
        mlp_layer_flops) takes m = 3 only with --swiglu (a gated SiLU MLP), else 2: its one
        other gated MLP, --quick-geglu, is counted as two matrices. MaxText
        (`src/maxtext/utils/maxtext_utils.py` at e591f30c,
        calculate_ffn_mamtul_tflops_per_device): one d·f matrix per entry of mlp_activations
        and the output, so m = 3 for any gated MLP, 2 for a plain one."""
        if name in ("megatron_lm", "megatron_lm_hybrid"):
            return Fraction(2 * self.megatron_matrices() * d * self.d_ff)
        if name != "maxtext":
            return None
        return Fraction(2 * len(self.matrices(d)) * d * self.d_ff)  # (T×d)·(d×f) per matrix

    def megatron_matrices(self) -> int:
        """Megatron-LM's ffn_expansion_factor: 3 with --swiglu, else 2."""
        return 3 if self.gated and self.activation == "silu" else 2

    def formula_notes(self, name: str, d: int, s: int, local: bool) -> list[str]:
        if name in ("megatron_lm", "megatron_lm_hybrid") and self.gated and \
                self.megatron_matrices() == 2:
            return [f"MLP: Megatron-LM counts three matrices only with --swiglu; this model's "
                    f"gated {self.activation} MLP (Megatron-LM's --quick-geglu) is counted as "
                    f"two, 4·d·f per token (2·d·f short)"]
        return []

    def describe(self) -> str:
        return f"{'gated' if self.gated else 'plain'} MLP {self.d_ff:,}"


def from_config(cfg: Any, width: int) -> Mlp:
    """A dense MLP `width` wide, of the model config's `mlp` kind, activation and bias."""
    from .multipliers import scales

    return Mlp(gated=cfg.mlp == "gated", d_ff=width, activation=cfg.activation,
               bias=cfg.bias.mlp, down_bias=cfg.bias.mlp_down, multipliers=scales(cfg, "mlp"))
