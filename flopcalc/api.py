"""flopcalc from Python: the same reports the command line prints, as typed objects.

    >>> import flopcalc
    >>> r = flopcalc.model("llama-3.1-8b", seq=4096, attention="causal")
    >>> r.params.total
    8030261248
    >>> r.to_dict() == json.loads(`flopcalc model llama-3.1-8b --seq 4096 --attention causal
    ...                             --format json`)
    True

Each function takes the command line's options as keyword arguments, by their long names
(`tgt_seq` for `--tgt-seq`, `set=[...]` for `--set`), declared once in `flopcalc.commands`.
Numbers may be given as ints or in the command line's syntax (`seq="32k"`, `tokens="15T"`,
`mfu="40%"`). Every bad input raises `flopcalc.FlopcalcError` with the message the command line
prints. The command line itself builds its reports through these functions.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

from . import commands
from .commands import COMMANDS

__all__ = ["model", "sweep", "compare", "conventions", "attention", "infer", "train", "memory",
           "mfu", "step", "plan", "serve", "load"]


def _function(name: str) -> Callable[..., Any]:
    """The API function of command `name`, with the command's options as its signature."""
    command = COMMANDS[name]

    def call(*args: Any, **options: Any) -> Any:
        return command(*args, **options)

    first = {"one": ["model"], "many": ["models"], "none": []}[command.models]
    params = [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in first]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY,
                                 default=inspect.Parameter.empty if o.required else o.default)
               for o in command.options]
    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = name
    lines = [f"`flopcalc {name}`: {command.help}", ""]
    lines += [f"{o.name}: {o.help}" for o in command.options]
    call.__doc__ = "\n".join(lines)
    return call


def load(model: str, set: Optional[Sequence[str]] = None) -> Any:  # noqa: A002
    """A preset name, a YAML or config.json path (or a directory holding one), with `--set`
    overrides (`["n_layers=48", "bias.qkv=false"]`): the validated, resolved model."""
    return commands.load(model, set)


model = _function("model")
sweep = _function("sweep")
compare = _function("compare")
conventions = _function("conventions")
attention = _function("attention")
infer = _function("infer")
train = _function("train")
memory = _function("memory")
mfu = _function("mfu")
step = _function("step")
plan = _function("plan")
serve = _function("serve")
