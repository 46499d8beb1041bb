"""Formatting only: reports in, text out. No arithmetic beyond choosing how to show a number.

rich is imported inside the table functions, so `--format json` and `--format csv` never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:
    from rich.table import Table

    from .report import Report

_SCALES = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))


def human(n: int | float) -> str:
    """A short approximate form: 124.4M, 174.6B, 3.140e23 (≥ 1e15 in scientific notation)."""
    if abs(n) >= 10**15:
        mantissa, exponent = f"{n:.3e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    for scale, suffix in _SCALES:
        if abs(n) >= scale:
            return f"{n / scale:.4g}{suffix}"
    return f"{n:.4g}" if isinstance(n, float) else str(n)


def exact(n: int | float) -> str:
    return f"{n:,}" if isinstance(n, int) else f"{n:,.6g}"


def with_human(n: int) -> str:
    """'174,604,259,328 (174.6B)': the exact integer and its rounded form side by side."""
    if abs(n) < 10**6:  # short enough to read exactly
        return exact(n)
    return f"{exact(n)} ({human(n)})"


def percent(x: float) -> str:
    return f"{x:.1f}%" if x >= 0.05 or x == 0 else "<0.1%"


def shape(dims: Sequence[int] | None) -> str:
    return " x ".join(map(str, dims)) if dims else ""


# ----------------------------------------------------------------------------------- JSON/CSV

def to_json(data: Any) -> str:
    import json

    # allow_nan=False: NaN and Infinity are not JSON; a report must never contain them.
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


# ------------------------------------------------------------------------------- rich helpers

def new_table(title: str, columns: Sequence[str], caption: str | None = None) -> "Table":
    """A table whose columns after the first are right-aligned (numbers), per rich-cli."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, title_justify="left",
                  min_width=min(len(title), 78),
                  caption_justify="left", pad_edge=False, show_edge=False, expand=False,
                  collapse_padding=True)
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i == 0 else "right", overflow="fold")
    return table


def heading(title: str, rest: str) -> Any:
    """A bold title followed by plain text."""
    from rich.text import Text

    return Text.assemble((title, "bold"), rest)


def block(label: str, lines: Iterable[str]) -> Any:
    """A dim label, then one line per item."""
    from rich.text import Text

    return Text.assemble((label, "dim"), "".join(f"\n{line}" for line in lines))


def print_tables(out: Any, renderables: Iterable[Any]) -> None:
    """Print rich renderables to the text stream `out` (a terminal gets colour unless NO_COLOR).

    Markup is off: titles, names, paths and sources come from users' files, and a `[/x]` in a
    title must print as itself, not break the output. Styles are set with `heading`, `block` and
    `style=` on table rows instead."""
    from rich.console import Console

    console = Console(file=out, highlight=False, soft_wrap=False, markup=False)
    for i, item in enumerate(renderables):
        if i:
            console.print()
        console.print(item)


# ------------------------------------------------------------------------------- model report

def model_csv(report: "Report") -> str:
    s = report.settings
    rows: list[list[Any]] = [
        ["settings", key, "", "", value, ""]
        for key, value in (("seq", s.seq), ("tgt_seq", s.tgt_seq or ""), ("batch", s.batch),
                           ("tokens", s.tokens), ("attention", s.attention))
    ]
    for group in report.layers:
        rows += [[f"params.per_layer.{group.stack}", r.name, r.kind, shape(r.shape), r.value,
                  f"{r.share_pct:.4f}"] for r in group.param_rows]
    rows += [["params", r.name, r.kind, shape(r.shape), r.value, f"{r.share_pct:.4f}"]
             for r in report.params.rows]
    rows += [["params", key, "total", "", getattr(report.params, key), ""]
             for key in ("total", "embedding", "non_embedding")]
    rows += [["flops", r.name, r.kind, "", r.value, f"{r.share_pct:.4f}"]
             for r in report.flops.rows]
    rows += [["flops", key, "total", "", getattr(report.flops, key), ""]
             for key in ("forward", "weights", "attention", "elementwise")]
    t = report.training
    rows += [["training", key, "", "", getattr(t, key), ""]
             for key in ("tokens", "six_nd", "attention_correction", "six_nd_plus_attention",
                         "exact")]
    rows.append(["training", "six_nd_below_exact_pct", "", "", f"{t.six_nd_below_exact_pct:.4f}",
                 ""])
    x = report.crossover
    rows += [["crossover", "seq", "", "", x.seq, ""],
             ["crossover", "d_model_multiple", "", "", x.d_model_multiple, ""],
             ["crossover", "attention_share_pct", "", "", f"{x.attention_share_pct:.4f}", ""]]
    return to_csv(["section", "name", "kind", "shape", "value", "share_pct"], rows)


def model_tables(report: "Report") -> list[Any]:
    from rich.text import Text  # plain text: a model path may contain [brackets]

    s, p, f, t, x = report.settings, report.params, report.flops, report.training, report.crossover
    out: list[Any] = []
    lengths = f"seq {s.seq:,}" + (f", target {s.tgt_seq:,}" if s.tgt_seq else "")
    out.append(heading(report.model.title, f" ({report.model.name})\n"
               f"{lengths}, batch {s.batch}, attention {s.attention}, D = {s.tokens:,} tokens "
               f"({human(s.tokens)}; {s.tokens_source})\n"))

    for g in report.layers:
        table = new_table(f"Parameters of one {g.stack} layer (x {g.n_layers} layers)",
                          ["component", "shape", "params", "% layer"])
        for r in g.param_rows:
            table.add_row(r.name, shape(r.shape), exact(r.value), percent(r.share_pct))
        table.add_row("layer total", "", with_human(g.params), "100.0%", style="bold")
        out.append(table)

    table = new_table("Model parameters", ["component", "params", "% total"])
    for g in p.groups:
        table.add_row(g.name, with_human(g.value), percent(g.share_pct))
    table.add_row("total", with_human(p.total), "100.0%", style="bold")
    table.add_row("non-embedding N", with_human(p.non_embedding), percent(p.non_embedding_share_pct))
    out.append(table)

    table = new_table(f"Forward FLOPs ({lengths}, batch {s.batch})",
                      ["component", "FLOPs", "% fwd"])
    for r in f.rows:
        table.add_row(r.name, with_human(r.value), percent(r.share_pct))
    table.add_row("weight GEMMs", with_human(f.weights), percent(f.weights_share_pct))
    table.add_row("attention matrix (s²)", with_human(f.attention), percent(f.attention_share_pct))
    if f.elementwise:
        table.add_row("element-wise", with_human(f.elementwise), percent(f.elementwise_share_pct))
    table.add_row("forward", with_human(f.forward), "100.0%", style="bold")
    table.add_row("per output token", exact(f.forward_per_token), "")
    out.append(table)

    table = new_table(f"Training on D = {t.tokens:,} tokens ({human(t.tokens)})",
                      ["estimate", "FLOPs"])
    table.add_row("6ND (N non-embedding)", with_human(t.six_nd))
    table.add_row("attention correction", with_human(t.attention_correction))
    table.add_row("6ND + attention", with_human(t.six_nd_plus_attention))
    table.add_row("exact (3 x forward)", with_human(t.exact), style="bold")
    table.add_row("6ND below exact", percent(t.six_nd_below_exact_pct))
    out.append(table)
    out.append(Text(t.conventions_line))

    table = new_table("Crossover: attention matrix = weight GEMMs (layers only)", ["", "value"])
    table.add_row("crossover seq s*", exact(x.seq) + ("" if x.exact == str(x.seq) else
                                                      f" (exactly {x.exact})"))
    table.add_row("s* / d_model", f"{x.d_model_multiple:.4g}")
    table.add_row(f"attention share at seq {s.seq:,}", percent(x.attention_share_pct))
    table.add_row("  of the layers' FLOPs", percent(x.layer_attention_share_pct))
    out.append(table)
    out.append(conventions_text(report.conventions))
    return out


def conventions_text(lines: Sequence[str]) -> Any:
    """The counting conventions, printed under every table output."""
    return block("How this was counted:", (f"- {line}" for line in lines))


# ------------------------------------------------------------------------------- preset list

_LIST_COLUMNS = ("name", "architecture", "n_layers", "d_model", "n_heads", "n_kv_heads",
                 "head_dim", "d_ff", "vocab_size", "context", "params_total",
                 "params_non_embedding")


def list_csv(rows: list[dict[str, Any]]) -> str:
    return to_csv(_LIST_COLUMNS, ([r[k] if r[k] is not None else "" for k in _LIST_COLUMNS]
                                  for r in rows))


def list_tables(rows: list[dict[str, Any]]) -> list[Any]:
    table = new_table("Presets (flopcalc model NAME)",
                      ["name", "L", "d", "heads", "d_ff", "ctx", "params", "≈"],
                      caption="L: layers (encoder+decoder); heads: query/KV; ctx: context.")
    for r in rows:
        heads = f"{r['n_heads']}" + (f"/{r['n_kv_heads']}" if r["n_kv_heads"] != r["n_heads"]
                                     else "")
        table.add_row(r["name"], str(r["n_layers"]), str(r["d_model"]), heads, str(r["d_ff"]),
                      f"{r['context']:,}" if r["context"] else "-", exact(r["params_total"]),
                      human(r["params_total"]))
    return [table]


# ------------------------------------------------------------------------------------- sweep

_BAR_WIDTH = 12
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(share_pct: float, width: int = _BAR_WIDTH) -> str:
    """A horizontal bar of `width` cells for a 0-100 share, in eighths of a cell."""
    eighths = round(share_pct / 100 * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[rest] if rest else "")).ljust(width)


_SWEEP_COLUMNS = ("seq", "weights", "attention", "forward", "forward_per_token",
                  "attention_share_pct", "six_nd_undercount_pct", "past_crossover")


def sweep_csv(doc: dict[str, Any]) -> str:
    return to_csv(_SWEEP_COLUMNS, ([row[k] for k in _SWEEP_COLUMNS] for row in doc["rows"]))


def sweep_tables(doc: dict[str, Any]) -> list[Any]:
    x, s = doc["crossover"], doc["settings"]
    table = new_table(
        f"{doc['model']['title']}: forward FLOPs by sequence length (batch {s['batch']}, "
        f"attention {s['attention']})",
        ["seq", "weights ≈", "attention ≈", "forward ≈", "attention share", "6ND under"],
        caption="≈: rounded to 4 digits; --format json or csv gives every count exactly. "
                "6ND under: how far 6ND is below the exact training count.")
    marked = False
    for row in doc["rows"]:
        if row["past_crossover"] and not marked:
            table.add_row(f"s* {x['seq']:,}", "", "", "",
                          f"crossover ({x['d_model_multiple']:.4g}d)", "", style="bold")
            marked = True
        table.add_row(f"{row['seq']:,}", human(row["weights"]), human(row["attention"]),
                      human(row["forward"]),
                      f"{bar(row['attention_share_pct'])} {row['attention_share_pct']:5.1f}%",
                      percent(row["six_nd_undercount_pct"]))
    if not marked:
        table.add_row(f"(s* {x['seq']:,})", "", "", "", "crossover beyond the range", "")
    return [table, conventions_text(doc["conventions"])]


# ----------------------------------------------------------------------------------- compare

def compare_csv(doc: dict[str, Any]) -> str:
    keys = list(doc["models"][0]) if doc["models"] else []
    return to_csv(keys, ([m[k] for k in keys] for m in doc["models"]))


_COMPARE_ROWS = (
    ("params_total", "params"), ("params_non_embedding", "non-embedding N"),
    ("seq", "seq"), ("flops_forward", "forward FLOPs"),
    ("flops_forward_per_token", "forward / token"), ("attention_share_pct", "attention share"),
    ("crossover_seq", "crossover s*"), ("crossover_d_model_multiple", "s* / d_model"),
    ("training_tokens", "training D"), ("training_six_nd", "6ND"),
    ("training_exact", "exact training"), ("six_nd_below_exact_pct", "6ND below exact"),
)


def compare_tables(doc: dict[str, Any]) -> list[Any]:
    models = doc["models"]
    table = new_table(f"Compared (batch {doc['settings']['batch']}, attention "
                      f"{doc['settings']['attention']})", ["", *[m["name"] for m in models]],
                      caption="Exact integers, with the rounded form in parentheses.")
    for key, label in _COMPARE_ROWS:
        cells = []
        for m in models:
            v = m[key]
            if key.endswith("_pct"):
                cells.append(percent(v))
            elif isinstance(v, float):
                cells.append(f"{v:.4g}")
            else:
                cells.append(with_human(v))
        table.add_row(label, *cells)
    return [table, conventions_text(doc["conventions"])]


# ------------------------------------------------------------------------------------- check

def check_csv(doc: dict[str, Any]) -> str:
    keys = ("status", "model", "key", "value", "limit", "margin", "margin_pct", "seq", "tokens",
            "batch", "attention")
    return to_csv(keys, ([row[k] for k in keys] for row in doc["rows"]))


def check_text(doc: dict[str, Any]) -> str:
    """One unwrapped line per limit (grep-able in CI logs), then a count."""
    lines = []
    for row in doc["rows"]:
        share = "" if row["margin_pct"] is None else f", {row['margin_pct']:+.1f}%"
        lines.append(f"{row['status']} {row['model']} {row['key']} = {fmt_number(row['value'])} "
                     f"(limit {fmt_number(row['limit'])}, margin {fmt_number(row['margin'])}"
                     f"{share}; seq {row['seq']:,}, D {human(row['tokens'])}, batch "
                     f"{row['batch']}, attention {row['attention']})")
    n_fail = sum(row["status"] == "FAIL" for row in doc["rows"])
    lines.append(f"{len(doc['rows']) - n_fail} within limits, {n_fail} over")
    return "\n".join(lines) + "\n"


def fmt_number(v: int | float) -> str:
    return with_human(v) if isinstance(v, int) else f"{v:,.6g}"
