"""The MFU that published training runs measured, to set a predicted MFU beside: the one place
this table lives (`step` and `plan` read it; docs/validation.md cites it).

An entry applies to a run of the same model (a preset name) on the same accelerator (a preset
name). A published MFU divides FLOPs counted by the publication's own formula, which may
differ from flopcalc's exact causal count: each entry says which, so the comparison is a
sanity check on the prediction, not a test of it.
"""

from __future__ import annotations

from typing import Optional

from ..records import dataclass


@dataclass(frozen=True)
class PublishedMfu:
    model: str  # preset name
    accelerator: str  # accelerator preset name
    low: float  # the lowest and highest MFU measured (shares of peak)
    high: float
    runs: str  # the runs, in words
    source: str  # the publication, by title, with the table
    formula: str  # how the publication counted its FLOPs


PUBLISHED = (
    PublishedMfu(
        "llama-3.1-405b", "h100-sxm", 0.38, 0.43,
        "Llama 3 405B pre-training on 8,192-16,384 H100 (TP 8, PP 16, CP 1-16, seq 8k-128k: 430, "
        "400 and 380 TFLOP/s per GPU)",
        "Llama Team 2024, \"The Llama 3 Herd of Models\", Table 4",
        "their FLOP formula unpublished"),
)


def published_mfu(model: str, accelerator: str) -> Optional[PublishedMfu]:
    """The published range for this model on this accelerator (None where there is none)."""
    return next((p for p in PUBLISHED if p.model == model and p.accelerator == accelerator),
                None)


def where(mfu: float, ref: PublishedMfu) -> str:
    """below, inside or above the published range."""
    return "above" if mfu > ref.high else "below" if mfu < ref.low else "inside"


def against_published(mfu: float, ref: PublishedMfu) -> str:
    """A line setting a predicted MFU beside the published range."""
    return (f"predicted MFU {100 * mfu:.1f}% is {where(mfu, ref)} the {100 * ref.low:.0f}-"
            f"{100 * ref.high:.0f}% measured by {ref.runs} ({ref.source}; {ref.formula})")
