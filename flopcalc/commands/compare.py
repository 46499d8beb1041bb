"""`flopcalc compare`: key figures of several models side by side."""

from __future__ import annotations

from ..errors import FlopcalcError
from .base import Command, Render
from .common import load
from .options import pick


def run(models, *, seq, batch, tokens, attention, scan, set):  # noqa: A002
    from ..reports.compare import build_compare_report
    from ..reports.model import build_model_report

    if isinstance(models, str) or not models:
        raise FlopcalcError("compare needs a list of models")
    loaded = [load(name, set) for name in models]
    reports = [build_model_report(m, seq=seq, batch=batch, tokens=tokens, attention=attention,
                                  scan=scan) for m in loaded]
    return build_compare_report(reports, seq, batch, attention, scan, [m.spec for m in loaded])


COMMAND = Command(
    "compare", "Key figures of several models side by side (each at its own default length "
    "unless --seq). --set applies to every model.",
    pick("seq", "batch", "tokens", "attention", "scan", "set"), run, models="many",
    presentation=("format", "plot"), plotted="the comparison",
    report=("compare", "CompareReport"),
    render=Render("compare", "compare_csv", "compare_tables", plot="plot_compare"))
