"""The `attention` report: one attention operation counted scalar by scalar, term by term, next
to the leading order flopcalc's forward counts use (`counting.attention_op`)."""

from __future__ import annotations

from typing import Optional

from ..records import dataclass
from ..counting.attention_op import (ATTENTION_CONVENTION, ATTENTION_SOURCE,
                                     attention_closed_form, attention_leading_order,
                                     attention_terms)
from .common import SCHEMA_VERSION, Report


@dataclass
class AttentionSettings:
    n: int
    m: int
    d_k: int
    d_v: int
    heads: int


@dataclass
class AttentionTermRow:
    name: str
    formula: str
    per_head: int
    total: int


@dataclass
class AttentionReport(Report):
    schema_version: int
    command: str
    settings: AttentionSettings
    terms: list[AttentionTermRow]
    exact_per_head: int
    exact_total: int
    leading_order_per_head: int
    leading_order: int
    difference_per_head: int
    difference: int  # exact_total − leading_order = H·(4mn − m(d_v + 1))
    difference_formula: str
    closed_form_per_head: Optional[int]  # the notes' closed form, when m = n; else null
    closed_form: Optional[int]  # the same x H
    closed_form_formula: Optional[str]
    convention: list[str]
    source: str


def build_attention_report(n: int, m: Optional[int], d_k: int, d_v: int, heads: int = 1
                           ) -> AttentionReport:
    """The exact count for `heads` heads of m queries over n keys (m defaults to n)."""
    m = n if m is None else m
    terms = attention_terms(n, m, d_k, d_v)
    exact_head = sum(t.per_head for t in terms)
    leading_head = attention_leading_order(n, m, d_k, d_v)
    closed = attention_closed_form(n, d_k, d_v) if m == n else None
    return AttentionReport(
        schema_version=SCHEMA_VERSION, command="attention",
        settings=AttentionSettings(n, m, d_k, d_v, heads),
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
