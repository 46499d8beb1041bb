"""The `model` report as tables, as ten brief lines, and as CSV. Formatting only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .data import to_csv
from .escape import one_line
from .output import conventions_text, heading, new_table, plain
from .text import (named, Numbers, exact, family, human, packed_form, packed_words, percent,
                   scan_words, shape, whole)

if TYPE_CHECKING:
    from ..reports.model import ModelReport


def lengths(report: "ModelReport") -> str:
    s = report.settings
    return f"seq {s.seq:,}" + (f", target {s.tgt_seq:,}" if s.tgt_seq else "")


def _layer_title(report: "ModelReport", i: int) -> str:
    g = report.layers[i]
    alike = sum(1 for x in report.layers if x.stack == g.stack) == 1
    kind = "" if alike else f": {g.kind}"
    return f"Parameters of one {g.stack} layer{kind} (x {g.n_layers} layers)"


def model_tables(report: "ModelReport", nums: Numbers) -> list[Any]:
    s, p, f, t, x = report.settings, report.params, report.flops, report.training, report.crossover
    out: list[Any] = [heading(report.model.title, f" ({one_line(report.model.name)})\n"
                      f"{lengths(report)}, batch {s.batch}, attention {s.attention}"
                      f"{scan_words(s.scan)}, D = {whole(s.tokens)} tokens ({human(s.tokens)}; "
                      f"{s.tokens_source})\n")]
    for i, g in enumerate(report.layers):
        table = new_table(_layer_title(report, i), ["component", "shape", "params", "% layer"])
        for r in g.param_rows:
            table.add_row(r.name, shape(r.shape), nums.plain(r.value), percent(r.share_pct))
        table.add_row("layer total", "", nums.count(g.params), "100.0%", style="bold")
        if g.active_params != g.params:
            table.add_row("active per token", "", nums.count(g.active_params), "")
        out.append(table)

    table = new_table("Model parameters", ["component", "params", "% total"])
    for r in p.groups:
        table.add_row(r.name, nums.count(r.value), percent(r.share_pct))
    table.add_row("total", nums.count(p.total), "100.0%", style="bold")
    if p.active != p.total:
        table.add_row("active per token", nums.count(p.active), percent(100 * p.active / p.total))
        table.add_row("  without input embedding (as some cards)",
                      nums.count(p.active_without_embedding),
                      percent(100 * p.active_without_embedding / p.total))
    table.add_row("non-embedding N", nums.count(p.non_embedding),
                  percent(p.non_embedding_share_pct))
    if p.active_non_embedding != p.non_embedding:
        table.add_row("active non-embedding N", nums.count(p.active_non_embedding), "")
    if p.mtp:
        table.add_row("MTP modules (not in total)", nums.count(p.mtp), "")
    out.append(table)

    table = new_table(f"Forward FLOPs ({lengths(report)}, batch {s.batch})",
                      ["component", "FLOPs", "% fwd"])
    for r in f.rows:
        table.add_row(r.name, nums.count(r.value), percent(r.share_pct))
    for name, value in f.families.items():
        table.add_row(family(name), nums.count(value), percent(f.family_shares_pct[name]))
    table.add_row(f"forward (attention {s.attention})", nums.count(f.forward), "100.0%",
                  style="bold")
    table.add_row("per output token", nums.count(f.forward_per_token), "")
    other = "causal" if s.attention == "full" else "full"
    other_value = f.forward_causal if other == "causal" else f.forward_full
    table.add_row(f"forward with attention {other}", nums.count(other_value),
                  percent(100 * other_value / f.forward) if f.forward else "")
    out.append(table)

    n_is = "active non-embedding" if t.n_is == "active_non_embedding" else "non-embedding"
    table = new_table(f"Training on D = {whole(t.tokens)} tokens ({human(t.tokens)})",
                      ["estimate", "FLOPs"])
    table.add_row(f"6ND (N {n_is})", nums.count(t.six_nd))
    table.add_row("attention correction", nums.count(t.attention_correction))
    table.add_row("6ND + attention", nums.count(t.six_nd_plus_attention))
    if t.mtp:
        table.add_row("multi-token prediction", nums.count(t.mtp))
    table.add_row("exact (3 x forward)", nums.count(t.exact), style="bold")
    table.add_row("6ND below exact", percent(t.six_nd_below_exact_pct))
    out.append(table)
    out.append(plain(t.conventions_line))

    table = new_table("Crossover: attention matrix = weight GEMMs (layers only)", ["", "value"])
    table.add_row("crossover seq s*", crossover_text(report))
    if x.d_model_multiple is not None:
        table.add_row("s* / d_model", f"{x.d_model_multiple:.4g}")
    table.add_row(f"attention share at seq {s.seq:,}", percent(x.attention_share_pct))
    table.add_row("  of the layers' FLOPs", percent(x.layer_attention_share_pct))
    out.append(table)
    out.append(conventions_text(report.conventions))
    return out


def crossover_text(report: "ModelReport") -> str:
    x = report.crossover
    if x.seq is None:
        return "none"
    if x.exact is None:
        return f"{x.seq:,} (the real root is irrational)"
    return exact(x.seq) + ("" if x.exact == str(x.seq) else f" (exactly {x.exact})")


def model_brief(report: "ModelReport") -> str:
    """The lines a person wants: parameters, forward, 6ND against exact, the crossover."""
    s, p, f, t, x = report.settings, report.params, report.flops, report.training, report.crossover
    active = (f"; active {p.active:,} ({human(p.active)}), without the input embedding "
              f"{p.active_without_embedding:,} ({human(p.active_without_embedding)}, as some "
              "model cards count)" if p.active != p.total else "")
    lines = [
        f"{named(report.model)}: {lengths(report)}, batch {s.batch}, "
        f"attention {s.attention}{scan_words(s.scan)}{packed_words(s.packed)}",
        f"params        {p.total:,} ({human(p.total)}){active}",
        f"N for 6ND     {t.n:,} ({human(t.n)}; {t.n_is.replace('_', ' ')} params)",
        f"forward       {f.forward:,} FLOPs ({human(f.forward)}; attention {s.attention}); per "
        f"token {exact(f.forward_per_token)}; "
        + (f"causal {f.forward_causal:,} ({human(f.forward_causal)})" if s.attention == "full"
           else f"full {f.forward_full:,} ({human(f.forward_full)})"),
        f"  attention   {percent(f.attention_share_pct)} of the forward "
        f"({human(f.attention)} FLOPs)",
        f"training D    {t.tokens:,} tokens ({human(t.tokens)}; {t.tokens_source})",
        f"6ND           {t.six_nd:,} ({human(t.six_nd)})",
        f"exact         {t.exact:,} ({human(t.exact)}; attention {s.attention}); 6ND is "
        f"{percent(t.six_nd_below_exact_pct)} below",
        f"crossover s*  {crossover_text(report)}"
        + (f" = {x.d_model_multiple:.4g} d_model" if x.d_model_multiple is not None else
           f" ({x.note})"),
        "counted: 2 FLOPs per multiply-add, LM head in, attention "
        f"{s.attention}; --format json for every figure",
    ]
    return "\n".join(lines) + "\n"


_SETTINGS = ("seq", "tgt_seq", "batch", "tokens", "attention", "scan")


def model_csv(report: "ModelReport") -> str:
    s = report.settings
    packed = ["packed"] if s.packed else []  # a column only where sequences were packed
    key = [report.model.name, *(getattr(s, k) for k in _SETTINGS),
           *([packed_form(s.packed)] if s.packed else [])]
    rows: list[list[Any]] = []
    for g in report.layers:
        section = f"params.per_layer.{g.stack}.{g.first_layer}"
        rows.append([*key, section, "n_layers", g.kind, "", g.n_layers, ""])
        rows += [[*key, section, r.name, r.kind, shape(r.shape), r.value, r.share_pct]
                 for r in g.param_rows]
    p = report.params
    rows += [[*key, "params", r.name, r.kind, shape(r.shape), r.value, r.share_pct]
             for r in p.rows]
    rows += [[*key, "params", name, "total", "", getattr(p, name), ""]
             for name in ("total", "active", "embedding", "non_embedding",
                          "active_non_embedding", "mtp")]
    f = report.flops
    rows += [[*key, "flops", r.name, r.kind, "", r.value, r.share_pct] for r in f.rows]
    rows += [[*key, "flops", name, "total", "", value, ""]
             for name, value in {"forward": f.forward, "weights": f.weights,
                                 "attention": f.attention, "elementwise": f.elementwise,
                                 **f.families}.items()]
    t = report.training
    rows += [[*key, "training", name, "", "", getattr(t, name), ""]
             for name in ("tokens", "n", "six_nd", "attention_correction",
                          "six_nd_plus_attention", "mtp", "exact", "six_nd_below_exact_pct")]
    x = report.crossover
    rows += [[*key, "crossover", name, "", "", getattr(x, name), ""]
             for name in ("seq", "exact", "d_model_multiple", "attention_share_pct",
                          "layer_attention_share_pct")]
    return to_csv(["model", *_SETTINGS, *packed, "section", "name", "kind", "shape", "value",
                   "share_pct"], rows)
