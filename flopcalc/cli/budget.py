"""`check`: hold a model's figures against limits, and fail (exit 1) when one does not hold.

`flopcalc check MODEL [--command C] [that command's options] --max KEY=VALUE --min KEY=VALUE`
checks the report of `model` (the default), `infer`, `train` or `memory`; a budget file checks
any mix of them. Every option, on the command line or in a budget entry, is the command's own
declaration (`flopcalc.commands`), read by the same parser, so a file and a shell say the same
thing the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, List, Optional

import click
import typer

from ..commands import CHECKABLE, COMMANDS, options_of
from ..errors import BudgetExceeded, FlopcalcError, suggest
from .declared import annotation
from .options import DebugOpt, Format, FormatOpt
from .runtime import emit, handles_errors

MAX_CHECKS = 1_000  # entries of a budget file (its aliases expanded)
MAX_LIMITS = 10_000  # limits of a budget, all entries together

BUDGET_HELP = """A budget file is YAML: a list of checks, each a model, the command whose report
is checked (model, the default; infer; train; memory), that command's options by their long
names (seq: 8k, tokens: 300B, kv_dtype: fp8, accelerator: h100, set: [n_layers=48]) and at least
one of max and min, mappings of report keys (dotted, as in that command's --format json) to
limits. Model and accelerator paths are relative to the budget file. Example:

\b
checks:
  - model: gpt3
    seq: 2048
    tokens: 300B
    max: {training.exact: 3.3e23, params.total: 180B}
  - model: llama-3.1-70b
    command: infer
    prompt: 8k
    gen: 1k
    accelerator: h100
    count: 8
    max: {kv_cache.bytes: 40GiB, roofline.total_seconds: 30}
"""


def run_check(model: str, command: str, given: dict[str, Any], limits: dict[str, dict]) -> list:
    """The results of `limits` (`max` and `min` mappings of keys to limits) on the report of
    `command` for `model` with options `given` (by name, unparsed)."""
    from ..reports.check import evaluate

    report = COMMANDS[command](model, **given)
    doc = report.to_dict()
    return [result for bound in ("max", "min")
            for result in evaluate(model, command, doc, limits.get(bound, {}), bound)]


def _entry(entry: Any, i: int, path: Path) -> tuple[str, str, dict[str, Any], dict[str, dict]]:
    """(model, command, options, limits) of a budget entry; an error names what is wrong."""
    from ..models.registry import looks_like_path

    if not isinstance(entry, dict):
        raise FlopcalcError("an entry is a mapping with model, command, options and max/min")
    entry = dict(entry)
    model = entry.pop("model", None)
    if not isinstance(model, str):
        raise FlopcalcError("give the model: a preset name or a path (relative to the budget)")
    command = entry.pop("command", "model")
    if command not in CHECKABLE:
        raise FlopcalcError(f"command must be one of {', '.join(CHECKABLE)}, got {command!r}")
    limits = {bound: entry.pop(bound, None) or {} for bound in ("max", "min")}
    for bound, mapping in limits.items():
        if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
            raise FlopcalcError(f"{bound} must map report keys to limits")
    if not limits["max"] and not limits["min"]:
        raise FlopcalcError("give at least one limit under max or min")
    names = {o.name for o in COMMANDS[command].options}
    for key in entry:
        if key not in names:
            hint = suggest(key, names) or (" valid keys: model, command, max, min, "
                                           + ", ".join(sorted(names)))
            raise FlopcalcError(f"unknown key '{key}' for command {command};{hint}")

    def relative(ref: Any) -> Any:
        if isinstance(ref, str) and looks_like_path(ref) and ref != "-" \
                and not Path(ref).expanduser().is_absolute():
            return str(path.parent / ref)
        return ref

    if isinstance(entry.get("accelerator"), str):
        entry["accelerator"] = relative(entry["accelerator"])
    return relative(model), command, entry, limits


def run_budget(path: Path) -> list[Any]:
    """Every limit of every entry of a budget file; an error names the entry."""
    from ..models.files import read_mapping

    budget = read_mapping(path, "budget file")
    unknown = sorted(set(budget) - {"checks"})
    if unknown:
        raise FlopcalcError(f"{path}: unknown key '{unknown[0]}'; a budget file has one key, "
                            "checks (flopcalc check --help shows the format)")
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
        label = raw.get("model") if isinstance(raw, dict) else None
        where = f"{path}: checks.{i}" + (f" ({label})" if isinstance(label, str) else "")
        try:
            model, command, given, bounds = _entry(raw, i, path)
            results += run_check(model, command, given, bounds)
        except FlopcalcError as exc:
            raise FlopcalcError(f"{where}: {exc}") from None
    return results


def _given(ctx: click.Context, names: list[str]) -> dict[str, Any]:
    """The options given on the command line (not their defaults)."""
    from click.core import ParameterSource

    return {n: ctx.params[n] for n in names
            if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE}


def check(**kw: Any) -> None:
    """Fail (exit 1) when a model exceeds a FLOP, parameter, memory or time budget: a CI gate.

    Limits use the syntax of the figure: K = 1,000 for counts, k = 1,024 for lengths
    (settings.seq, crossover.seq), KB/KiB for bytes. Exit 0: every limit holds; 1: one does not;
    2: bad input.
    """
    from ..render import workflows as render
    from ..reports.check import build_check_report, parse_limit_options

    model, budget, command = kw["model"], kw["budget"], kw["command"]
    if (model is None) == (budget is None):
        raise FlopcalcError("give either MODEL with --max/--min KEY=VALUE, or --budget FILE")
    if budget is not None:
        results = run_budget(budget)
    else:
        if not kw["max_"] and not kw["min_"]:
            raise FlopcalcError("check needs at least one --max or --min KEY=VALUE (e.g. --max "
                                "params.total=180B)")
        given = _given(click.get_current_context(), [o.name for o in UNION])
        own = {o.name for o in COMMANDS[command].options}
        stray = [n for n in given if n not in own]
        if stray:
            flag = "--" + stray[0].replace("_", "-")
            raise FlopcalcError(f"{flag} is not an option of {command}; give --command with the "
                                "command it belongs to (flopcalc check --help)")
        limits = {"max": parse_limit_options(kw["max_"] or [], "max"),
                  "min": parse_limit_options(kw["min_"] or [], "min")}
        results = run_check(model, command, given, limits)
    report = build_check_report(results)
    emit(kw["fmt"], report, render.check_csv, None, render.check_text)
    failed = sum(r.status == "FAIL" for r in results)
    if failed:
        raise BudgetExceeded(f"{failed} of {len(results)} limits do not hold")


# The options of every checkable command, each once; parsed by the command they belong to.
UNION = options_of(CHECKABLE)


def _check_command() -> Any:
    import inspect

    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("model", kw, default=None, annotation=Annotated[Optional[str], typer.Argument(
            metavar="[MODEL]", help="Preset, YAML or config.json (or use --budget).")]),
        inspect.Parameter("command", kw, default="model", annotation=Annotated[str, typer.Option(
            "--command", click_type=click.Choice(CHECKABLE), help="The command whose report "
            "is checked; its options follow.")]),
        inspect.Parameter("max_", kw, default=None, annotation=Annotated[Optional[List[str]], typer.Option(
            "--max", metavar="KEY=VALUE", help="An upper limit on a numeric key of the report "
            "(--format json), e.g. training.exact=3.3e23 (repeatable).")]),
        inspect.Parameter("min_", kw, default=None, annotation=Annotated[Optional[List[str]], typer.Option(
            "--min", metavar="KEY=VALUE", help="A lower limit, e.g. crossover.seq=32k "
            "(repeatable).")]),
        inspect.Parameter("budget", kw, default=None, annotation=Annotated[Optional[Path], typer.Option(
            "--budget", metavar="FILE", help="A YAML file of checks (its format is below).")]),
    ]
    for o in UNION:  # parsed by the command they belong to, not here
        loose = o if o.kind in ("flag", "texts", "text") else type(o)(
            o.name, "text", o.help, metavar=o.metavar or o.kind.upper())
        params.append(inspect.Parameter(o.name, kw, default=False if o.kind == "flag" else None,
                                        annotation=annotation(loose)))
    params += [inspect.Parameter("fmt", kw, default=Format.table, annotation=FormatOpt),
               inspect.Parameter("debug", kw, default=False, annotation=DebugOpt)]

    def run(**kw: Any) -> None:
        check(**kw)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__name__ = "check"
    run.__doc__ = inspect.cleandoc(check.__doc__ or "") + "\n\n" + BUDGET_HELP
    return handles_errors(run)


check_command = _check_command()
