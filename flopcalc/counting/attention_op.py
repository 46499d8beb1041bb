"""The exact count of one attention operation (`flopcalc attention`): every term of
softmax(QKᵀ/√d_k + B)·V under the one-FLOP-per-scalar-operation convention of "Notes on
Transformer Blocks, Tensor Dimensions and Attention FLOPs", next to the leading order."""

from __future__ import annotations

from ..records import dataclass



ATTENTION_SOURCE = ("\"Notes on Transformer Blocks, Tensor Dimensions and Attention FLOPs\", "
                    "its exact count of one attention operation under one stated convention")
ATTENTION_CONVENTION = [
    "every scalar multiply, add, divide and exp counts 1 FLOP (a multiply-add is 2)",
    "a length-k dot product is k multiplies and k − 1 adds",
    "scaling by 1/√d_k: 1 multiply per score; mask or bias: 1 add per score",
    "softmax per query row of n scores: n exps, n − 1 adds, n divides (3n − 1); the "
    "row-max subtraction for numerical stability is not counted",
    "per head: m queries attend to n keys; totals are per head x H heads",
    "leading_order keeps only the two matmuls at 2 FLOPs per multiply-add, 2·m·n·(d_k + d_v): "
    "flopcalc's attention-matrix count (scores + av) for one head",
]


@dataclass(frozen=True, slots=True)
class AttentionTerm:
    name: str
    formula: str
    per_head: int


def attention_terms(n: int, m: int, d_k: int, d_v: int) -> list[AttentionTerm]:
    """The exact FLOPs of softmax(QKᵀ/√d_k + B)·V for one head, term by term, under the notes'
    convention (`ATTENTION_CONVENTION`): m queries, n keys, Q (m×d_k), K (n×d_k), V (n×d_v)."""
    return [
        # (m×d_k)·(d_k×n): m·n dot products of length d_k, each d_k multiplies + d_k − 1 adds.
        AttentionTerm("qk", "m·n·(2·d_k − 1)", m * n * (2 * d_k - 1)),
        AttentionTerm("scale", "m·n", m * n),
        AttentionTerm("mask", "m·n", m * n),
        # Per row: n exps, a sum of n terms (n − 1 adds), n divides.
        AttentionTerm("softmax", "m·(3·n − 1)", m * (3 * n - 1)),
        # (m×n)·(n×d_v): m·d_v dot products of length n.
        AttentionTerm("av", "m·d_v·(2·n − 1)", m * d_v * (2 * n - 1)),
    ]


def attention_leading_order(n: int, m: int, d_k: int, d_v: int) -> int:
    """The two matmuls at 2 FLOPs per multiply-add, per head: 2·m·n·(d_k + d_v)."""
    return 2 * m * n * (d_k + d_v)


def attention_closed_form(n: int, d_k: int, d_v: int) -> int:
    """The notes' simplified total for m = n, per head: 2n²(d_k + d_v) + 4n² − n(d_v + 1)."""
    return 2 * n * n * (d_k + d_v) + 4 * n * n - n * (d_v + 1)
