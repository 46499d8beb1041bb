"""`conventions` and `attention`: the published counts set beside flopcalc's."""

from __future__ import annotations

from typing import Annotated, Any, List, Optional

import typer

from .options import (COUNT, LENGTH, DebugOpt, Format, FormatOpt, ModelArg, Recompute,
                      RecomputeOpt, SeqOpt, SetOpt, TokensOpt)
from .runtime import emit, handles_errors, load


def conventions_report(model: str, seq: Optional[int] = None, tokens: Optional[int] = None,
                       recompute: Recompute = Recompute.none,
                       set_: Optional[List[str]] = None) -> Any:
    from ..counting.model import model_params
    from ..counting.parts import total
    from ..reports.common import default_seq, default_tokens
    from ..reports.conventions import build_conventions_report

    loaded = load(model, set_)
    spec = loaded.spec
    if tokens is None:
        tokens, source = default_tokens(spec, total(model_params(spec)))
    else:
        source = "--tokens"
    return build_conventions_report(loaded, seq or default_seq(spec), tokens, source,
                                    Recompute(recompute) is Recompute.full)


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
    from ..render import conventions as render
    from ..reports.attention import build_attention_report

    emit(fmt, build_attention_report(n, m, d_k, d_v, heads), render.attention_csv,
         render.attention_tables)
