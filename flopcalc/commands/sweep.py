"""`flopcalc sweep`: forward FLOPs over many sequence lengths."""

from __future__ import annotations

from .base import Command, Render
from .common import load
from .options import pick


def run(model, *, seqs, points, batch, attention, scan, set):  # noqa: A002
    from ..reports.sweep import build_sweep_report

    return build_sweep_report(load(model, set), seqs, points, batch, attention, scan)


COMMAND = Command(
    "sweep", "Forward FLOPs over many sequence lengths: where attention's s² term takes over.",
    pick("seqs", "points", "batch", "attention", "scan", "set"), run,
    presentation=("format", "plot"), plotted="the sweep", report=("sweep", "SweepReport"),
    render=Render("sweep", "sweep_csv", "sweep_tables", plot="plot_sweep"))
