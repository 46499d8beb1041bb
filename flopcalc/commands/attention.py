"""`flopcalc attention`: one attention operation counted scalar by scalar."""

from __future__ import annotations

from .base import Command, Render
from .options import OPTIONS, pick

REQUIRED = "the operation has no default shape"


def run(*, n, d_k, d_v, m, heads):
    from ..reports.attention import build_attention_report

    return build_attention_report(n, m, d_k, d_v, heads)


COMMAND = Command(
    "attention", "One attention operation counted scalar by scalar (every multiply, add, "
    "divide and exp), term by term, against the leading order 2mn(d_k + d_v).",
    (*(OPTIONS[n].but(required=True, why=REQUIRED) for n in ("n", "d_k", "d_v")),
     *pick("m", "heads")),
    run, models="none", report=("attention", "AttentionReport"),
    render=Render("attention", "attention_csv", "attention_tables"))
