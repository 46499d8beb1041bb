"""What the command line adds to the declared options (`flopcalc.commands`): how a report is
shown (--format, --brief, --plot), --debug, the MODEL argument, and one-line usage errors."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, List, Optional

import click
import typer


def say(text: str) -> None:
    """One message on stderr, on one line: control characters escaped, newlines included
    (`render.escape`: a file name or argument quoted in it never drives the terminal nor
    forges a line); a stderr that cannot be written (closed, full) does not change the run's
    outcome."""
    from ..render.escape import one_line

    try:
        click.echo(one_line(text), err=True)
    except (OSError, ValueError, AttributeError):
        pass


class OneLine(click.UsageError):
    """A usage error shown as one line naming the problem and where help is, instead of
    Click's usage block."""

    def show(self, file: Any = None) -> None:
        hint = f" (see {self.ctx.command_path} --help)" if self.ctx is not None else ""
        say(f"flopcalc: error: {self.format_message()}{hint}")


class OptionError(OneLine, click.BadParameter):
    """A bad option value: one line naming the option and the problem."""


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


ModelArg = Annotated[str, typer.Argument(
    metavar="MODEL", help="Preset name (flopcalc list), path to a YAML preset or a config.json "
    "(or a directory holding one), or - for a file on stdin.")]
SetOpt = Annotated[Optional[List[str]], typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Override a config field (repeatable; dotted keys for nested ones, e.g. bias.qkv=false).")]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="table (for people), json or csv (for scripts).", case_sensitive=False)]
BriefOpt = Annotated[bool, typer.Option(
    "--brief", help="Only the headline figures, a line each (table format).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")]


def plot_option(drawn: str) -> Any:
    """The `--plot FILE` option of a command that draws `drawn`."""
    return Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE", help=f"Also draw {drawn} to FILE (.svg or .png; needs "
        "matplotlib: pip install '.[plot]' from the checkout).")]
