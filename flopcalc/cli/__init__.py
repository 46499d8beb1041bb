"""The command line: Typer commands that parse options, build one report and render it. The
only package that prints or exits. (`flopcalc.cli.app.app` is the Typer app with every command,
built on use.)"""

import gc

# A run is short and allocates a few hundred thousand objects while it imports and counts,
# almost none of them in reference cycles: the collector's default pass every 700 allocations
# (and the full passes they trigger over every module loaded so far) cost a run about 5% of
# its time. Rarer passes free the same cycles, a little later.
gc.set_threshold(50_000, 20, 20)

from .app import main  # noqa: E402 - after the collector is set for the imports


__all__ = ["main"]
