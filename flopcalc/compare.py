"""`flopcalc compare`: the key figures of several models, one flat record per model."""

from __future__ import annotations

from typing import Any

from .report import Report, conventions


def summary(report: Report) -> dict[str, Any]:
    """The figures `compare` puts side by side, taken from a model report."""
    p, f, t, x = report.params, report.flops, report.training, report.crossover
    return {
        "name": report.model.name,
        "params_total": p.total,
        "params_non_embedding": p.non_embedding,
        "seq": report.settings.seq,
        "flops_forward": f.forward,
        "flops_weights": f.weights,
        "flops_attention": f.attention,
        "flops_forward_per_token": f.forward_per_token,
        "attention_share_pct": x.attention_share_pct,
        "crossover_seq": x.seq,
        "crossover_d_model_multiple": x.d_model_multiple,
        "training_tokens": t.tokens,
        "training_six_nd": t.six_nd,
        "training_exact": t.exact,
        "six_nd_below_exact_pct": t.six_nd_below_exact_pct,
    }


def compare_report(reports: list[Report], seq: int | None, batch: int,
                   attention: str) -> dict[str, Any]:
    """The `compare` document: the shared settings and conventions, one summary per model."""
    return {"schema_version": 1,
            "settings": {"seq": seq, "batch": batch, "attention": attention},
            "conventions": conventions(None, attention),
            "models": [summary(r) for r in reports]}
