"""The `flopcalc` command: the Typer app, its commands, and the console-script entry point.

Every command is in the registry (`flopcalc.commands`): those made from their options by
`declared`, the others (`show`, `schema`, `check`, the listings) by the function of `core` or
`budget` their registry entry names. This module only registers them, so the modules import
downwards (options → runtime → commands → app) and never back. Only the CLI prints or exits.
"""

from __future__ import annotations

import functools
import sys
from contextlib import contextmanager
from typing import Annotated, Any, Iterator, List, Optional

import click
import typer
from typer.core import TyperGroup

from ..commands import COMMANDS
from ..version import __version__
from . import declared
from .options import DebugOpt, OneLine


class _Commands(TyperGroup):
    """flopcalc's commands: Click's own usage errors (an unknown option, a missing argument, a
    value outside a choice) are raised again as one line; Click still shows them and exits 2."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        with _one_line():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line():
            return super().invoke(ctx)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except (OneLine, click.exceptions.NoArgsIsHelpError):
        raise  # already one line; or a bare command, which prints its help
    except click.UsageError as exc:
        raise OneLine(exc.format_message(), exc.ctx) from None


HELP = ("Exact parameter and FLOP counts for transformer models. MODEL is a preset name "
        "(flopcalc list), a YAML file, a Hugging Face config.json (or its directory), or - for "
        "stdin.")


def _version(value: bool) -> None:
    if value:
        print(f"flopcalc {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: DebugOpt = False,
) -> None:
    """Options before the command: --version, --debug, shell completion."""


def _function(name: str) -> Any:
    """The Typer function of command `name`: made from its options, or the one its registry
    entry names (its module imported only when that command runs: `check`'s is `budget`)."""
    command = COMMANDS[name]
    if command.cli is None:
        return declared.make(name)
    import importlib

    module, function = command.cli
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


def build(names: tuple[str, ...] = ()) -> typer.Typer:
    """The app with these commands (all of them, or just the one a run invokes: Click builds
    every registered command's parameters at start-up, which the others would only cost)."""
    built = typer.Typer(cls=_Commands, no_args_is_help=True, pretty_exceptions_enable=False,
                        suggest_commands=False,  # Click suggests already: say it once
                        rich_markup_mode=None, help=HELP)
    built.callback()(_root)
    for name in names or tuple(COMMANDS):
        function = _function(name)
        special = COMMANDS[name].cli is not None  # its help: the registry's, then its own
        built.command(name, help=COMMANDS[name].help + getattr(function, "help_more", "")
                      if special else None,
                      context_settings=getattr(function, "context_settings", None),
                      options_metavar=getattr(function, "options_metavar", "[OPTIONS]"))(
            function)
    return built


def __getattr__(name: str) -> Any:
    """`app`, the Typer app with every command, built when asked for (a run builds only the
    command it invokes: building all of them costs milliseconds at every start)."""
    if name == "app":
        return _whole()
    raise AttributeError(name)


@functools.lru_cache(maxsize=1)
def _whole() -> typer.Typer:
    return build()


def _invoked(argv: List[str]) -> Optional[str]:
    """The command a command line names, if it is one of ours (else None: build them all, for
    help and for Click's suggestions)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def main(argv: Optional[List[str]] = None) -> int:
    """Console-script entry point: run the app; Click turns every failure into its message and
    exit code (see `runtime`)."""
    args = sys.argv[1:] if argv is None else argv
    name = _invoked(args)
    command = typer.main.get_command(build((name,)) if name else _whole())
    try:
        command.main(args=args, prog_name="flopcalc", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0  # pragma: no cover - standalone mode always exits


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
