"""`flopcalc conventions`: training FLOPs under every published convention, side by side."""

from __future__ import annotations

from ..errors import FlopcalcError
from .base import Command, Render
from .common import load
from .options import pick


def run(model, *, seq, tokens, recompute, scan, set):  # noqa: A002
    from ..counting.model import model_params
    from ..kinds.base import total
    from ..reports.common import default_seq, default_tokens
    from ..reports.conventions import build_conventions_report

    if recompute in ("selective", "op"):
        raise FlopcalcError(f"--recompute {recompute} recomputes part of each layer, which no "
                            "published convention counts: mfu and step give its HFU; here "
                            "choose none or full")
    loaded = load(model, set)
    spec = loaded.spec
    if tokens is None:
        tokens, source = default_tokens(spec, total(model_params(spec)))
    else:
        source = "--tokens"
    return build_conventions_report(loaded, seq or default_seq(spec), tokens, source,
                                    recompute == "full", scan)


COMMAND = Command(
    "conventions", "Training FLOPs under 6ND, Kaplan, PaLM, Megatron, Chinchilla, the "
    "Megatron-LM and MaxText codebases and exact, side by side.",
    pick("seq", "tokens", "recompute", "scan", "set"), run,
    report=("conventions", "ConventionsReport"),
    render=Render("conventions", "conventions_csv", "conventions_tables"))
