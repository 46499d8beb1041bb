"""Named counts and the workload they are counted for.

Every count in flopcalc is a list of named `Part`s; a total is always the sum of its parts,
never a separate formula that could drift from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Literal

Convention = Literal["full", "causal"]

# FLOP part kinds. `weights`: a matmul against a weight matrix (grows linearly in seq).
# `attention`: the score and value matmuls against activations (grow with seq²).
# `elementwise`: bias adds, norms, activations, softmax, residual adds (opt-in).
WEIGHTS, ATTENTION, ELEMENTWISE = "weights", "attention", "elementwise"
# Parameter part kinds. `embedding` parts (token, position and token-type tables, an untied LM
# head) are what the non-embedding N of 6ND leaves out; `norms` are the norms outside layers.
EMBEDDING, LAYERS, NORMS, HEAD = "embedding", "layers", "norms", "head"


@dataclass(frozen=True, slots=True)
class Part:
    """One named count: parameters of a tensor, or FLOPs (or bytes) of an operation."""

    name: str
    value: int
    kind: str
    shape: tuple[int, ...] = ()


def total(parts: Iterable[Part], kind: str | None = None) -> int:
    """Sum of the parts (of one kind, if given)."""
    return sum(p.value for p in parts if kind is None or p.kind == kind)


def scaled(parts: Iterable[Part], factor: int, prefix: str = "") -> list[Part]:
    """The parts times `factor` (e.g. a layer's parts for `factor` identical layers), renamed
    `prefix.name`."""
    return [Part(f"{prefix}.{p.name}" if prefix else p.name, factor * p.value, p.kind, p.shape)
            for p in parts]


def merged(parts: Iterable[Part]) -> list[Part]:
    """Parts of the same name summed into one, in order of first appearance (the groups of a
    stack each add their layers' `attn.q.weight` to the stack's one)."""
    out: dict[str, Part] = {}
    for p in parts:
        seen = out.get(p.name)
        out[p.name] = p if seen is None else Part(p.name, seen.value + p.value, p.kind, p.shape)
    return list(out.values())


@dataclass(frozen=True, slots=True)
class Workload:
    """What one forward pass processes: `batch` sequences of `seq` tokens (the encoder's
    source length of an encoder-decoder model, whose decoder reads `tgt_seq`), with attention
    counted under `attention` (`full`: every pair; `causal`: the pairs each layer's mask lets
    through)."""

    seq: int
    tgt_seq: int
    batch: int = 1
    attention: Convention = "full"

    def length(self, stack: str) -> int:
        """Tokens per sequence a layer of `stack` processes."""
        return self.seq if stack == "encoder" else self.tgt_seq


def per_token(flops: int, tokens: int) -> Fraction:
    return Fraction(flops, tokens)


def ceil_fraction(x: Fraction) -> int:
    return -(-x.numerator // x.denominator)


def round_fraction(x: Fraction) -> int:
    """Nearest integer, halves away from zero (counts here are never negative)."""
    return (2 * x.numerator + x.denominator) // (2 * x.denominator)
