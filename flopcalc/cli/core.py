"""The commands that take no declared options: `list`, `show`, `schema` and `accelerators`."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import DebugOpt, Format, FormatOpt, ModelArg, SetOpt
from .runtime import emit, handles_errors, write

from ..commands import COMMANDS

# The commands with a JSON report, in the registry's order.
SCHEMAS = tuple(name for name in COMMANDS if COMMANDS[name].report is not None)


@handles_errors
def list_(fmt: FormatOpt = Format.table, debug: DebugOpt = False) -> None:
    """Every shipped preset with its key dimensions and parameter count."""
    from ..render import listing as render
    from ..reports.listing import build_list_report

    emit(fmt, build_list_report(), render.list_csv, render.list_tables)


@handles_errors
def show(model: ModelArg, set_: SetOpt = None, debug: DebugOpt = False) -> None:
    """Print the resolved config as YAML; the output is itself a valid preset."""
    from ..commands.common import load
    from ..models.validation import validate_model
    from ..render.data import to_yaml
    from ..reports.listing import config_data

    loaded = load(model, set_)
    write(to_yaml(config_data(validate_model(loaded.raw, loaded.label)[0])))


@handles_errors
def schema(
    command: Annotated[str, typer.Argument(
        metavar="[COMMAND]", help=f"One of {', '.join(SCHEMAS)}.")] = "model",
    debug: DebugOpt = False,
) -> None:
    """Print the JSON Schema of a command's --format json output (default: model)."""
    from ..render.data import to_json
    from ..reports.schema import json_schema

    write(to_json(json_schema(command, {n: COMMANDS[n].report for n in SCHEMAS})) + "\n")


@handles_errors
def accelerators(fmt: FormatOpt = Format.table, debug: DebugOpt = False) -> None:
    """Every shipped accelerator preset: memory, bandwidth and dense peak FLOP/s per dtype."""
    from ..render import listing as render
    from ..reports.listing import build_accelerators_report

    report = build_accelerators_report()
    emit(fmt, report, lambda r: render.accelerators_csv(r.to_dict()["accelerators"]),
         lambda r, nums: render.accelerators_tables(r.to_dict()["accelerators"], nums))
