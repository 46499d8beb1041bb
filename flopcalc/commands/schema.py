"""`flopcalc schema`: the JSON Schema of a command's --format json output."""

from .base import Command

COMMAND = Command(
    "schema", "Print the JSON Schema of a command's --format json output (default: model).",
    models="none", checkable=False, cli=("core", "schema"))
