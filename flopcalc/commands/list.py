"""`flopcalc list`: every shipped preset."""

from .base import Command

COMMAND = Command(
    "list", "Every shipped preset with its key dimensions and parameter count.", models="none",
    report=("listing", "ListReport"), checkable=False, cli=("core", "list_"))
