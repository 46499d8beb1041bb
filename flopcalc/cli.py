"""The command line: options in, one report out. The only module that prints or exits.

Errors: a `FlopcalcError` (bad input) becomes one line on stderr and exit 2; a Typer/Click usage
error the same; exit 1 is kept for an exceeded `check` budget. `--debug` or FLOPCALC_DEBUG=1
shows the traceback instead.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Any, Callable, List, Optional, Sequence

import typer
from typing import Annotated

from . import __version__
from .errors import BudgetExceeded, FlopcalcError
from .numbers import parse_count, parse_length

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Exact parameter and FLOP counts for transformer models. "
    "MODEL is a preset name (flopcalc list), a YAML file, or a Hugging Face config.json.",
)

_debug = bool(os.environ.get("FLOPCALC_DEBUG"))


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class AttentionOpt(str, Enum):
    full = "full"
    causal = "causal"


# ---------------------------------------------------------------------------- shared options

ModelArg = Annotated[str, typer.Argument(
    metavar="MODEL", help="Preset name, path to a YAML preset, or path to a config.json.")]
SetOpt = Annotated[Optional[List[str]], typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Override a config field (repeatable; dotted keys for nested ones, e.g. bias.qkv=false).")]
SeqOpt = Annotated[Optional[str], typer.Option(
    "--seq", help="Sequence (source) length; k = 1024 (32k = 32,768). Default: the model's context.")]
TgtSeqOpt = Annotated[Optional[str], typer.Option(
    "--tgt-seq", help="Target (decoder) length of an encoder-decoder model. Default: --seq.")]
BatchOpt = Annotated[str, typer.Option("--batch", help="Sequences per forward pass.")]
TokensOpt = Annotated[Optional[str], typer.Option(
    "--tokens", help="Training tokens D (300B, 1.5T, 3e11). Default: published, else 20 per param.")]
AttentionFlag = Annotated[AttentionOpt, typer.Option(
    "--attention", help="full: every (query, key) pair; causal: the s(s+1)/2 unmasked ones.",
    case_sensitive=False)]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="table (for people), json or csv (for scripts).", case_sensitive=False)]
ElementwiseOpt = Annotated[bool, typer.Option(
    "--elementwise", help="Also count bias adds, norms, activations, softmax, residual adds.")]


def _version(value: bool) -> None:
    if value:
        print(f"flopcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    global _debug
    _debug = _debug or debug


# --------------------------------------------------------------------------------- emitting

def emit(fmt: Format, data: Callable[[], Any], csv_text: Callable[[], str],
         tables: Callable[[], Any], warnings: Sequence[str] = ()) -> None:
    """Render in full, then write: a failure leaves stdout empty. Warnings go to stderr."""
    from . import render

    for line in warnings:
        print(f"flopcalc: warning: {line}", file=sys.stderr)
    if fmt is Format.json:
        sys.stdout.write(render.to_json(data()) + "\n")
    elif fmt is Format.csv:
        sys.stdout.write(csv_text())
    else:
        rendered = tables()
        if isinstance(rendered, str):  # plain text that must not be re-wrapped
            sys.stdout.write(rendered)
        else:
            render.print_tables(sys.stdout, rendered)


def load(model: str, overrides: Optional[List[str]]) -> Any:
    from .registry import load_model

    return load_model(model, overrides or ())


def model_report(model: str, set_: Optional[List[str]], seq: Optional[str],
                 tgt_seq: Optional[str], batch: str, tokens: Optional[str], attention: AttentionOpt,
                 elementwise: bool = False) -> Any:
    """The `model` report for the options as typed: the one parsing path of every command
    that reports on a model."""
    from .report import build_report

    return build_report(
        load(model, set_), seq=opt_length(seq, "--seq"), tgt_seq=opt_length(tgt_seq, "--tgt-seq"),
        batch=parse_count(batch, "--batch"), tokens=opt_count(tokens, "--tokens"),
        attention=attention.value, elementwise=elementwise)


def opt_length(text: Optional[str], option: str) -> Optional[int]:
    return None if text is None else parse_length(text, option)


def opt_count(text: Optional[str], option: str) -> Optional[int]:
    return None if text is None else parse_count(text, option)


# --------------------------------------------------------------------------------- commands

@app.command()
def model(
    model: ModelArg,
    seq: SeqOpt = None,
    tgt_seq: TgtSeqOpt = None,
    batch: BatchOpt = "1",
    tokens: TokensOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    elementwise: ElementwiseOpt = False,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Parameters, forward FLOPs by component, training FLOPs and the attention crossover."""
    from . import render

    report = model_report(model, set_, seq, tgt_seq, batch, tokens, attention, elementwise)
    emit(fmt, report.to_dict, lambda: render.model_csv(report),
         lambda: render.model_tables(report), report.warnings)


@app.command("list")
def list_(fmt: FormatOpt = Format.table) -> None:
    """Every shipped preset with its key dimensions and parameter count."""
    from . import render
    from .listing import preset_rows

    rows = preset_rows()
    emit(fmt, lambda: {"schema_version": 1, "presets": rows},
         lambda: render.list_csv(rows), lambda: render.list_tables(rows))


@app.command()
def show(model: ModelArg, set_: SetOpt = None) -> None:
    """Print the resolved config as YAML; the output is itself a valid preset."""
    from .listing import config_yaml
    from .validation import validate_model

    loaded = load(model, set_)
    sys.stdout.write(config_yaml(validate_model(loaded.raw, loaded.label)))


@app.command()
def schema() -> None:
    """Print the JSON Schema of `flopcalc model --format json`."""
    from . import render
    from .report import json_schema

    sys.stdout.write(render.to_json(json_schema()) + "\n")


@app.command()
def sweep(
    model: ModelArg,
    seq: Annotated[str, typer.Option(
        "--seq", help="Lengths: 1k,2k,4k; a range 1k..1M (every power of two); or a range with "
        "--points N (N log-spaced lengths). k = 1024.")] = "1k..1M",
    points: Annotated[Optional[int], typer.Option(
        "--points", help="With a range: this many log-spaced integer lengths.")] = None,
    batch: BatchOpt = "1",
    attention: AttentionFlag = AttentionOpt.full,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Forward FLOPs over many sequence lengths: where attention's s² term takes over."""
    from . import render
    from .sweep import sweep_report

    doc = sweep_report(load(model, set_), seq, points, parse_count(batch, "--batch"),
                       attention.value)
    emit(fmt, lambda: doc, lambda: render.sweep_csv(doc), lambda: render.sweep_tables(doc))


@app.command()
def compare(
    models: Annotated[List[str], typer.Argument(metavar="MODEL...", help="Models to compare.")],
    seq: SeqOpt = None,
    batch: BatchOpt = "1",
    tokens: TokensOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Key figures of several models side by side (each at its own context unless --seq).
    --set applies to every model."""
    from . import render
    from .compare import compare_report

    reports = [model_report(m, set_, seq, None, batch, tokens, attention) for m in models]
    doc = compare_report(reports, opt_length(seq, "--seq"), parse_count(batch, "--batch"),
                         attention.value)
    warnings = [w for r in reports for w in r.warnings]
    emit(fmt, lambda: doc, lambda: render.compare_csv(doc), lambda: render.compare_tables(doc),
         warnings)


@app.command()
def check(
    model: Annotated[Optional[str], typer.Argument(
        metavar="[MODEL]", help="Preset, YAML or config.json (or use --budget).")] = None,
    max_: Annotated[Optional[List[str]], typer.Option(
        "--max", metavar="KEY=VALUE",
        help="A limit on a numeric key of `model --format json`, e.g. training.exact=3.3e23 "
        "(repeatable).")] = None,
    budget: Annotated[Optional[str], typer.Option(
        "--budget", metavar="FILE", help="A YAML file of checks (see README).")] = None,
    seq: SeqOpt = None,
    tgt_seq: TgtSeqOpt = None,
    batch: BatchOpt = "1",
    tokens: TokensOpt = None,
    attention: AttentionFlag = AttentionOpt.full,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Fail (exit 1) when a model exceeds a FLOP or parameter budget: a CI gate."""
    from pathlib import Path

    from . import render
    from .check import evaluate, parse_max_options, run_budget

    if (model is None) == (budget is None):
        raise FlopcalcError("give either MODEL with --max KEY=VALUE, or --budget FILE")
    results = []
    if budget is not None:
        results = run_budget(Path(budget))
    else:
        if not max_:
            raise FlopcalcError("check needs at least one --max KEY=VALUE (e.g. --max "
                                "params.total=180B)")
        report = model_report(model, set_, seq, tgt_seq, batch, tokens, attention)
        results = evaluate(model, report.to_dict(), parse_max_options(max_))
    from dataclasses import asdict

    rows = [asdict(r) for r in results]
    failed = sum(r["status"] == "FAIL" for r in rows)
    doc = {"schema_version": 1, "passed": failed == 0, "rows": rows}
    emit(fmt, lambda: doc, lambda: render.check_csv(doc), lambda: render.check_text(doc))
    if failed:
        raise BudgetExceeded(f"{failed} of {len(rows)} limits over")


# Commands defined in their own modules register themselves on `app` when imported. Their
# heavy imports happen inside the command functions, so importing them here costs little.
from . import cli_conventions, cli_inference  # noqa: E402,F401

# ------------------------------------------------------------------------------- entry point

def _click_exceptions() -> tuple[type, type, type]:
    """Click's usage error, exit and abort exceptions (Typer 0.24 runs on Click)."""
    from click.exceptions import Abort, ClickException, Exit

    return ClickException, Exit, Abort


def main(argv: Optional[List[str]] = None) -> int:
    """Console-script entry point: run the app and map every failure to an exit code."""
    global _debug
    _debug = bool(os.environ.get("FLOPCALC_DEBUG"))  # `--debug` sets it again for this run
    click_error, click_exit, click_abort = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="flopcalc", standalone_mode=False)
    except click_exit as exc:
        return exc.exit_code
    except click_error as exc:
        if _debug:
            raise
        message = exc.format_message()
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `flopcalc`: the help is the message
            print(message, file=sys.stderr)
            return exc.exit_code
        ctx = getattr(exc, "ctx", None)
        hint = f" (see {ctx.command_path if ctx else 'flopcalc'} --help)"
        message = message.replace("Value error, ", "").rstrip(".")
        print(f"flopcalc: error: {message}{hint}", file=sys.stderr)
        return exc.exit_code
    except FlopcalcError as exc:
        if _debug:
            raise
        kind = "budget exceeded" if isinstance(exc, BudgetExceeded) else "error"
        print(f"flopcalc: {kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except (click_abort, KeyboardInterrupt):
        print("flopcalc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `flopcalc ... | head`: the reader left; not an error of ours.
        sys.stderr.close()
        return 0
    except Exception as exc:  # a bug: say so in one line, never a raw traceback
        if _debug:
            raise
        print(f"flopcalc: internal error: {type(exc).__name__}: {exc} (rerun with --debug for "
              "the traceback, and please report it)", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
