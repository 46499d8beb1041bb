"""The options commands share, and the Click parameter types that parse their values.

Every number an option takes goes through `flopcalc.numbers` inside a Click type, so a bad value
is a Click usage error naming the option (exit 2) before any command runs.
"""

from __future__ import annotations

from enum import Enum
from fractions import Fraction
from typing import Annotated, Any, Callable, List, Optional

import click
import typer

from ..errors import FlopcalcError
from ..numbers import parse_amount, parse_bytes, parse_count, parse_length, parse_share


class OneLine(click.UsageError):
    """A usage error shown as one line naming the problem and where help is, instead of
    Click's usage block."""

    def show(self, file: Any = None) -> None:
        hint = f" (see {self.ctx.command_path} --help)" if self.ctx is not None else ""
        click.echo(f"flopcalc: error: {self.format_message()}{hint}", err=True)


class OptionError(OneLine, click.BadParameter):
    """A bad option value: one line naming the option and the problem."""


class _Parsed(click.ParamType):
    """A value parsed by one of `flopcalc.numbers`' functions."""

    def __init__(self, name: str, parse: Callable[[object, str], Any]):
        self.name = name
        self._parse = parse

    def convert(self, value: Any, param: Optional[click.Parameter],
                ctx: Optional[click.Context]) -> Any:
        if not isinstance(value, str):
            return value  # a default, already parsed
        try:
            return self._parse(value, param.opts[0] if param is not None else "value")
        except FlopcalcError as exc:
            message = str(exc)
            if param is not None:
                message = message.removeprefix(f"{param.opts[0]}: ")
            raise OptionError(message, ctx, param) from None


LENGTH = _Parsed("length", parse_length)
COUNT = _Parsed("count", parse_count)
BYTES = _Parsed("bytes", parse_bytes)
SHARE = _Parsed("share", parse_share)
AMOUNT = _Parsed("amount", parse_amount)


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class AttentionOpt(str, Enum):
    full = "full"
    causal = "causal"


class StorageDtype(str, Enum):
    """dtypes of stored weights (their bits are in counting.traffic.DTYPE_BITS)."""

    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"
    fp32 = "fp32"


class KvDtype(str, Enum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    fp32 = "fp32"


class ComputeDtype(str, Enum):
    """dtypes an accelerator preset may list a peak for: models.accelerators.DTYPES (a test
    checks it; that module is not imported here, to keep it off every command's start-up)."""

    fp64 = "fp64"
    fp32 = "fp32"
    tf32 = "tf32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    fp4 = "fp4"


class Recompute(str, Enum):
    none = "none"
    full = "full"


ModelArg = Annotated[str, typer.Argument(
    metavar="MODEL", help="Preset name (flopcalc list), path to a YAML preset or a config.json "
    "(or a directory holding one), or - for a file on stdin.")]
SetOpt = Annotated[Optional[List[str]], typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Override a config field (repeatable; dotted keys for nested ones, e.g. bias.qkv=false).")]
SeqOpt = Annotated[Optional[int], typer.Option(
    "--seq", click_type=LENGTH, metavar="N",
    help="Sequence (source) length; k = 1024 (32k = 32,768). Default: the model's training "
    "length, else its context.")]
TgtSeqOpt = Annotated[Optional[int], typer.Option(
    "--tgt-seq", click_type=LENGTH, metavar="N",
    help="Target (decoder) length of an encoder-decoder model. Default: --seq.")]
BatchOpt = Annotated[int, typer.Option("--batch", click_type=COUNT, metavar="B",
                                       help="Sequences per forward pass.")]
TokensOpt = Annotated[Optional[int], typer.Option(
    "--tokens", click_type=COUNT, metavar="D",
    help="Training tokens D (300B, 1.5T, 3e11). Default: published, else 20 per param.")]
AttentionFlag = Annotated[AttentionOpt, typer.Option(
    "--attention", case_sensitive=False,
    help="full: every (query, key) pair (FlopCounterMode's count); causal: the pairs each "
    "layer's mask lets through (causal, sliding window, chunked).")]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="table (for people), json or csv (for scripts).", case_sensitive=False)]
ElementwiseOpt = Annotated[bool, typer.Option(
    "--elementwise", help="Also count bias adds, norms, activations, softmax, residual adds.")]
BriefOpt = Annotated[bool, typer.Option(
    "--brief", help="Only the headline figures, a line each (table format).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")]
AcceleratorOpt = Annotated[Optional[str], typer.Option(
    "--accelerator", metavar="NAME",
    help="Accelerator preset (flopcalc accelerators; h100 = h100-sxm) or a YAML file.")]
CountOpt = Annotated[int, typer.Option(
    "--count", click_type=COUNT, metavar="N",
    help="Number of devices; peak, bandwidth and memory scale by it: perfect scaling.")]
PeakOpt = Annotated[Optional[int], typer.Option(
    "--peak", click_type=COUNT, metavar="FLOP/S",
    help="Dense peak FLOP/s per device, overriding the preset (989.5T, 1P).")]
BandwidthOpt = Annotated[Optional[int], typer.Option(
    "--bandwidth", click_type=BYTES, metavar="BYTES/S",
    help="Memory bandwidth in bytes/s per device, overriding the preset (3.35TB).")]
MfuOpt = Annotated[Fraction, typer.Option(
    "--mfu", click_type=SHARE, metavar="F",
    help="Model FLOPs utilisation: the sustained share of peak, 0.4 or 40%.")]
RecomputeOpt = Annotated[Recompute, typer.Option(
    "--recompute", case_sensitive=False,
    help="full: one more forward pass (activation recomputation): hardware FLOPs.")]


def plot_option(drawn: str) -> Any:
    """The `--plot FILE` option of a command that draws `drawn`."""
    return Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE", help=f"Also draw {drawn} to FILE (.svg or .png; needs pip "
        "install 'flopcalc[plot]').")]
