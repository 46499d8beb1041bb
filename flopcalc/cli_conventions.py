"""`flopcalc conventions` and `flopcalc attention`, registered on `flopcalc.cli.app`.

The arithmetic is in `flopcalc.conventions`, the formatting in `flopcalc.render_conventions`;
both are imported inside the commands so that `flopcalc --help` stays fast.
"""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer
from typing import Annotated

from .cli import (Format, FormatOpt, ModelArg, SeqOpt, SetOpt, TokensOpt, app, emit, load,
                  opt_count, opt_length)
from .numbers import parse_count, parse_length


class Recompute(str, Enum):
    none = "none"
    full = "full"


RecomputeOpt = Annotated[Recompute, typer.Option(
    "--recompute", case_sensitive=False,
    help="full: the exact rows add one forward pass (activation recomputation): hardware FLOPs, "
    "not model FLOPs.")]


@app.command()
def conventions(
    model: ModelArg,
    seq: SeqOpt = None,
    tokens: TokensOpt = None,
    recompute: RecomputeOpt = Recompute.none,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Training FLOPs under 6ND, Kaplan, PaLM, Megatron, Chinchilla and exact, side by side."""
    from . import counting as c
    from . import render_conventions as render
    from .conventions import report
    from .report import default_seq, default_tokens

    loaded = load(model, set_)
    cfg = loaded.config
    length = opt_length(seq, "--seq") or default_seq(cfg)
    count = opt_count(tokens, "--tokens")
    if count is None:
        count, source = default_tokens(cfg, c.total(c.model_params(cfg)))
    else:
        source = "--tokens"
    rep = report(loaded.name, cfg, length, count, source, recompute is Recompute.full)
    emit(fmt, rep.to_dict, lambda: render.conventions_csv(rep),
         lambda: render.conventions_tables(rep), rep.warnings)


# Sizes of `flopcalc attention`: strings, parsed so that 8k, 1_000 and 1e3 work and 1.5 fails.
KeysOpt = Annotated[str, typer.Option(
    "--n", metavar="N", help="Keys (the sequence length); 8k = 8,192.")]
QueriesOpt = Annotated[Optional[str], typer.Option(
    "--m", metavar="M", help="Queries (e.g. a decoder's target length in cross-attention). "
    "Default: n.")]
DkOpt = Annotated[str, typer.Option("--d-k", metavar="K", help="Query/key width per head.")]
DvOpt = Annotated[str, typer.Option("--d-v", metavar="V", help="Value width per head.")]
HeadsOpt = Annotated[str, typer.Option(
    "--heads", metavar="H", help="Heads H; totals are H x per head.")]


@app.command()
def attention(
    n: KeysOpt,
    d_k: DkOpt,
    d_v: DvOpt,
    m: QueriesOpt = None,
    heads: HeadsOpt = "1",
    fmt: FormatOpt = Format.table,
) -> None:
    """Seed 004's exact count of one attention operation, term by term, against 2mn(d_k+d_v)."""
    from . import render_conventions as render
    from .attention import attention_report

    rep = attention_report(parse_length(n, "--n"), opt_length(m, "--m"),
                           parse_count(d_k, "--d-k"), parse_count(d_v, "--d-v"),
                           parse_count(heads, "--heads"))
    emit(fmt, rep.to_dict, lambda: render.attention_csv(rep),
         lambda: render.attention_tables(rep))
