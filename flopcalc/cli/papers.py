"""`conventions` and `attention`: the published counts set beside flopcalc's."""

from __future__ import annotations

from typing import Annotated, Any, List, Optional

import typer

from .options import (COUNT, LENGTH, DebugOpt, Format, FormatOpt, ModelArg, Recompute,
                      RecomputeOpt, SeqOpt, SetOpt, TokensOpt)
from .runtime import emit, handles_errors


def conventions_report(model: str, seq: Optional[int] = None, tokens: Optional[int] = None,
                       recompute: Recompute = Recompute.none,
                       set_: Optional[List[str]] = None) -> Any:
    from .. import api

    return api.conventions(model, seq=seq, tokens=tokens, recompute=Recompute(recompute).value,
                           set=set_)


@handles_errors
def conventions(
    model: ModelArg,
    seq: SeqOpt = None,
    tokens: TokensOpt = None,
    recompute: RecomputeOpt = Recompute.none,
    set_: SetOpt = None,
    fmt: FormatOpt = Format.table,
    debug: DebugOpt = False,
) -> None:
    """Training FLOPs under 6ND, Kaplan, PaLM, Megatron, Chinchilla and exact, side by side."""
    from ..render import conventions as render

    emit(fmt, conventions_report(model, seq, tokens, recompute, set_), render.conventions_csv,
         render.conventions_tables)


@handles_errors
def attention(
    n: Annotated[int, typer.Option("--n", click_type=LENGTH, metavar="N",
                                   help="Keys (the sequence length); 8k = 8,192.")],
    d_k: Annotated[int, typer.Option("--d-k", click_type=COUNT, metavar="K",
                                     help="Query/key width per head.")],
    d_v: Annotated[int, typer.Option("--d-v", click_type=COUNT, metavar="V",
                                     help="Value width per head.")],
    m: Annotated[Optional[int], typer.Option(
        "--m", click_type=LENGTH, metavar="M",
        help="Queries (e.g. a decoder's target length in cross-attention). Default: n.")] = None,
    heads: Annotated[int, typer.Option("--heads", click_type=COUNT, metavar="H",
                                       help="Heads H; totals are H x per head.")] = 1,
    fmt: FormatOpt = Format.table,
    debug: DebugOpt = False,
) -> None:
    """One attention operation counted scalar by scalar (every multiply, add, divide and exp),
    term by term, against the leading order 2mn(d_k + d_v)."""
    from .. import api
    from ..render import conventions as render

    emit(fmt, api.attention(n=n, m=m, d_k=d_k, d_v=d_v, heads=heads), render.attention_csv,
         render.attention_tables)
