"""The commands: one registry (`NAMES`, `COMMANDS`) and one module per command, each holding its
`COMMAND`: its options (picked from `options`, where every option is declared once), how it
builds its report and how the report is shown. The command line (`flopcalc.cli`), the Python
API (`flopcalc.api`), `check` and budget files, `flopcalc schema` and the docs are all made
from it: a new command is one module here, its report and its renderer (CONTRIBUTING.md).

A command's module is imported when the command is used, so a run loads only its own.

Modules:

- `base`: what an option and a command are, and how a value is parsed.
- `options`: every option, declared once.
- `common`: what the runners share (MODEL, the --count rule, the platform).
- `model`: parameters, FLOPs, training and the crossover.
- `list`: every shipped preset.
- `show`: a resolved config as preset YAML.
- `schema`: a command's JSON Schema.
- `sweep`: forward FLOPs over many lengths.
- `compare`: several models side by side.
- `check`: figures held against limits.
- `conventions`: training FLOPs under every published convention.
- `attention`: one attention operation, scalar by scalar.
- `infer`: prefill, decode, KV cache and roofline.
- `train`: days, hours and cost of a training run.
- `memory`: training memory per device.
- `serve`: serving capacity, latency and load.
- `mfu`: MFU and HFU from a measurement.
- `step`: one training step on a layout.
- `plan`: the search over layouts.
- `accelerators`: every shipped accelerator.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Iterator

# Every command, in the order `flopcalc --help` lists them: the one list of their names.
NAMES = ("model", "list", "show", "schema", "sweep", "compare", "check", "conventions",
         "attention", "infer", "train", "memory", "serve", "mfu", "step", "plan",
         "accelerators")


class Registry(Mapping):
    """name → Command, each command's module imported on first use."""

    def __init__(self, names: tuple[str, ...]):
        self._names = names
        self._extra: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._extra:
            return self._extra[name]
        if name not in self._names:
            raise KeyError(name)
        return importlib.import_module(f"{__name__}.{name}").COMMAND

    def __iter__(self) -> Iterator[str]:
        return iter((*self._names, *self._extra))

    def __len__(self) -> int:
        return len(self._names) + len(self._extra)

    def register(self, command: Any) -> None:
        """Add a command defined outside this package (a plug-in, a test's toy command)."""
        if command.name in self:
            raise ValueError(f"a command named {command.name!r} exists")
        self._extra[command.name] = command

    def unregister(self, name: str) -> None:
        del self._extra[name]


COMMANDS = Registry(NAMES)


def checkable() -> tuple[str, ...]:
    """The commands `check` can gate: every command that builds a report of figures."""
    return tuple(name for name in COMMANDS if COMMANDS[name].checkable)


def api_names() -> tuple[str, ...]:
    """The commands with a Python function in `flopcalc.api` (their reports built from
    options; `show`, `schema`, `check` and the listings have their own)."""
    return tuple(name for name in COMMANDS if COMMANDS[name].run is not None)


def __getattr__(name: str) -> Any:
    if name == "CHECKABLE":
        return checkable()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from .base import Command, Option, Render  # noqa: E402
from .common import load  # noqa: E402

__all__ = ["NAMES", "COMMANDS", "Command", "Option", "Render", "checkable", "api_names", "load"]
