"""`flopcalc check`: a command's figures held against limits (a CI gate)."""

from .base import Command

COMMAND = Command(
    "check", "Fail (exit 1) when a command's figures pass a limit: a CI gate for FLOP, "
    "parameter, memory, time, serving-capacity or MFU budgets.", models="many",
    report=("check", "CheckReport"), checkable=False, cli=("budget", "check_command"))
