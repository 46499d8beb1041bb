"""What every command does around its report: turn errors into Click's, and write the output.

Click reports every error, each in one line, `flopcalc: error: ...`: a usage error (a bad option
value, an unknown option, a missing argument; see `options.OneLine`) and bad input found while
running (an unknown model, an invalid file) exit 2; an exceeded budget exit 1; a bug one line
and exit 3 (its traceback with --debug or FLOPCALC_DEBUG=1). Output is rendered in full before
anything is written, so a failure leaves stdout empty, and a reader that closes the pipe early
(`| head`) ends the run quietly with exit 0.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, Optional, Sequence, TypeVar

import click

from ..errors import BudgetExceeded, FlopcalcError
from .options import Format, say

F = TypeVar("F", bound=Callable[..., Any])


class InputError(click.ClickException):
    """Bad input found while running: one line, exit 2 (or 1 for an exceeded budget)."""

    def __init__(self, message: str, exit_code: int = 2, what: str = "error"):
        super().__init__(message)
        self.exit_code = exit_code
        self.what = what  # the line's label: "error", "budget exceeded", "internal error"

    def show(self, file: Any = None) -> None:
        say(f"flopcalc: {self.what}: {self.format_message()}")


def debugging(ctx: Optional[click.Context], here: bool = False) -> bool:
    """--debug given before or after the subcommand, or FLOPCALC_DEBUG set."""
    root = ctx.find_root().params.get("debug") if ctx is not None else False
    return bool(here or root or os.environ.get("FLOPCALC_DEBUG"))


def handles_errors(command: F) -> F:
    """Run a command so that every failure reaches the user through Click (see the module
    docstring)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        debug = debugging(click.get_current_context(silent=True), kwargs.get("debug", False))
        try:
            return command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BudgetExceeded as exc:
            raise InputError(str(exc), exc.exit_code, "budget exceeded") from None
        except FlopcalcError as exc:
            if debug:
                raise
            raise InputError(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a bug: one line, never a raw traceback unless asked
            if debug:
                raise
            raise InputError(f"{type(exc).__name__}: {exc} (rerun with --debug for the "
                             "traceback, and please report it)", 3, "internal error") from None

    return run  # type: ignore[return-value]


def write(text: str) -> None:
    """Write to stdout; a closed pipe (`flopcalc ... | head`) ends the run with exit 0; a stdout
    that is closed or cannot take the output (a full disk) is an error, exit 2."""
    if sys.stdout is None:
        raise FlopcalcError("standard output is closed; run with somewhere to write to")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Send what Python would still flush at exit to nowhere, then stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise click.exceptions.Exit(0) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        try:  # what could not be written is not flushed again at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise FlopcalcError(f"cannot write the output ({reason})") from None


def warn(lines: Sequence[str]) -> None:
    for line in lines:
        say(f"flopcalc: warning: {line}")


def emit(fmt: Format, report: Any, csv: Callable[[Any], str],
         tables: Optional[Callable[[Any, Any], list[Any]]],
         brief: Optional[Callable[[Any], str]] = None) -> None:
    """Render `report` in full as `fmt`, then write it; its warnings go to stderr. Table format
    prints `brief` lines (plain text) when given, else the `tables`."""
    warn(getattr(report, "warnings", ()))
    if fmt is Format.json:
        from ..render.data import to_json

        text = to_json(report.document()) + "\n"
    elif fmt is Format.csv:
        text = csv(report)
    elif brief is not None:
        from ..render.output import lines

        text = lines(brief(report), sys.stdout)
    else:
        from ..render.output import render

        assert tables is not None
        text = render(lambda nums: tables(report, nums), sys.stdout)
    write(text)


def check_brief(brief: bool, fmt: Format) -> None:
    if brief and fmt is not Format.table:
        raise FlopcalcError("--brief shortens the table; JSON and CSV always carry every figure "
                            "(drop --brief or --format)")


def check_plot_target(path: str, command: str) -> None:
    """Refuse a --plot target that cannot be written before any work is done."""
    from ..render.plot import check_target

    check_target(path, command)

