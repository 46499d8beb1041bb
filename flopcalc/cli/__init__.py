"""The command line: Typer commands that parse options, build one report and render it. The
only package that prints or exits. (`flopcalc.cli.app.app` is the Typer app with every command,
built on use.)"""

from .app import main

__all__ = ["main"]
