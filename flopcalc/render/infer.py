"""`infer` as tables, brief lines and CSV: prefill, decode, the cache and the roofline.
Formatting only: units and rounding, no arithmetic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..numbers import counted
from .data import long_csv
from .escape import one_line
from .output import conventions_text, heading, new_table
from .text import (named, Numbers, amount, duration, exact, human, human_bytes, rate,
                   scan_words)

if TYPE_CHECKING:
    from ..reports.infer import InferReport, Phase


def infer_tables(report: "InferReport", nums: Numbers) -> list[Any]:
    s, p, d, kv, w = report.settings, report.prefill, report.decode, report.kv_cache, report.weights
    out: list[Any] = [heading(
        report.model.title, f" ({one_line(report.model.name)})\n"
        f"prompt {s.prompt:,} + gen {s.gen:,} tokens, batch {s.batch}\n"
        f"prefill attention {s.attention}{scan_words(s.scan)}; weights {s.weights_dtype}, KV "
        f"cache {s.kv_dtype}"
        + (f", states {s.state_dtype}" if report.kv_cache.state_bytes else "") + "\n")]

    table = new_table(f"Prefill: {s.prompt:,} prompt tokens x batch {s.batch}", ["", "FLOPs"])
    table.add_row("weight GEMMs (incl. LM head)", nums.count(p.weights))
    table.add_row(f"attention matrix ({s.attention})", nums.count(p.attention))
    table.add_row("prefill", nums.count(p.flops), style="bold")
    table.add_row("per prompt token", nums.count(p.flops_per_token))
    out.append(table)

    if d is not None:
        out.append(_decode_table(report, nums))

    kinds = {"mha": "MHA", "mqa": "MQA", "latent": "latent (MLA)"}
    what = kinds.get(kv.kind, f"{kv.n_kv_heads} KV heads, {kv.n_heads} query")
    table = new_table(f"KV cache ({s.kv_dtype}): {kv.tokens:,} tokens = batch x (prompt + gen)",
                      ["", "bytes"])
    table.add_row(f"per token, all layers ({what})", nums.bytes(kv.bytes_per_token))
    if len(kv.bytes_per_token_by_kind) > 1:
        for name, value in kv.bytes_per_token_by_kind.items():
            table.add_row(f"  {name.replace('_', ' ')} layers, per token", nums.bytes(value))
    if kv.effective_bytes_per_token != kv.bytes_per_token:
        table.add_row("per token held, at this context", f"{kv.effective_bytes_per_token:,.1f}")
    if kv.state_bytes:
        table.add_row("fixed state per sequence (recurrent layers)",
                      nums.bytes(kv.state_bytes_per_sequence))
    if len(kv.layers) > 1:
        for name, value in kv.layers.items():
            table.add_row(f"  {name.removeprefix('decoder.').replace('_', ' ')}",
                          nums.bytes(value))
    table.add_row("KV cache" + (" and states" if kv.state_bytes else ""), nums.bytes(kv.bytes),
                  style="bold")
    if kv.mha_bytes != kv.bytes:
        other = "decompressed K/V per head" if kv.kind == "latent" else "MHA"
        table.add_row(f"{other}, per token", nums.bytes(kv.mha_bytes_per_token))
        table.add_row(f"{other} KV cache", nums.bytes(kv.mha_bytes))
        table.add_row(f"saved ({kv.factor:.4g}x smaller)", nums.bytes(kv.saving_bytes))
    table.add_row(f"weights ({w.params:,} params, {w.dtype})", nums.bytes(w.bytes))
    if len({r.format for r in w.storage}) > 1:  # formats differ by module: each one's
        for r in w.storage:
            table.add_row(f"  {r.module}, {r.format}", nums.bytes(r.bytes))
    table.add_row("weights + KV cache", nums.bytes(report.memory_bytes))
    out.append(table)

    if report.roofline is not None and report.accelerator is not None:
        out.append(_roofline_table(report))
    out.append(conventions_text(report.conventions))
    return out


def _decode_table(report: "InferReport", nums: Numbers) -> Any:
    s, d = report.settings, report.decode
    assert d is not None
    table = new_table(f"Decode: {d.steps:,} steps x batch {s.batch}, each over the KV cache",
                      ["", "value"])
    table.add_row("context c (position of the step)", f"{d.context_first:,} → {d.context_last:,}")
    table.add_row("FLOPs, first step", nums.count(d.flops_first))
    table.add_row("FLOPs, last step", nums.count(d.flops_last))
    table.add_row(f"FLOPs, all {d.steps:,} steps", nums.count(d.flops), style="bold")
    table.add_row("  weight GEMMs (incl. LM head)", nums.count(d.weights))
    table.add_row("  attention over the cache", nums.count(d.attention))
    table.add_row("FLOPs per generated token (mean)", nums.count(d.flops_per_token))
    expect = " (expected)" if d.routing is not None else ""
    table.add_row(f"bytes moved, first step{expect}", nums.bytes(d.bytes_first))
    table.add_row(f"bytes moved, last step{expect}", nums.bytes(d.bytes_last))
    table.add_row(f"bytes moved, all steps{expect}", nums.bytes(d.bytes))
    if d.routing is not None:
        r = d.routing
        table.add_row(f"experts read per MoE layer ({r.experts}, top-{r.top_k})",
                      f"{r.least} / {r.expected:.4g} / {r.most}")
        table.add_row("  weight bytes per step: least", nums.bytes(r.weight_bytes_least))
        table.add_row("  expected (uniform routing)", nums.bytes(r.weight_bytes_expected))
        table.add_row("  most", nums.bytes(r.weight_bytes_most))
    table.add_row("FLOP per byte, first / last step",
                  f"{d.arithmetic_intensity_first:.4g} / {d.arithmetic_intensity_last:.4g}")
    table.add_row("FLOP per byte, all steps", f"{d.arithmetic_intensity:.4g}")
    return table


def _bound(phase: "Phase") -> list[str]:
    return [duration(phase.seconds), phase.binds]


def _roofline_table(report: "InferReport") -> Any:
    a, r, d = report.accelerator, report.roofline, report.decode
    assert a is not None and r is not None
    table = new_table(f"Roofline lower bounds: {a.count:,} x {a.title} (prefill attention "
                      f"{r.attention}, as counted above)", ["", "time >=", "bound"])
    devices = "" if a.count == 1 else f" x {a.count:,}"
    table.add_row(f"dense {a.dtype} peak{devices}", rate(a.total_peak_flops, "FLOP/s"),
                  "--peak" if a.peak_overridden else "")
    if a.total_bandwidth is not None:
        table.add_row(f"memory bandwidth{devices}", rate(a.total_bandwidth, "B/s"),
                      "--bandwidth" if a.bandwidth_overridden else "")
    table.add_row("prefill (time to first token)", *_bound(r.prefill))
    if r.decode is not None and d is not None:
        rd = r.decode
        table.add_row(f"decode step, first (c = {d.context_first:,})", *_bound(rd.first))
        table.add_row(f"decode step, last (c = {d.context_last:,})", *_bound(rd.last))
        steps = (f"{rd.compute_bound_steps:,} compute, {rd.memory_bound_steps:,} memory"
                 if rd.memory_bound_steps and rd.compute_bound_steps else rd.binds)
        table.add_row(f"decode, all {d.steps:,} steps", duration(rd.seconds), steps)
    table.add_row("prefill + decode", duration(r.total_seconds), "", style="bold")
    if r.decode is not None:
        rd = r.decode
        table.add_row("decode tokens/s, all sequences (upper bound)",
                      amount(rd.tokens_per_s_aggregate), "")
        table.add_row("  at the first / last step",
                      f"{amount(rd.tokens_per_s_first)} / {amount(rd.tokens_per_s_last)}", "")
        table.add_row("decode tokens/s per sequence (upper bound)",
                      amount(rd.tokens_per_s_per_sequence), "")
    if r.memory is not None:
        table.add_row("weights + KV cache / memory",
                      f"{human_bytes(r.memory.required_bytes, binary=False)} of "
                      f"{human_bytes(r.memory.available_bytes, binary=False)}",
                      "fits" if r.memory.fits else "does NOT fit")
        table.add_row("largest batch that fits", f"{r.memory.max_batch:,}", "")
    return table


def infer_brief(report: "InferReport") -> str:
    s, p, d, kv = report.settings, report.prefill, report.decode, report.kv_cache
    lines = [f"{named(report.model)}: prompt {s.prompt:,} + gen {s.gen:,}, "
             f"batch {s.batch}, weights {s.weights_dtype}, KV {s.kv_dtype}, attention "
             f"{s.attention}{scan_words(s.scan)}",
             f"prefill       {p.flops:,} FLOPs ({human(p.flops)}; attention {s.attention})"]
    if d is not None:
        lines += [f"decode        {d.flops:,} FLOPs ({human(d.flops)}) over "
                  f"{counted(d.steps, 'step')}",
                  f"  per token   {exact(d.flops_per_token)} FLOPs (first step "
                  f"{human(d.flops_first)}, last {human(d.flops_last)})",
                  f"  bytes/step  {human_bytes(d.bytes_first)} first, "
                  f"{human_bytes(d.bytes_last)} last"]
    held = (f"{kv.bytes_per_token:,} per token" if kv.effective_bytes_per_token ==
            kv.bytes_per_token else f"{kv.effective_bytes_per_token:,.1f} per token held at this "
            f"context ({kv.bytes_per_token:,} if every layer kept every token)")
    if kv.state_bytes:
        held += f"; fixed state {kv.state_bytes_per_sequence:,} per sequence"
    lines += [f"KV cache      {kv.bytes:,} bytes ({human_bytes(kv.bytes)}); {held}",
              f"weights       {report.weights.bytes:,} bytes ({human_bytes(report.weights.bytes)})"]
    r = report.roofline
    if r is not None and report.accelerator is not None:
        lines.append(f"time >=       {duration(r.total_seconds)} on {report.accelerator.count} x "
                     f"{one_line(report.accelerator.name)} (prefill "
                     f"{duration(r.prefill.seconds)}; attention {r.attention})")
        if r.decode is not None:
            lines.append(f"tokens/s <=   {amount(r.decode.tokens_per_s_aggregate)} in all, "
                         f"{amount(r.decode.tokens_per_s_per_sequence)} per sequence "
                         f"({r.decode.binds}-bound)")
        if r.memory is not None:
            lines.append(f"memory        {'fits' if r.memory.fits else 'does NOT fit'}; largest "
                         f"batch {r.memory.max_batch:,}")
    return "\n".join(lines) + "\n"


def infer_csv(report: "InferReport") -> str:
    s = report.settings
    return long_csv(["model", "prompt", "gen", "batch"],
                    [report.model.name, s.prompt, s.gen, s.batch], report.to_dict(),
                    ("settings", "prefill", "decode", "kv_cache", "weights", "memory_bytes",
                     "total_flops", "accelerator", "roofline"))
