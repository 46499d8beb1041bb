"""`check`: hold a command's figures against limits, and fail (exit 1) when one does not hold.

`flopcalc check [MODEL] [--command C] [C's options] --max KEY=VALUE --min KEY=VALUE` checks the
report of any command with figures (`commands.checkable()`: every command that builds a
report from options; `model` by default); a budget file checks any mix of them. What is not check's own option (MODEL, or the
MODELs of compare, and C's options) is read by C's own parser, made from its declarations in
`flopcalc.commands` as `flopcalc C` is, so check takes exactly what C takes, and a budget entry
and a Python call (`flopcalc.api.check`) go through the same parsers.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, List, Optional

import click
import typer

from ..commands import COMMANDS, checkable
from ..errors import BudgetExceeded, FlopcalcError, suggest
from .options import DebugOpt, Format, FormatOpt, OneLine
from .runtime import emit, handles_errors

BUDGET_HELP = """MODEL and the options of --command C are those flopcalc C --help lists (compare
takes several MODELs, attention none). A key naming a {low, estimate, high} interval (step's
time.step_seconds, mfu) is compared at its high end under --max and its low end under --min;
name an end (time.step_seconds.estimate) to compare that one. A share (mfu, hfu, *_share) reads
0.4 or 40%.

A budget file is YAML: a list of checks, each a model (models: [A, B] for compare), the command
whose report is checked (model, the default, or any of: """ + ", ".join(checkable()[1:]) + """),
that command's options by their long names (seq: 8k, tokens: 300B, kv_dtype: fp8, accelerator:
h100, set: [n_layers=48]) and at least one of max and min, mappings of report keys (dotted, as
in that command's --format json) to limits. Paths (models, accelerator, network, efficiency,
draft) are relative to the budget file. Example:

\b
checks:
  - model: gpt3
    seq: 2048
    tokens: 300B
    max: {training.exact: 3.3e23, params.total: 180B}
  - model: llama-3.1-70b
    command: infer
    prompt: 8k
    gen: 1k
    accelerator: h100
    count: 8
    max: {kv_cache.bytes: 40GiB, roofline.total_seconds: 30}
  - model: llama-3.1-8b
    command: serve
    accelerator: h100
    min: {capacity.max_concurrency: 3}
"""

OWN = ("--command", "--max", "--min", "--budget", "--format", "--debug", "--help")


def _parser(name: str) -> click.Command:
    """The Click parser of command `name`'s MODEL(s) and options, without how a report is
    shown (check has its own --format; --brief and --plot draw nothing here)."""
    from .declared import parameters

    shown = {"fmt", "brief", "plot", "debug"}

    def read(**kw: Any) -> None:  # pragma: no cover - only parsed, never invoked
        pass

    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p for p in parameters(COMMANDS[name]) if p.name not in shown])
    app = typer.Typer(add_completion=False, rich_markup_mode=None)
    app.command(name)(read)
    return typer.main.get_command(app)


def _command_options(name: str, args: list[str]) -> tuple[list[Any], dict[str, Any]]:
    """MODEL(s) and the options given on the command line for command `name`, parsed by its
    own parser (the options not given keep their declared defaults, in `Command.values`)."""
    from click.core import ParameterSource

    parser = _parser(name)
    try:
        ctx = parser.make_context(f"flopcalc {name}", list(args))
    except click.NoSuchOption as exc:
        flag = exc.option_name
        owners = [c for c in checkable() if any(flag in (f, "--no-" + f[2:])
                                                for o in COMMANDS[c].options for f in o.flags)]
        hint = (f" it is an option of {', '.join(owners)}: give --command with the command "
                "it belongs to" if owners else suggest(flag, [*OWN, *(exc.possibilities or ())])
                or f" flopcalc {name} --help lists them")
        raise OneLine(f"{flag} is not an option of check or of {name};{hint}") from None
    models = [ctx.params.pop(k) for k in ("model", "models") if k in ctx.params]
    given = {n: v for n, v in ctx.params.items()
             if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE}
    return models, given


def check(**kw: Any) -> None:
    """Fail (exit 1) when a command's figures pass a limit: a CI gate for FLOP, parameter,
    memory, time, serving-capacity or MFU budgets.

    Limits use the syntax of the figure: K = 1,000 for counts, k = 1,024 for lengths
    (settings.seq, crossover.seq), KB/KiB for bytes. Exit 0: every limit holds; 1: one does not;
    2: bad input.
    """
    from .. import api
    from ..reports.check import parse_limit_options

    ctx = click.get_current_context()
    rest, budget, command = list(ctx.args), kw["budget"], kw["command"]
    if (not rest) == (budget is None):
        raise FlopcalcError("give either MODEL with --max/--min KEY=VALUE, or --budget FILE")
    if budget is not None:
        if ctx.get_parameter_source("command") == click.core.ParameterSource.COMMANDLINE:
            raise FlopcalcError("--command goes with MODEL; a budget file names each entry's "
                                "command")
        report = api.check(budget=budget)
    else:
        models, given = _command_options(command, rest)  # first: a misspelt --max is here
        if not kw["max_"] and not kw["min_"]:
            raise FlopcalcError("check needs at least one --max or --min KEY=VALUE (e.g. --max "
                                "params.total=180B)")
        limits = {"max": parse_limit_options(kw["max_"] or [], "max"),
                  "min": parse_limit_options(kw["min_"] or [], "min")}
        report = api.check(*models, command=command, **limits, **given)
    from ..render import check as render

    emit(kw["fmt"], report, render.check_csv, None, render.check_text)
    failed = sum(r.status == "FAIL" for r in report.rows)
    if failed:
        raise BudgetExceeded(f"{failed} of {len(report.rows)} limits do not hold")


def _check_command() -> Any:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("command", kw, default="model", annotation=Annotated[str, typer.Option(
            "--command", click_type=click.Choice(checkable()), help="The command whose report "
            "is checked; MODEL and its options as flopcalc COMMAND --help lists them.")]),
        inspect.Parameter("max_", kw, default=None, annotation=Annotated[Optional[List[str]], typer.Option(
            "--max", metavar="KEY=VALUE", help="An upper limit on a numeric key of the report "
            "(--format json), e.g. training.exact=3.3e23 (repeatable).")]),
        inspect.Parameter("min_", kw, default=None, annotation=Annotated[Optional[List[str]], typer.Option(
            "--min", metavar="KEY=VALUE", help="A lower limit, e.g. crossover.seq=32k "
            "(repeatable).")]),
        inspect.Parameter("budget", kw, default=None, annotation=Annotated[Optional[Path], typer.Option(
            "--budget", metavar="FILE", help="A YAML file of checks (its format is below).")]),
        inspect.Parameter("fmt", kw, default=Format.table, annotation=FormatOpt),
        inspect.Parameter("debug", kw, default=False, annotation=DebugOpt),
    ]

    def run(**kw: Any) -> None:
        check(**kw)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__name__ = "check"
    run.__doc__ = inspect.cleandoc(check.__doc__ or "") + "\n\n" + BUDGET_HELP
    command = handles_errors(run)
    # what `flopcalc check --help` adds to the registry's one-paragraph help
    command.help_more = "\n\n" + inspect.cleandoc(check.__doc__ or "").split("\n\n", 1)[1] \
        + "\n\n" + BUDGET_HELP
    return command


def __getattr__(name: str) -> Any:
    """`check_command`, made when the app is built, so --command offers every checkable
    command the registry has then (one registered by a plug-in included)."""
    if name != "check_command":
        raise AttributeError(name)
    command = _check_command()
    # MODEL(s) and the checked command's options reach `check` unparsed, for that command's
    # parser.
    command.context_settings = {"ignore_unknown_options": True, "allow_extra_args": True}
    command.options_metavar = "[MODEL...] [OPTIONS]"
    return command
