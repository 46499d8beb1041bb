"""flopcalc from Python: the same reports the command line prints, as typed objects.

    >>> import flopcalc
    >>> r = flopcalc.model("llama-3.1-8b", seq=4096, attention="causal")
    >>> r.params.total
    8030261248
    >>> r.to_dict() == json.loads(`flopcalc model llama-3.1-8b --seq 4096 --attention causal
    ...                             --format json`)
    True

One function per command of the registry (`flopcalc.commands`) that builds a report from options:
each takes the command line's options as keyword arguments, by their long names (`tgt_seq` for
`--tgt-seq`, `set=[...]` for `--set`; an option's aliases work too, `kv_dtype` for
`kv_cache_dtype`).
Numbers may be given as ints or in the command line's syntax (`seq="32k"`, `tokens="15T"`,
`mfu="40%"`). Every bad input raises `flopcalc.FlopcalcError` with the message the command line
prints. The command line itself builds its reports through these functions.

`check` holds any of these reports against limits, as `flopcalc check` and budget files do:

    >>> flopcalc.check("llama-3.1-8b", command="serve", accelerator="h100",
    ...                min={"capacity.max_concurrency": 3}).passed
    True
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from . import commands
from .commands import COMMANDS, api_names, checkable
from .errors import FlopcalcError, suggest

__all__ = [*api_names(), "load", "check"]


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


globals().update({name: _function(name) for name in api_names()})


# ------------------------------------------------------------------------------------- check

MAX_CHECKS = 1_000  # entries of a budget file (its aliases expanded)
MAX_LIMITS = 10_000  # limits of a budget, all entries together
# Options naming a file that a budget entry reads relative to the budget file.
FILE_OPTIONS = ("accelerator", "network", "efficiency", "draft")


def check(*models: Any, command: str = "model", max: Optional[dict] = None,  # noqa: A002
          min: Optional[dict] = None, budget: Optional[str | Path] = None,  # noqa: A002
          **options: Any) -> Any:
    """`flopcalc check`: the report of `command` (any of `commands.checkable()`) for MODEL (a list
    of them for compare, none for attention) with `options`, its figures held against `max` and
    `min` (dotted keys of that command's JSON, as `flopcalc.reports.check` reads them, to
    limits: `{"params.total": "180B"}`); or, with `budget`, every check of a budget file. The
    CheckReport's `passed` is False when a limit does not hold (the command line then exits 1);
    bad input raises FlopcalcError."""
    from .reports.check import build_check_report

    if budget is not None:
        if models or options or max or min or command != "model":
            raise FlopcalcError("give either a budget file, or MODEL with limits and options: "
                                "not both")
        return build_check_report(_budget(Path(budget)))
    limits = {"max": max or {}, "min": min or {}}
    return build_check_report(_gate(models, command, options, limits))


def _command(name: Any) -> Any:
    """The checkable command `name`, or an error naming the ones there are."""
    gated = checkable()
    if isinstance(name, str) and name in gated:
        return COMMANDS[name]
    hint = suggest(name, gated) if isinstance(name, str) else ""
    shown = repr(name) if isinstance(name, str) and len(name) < 64 else "that"
    raise FlopcalcError(f"command {shown} cannot be checked;{hint or ''} commands with "
                        f"figures to check: {', '.join(gated)}")


def _gate(models: Sequence[Any], name: Any, options: dict[str, Any],
          limits: dict[str, Any]) -> list:
    """The results of `limits` ({"max": {...}, "min": {...}}) on `name`'s report."""
    from .reports.check import evaluate

    command = _command(name)
    for bound, mapping in limits.items():
        if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
            raise FlopcalcError(f"{bound} must map report keys to limits")
    if not any(limits.values()):
        raise FlopcalcError("give at least one limit under max or min (e.g. max: "
                            "{params.total: 180B})")
    doc = command(*models, **options).to_dict()
    label = ("-" if not models else models[0] if isinstance(models[0], str)
             else ",".join(map(str, models[0])))
    return [result for bound in ("max", "min")
            for result in evaluate(label, command.name, doc, limits.get(bound, {}), bound)]


def _entry(entry: Any, path: Path) -> tuple[tuple, str, dict[str, Any], dict[str, Any]]:
    """(models, command, options, limits) of a budget entry; an error names what is wrong."""
    from .models.registry import looks_like_path

    if not isinstance(entry, dict):
        raise FlopcalcError("an entry is a mapping with model, command, options and max/min")
    entry = dict(entry)
    name = entry.pop("command", "model")
    command = _command(name)
    limits = {bound: entry.pop(bound, None) or {} for bound in ("max", "min")}

    def relative(ref: Any) -> Any:
        if isinstance(ref, str) and looks_like_path(ref) and ref != "-" \
                and not Path(ref).expanduser().is_absolute():
            return str(path.parent / ref)
        return ref

    models: tuple = ()
    if command.models == "one":
        model = entry.pop("model", None)
        if not isinstance(model, str):
            raise FlopcalcError("give the model: a preset name or a path (relative to the "
                                "budget)")
        models = (relative(model),)
    elif command.models == "many":
        many = entry.pop("models", None)
        if not isinstance(many, list) or not many or not all(isinstance(m, str) for m in many):
            raise FlopcalcError(f"{command.name} takes models: a list of presets or paths "
                                "(relative to the budget), e.g. models: [gpt3, llama-3.1-8b]")
        models = ([relative(m) for m in many],)
    names = {a for o in command.options for a in (o.name, *o.aliases)}
    for key in entry:
        if key not in names:
            first = {"one": "model, ", "many": "models, ", "none": ""}[command.models]
            shown = repr(key) if isinstance(key, str) and len(key) < 64 else "that"
            hint = (suggest(key, names) if isinstance(key, str) else "") or (
                f" valid keys: {first}command, max, min, " + ", ".join(sorted(names)))
            raise FlopcalcError(f"unknown key {shown} for command {command.name};{hint}")
    for key in FILE_OPTIONS:
        if key in entry:
            entry[key] = relative(entry[key])
    return models, command.name, entry, limits


def _budget(path: Path) -> list:
    """Every limit of every entry of a budget file; an error names the entry."""
    from .models.files import read_mapping

    budget = read_mapping(path, "budget file")
    unknown = sorted(map(str, set(budget) - {"checks"}))
    if unknown:
        raise FlopcalcError(f"{path}: unknown key '{unknown[0][:64]}'; a budget file has one "
                            "key, checks (flopcalc check --help shows the format)")
    checks = budget.get("checks")
    if checks == []:
        raise FlopcalcError(f"{path}: 'checks' is empty; add at least one entry with a model "
                            "and a max or min mapping")
    if not isinstance(checks, list):
        raise FlopcalcError(f"{path}: 'checks' must be a list of entries, each with a model and "
                            "a max or min mapping")
    if len(checks) > MAX_CHECKS:
        raise FlopcalcError(f"{path}: {len(checks):,} checks is more than {MAX_CHECKS:,}; split "
                            "the budget")
    limits = sum(len(e.get(b) or {}) for e in checks if isinstance(e, dict)
                 for b in ("max", "min") if isinstance(e.get(b) or {}, dict))
    if limits > MAX_LIMITS:
        raise FlopcalcError(f"{path}: {limits:,} limits is more than {MAX_LIMITS:,}; split the "
                            "budget")
    results = []
    for i, raw in enumerate(checks):
        label = raw.get("model", raw.get("models")) if isinstance(raw, dict) else None
        if isinstance(label, list) and all(isinstance(m, str) for m in label):
            label = ", ".join(label)
        where = f"{path}: checks.{i}" + (f" ({label[:200]})" if isinstance(label, str) else "")
        try:
            models, command, given, bounds = _entry(raw, path)
            results += _gate(models, command, given, bounds)
        except FlopcalcError as exc:
            raise FlopcalcError(f"{where}: {exc}") from None
    return results
