"""Seed 004's exact count of one attention operation (`flopcalc attention`): every term of
softmax(QKᵀ/√d_k + B)·V under the seed's stated convention, next to the leading order."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

SCHEMA_VERSION = 1

# --------------------------------------------------------------------------------------------
# Seed 004: the exact count of one attention operation
# --------------------------------------------------------------------------------------------

ATTENTION_SOURCE = ("seed 004, \"Notes on Transformer Blocks, Tensor Dimensions and Attention "
                    "FLOPs\": \"Exact count under one simple convention\"")
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
    """The exact FLOPs of softmax(QKᵀ/√d_k + B)·V for one head, term by term, under seed 004's
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
    """Seed 004's simplified total for m = n, per head: 2n²(d_k + d_v) + 4n² − n(d_v + 1)."""
    return 2 * n * n * (d_k + d_v) + 4 * n * n - n * (d_v + 1)


@dataclass
class AttentionTermRow:
    name: str
    formula: str
    per_head: int
    total: int


@dataclass
class AttentionReport:
    schema_version: int
    settings: dict[str, int]
    terms: list[AttentionTermRow]
    exact_per_head: int
    exact_total: int
    leading_order_per_head: int
    leading_order: int
    difference_per_head: int
    difference: int  # exact_total − leading_order = H·(4mn − m(d_v + 1))
    difference_formula: str
    closed_form_per_head: Optional[int]  # seed 004's closed form, when m = n; else null
    closed_form: Optional[int]  # the same x H
    closed_form_formula: Optional[str]
    convention: list[str]
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def attention_report(n: int, m: Optional[int], d_k: int, d_v: int, heads: int = 1
                     ) -> AttentionReport:
    """Seed 004's exact count for `heads` heads of m queries over n keys (m defaults to n)."""
    m = n if m is None else m
    terms = attention_terms(n, m, d_k, d_v)
    exact_head = sum(t.per_head for t in terms)
    leading_head = attention_leading_order(n, m, d_k, d_v)
    closed = attention_closed_form(n, d_k, d_v) if m == n else None
    return AttentionReport(
        schema_version=SCHEMA_VERSION,
        settings={"n": n, "m": m, "d_k": d_k, "d_v": d_v, "heads": heads},
        terms=[AttentionTermRow(t.name, t.formula, t.per_head, heads * t.per_head)
               for t in terms],
        exact_per_head=exact_head,
        exact_total=heads * exact_head,
        leading_order_per_head=leading_head,
        leading_order=heads * leading_head,
        difference_per_head=exact_head - leading_head,
        difference=heads * (exact_head - leading_head),
        difference_formula="H·(4·m·n − m·(d_v + 1))",
        closed_form_per_head=closed,
        closed_form=None if closed is None else heads * closed,
        closed_form_formula=("H·(2·n²·(d_k + d_v) + 4·n² − n·(d_v + 1))" if m == n else None),
        convention=list(ATTENTION_CONVENTION),
        source=ATTENTION_SOURCE,
    )
