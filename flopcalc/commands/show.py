"""`flopcalc show`: a resolved config as preset YAML."""

from .base import Command

COMMAND = Command(
    "show", "Print the resolved config as YAML; the output is itself a valid preset.",
    checkable=False, cli=("core", "show"))
