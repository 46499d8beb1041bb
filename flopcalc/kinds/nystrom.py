"""Nyströmformer's attention (Xiong et al. 2021, "Nyströmformer: A Nyström-Based Algorithm for
Approximating Self-Attention", AAAI; transformers 5.24
`models/nystromformer/modeling_nystromformer.py` NystromformerSelfAttention) as an encoder's
token mixer, `layer_types: [nystrom]`, configured by a `nystrom:` block.

BERT's q, k, v and o (with biases) over h heads of d_h, and:

- when `landmarks` (m, `num_landmarks`) equals `segment_len` (`segment_means_seq_len`), the
  exact softmax attention, 2·B·h·L²·d_h for the scores and as much for the weighted sum;
- otherwise the Nyström approximation over m landmarks (the means of L/m consecutive queries
  and keys: transformers reshapes by `segment_means_seq_len`, so it runs sequences of exactly
  that length): kernel 1 (queries × landmark keys) 2·B·h·L·d_h·m, kernel 2 (landmarks ×
  landmarks) 2·B·h·m²·d_h, kernel 3 (landmark queries × keys) 2·B·h·m·d_h·L, the iterative
  Moore-Penrose inverse of kernel 2 (6 iterations of 4 (m×m)·(m×m) products: 48·B·h·m³),
  kernel 1 × inverse 2·B·h·L·m², kernel 3 × V 2·B·h·m·L·d_h and their product
  2·B·h·L·m·d_h;
- with `conv_kernel` (k), a depthwise convolution of the values over k positions per head
  (Conv2d(h, h, (k, 1), groups=h), no bias) added to the output: 2·B·h·L·d_h·k, h·k
  parameters.

All of it counts as the attention family (activations times activations, or the convolution
over them).

YOSO's attention (Zeng et al. 2021, "You Only Sample (Almost) Once: Linear Cost Self-Attention
Via Bernoulli Sampling", ICML; `models/yoso/modeling_yoso.py` YosoSelfAttention, YosoCumulation)
with `use_expectation` is the same work: `layer_types: [yoso]` (a `yoso:` block), the
normalised queries against every key, QKᵀ, then the LSH collision probability
(1 − arccos(q·k)/π)^τ in place of the softmax (element-wise) and its product with V, 2·B·h·L²·d_h
each; and `conv_window`'s depthwise convolution of the values as Nyströmformer's.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

from ..records import dataclass
from ..declare import Min
from .attention import SOFTMAX_PER_SCORE, Attention
from .base import ATTENTION, ELEMENTWISE, LAYERS, REPLICATED, Keeping, Part, Span
from .deberta import AffineTerm
from .registry import Entry

INVERSE_ITERATIONS = 6  # NystromformerSelfAttention.iterative_inv's n_iter
INVERSE_PRODUCTS = 4  # (m×m)·(m×m) products per iteration


@dataclass(frozen=True)
class NystromAttention(Attention):
    """BERT's attention, exact when `landmarks` == `segment_len`, else over `landmarks`
    landmarks; `conv_kernel` taps of a depthwise convolution over the values (0: none)."""

    landmarks: int = 64
    segment_len: int = 64
    conv_kernel: int = 0
    yoso: bool = False  # YOSO's expected LSH collision kernel in place of the softmax

    @property
    def exact(self) -> bool:
        return self.landmarks == self.segment_len

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = super().params(d, active)
        if self.conv_kernel:
            h, k = self.heads, self.conv_kernel
            parts.append(Part("conv.weight", h * k, LAYERS, (h, 1, k, 1), REPLICATED,
                              matmul=True, module="conv"))
        return parts

    def landmark_parts(self, batch: int, n: int) -> list[Part]:
        h, m, dh = self.heads, self.landmarks, self.qk_dim
        bh = batch * h
        return [Part("kernel1", 2 * bh * n * dh * m, ATTENTION),  # (L×d_h)·(d_h×m)
                Part("kernel2", 2 * bh * m * dh * m, ATTENTION),  # (m×d_h)·(d_h×m)
                Part("kernel3", 2 * bh * m * dh * n, ATTENTION),  # (m×d_h)·(d_h×L)
                Part("pinv", INVERSE_ITERATIONS * INVERSE_PRODUCTS * 2 * bh * m ** 3,
                     ATTENTION),  # (m×m)·(m×m) per product
                Part("kernel1_pinv", 2 * bh * n * m * m, ATTENTION),  # (L×m)·(m×m)
                Part("kernel3_v", 2 * bh * m * n * dh, ATTENTION),  # (m×L)·(L×d_h)
                Part("av", 2 * bh * n * m * dh, ATTENTION)]  # (L×m)·(m×d_h)

    def forward(self, d: int, x: Span) -> list[Part]:
        if self.exact:
            parts = super().forward(d, x)
        else:
            parts = [p for p in super().forward(d, x) if p.family != ATTENTION]
            parts[-1:-1] = self.landmark_parts(x.batch, x.n)
        if self.conv_kernel:  # (k taps) per head, position and channel
            parts.append(Part("conv", 2 * x.batch * self.heads * x.n * self.qk_dim
                              * self.conv_kernel, ATTENTION))
        return parts

    def elementwise(self, d: int, x: Span) -> list[Part]:
        if self.exact:
            return super().elementwise(d, x)
        parts = [p for p in super().elementwise(d, x) if p.name != "elementwise.softmax"]
        m, bh, n = self.landmarks, x.batch * self.heads, x.n
        # the three kernels' softmaxes (L·m + m² + m·L scores per head)
        return parts + [Part("elementwise.softmax", SOFTMAX_PER_SCORE * bh * (2 * n * m + m * m),
                             ELEMENTWISE)]

    def activations(self, d: int, k: Keeping) -> list[tuple[str, Fraction]]:
        parts = super().activations(d, k)
        if self.conv_kernel:  # the values the convolution reads, 16-bit
            parts.append(("conv_input", 2 * k.seq * k.batch * self.d_v * Fraction(1, k.tp)))
        return parts

    def pair_terms(self) -> list[tuple[int, Any]]:
        """Exact: QKᵀ and AV over every pair; landmarks: no s² term, the products linear in L
        (8·h·d_h·m + 2·h·m² per token) and constant (2·h·m²·d_h + 48·h·m³); the convolution
        2·h·d_h·k per token."""
        h, m, dh = self.heads, self.landmarks, self.qk_dim
        terms = super().pair_terms() if self.exact else [
            (1, AffineTerm(8 * h * dh * m + 2 * h * m * m, 2 * h * m * m * dh
                        + INVERSE_ITERATIONS * INVERSE_PRODUCTS * 2 * h * m ** 3))]
        if self.conv_kernel:
            terms.append((2 * h * dh * self.conv_kernel, AffineTerm(1, 0)))
        return terms

    def describe(self) -> str:
        core = "YOSO's expected LSH kernel" if self.yoso else "exact softmax" if self.exact \
            else f"Nyström over {self.landmarks} landmarks"
        conv = f", a {self.conv_kernel}-tap convolution of the values" if self.conv_kernel else ""
        return f"bidirectional, {core}{conv}"

    def notes(self) -> list[str]:
        if self.yoso:
            return ["YOSO attention (use_expectation): QKᵀ and the expected collision kernel "
                    "times V over every pair, as transformers computes them"
                    + (f", plus a depthwise convolution of {self.conv_kernel} taps over the "
                       "values" if self.conv_kernel else "")]
        if self.exact:
            core = "the exact softmax (num_landmarks = segment_means_seq_len)"
        else:
            core = (f"the Nyström approximation over {self.landmarks} landmarks (its kernels, "
                    f"{INVERSE_ITERATIONS} pseudo-inverse iterations and products; transformers "
                    f"runs only sequences of {self.segment_len} tokens)")
        conv = (f", plus a depthwise convolution of {self.conv_kernel} taps over the values"
                if self.conv_kernel else "")
        return [f"Nyströmformer attention: {core}{conv}, as transformers computes it"]


@dataclass(frozen=True)
class NystromConfig:
    """`nystrom:` in a model file: Nyströmformer's `landmarks` (num_landmarks), `segment_len`
    (segment_means_seq_len) and `conv_kernel` (conv_kernel_size; 0: no convolution)."""

    landmarks: Annotated[int, Min(1)] = 64
    segment_len: Annotated[int, Min(1)] = 64
    conv_kernel: Annotated[int, Min(0)] = 65


@dataclass(frozen=True)
class YosoConfig:
    """`yoso:` in a model file: YOSO's `conv_window` (0: no convolution)."""

    conv_window: Annotated[int, Min(0)] = 0


def build(cfg: Any, name: str) -> NystromAttention:
    from dataclasses import fields

    from . import attention_layers

    if name == "yoso":
        window = (cfg.yoso or YosoConfig()).conv_window
        block = NystromConfig(landmarks=1, segment_len=1, conv_kernel=window)
    else:
        block = cfg.nystrom or NystromConfig()
    if block.conv_kernel and block.conv_kernel % 2 == 0:
        raise ValueError(f"the convolution's {block.conv_kernel} taps must be odd: an even "
                         "kernel's padding lengthens the sequence and transformers fails")
    if block.landmarks != block.segment_len and block.segment_len % block.landmarks:
        raise ValueError(f"nystrom.landmarks={block.landmarks} must divide "
                         f"segment_len={block.segment_len} (each landmark is the mean of a "
                         "segment)")
    base = attention_layers.build(cfg, "bidirectional")
    if type(base) is not Attention:
        raise ValueError("nystrom layers are softmax attention, not latent_attention")
    return NystromAttention(**{f.name: getattr(base, f.name) for f in fields(base)},
                            landmarks=block.landmarks, segment_len=block.segment_len,
                            conv_kernel=block.conv_kernel, yoso=name == "yoso")


REGISTER = Entry(layer_types=("nystrom", "yoso"), build=build,
                 blocks=(("nystrom", NystromConfig), ("yoso", YosoConfig)))
