"""`flopcalc accelerators`: every shipped accelerator preset."""

from .base import Command

COMMAND = Command(
    "accelerators", "Every shipped accelerator preset: memory, bandwidth and dense peak FLOP/s "
    "per dtype.", models="none", report=("listing", "AcceleratorsReport"), checkable=False,
    cli=("core", "accelerators"))
