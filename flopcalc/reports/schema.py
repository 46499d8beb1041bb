"""JSON Schemas of the commands' JSON output, generated from the report classes themselves (so
they cannot drift). pydantic is imported only here, for `flopcalc schema`."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..errors import FlopcalcError, suggest


def json_schema(command: str, reports: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `flopcalc COMMAND --format json`; `reports` maps each
    command with a JSON report to its report class (module of this package, class: the
    registry's `Command.report`)."""
    from pydantic import TypeAdapter

    if command not in reports:
        hint = suggest(command, reports) or ""
        raise FlopcalcError(f"no JSON report for '{command}';{hint} commands with one: "
                            f"{', '.join(reports)}")
    module, name = reports[command]
    cls = getattr(import_module(f"{__package__}.{module}"), name)
    schema = TypeAdapter(cls).json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"flopcalc {command} report"
    return schema
