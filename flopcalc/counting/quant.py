"""Bytes of weights stored in a dtype or in a quantised format with its scales.

A plain dtype (`tables.DTYPE_BITS`: fp32, bf16, fp16, fp8, int8, int4) stores every parameter
at its width, scales uncounted (as `infer` always has). A scaled format (`tables.
SCALED_FORMATS`) stores the matmul weights of the layers (2-D tensors split by tensor
parallelism, column or row, and the routed experts' stacked matrices) as low-bit values plus
their scales, blocks running along each matrix's input dimension, and keeps everything else
(embeddings, the LM head, norms, biases, routers) in bf16, as quantised checkpoints ship them:

- nvfp4 (NVIDIA ModelOpt NVFP4): ½ byte per value + one FP8 E4M3 scale per 16 values of a row
  + one fp32 global scale per matrix: a (n_in × n_out) matrix takes n_in·n_out/2 +
  n_out·⌈n_in/16⌉ + 4 bytes;
- mxfp4 (OCP Microscaling v1.0; gpt-oss's experts): ½ byte per value + one E8M0 scale per 32:
  n_in·n_out/2 + n_out·⌈n_in/32⌉;
- fp8-tensor: 1 byte per value + one fp32 scale per matrix: n_in·n_out + 4;
- fp8-block (DeepSeek-V3's checkpoints): 1 byte per value + one fp32 scale per 128 × 128 tile:
  n_in·n_out + 4·⌈n_in/128⌉·⌈n_out/128⌉.

`experts` may give the routed experts a format of their own (gpt-oss: mxfp4 experts, bf16
attention).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..kinds.base import COLUMN, EXPERT, LAYERS, ROW, Part, cdiv
from ..models.spec import ModelSpec
from ..tables import DTYPE_BITS, SCALED_FORMATS
from .model import model_params, token_params

UNQUANTISED = "bf16"  # what a scaled format leaves unquantised
FORMATS = tuple(DTYPE_BITS) + tuple(SCALED_FORMATS)


def quantised(p: Part) -> bool:
    """Whether a scaled format quantises this tensor: a layer's matmul weight (2-D, split by
    tensor parallelism) or a routed expert's stacked matrices, experts × n_in × n_out
    (`Part.matmul`)."""
    if p.family != LAYERS or p.lookup or not p.matmul:
        return False
    if p.role in (COLUMN, ROW):
        return len(p.shape) == 2
    return p.role == EXPERT and len(p.shape) == 3


def matrix_bytes(n_in: int, n_out: int, fmt: str) -> Fraction:
    """Bytes of one (n_in × n_out) matrix in a scaled format, scales included."""
    bits, block, scale_bits, tensor = SCALED_FORMATS[fmt]
    values = Fraction(n_in * n_out * bits, 8)
    if fmt == "fp8-block":
        scales = cdiv(n_in, block) * cdiv(n_out, block) * scale_bits // 8
    elif block:
        scales = n_out * cdiv(n_in, block) * scale_bits // 8
    else:
        scales = 0
    return values + scales + tensor


def part_bytes(p: Part, fmt: str, experts: Optional[str] = None) -> Fraction:
    """Bytes of a parameter tensor stored as `fmt` (routed experts as `experts`, else `fmt`)."""
    if p.role == EXPERT and experts is not None:
        fmt = experts
    if fmt in DTYPE_BITS:
        return Fraction(p.value * DTYPE_BITS[fmt], 8)
    if not quantised(p):
        return Fraction(p.value * DTYPE_BITS[UNQUANTISED], 8)
    n_in, n_out = p.shape[-2:]
    matrices = p.value // (n_in * n_out)  # a stack's matrices, over every layer: a whole number
    return matrices * matrix_bytes(n_in, n_out, fmt)


def bits_per_value(fmt: str) -> int:
    return DTYPE_BITS[fmt] if fmt in DTYPE_BITS else SCALED_FORMATS[fmt][0]


def weight_bytes(parts: list[Part], fmt: str, experts: Optional[str] = None) -> Fraction:
    return sum((part_bytes(p, fmt, experts) for p in parts), Fraction(0))


def model_weight_bytes(spec: ModelSpec, fmt: str, experts: Optional[str] = None) -> Fraction:
    """Bytes of every stored parameter (a tied LM head once)."""
    return weight_bytes(model_params(spec), fmt, experts)


@dataclass(frozen=True)
class ReadBytes:
    """Weight bytes a forward over some tokens reads: the least, the expectation under uniform
    routing and the most (equal for a dense model)."""

    least: Fraction
    expected: Fraction
    most: Fraction


def read_bytes(spec: ModelSpec, tokens: int, fmt: str, experts: Optional[str] = None
               ) -> ReadBytes:
    """Weight bytes read by a forward over `tokens` new tokens: every tensor once (of a lookup
    table the rows its tokens use), of a mixture of experts the experts routed to (as
    `traffic.weight_reads`, in bytes)."""
    fixed = Fraction(0)
    for p in token_params(spec):  # a vision tower's run only on images
        if p.lookup:
            fixed += part_bytes(p, fmt, experts) * min(tokens, p.shape[0]) / p.shape[0]
        else:
            fixed += part_bytes(p, fmt, experts)
    least = expected = most = fixed
    d = spec.d_model
    for g in spec.groups():
        for _, kind in g.layer.slots():
            reads = kind.reads(d, tokens)
            if reads is None:
                continue
            stacked = [p for p in kind.params(d) if p.role == EXPERT]
            per_expert = weight_bytes(stacked, fmt, experts) / reads.experts
            least += g.count * (reads.least - reads.experts) * per_expert
            expected += g.count * (Fraction(reads.expected) - reads.experts) * per_expert
            most += g.count * (reads.most - reads.experts) * per_expert
    return ReadBytes(least, expected, most)
