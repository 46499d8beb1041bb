"""MobileBERT's layer (Sun et al. 2020, "MobileBERT: a Compact Task-Agnostic BERT for
Resource-Limited Devices", ACL; transformers 5.24 `models/mobilebert/modeling_mobilebert.py`:
MobileBertLayer, Bottleneck, FFNLayer, OutputBottleneck) as an encoder's token mixer,
`layer_types: [mobilebert]`, holding the layer's feed-forward networks too (no `d_ff`).

Over d = hidden_size, the layer runs at t = `intra_bottleneck_size` (b) with `use_bottleneck`,
else at d. With the bottleneck:

- `bottleneck.input`: d → b with a bias, then its norm (b); with `key_query_shared_bottleneck`
  a second one, `bottleneck.attention` (held even when `use_bottleneck_attention` leaves it
  unrun), feeding the queries and keys; with `use_bottleneck_attention` the first feeds q, k
  and v, otherwise v reads the layer's d-wide input;
- attention over `heads` heads of t / heads: q and k t → t, v (t or d) → t, each with a bias;
  the scores and the weighted sum, 2·B·h·L²·(t/h) each; `attention.output` t → t with a bias
  and its norm (t) after the residual add (the residual is the bottlenecked input);
- `ffns` feed-forward networks (num_feedforward_networks): the first `ffns` − 1 FFNLayers
  (t → f with a bias, activation, f → t with a bias, a norm (t) after the residual add), then
  the layer's own (t → f, f → t and its norm);
- `output.bottleneck`: t → d with a bias, added to the layer's input, then a norm (d): the
  layer's norm (placement post), which the model's norm counts, not this kind.

Without the bottleneck t = d, there are no bottleneck projections, and the last FFN's norm is
the layer's. The norms are MobileBERT's `normalization_type`: `no_norm` (NoNorm: x·w + b, a
gain and a bias) or `layer_norm`; both hold 2·width parameters and neither is a matmul.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .attention import SOFTMAX_PER_SCORE
from .base import (ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, ROW, Keeping, Kind, Part, Span,
                   gemm, linear)
from .masks import Mask
from .mlp import ACTIVATION_FLOPS
from .registry import Entry

NORM_PER_ELEMENT = {"no_norm": 2, "layer_norm": 7}  # x·w + b; LayerNorm as kinds.norm counts it


@dataclass(frozen=True)
class MobileBertLayer(Kind):
    """A MobileBERT layer over d = `d_model` at inner width `inner` (t), `heads` heads, `ffns`
    feed-forward networks `intermediate` wide with `activation`; `bottleneck`: t = b with its
    projections, `shared_qk`: the second bottleneck for q and k, `bottleneck_attention`: q, k,
    v all from the first; `norm_type`: no_norm or layer_norm."""

    d_model: int
    inner: int
    heads: int
    intermediate: int
    ffns: int = 1
    bottleneck: bool = True
    shared_qk: bool = True
    bottleneck_attention: bool = False
    activation: str = "relu"
    norm_type: str = "no_norm"
    slot = "mobilebert"
    bidirectional = True
    holds_mlp = True  # the layer's feed-forward networks are the kind's own (no d_ff)

    def _v_in(self, d: int) -> int:
        return self.inner if self.bottleneck_attention or not self.bottleneck else d

    def _norm(self, name: str, width: int) -> list[Part]:
        return [Part(f"{name}.{w}", width, LAYERS, (width,), REPLICATED, module=name)
                for w in ("weight", "bias")]

    def params(self, d: int, active: bool = False) -> list[Part]:
        t, f = self.inner, self.intermediate
        parts: list[Part] = []
        if self.bottleneck:
            parts += linear("bottleneck.input", d, t, True) + self._norm(
                "bottleneck.input_norm", t)
            if self.shared_qk:
                parts += linear("bottleneck.attention", d, t, True) + self._norm(
                    "bottleneck.attention_norm", t)
        parts += linear("q", t, t, True) + linear("k", t, t, True) + linear(
            "v", self._v_in(d), t, True) + linear("o", t, t, True, ROW) + self._norm(
            "attn_norm", t)
        for i in range(self.ffns):
            name = f"ffn{i}" if i < self.ffns - 1 else "ffn"
            parts += linear(f"{name}.up", t, f, True) + linear(f"{name}.down", f, t, True, ROW)
            if i < self.ffns - 1 or self.bottleneck:  # the last one's is the layer's without
                parts += self._norm(f"{name}.norm", t)
        if self.bottleneck:
            parts += linear("output_bottleneck", t, d, True, ROW)
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        t, f, tok = self.inner, self.intermediate, x.tokens
        parts = []
        if self.bottleneck:
            parts.append(gemm("bottleneck.input", tok, d, t))  # (T×d)·(d×b)
            if self.shared_qk and not self.bottleneck_attention:
                parts.append(gemm("bottleneck.attention", tok, d, t))
        pairs = x.batch * x.n * x.source
        parts += [gemm("q", tok, t, t), gemm("k", tok, t, t), gemm("v", tok, self._v_in(d), t),
                  Part("scores", 2 * pairs * t, ATTENTION),  # h heads of t/h: 2·h·(t/h)
                  Part("av", 2 * pairs * t, ATTENTION),
                  gemm("o", tok, t, t, ROW)]
        for _ in range(self.ffns):  # (T×t)·(t×f), (T×f)·(f×t)
            parts += [gemm("ffn.up", tok, t, f), gemm("ffn.down", tok, f, t, ROW)]
        if self.bottleneck:
            parts.append(gemm("output_bottleneck", tok, t, d, ROW))  # (T×b)·(b×d)
        return parts

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Per token: the bias adds, the norms the kind holds, the activations and residual
        adds; the softmax per score."""
        t, f, tok = self.inner, self.intermediate, x.tokens
        per_norm = NORM_PER_ELEMENT[self.norm_type]
        runs_b = (1 + (self.shared_qk and not self.bottleneck_attention)) if self.bottleneck \
            else 0
        biases = runs_b * t + 4 * t + self.ffns * (f + t) + (d if self.bottleneck else 0)
        norms = runs_b * t + t + (self.ffns - (0 if self.bottleneck else 1)) * t
        residual = t + self.ffns * t + (d if self.bottleneck else 0)
        scores = self.heads * x.batch * x.n * x.source
        return [Part("elementwise.bias", tok * biases, ELEMENTWISE),
                Part("elementwise.norms", tok * per_norm * norms, ELEMENTWISE),
                Part("elementwise.activation", tok * self.ffns * f
                     * ACTIVATION_FLOPS[self.activation], ELEMENTWISE),
                Part("elementwise.residual", tok * residual, ELEMENTWISE),
                Part("elementwise.softmax", SOFTMAX_PER_SCORE * scores, ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        """16-bit per token, what eager PyTorch keeps for backward: the layer input (d), the
        bottlenecks' outputs and norm inputs (t each), q, k, v and the attention output (t
        each), the output's norm input (t), per FFN its input (t), two f-wide hidden tensors
        and its norm input (t), the output bottleneck's input (t); the scores and
        probabilities, 2·h·L² per sequence."""
        tokens, t, f = k.seq * k.batch, self.inner, self.intermediate
        bottlenecks = (1 + self.shared_qk) if self.bottleneck else 0
        per_token = d + 2 * bottlenecks * t + 4 * t + t + self.ffns * (2 * t + 2 * f) + t
        scores = 2 * self.heads * k.batch * k.seq * k.seq
        return [("mobilebert", 2 * (tokens * per_token + scores) * Fraction(1, k.tp))]

    def pair_terms(self) -> list[tuple[int, Optional[Mask]]]:
        """QKᵀ and AV over every pair: 4·t per pair (h heads of t/h)."""
        return [(4 * self.inner, Mask("bidirectional"))]

    def tp_units(self) -> int:
        return self.heads

    def describe(self) -> str:
        inner = f"bottleneck {self.inner}" if self.bottleneck else "no bottleneck"
        return f"MobileBERT layer, {inner}, {self.heads} heads, {self.ffns} FFNs of " \
               f"{self.intermediate}"

    def notes(self) -> list[str]:
        notes = [f"MobileBERT: each layer runs at width {self.inner} "
                 + ("between its input and output bottlenecks " if self.bottleneck else "")
                 + f"with {self.ffns} stacked feed-forward networks"]
        if self.norm_type == "no_norm":
            notes.append("MobileBERT's NoNorm (x·w + b) holds as many parameters as a "
                         "LayerNorm; the element-wise count takes the layers' and the "
                         "embedding's last norm as LayerNorms")
        return notes


@dataclass(frozen=True)
class MobileBertConfig:
    """`mobilebert:` in a model file: MobileBERT's `intra_bottleneck_size`, `use_bottleneck`,
    `key_query_shared_bottleneck`, `use_bottleneck_attention`, `num_feedforward_networks`,
    `intermediate_size` and `normalization_type`."""

    intra_bottleneck_size: Annotated[int, Min(1)] = 128
    use_bottleneck: bool = True
    key_query_shared_bottleneck: bool = True
    use_bottleneck_attention: bool = False
    num_feedforward_networks: Annotated[int, Min(1)] = 4
    intermediate_size: Annotated[int, Min(1)] = 512
    normalization_type: str = "no_norm"


def build(cfg: Any, name: str) -> MobileBertLayer:
    block = cfg.mobilebert or MobileBertConfig()
    d = cfg.d_model
    t = block.intra_bottleneck_size if block.use_bottleneck else d
    if cfg.n_heads is None or t % cfg.n_heads:
        raise ValueError(f"MobileBERT's {cfg.n_heads} heads must divide its inner width {t}")
    if block.normalization_type not in NORM_PER_ELEMENT:
        raise ValueError(f"mobilebert.normalization_type must be no_norm or layer_norm, got "
                         f"{block.normalization_type!r}")
    if block.use_bottleneck and not (block.use_bottleneck_attention
                                     or block.key_query_shared_bottleneck) and t != d:
        raise ValueError("MobileBERT with a bottleneck needs key_query_shared_bottleneck or "
                         "use_bottleneck_attention: otherwise its queries read the d-wide input "
                         "through t-wide projections and transformers fails")
    return MobileBertLayer(d_model=d, inner=t, heads=cfg.n_heads,
                           intermediate=block.intermediate_size,
                           ffns=block.num_feedforward_networks,
                           bottleneck=block.use_bottleneck,
                           shared_qk=block.key_query_shared_bottleneck,
                           bottleneck_attention=block.use_bottleneck_attention,
                           activation=cfg.activation, norm_type=block.normalization_type)


REGISTER = Entry(layer_types=("mobilebert",), build=build,
                 blocks=(("mobilebert", MobileBertConfig),))
