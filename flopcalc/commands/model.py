"""`flopcalc model`: parameters, forward FLOPs by component, training FLOPs and the crossover."""

from __future__ import annotations

from .base import Command, Render
from .common import load
from .options import pick


def run(model, *, seq, tgt_seq, packed, batch, tokens, attention, scan, elementwise, images,
        image_size, set):  # noqa: A002
    from ..reports.model import build_model_report

    return build_model_report(load(model, set), seq=seq, tgt_seq=tgt_seq, batch=batch,
                              tokens=tokens, attention=attention, elementwise=elementwise,
                              images=images, image_size=image_size, scan=scan,
                              packed=packed)


COMMAND = Command(
    "model", "Parameters, forward FLOPs by component, training FLOPs and the attention "
    "crossover.",
    pick("seq", "tgt_seq", "packed", "batch", "tokens", "attention", "scan", "elementwise",
         "images", "image_size", "set"),
    run, presentation=("format", "brief"), report=("model", "ModelReport"),
    render=Render("model", "model_csv", "model_tables", "model_brief"))
