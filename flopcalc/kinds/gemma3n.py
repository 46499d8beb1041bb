"""Gemma 3n's layers (transformers `models/gemma3n/modeling_gemma3n.py`, Gemma3nTextModel).

Each decoder layer is Gemma 3's (sandwich norms, per-head QK-norms, a gated MLP) wrapped in:

- AltUp (Alternating Updates, NeurIPS 2023): the residual is `n` streams of d; before the
  layer a router (RMSNorm, d → n, tanh) mixes them by n×n coefficients per token
  (`prediction_coefs` n → n², then a (d×n)·(n×n) matmul per token), the layer runs on the
  active stream, and after it a second routing (`correction_coefs` n → n) spreads the
  layer's innovation over every stream (`correct_output_scale`: d);
- LAuReL (Learned Augmented Residual Layer): d → r → d beside the attention, with its norm;
- per-layer inputs: the layer's p-wide slice of a table and of a projection of the embedding
  gate the corrected active stream (d → p, activation, times the slice, p → d, norm), added to
  the other streams;
- activation sparsity: a Gaussian top-k on the MLP's gate (mean + σ·Φ⁻¹(s) cutoff, ReLU) in
  the layers `sparse` names: element-wise work only, no matmul (FlopCounterMode counts none);
- KV sharing: the last `num_kv_shared_layers` layers reuse the keys and values of the last
  earlier layer of their type (no k, v projections or norms, no cache of their own).

Before the first layer the model projects the embedding into the n − 1 other streams (n − 1
d×d `altup_projections`), looks up the packed per-layer table (`per_layer_vocab` × L·p) and
projects the embedding d → L·p (`per_layer_model_projection`, then a p-wide norm); after the
last layer it projects the n − 1 streams back (`altup_unembed_projections`) and averages them.
flopcalc counts these with the first and the last layer (where transformers runs them: the
first and last pipeline stages), so that every count of a layer, decode steps included, holds
them. Layers are named `gemma3n_<type>@<index>` (the index picks the layer's MLP width and
sparsity from the `gemma3n` block and marks the first and the last)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import (COLUMN, ELEMENTWISE, EMBEDDING, FIRST, LAST, LAYERS, REPLICATED, ROW, VOCAB,
                   WEIGHTS, Keeping, Kind, Part, Published, Span, gemm, linear)
from .gemma4 import Gemma4Attention
from .mlp import ACTIVATION_FLOPS, Mlp
from .norm import Norm, model_norm
from .registry import Entry

TYPES = ("gemma3n_full", "gemma3n_window", "gemma3n_shared_full", "gemma3n_shared_window")


@dataclass(frozen=True)
class Gemma3nAttention(Gemma4Attention):
    """Gemma 3's attention (q/k norms per head, a weightless v norm), `kv_shared` in the last
    layers as Gemma 4's (the same tensors and FLOPs: kinds/gemma4.py)."""

    def notes(self) -> list[str]:
        if not self.kv_shared:
            return super().notes()
        return [n for n in super().notes() if not n.startswith("KV-shared")] + [
            "KV-shared layers (Gemma 3n's num_kv_shared_layers): no k and v projections; "
            "their scores and AV read the keys and values of the last earlier layer of their "
            "type, and they keep no cache of their own"]


@dataclass(frozen=True)
class Gemma3nBlock(Kind):
    """Everything of a Gemma 3n layer beside its attention: the gated `mlp` (its gate through
    the Gaussian top-k when `sparse`), AltUp over `streams` = n streams, LAuReL of rank
    `laurel_rank`, the per-layer input of width `per_layer` (p), and on the `first` layer the
    model's input side (the n − 1 stream projections, the per-layer table of `per_layer_vocab`
    rows × `layers`·p and the projection d → `layers`·p with its p-wide norm), on the `last`
    the n − 1 projections back."""

    mlp: Mlp
    streams: int
    laurel_rank: int
    per_layer: int
    per_layer_vocab: int
    layers: int
    sparse: bool = False
    first: bool = False
    last: bool = False
    correct_scale: bool = True
    norm: Norm = Norm("rmsnorm")
    slot = "mlp"

    def params(self, d: int, active: bool = False) -> list[Part]:
        """The MLP; AltUp: correct_output_scale (d), correction_coefs n×n, prediction_coefs
        n×n², modality_router d×n, router_norm (d); LAuReL: d×r, r×d, its norm (d); per-layer
        input: gate d×p, projection p×d, its norm (d); first layer: n − 1 projections d×d,
        the table V_p × L·p (looked up) and the projection d × L·p with its norm (p); last
        layer: n − 1 projections d×d."""
        n, r, p = self.streams, self.laurel_rank, self.per_layer
        parts = self.mlp.params(d)
        parts += [Part("altup.correct_output_scale", d, LAYERS, (d,), REPLICATED,
                       module="altup")]
        parts += linear("altup.correction_coefs", n, n, False, REPLICATED)
        parts += linear("altup.prediction_coefs", n, n * n, False, REPLICATED)
        parts += linear("altup.modality_router", d, n, False, REPLICATED)
        parts += self.norm.params(d, "altup.router_norm")
        parts += linear("laurel.linear_left", d, r, False) + \
            linear("laurel.linear_right", r, d, False, ROW) + \
            self.norm.params(d, "laurel.post_laurel_norm")
        parts += linear("per_layer_input_gate", d, p, False) + \
            linear("per_layer_projection", p, d, False, ROW) + \
            self.norm.params(d, "post_per_layer_input_norm")
        if self.first:
            width = self.layers * p
            parts += [Part("embed_tokens_per_layer", self.per_layer_vocab * width, EMBEDDING,
                           (self.per_layer_vocab, width), VOCAB, FIRST, lookup=True)]
            parts += [dataclasses.replace(q, stage=FIRST) for q in
                      linear("per_layer_model_projection", d, width, False, REPLICATED)
                      + self.norm.params(p, "per_layer_projection_norm")]
            parts += [Part(f"altup_projections.{i}.weight", d * d, LAYERS, (d, d), REPLICATED,
                           FIRST, matmul=True, module=f"altup_projections.{i}")
                      for i in range(n - 1)]
        if self.last:
            parts += [Part(f"altup_unembed_projections.{i}.weight", d * d, LAYERS, (d, d),
                           REPLICATED, LAST, matmul=True, module=f"altup_unembed_projections.{i}")
                      for i in range(n - 1)]
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        return self.flops(d, x.tokens)

    def flops(self, d: int, tokens: int) -> list[Part]:
        """Over T tokens: the MLP's; AltUp's two routers (T×d)·(d×n) each, the prediction
        coefficients (T×n)·(n×n²), the mix of the streams (d×n)·(n×n) per token → 2·T·d·n²,
        the correction coefficients (T×n)·(n×n); LAuReL (T×d)·(d×r) and (T×r)·(r×d); the
        per-layer gate (T×d)·(d×p) and projection (T×p)·(p×d); the first layer's n − 1
        (T×d)·(d×d) and (T×d)·(d×L·p), the last layer's n − 1 (T×d)·(d×d). The top-k is no
        matmul."""
        t, n, r, p = tokens, self.streams, self.laurel_rank, self.per_layer
        parts = self.mlp.flops(d, t)
        parts += [gemm("altup.modality_router", 2 * t, d, n, REPLICATED),
                  gemm("altup.prediction_coefs", t, n, n * n, REPLICATED),
                  Part("altup.predict_mix", 2 * t * d * n * n, WEIGHTS),
                  gemm("altup.correction_coefs", t, n, n, REPLICATED),
                  gemm("laurel.linear_left", t, d, r),
                  gemm("laurel.linear_right", t, r, d, ROW),
                  gemm("per_layer_input_gate", t, d, p),
                  gemm("per_layer_projection", t, p, d, ROW)]
        if self.first:
            parts.append(gemm("per_layer_model_projection", t, d, self.layers * p, REPLICATED))
            parts += [gemm("altup_projections", t * (n - 1), d, d, REPLICATED)] if n > 1 else []
        if self.last and n > 1:
            parts.append(gemm("altup_unembed_projections", t * (n - 1), d, d, REPLICATED))
        return parts

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self.flops(d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Per token (an estimate of the element-wise work, not FlopCounterMode's): the MLP's;
        AltUp's two router norms and input scales ((norm + 1)·d each), tanh (n each), the
        predictions' residual (n·d), the innovation (d), coefficients + 1 (n), the corrected
        streams (2·n·d), the output scale (d); LAuReL's norm, its add and the two residual
        adds with the 1/√2 (norm + 3)·d; the top-k's mean, deviation, subtract and ReLU (6·f);
        the per-layer input's activation and product ((act + 1)·p), norm and adds to n − 1
        streams ((norm + n − 1)·d); first layer: the projection's scale, norm, add and scale
        of L·p ((norm + 3)·L·p) and the magnitudes of n − 1 streams (5·d each, 2·d the
        target); last layer: the same magnitudes and the mean of n streams (n·d)."""
        t, n, p = x.tokens, self.streams, self.per_layer
        norm = self.norm.per_element
        parts = list(self.mlp.elementwise(d, x))
        altup = 2 * ((norm + 1) * d + n) + n * d + d + n + 2 * n * d + (
            d if self.correct_scale else 0)
        laurel = (norm + 3) * d
        sparse = 6 * self.mlp.d_ff if self.sparse else 0
        act = ACTIVATION_FLOPS.get(self.mlp.activation, 1)
        ple = (act + 1) * p + (norm + n - 1) * d
        per_token = altup + laurel + sparse + ple
        if self.first:
            per_token += (norm + 3) * self.layers * p + 5 * d * (n - 1) + 2 * d
        if self.last:
            per_token += 5 * d * (n - 1) + 2 * d + n * d
        parts.append(Part("elementwise.gemma3n", t * per_token, ELEMENTWISE))
        return parts

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """The MLP's; for backward, in 16 bits: the n streams before and after the mix
        (2·n·d), LAuReL's hidden (r) and output (d), the per-layer gate's input, output and
        product (d + 2·p)."""
        out = list(self.mlp.activations(d, k))
        sb, split = k.seq * k.batch, Fraction(1, k.tp)
        n = self.streams
        out.append(("gemma3n", 2 * sb * (2 * n * d + self.laurel_rank + d + d
                                         + 2 * self.per_layer) * split))
        return out

    def published(self, d: int) -> Published:
        base = self.mlp.published(d)
        return dataclasses.replace(base, departures=base.departures + (
            "this model adds AltUp streams, a LAuReL block and per-layer inputs (Gemma 3n)",))

    def describe(self) -> str:
        words = [self.mlp.describe(), f"AltUp ×{self.streams}", f"LAuReL {self.laurel_rank}",
                 f"per-layer inputs {self.per_layer}"]
        if self.sparse:
            words.append("top-k gate")
        return " + ".join(words)

    def notes(self) -> list[str]:
        return [
            "AltUp (Gemma 3n): n streams of d; per layer two routers d → n, prediction "
            "coefficients n → n², the streams' mix 2·d·n² per token and correction "
            "coefficients n → n; the n − 1 input and output projections d×d are counted with "
            "the first and the last layer",
            "LAuReL (Gemma 3n): d → laurel_rank → d beside the attention, with its norm",
            "per-layer inputs (Gemma 3n): the packed per_layer_vocab × L·p table (looked up) "
            "and the d → L·p projection with its norm counted with the first layer; each "
            "layer's gate d → p and projection p → d",
            "activation sparsity (Gemma 3n): the Gaussian top-k on the gate of the sparse "
            "layers is element-wise work (mean, deviation, cutoff, ReLU), no matmul FLOPs",
        ]


@dataclass(frozen=True)
class Gemma3nConfig:
    """`gemma3n:` in a model file (transformers Gemma3nTextConfig's names in comments)."""

    streams: Annotated[int, Min(1)] = 4  # altup_num_inputs
    laurel_rank: Annotated[int, Min(1)] = 64  # laurel_rank
    per_layer_width: Annotated[int, Min(1)] = 256  # hidden_size_per_layer_input (p)
    per_layer_vocab: Optional[Annotated[int, Min(1)]] = None  # vocab_size_per_layer_input
    window: Optional[Annotated[int, Min(1)]] = None  # sliding_window of the window layers
    correct_scale: bool = True  # altup_correct_scale
    d_ff: Optional[list[Annotated[int, Min(1)]]] = None  # intermediate_size per layer
    sparse: Optional[list[bool]] = None  # activation_sparsity_pattern > 0 per layer


def _index(cfg: Any, name: str) -> int:
    base, _, tag = name.partition("@")
    if not tag.isdigit() or int(tag) >= cfg.n_layers:
        raise ValueError(f"{name}: Gemma 3n's layers are named {base}@N, N the layer's index "
                         f"(0..{cfg.n_layers - 1})")
    return int(tag)


def _per_layer(values: Optional[list], n: int, key: str) -> Optional[list]:
    if values is not None and len(values) != n:
        raise ValueError(f"gemma3n.{key} has {len(values)} entries for {n} layers: give one "
                         "per layer")
    return values


def build(cfg: Any, name: str) -> Gemma3nAttention:
    """A Gemma 3n layer's attention: causal (`full`) or a window of `gemma3n.window`, K and V
    shared in the `shared` layers."""
    from .attention_layers import build as attention
    from .masks import Mask

    g = cfg.gemma3n
    if g is None:
        raise ValueError(f"{name} layers are Gemma 3n's: they need a gemma3n block")
    _index(cfg, name)
    base = name.partition("@")[0]
    attn = attention(cfg, "full")
    fields = {f.name: getattr(attn, f.name) for f in dataclasses.fields(attn)}
    if base.endswith("window"):
        if g.window is None:
            raise ValueError(f"{base} layers need gemma3n.window (the sliding window)")
        fields["mask"] = Mask("window", g.window)
    return Gemma3nAttention(**fields, kv_shared="_shared_" in base)


def feedforward(cfg: Any, name: str) -> Gemma3nBlock:
    """A Gemma 3n layer's block beside its attention (see `Gemma3nBlock`)."""
    from . import mlp

    g, n = cfg.gemma3n, cfg.n_layers
    i = _index(cfg, name)
    widths = _per_layer(g.d_ff, n, "d_ff")
    sparse = _per_layer(g.sparse, n, "sparse")
    width = widths[i] if widths is not None else cfg.d_ff
    if width is None:
        raise ValueError("a Gemma 3n layer has a gated MLP: give d_ff or gemma3n.d_ff")
    return Gemma3nBlock(mlp.from_config(cfg, width), g.streams, g.laurel_rank,
                        g.per_layer_width, g.per_layer_vocab or cfg.vocab_size, n,
                        bool(sparse[i]) if sparse is not None else False, i == 0, i == n - 1,
                        g.correct_scale, model_norm(cfg))


REGISTER = Entry(layer_types=TYPES, tagged=TYPES, build=build,
                 blocks=(("gemma3n", Gemma3nConfig),), ffn=feedforward)
