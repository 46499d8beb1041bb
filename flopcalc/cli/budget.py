"""`check`: hold a model's figures against limits, and fail (exit 1) when one does not hold.

`flopcalc check MODEL [model options] --max KEY=VALUE --min KEY=VALUE` checks the `model`
report; a budget file checks any mix of `model`, `infer`, `train` and `memory` runs. A budget
entry's options are parsed by the same Click types as the command line (`seq: 8k`,
`kv_dtype: fp8`), so a file and a shell say the same thing the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Callable, Dict, List, Literal, Optional, Union

import click
import typer

from ..errors import BudgetExceeded, FlopcalcError, suggest
from .options import (AttentionFlag, AttentionOpt, BatchOpt, DebugOpt, Format, FormatOpt,
                      SeqOpt, SetOpt, TgtSeqOpt, TokensOpt)
from .runtime import emit, handles_errors

BUDGET_HELP = """A budget file is YAML: a list of checks, each a model, the command whose report
is checked (model, the default; infer; train; memory), that command's options by their long
names (seq: 8k, tokens: 300B, kv_dtype: fp8, accelerator: h100, set: [n_layers=48]) and at least
one of max and min, mappings of report keys (dotted, as in that command's --format json) to
limits. A model path is relative to the budget file. Example:

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


def _commands() -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    """Each checkable command: (its Typer function, its report builder)."""
    from . import core, memory, serving

    return {"model": (core.model, core.model_report),
            "infer": (serving.infer, serving.infer_report),
            "train": (serving.train, serving.train_report),
            "memory": (memory.memory, memory.memory_report)}


def run_command(command: str, argv: list[str]) -> Any:
    """The report `command` makes for these command-line arguments (the model first), parsed
    exactly as the command line parses them."""
    function, build = _commands()[command]
    app = typer.Typer()
    app.command()(function)
    click_command = typer.main.get_command(app)
    ctx = click_command.make_context(command, argv)
    params = {k: v for k, v in ctx.params.items() if k not in ("fmt", "brief", "debug", "plot")}
    return build(**params)


def _budget_schema() -> type:
    from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

    human = Union[StrictInt, float, StrictStr]

    class BudgetCheck(BaseModel):
        model_config = ConfigDict(extra="allow", frozen=True)

        model: StrictStr
        command: Literal["model", "infer", "train", "memory"] = "model"
        max: Dict[StrictStr, human] = {}  # type: ignore[valid-type]
        min: Dict[StrictStr, human] = {}  # type: ignore[valid-type]

    class BudgetFile(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        checks: List[BudgetCheck]

    return BudgetFile


def _argv(entry: Any, path: Path, command: str) -> list[str]:
    """The entry's options as command-line arguments, each checked against the command's own."""
    from ..models.registry import looks_like_path

    function, _ = _commands()[command]
    app = typer.Typer()
    app.command()(function)
    params = {p.name: p for p in typer.main.get_command(app).params
              if isinstance(p, click.Option) and p.name not in ("fmt", "brief", "debug", "plot")}
    names = {("set" if n == "set_" else n): p for n, p in params.items()}
    model = entry.model
    if looks_like_path(model) and model != "-" and not Path(model).is_absolute():
        model = str(path.parent / model)
    argv = [model]
    for key, value in (entry.model_extra or {}).items():
        if key not in names:
            hint = suggest(key, names) or f" valid keys: model, command, max, min, " \
                f"{', '.join(sorted(names))}"
            raise FlopcalcError(f"unknown key '{key}' for command {command};{hint}")
        option = names[key]
        values = value if isinstance(value, list) else [value]
        for v in values:
            if option.is_flag:
                if v is True:
                    argv.append(option.opts[0])
                continue
            argv += [option.opts[0], "true" if v is True else "false" if v is False else str(v)]
    return argv


def run_budget(path: Path) -> list[Any]:
    """Every limit of every entry of a budget file; an error names the entry."""
    from ..models.files import read_mapping
    from ..models.validation import validate
    from ..reports.check import evaluate

    budget = validate(_budget_schema(), read_mapping(path, "budget file"), str(path))
    if not budget.checks:
        raise FlopcalcError(f"{path}: 'checks' is empty; add at least one entry with a model "
                            "and a max or min mapping")
    results = []
    for i, entry in enumerate(budget.checks):
        try:
            if not entry.max and not entry.min:
                raise FlopcalcError("give at least one limit under max or min")
            report = run_command(entry.command, _argv(entry, path, entry.command))
            doc = report.to_dict()
            results += evaluate(entry.model, entry.command, doc, dict(entry.max), "max")
            results += evaluate(entry.model, entry.command, doc, dict(entry.min), "min")
        except click.ClickException as exc:
            raise FlopcalcError(f"{path}: checks.{i} ({entry.model}): "
                                f"{exc.format_message()}") from None
        except FlopcalcError as exc:
            raise FlopcalcError(f"{path}: checks.{i} ({entry.model}): {exc}") from None
    return results


@handles_errors
def check(
    model: Annotated[Optional[str], typer.Argument(
        metavar="[MODEL]", help="Preset, YAML or config.json (or use --budget).")] = None,
    max_: Annotated[Optional[List[str]], typer.Option(
        "--max", metavar="KEY=VALUE",
        help="An upper limit on a numeric key of `model --format json`, e.g. "
        "training.exact=3.3e23 (repeatable).")] = None,
    min_: Annotated[Optional[List[str]], typer.Option(
        "--min", metavar="KEY=VALUE",
        help="A lower limit, e.g. crossover.seq=32k (repeatable).")] = None,
    budget: Annotated[Optional[Path], typer.Option(
        "--budget", metavar="FILE", help="A YAML file of checks (its format is below).")] = None,
    seq: SeqOpt = None,
    tgt_seq: TgtSeqOpt = None,
    batch: BatchOpt = 1,
    tokens: TokensOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    debug: DebugOpt = False,
) -> None:
    """Fail (exit 1) when a model exceeds a FLOP, parameter, memory or time budget: a CI gate.

    Limits use the syntax of the figure: K = 1,000 for counts, k = 1,024 for lengths
    (settings.seq, crossover.seq), KB/KiB for bytes. Exit 0: every limit holds; 1: one does not;
    2: bad input.
    """
    from ..render import workflows as render
    from ..reports.check import build_check_report, evaluate, parse_limit_options
    from .core import model_report

    if (model is None) == (budget is None):
        raise FlopcalcError("give either MODEL with --max/--min KEY=VALUE, or --budget FILE")
    if budget is not None:
        results = run_budget(budget)
    else:
        assert model is not None
        if not max_ and not min_:
            raise FlopcalcError("check needs at least one --max or --min KEY=VALUE (e.g. --max "
                                "params.total=180B)")
        doc = model_report(model, set_, seq, tgt_seq, batch, tokens, attention).to_dict()
        results = (evaluate(model, "model", doc, parse_limit_options(max_ or [], "max"), "max")
                   + evaluate(model, "model", doc, parse_limit_options(min_ or [], "min"),
                              "min"))
    report = build_check_report(results)
    emit(fmt, report, render.check_csv, None, render.check_text)
    failed = sum(r.status == "FAIL" for r in results)
    if failed:
        raise BudgetExceeded(f"{failed} of {len(results)} limits do not hold")


check.__doc__ = (check.__doc__ or "") + "\n\n" + BUDGET_HELP
