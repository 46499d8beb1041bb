"""JSON Schemas of the commands' JSON output, generated from the report classes themselves (so
they cannot drift). pydantic is imported only here, for `flopcalc schema`."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..errors import FlopcalcError, suggest

# command → (module in flopcalc.reports, report class)
REPORTS = {
    "model": ("model", "ModelReport"), "sweep": ("sweep", "SweepReport"),
    "compare": ("compare", "CompareReport"), "check": ("check", "CheckReport"),
    "conventions": ("conventions", "ConventionsReport"),
    "attention": ("attention", "AttentionReport"), "infer": ("infer", "InferReport"),
    "train": ("train", "TrainReport"), "memory": ("memory", "MemoryReport"),
    "serve": ("serve", "ServeReport"),
    "mfu": ("mfu", "MfuReport"), "step": ("step", "StepReport"), "plan": ("plan", "PlanReport"),
    "list": ("listing", "ListReport"), "accelerators": ("listing", "AcceleratorsReport"),
}


def json_schema(command: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `flopcalc COMMAND --format json`."""
    from pydantic import TypeAdapter

    if command not in REPORTS:
        hint = suggest(command, REPORTS) or ""
        raise FlopcalcError(f"no JSON report for '{command}';{hint} commands with one: "
                            f"{', '.join(REPORTS)}")
    module, name = REPORTS[command]
    cls = getattr(import_module(f"{__package__}.{module}"), name)
    schema = TypeAdapter(cls).json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"flopcalc {command} report"
    return schema
