"""Typer commands made from the declarations in `flopcalc.commands`: each option's flag,
metavar, help, default and parser come from there, so a command's options are written once.

A value is parsed while Click reads the command line (`Declared`), so a bad one is a usage
error naming the option (exit 2) before anything runs; the same parser then sees the parsed
value again in the Python API, where it passes through unchanged.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Annotated, Any, Callable, List, Optional

import click
import typer

from ..commands import COMMANDS, Command, Option
from ..errors import FlopcalcError
from .options import (BriefOpt, DebugOpt, Format, FormatOpt, ModelArg, OptionError,
                      plot_option)
from .runtime import check_brief, check_plot_target, emit, handles_errors

# How each declared command's report is shown: the render module and its csv, tables, brief
# and plot functions (imported when the command runs, so start-up stays light).
RENDERERS: dict[str, tuple[str, str, Optional[str], Optional[str], Optional[str]]] = {
    "model": ("model", "model_csv", "model_tables", "model_brief", None),
    "sweep": ("sweep", "sweep_csv", "sweep_tables", None, "plot_sweep"),
    "compare": ("compare", "compare_csv", "compare_tables", None, "plot_compare"),
    "conventions": ("conventions", "conventions_csv", "conventions_tables", None, None),
    "attention": ("attention", "attention_csv", "attention_tables", None, None),
    "infer": ("infer", "infer_csv", "infer_tables", "infer_brief", "plot_infer"),
    "train": ("train", "train_csv", "train_tables", "train_brief", None),
    "memory": ("memory", "memory_csv", "memory_tables", None, "plot_memory"),
    "mfu": ("mfu", "mfu_csv", "mfu_tables", "mfu_brief", None),
    "step": ("step", "step_csv", "step_tables", "step_brief", None),
    "plan": ("plan", "plan_csv", "plan_tables", None, None),
    "serve": ("serve", "serve_csv", "serve_tables", "serve_brief", "plot_serve"),
}


_RENDER = f"{__package__.rsplit('.', 1)[0]}.render"


def renderer(module: str, name: Optional[str]) -> Any:
    """The renderer `name` of render.`module`, imported when it is called: a JSON run never
    imports the table and CSV code."""
    if name is None:
        return None

    def render(*args: Any) -> Any:
        return getattr(importlib.import_module(f"{_RENDER}.{module}"), name)(*args)

    return render


class Declared(click.ParamType):
    """A value read by its option's own parser (`commands.Option.parse`)."""

    def __init__(self, option: Option):
        self.option = option
        self.name = option.type

    def convert(self, value: Any, param: Optional[click.Parameter],
                ctx: Optional[click.Context]) -> Any:
        if not isinstance(value, str):
            return value  # a default, already parsed
        try:
            return self.option.parse(value)
        except FlopcalcError as exc:
            message = str(exc).removeprefix(f"Invalid value for '{self.option.flag}': ")
            raise OptionError(message, ctx, param) from None


def annotation(option: Option) -> Any:
    """The Typer annotation of an option."""
    names = [option.flag] + (["-f"] if option.name == "format" else [])
    common: dict[str, Any] = dict(help=option.help)
    if option.metavar:
        common["metavar"] = option.metavar
    if option.type == "flag":
        if option.default is True:  # on unless turned off: --prefix-caching/--no-prefix-caching
            names = [f"{option.flag}/--no-{option.flag[2:]}"]
        return Annotated[bool, typer.Option(*names, **common)]
    if option.type == "texts":
        return Annotated[Optional[List[str]], typer.Option(*names, **common)]
    if option.type in ("choice", "number"):
        return Annotated[str, typer.Option(*names, click_type=click.Choice(
            option.choices, case_sensitive=False), **common)]
    if option.type == "text":
        return Annotated[Optional[str], typer.Option(*names, **common)]
    return Annotated[Optional[str], typer.Option(*names, click_type=Declared(option), **common)]


def default(option: Option) -> Any:
    if option.required:
        return inspect.Parameter.empty
    if option.type == "texts":
        return None
    if option.type == "number":
        return str(option.default)
    return option.default


def parameters(command: Command) -> list[inspect.Parameter]:
    """MODEL (or MODEL...), the command's options, then the presentation options."""
    kw = inspect.Parameter.KEYWORD_ONLY
    params = []
    if command.models == "one":
        params.append(inspect.Parameter("model", kw, annotation=ModelArg))
    elif command.models == "many":
        params.append(inspect.Parameter("models", kw, annotation=Annotated[
            List[str], typer.Argument(metavar="MODEL...", help="Models to compare.")]))
    params += [inspect.Parameter(o.name, kw, default=default(o), annotation=annotation(o))
               for o in command.options]
    extra = {"format": ("fmt", FormatOpt, Format.table), "brief": ("brief", BriefOpt, False),
             "plot": ("plot", plot_option(command.plotted), None)}
    for name in command.presentation:
        key, tp, value = extra[name]
        params.append(inspect.Parameter(key, kw, default=value, annotation=tp))
    params.append(inspect.Parameter("debug", kw, default=False, annotation=DebugOpt))
    return params


def make(name: str) -> Callable[..., None]:
    """The Typer command of `name`: parse, build the report, draw it if asked, render it."""
    command = COMMANDS[name]

    def run(**kw: Any) -> None:
        fmt, brief, plot = kw.pop("fmt", Format.table), kw.pop("brief", False), kw.pop("plot",
                                                                                      None)
        kw.pop("debug", None)
        check_brief(brief, fmt)
        if plot is not None:
            check_plot_target(plot, name)
        models = [kw.pop(key) for key in ("model", "models") if key in kw]
        if plot is not None and "curve" in command.internal:
            kw["curve"] = True
        report = command(*models, **{k: v for k, v in kw.items() if v is not None})
        module, csv, tables, brief_lines, draw = RENDERERS[name]
        if plot is not None and draw is not None:
            getattr(importlib.import_module(f"{_RENDER}.plot"), draw)(report, plot)
        emit(fmt, report, renderer(module, csv), renderer(module, tables),
             renderer(module, brief_lines) if brief else None)

    run.__signature__ = inspect.Signature(parameters(command))  # type: ignore[attr-defined]
    run.__name__ = name
    run.__doc__ = command.help
    return handles_errors(run)
