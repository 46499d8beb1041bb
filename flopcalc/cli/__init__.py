"""The command line: Typer commands that parse options, build one report and render it. The
only package that prints or exits."""

from .app import app, main

__all__ = ["app", "main"]
