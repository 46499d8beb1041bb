"""Per-language bottleneck adapters after the MLP (X-MOD: Pfeiffer et al. 2022, "Lifting the
Curse of Multilinguality by Pre-training Modular Transformers", NAACL; transformers 5.24
`models/xmod/modeling_xmod.py` XmodOutput, XmodAdapter). The `language_adapters:` block of a
model file makes every dense MLP an `AdapterMlp`.

Each layer holds one adapter per language (`languages`): dense1 d → b and dense2 b → d, both
with biases, b = d // `reduction_factor`, the activation between; and, with `own_norm`, a
LayerNorm (2·d) before them. After the MLP's output projection and residual add, the tokens
of a sequence run through their language's adapter only (a forward in one language: one
adapter), (T×d)·(d×b) and (T×b)·(b×d) → 4·T·d·b FLOPs, and its output is added back to its
input. The other languages' adapters are held (parameters) but do not run.

Element-wise, per token: the norm before the adapters (its own, or the layer's reused: X-MOD's
`adapter_reuse_layer_norm`) over d, the biases (b + d), the activation (b) and the residual add
(d).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

from ..records import dataclass
from ..declare import Min
from .base import COLUMN, ELEMENTWISE, LAYERS, ROW, Keeping, Part, Span, gemm
from .mlp import ACTIVATION_FLOPS, Mlp
from .norm import Norm
from .registry import Entry


@dataclass(frozen=True)
class AdapterMlp(Mlp):
    """`Mlp` followed by one of `languages` bottleneck adapters `bottleneck` wide; `own_norm`:
    the adapters' own LayerNorm (`norm_form`), `reuse_norm`: the layer's norm applied again
    before them (no tensor)."""

    languages: int = 1
    bottleneck: int = 1
    own_norm: bool = False
    reuse_norm: bool = False
    norm_form: Norm = Norm("layernorm")

    def adapter_params(self, d: int) -> list[Part]:
        n, b = self.languages, self.bottleneck
        parts = [Part("adapter.dense1.weight", n * d * b, LAYERS, (n, d, b), COLUMN,
                      matmul=True, module="adapter.dense1"),
                 Part("adapter.dense1.bias", n * b, LAYERS, (n, b), COLUMN,
                      module="adapter.dense1"),
                 Part("adapter.dense2.weight", n * b * d, LAYERS, (n, b, d), ROW, matmul=True,
                      module="adapter.dense2"),
                 Part("adapter.dense2.bias", n * d, LAYERS, (n, d), COLUMN,
                      module="adapter.dense2")]
        if self.own_norm:
            parts += self.norm_form.params(d, "adapter.norm")
        return parts

    def params(self, d: int, active: bool = False, copies: int = 1,
               expert: bool = False) -> list[Part]:
        return super().params(d, active, copies, expert) + self.adapter_params(d)

    def adapter_flops(self, d: int, tokens: int) -> list[Part]:
        b = self.bottleneck
        return [gemm("adapter.dense1", tokens, d, b),  # (T×d)·(d×b)
                gemm("adapter.dense2", tokens, b, d, ROW)]  # (T×b)·(b×d)

    def forward(self, d: int, x: Span) -> list[Part]:
        return super().forward(d, x) + self.adapter_flops(d, x.tokens)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return super().decode(d, batch, first, last) + self.adapter_flops(
            d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        b, t = self.bottleneck, x.tokens
        norm = self.norm_form.per_element * d if self.own_norm or self.reuse_norm else 0
        per_token = norm + (b + d) + ACTIVATION_FLOPS[self.activation] * b + d
        return super().elementwise(d, x) + [Part("elementwise.adapter", t * per_token,
                                                 ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """As `Mlp`'s, with the adapter's input (d) and its two b-wide hidden tensors (the
        activation's input and output), 16-bit per token."""
        tokens = k.seq * k.batch
        return super().activations(d, k) + [
            ("adapter", 2 * tokens * (d + 2 * self.bottleneck) * Fraction(1, k.tp))]

    def describe(self) -> str:
        return super().describe() + (f", {self.languages} language adapter(s) "
                                     f"{self.bottleneck} wide")

    def notes(self) -> list[str]:
        return [f"each MLP is followed by one of {self.languages} language adapters "
                f"(d → {self.bottleneck} → d, with biases): all held, one run per token"]


@dataclass(frozen=True)
class LanguageAdaptersConfig:
    """`language_adapters:` in a model file: X-MOD's adapters after every dense MLP."""

    languages: Annotated[int, Min(1)] = 1
    reduction_factor: Annotated[int, Min(1)] = 2
    own_norm: bool = False
    reuse_norm: bool = True


def with_adapters(dense: Mlp, cfg: Any, norm: Norm) -> AdapterMlp:
    """`dense` followed by the `language_adapters` block's adapters (`norm`: the model's)."""
    block = cfg.language_adapters
    b = cfg.d_model // block.reduction_factor
    if b < 1:
        raise ValueError(f"language_adapters.reduction_factor {block.reduction_factor} leaves "
                         f"no bottleneck of d_model {cfg.d_model}")
    return AdapterMlp(gated=dense.gated, d_ff=dense.d_ff, activation=dense.activation,
                      bias=dense.bias, down_bias=dense.down_bias, multipliers=dense.multipliers,
                      languages=block.languages, bottleneck=b, own_norm=block.own_norm,
                      reuse_norm=block.reuse_norm and not block.own_norm, norm_form=norm)


REGISTER = Entry(blocks=(("language_adapters", LanguageAdaptersConfig),))
