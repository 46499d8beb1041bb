"""Pictures of the `sweep`, `compare`, `infer`, `memory` and `serve --pareto` reports, for
`--plot FILE`.

matplotlib is an optional extra (`pip install '.[plot]'` from the checkout), imported here inside
the functions, only when a picture is asked for; nothing else imports this module at start-up. The
format comes from the file's extension (.svg or .png). Every picture stands on its own: a title
naming the model, a subtitle with the settings, units on every axis, and the report's counting
conventions (and warnings) as a footnote. SVG keeps its text as text, and two runs write identical
bytes. The figures are drawn without pyplot (a bare `Figure` renders with Agg or the SVG backend
and never opens a window or touches pyplot's global state).

Drawing only: every number drawn is the report's (the curves of `infer` and `memory` are the
reports' `curve`, which the command line asks for when it draws).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import FlopcalcError
from .escape import one_line
from .text import duration, human, human_bytes, percent, rate, signed_percent

if TYPE_CHECKING:
    from ..reports.compare import CompareReport
    from ..reports.infer import InferReport
    from ..reports.memory import MemoryReport
    from ..reports.serve import ServeReport
    from ..reports.sweep import SweepReport

FORMATS = {".svg": "svg", ".png": "png"}
DPI = 120  # PNG pixels per inch
WIDTH = {1: 10.4, 2: 10.4, 3: 12.8}  # inches, by panels side by side
PANEL_HEIGHT = 3.6  # inches
STYLE = {
    "svg.fonttype": "none",  # text stays text: searchable, selectable, read by screen readers
    "svg.hashsalt": "flopcalc",  # element ids from the content, not random per run
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "legend.fontsize": 8,
    "legend.frameon": False,
}
FAMILY_COLORS = {"weights": "#4c72b0", "attention": "#dd8452", "scan": "#55a868",
                 "elementwise": "#937860"}
FAMILY_LABELS = {"weights": "weight GEMMs (incl. LM head)", "attention": "attention over the cache",
                 "scan": "state/scan (recurrent core)", "elementwise": "element-wise"}
SWEEP_LABELS = {"weights": "weight GEMMs (incl. LM head)", "scan": "state/scan (recurrent core)",
                "elementwise": "element-wise"}
BYTE_COLORS = {"weights.read": "#4c72b0", "kv_cache.read": "#55a868", "kv_cache.write": "#8172b3",
               "state.read": "#937860", "state.write": "#da8bc3"}
BYTE_LABELS = {"weights.read": "weights read", "kv_cache.read": "KV cache read",
               "kv_cache.write": "KV cache written", "state.read": "recurrent state read",
               "state.write": "recurrent state written"}
COLORS = {"weights": "#4c72b0", "attention": "#dd8452", "total": "#222222",
          "kv_read": "#55a868", "kv_write": "#8172b3", "gradients": "#937860",
          "optimizer": "#8172b3", "activations": "#dd8452", "limit": "#c44e52", "note": "#555555"}


# ------------------------------------------------------------------------ shared machinery

@contextmanager
def _picture(report: Any, path: str, title: str, subtitle: str, panels: int = 2
             ) -> Iterator[list[Any]]:
    """Check the extension and the extra, lay out a figure of `panels` side by side under the
    title and subtitle, with the report's conventions and warnings as a footnote; yield the
    axes, then write the file."""
    fmt = _format(path)
    matplotlib = _matplotlib(report.command)
    from matplotlib.figure import Figure

    model = getattr(report, "model", None)  # compare has several
    if model is not None:
        title, subtitle = f"{title}: {model.name}", f"{model.title} — {subtitle}"
    title, subtitle = _drawn(title), _drawn(subtitle)
    width = WIDTH[panels]
    notes = [_drawn(n) for n in list(report.conventions) + [f"warning: {w}"
                                                            for w in report.warnings]]
    footer = [line for note in notes
              for line in textwrap.wrap(note, int(width * 17.5), initial_indent="• ",
                                        subsequent_indent="  ")]
    subtitle = textwrap.fill(subtitle, int(width * 13.5))
    # Three bands, in inches: title and subtitle; the panels, whose tick labels the
    # constrained layout fits inside their band however long they are; the footnote.
    head = 0.5 + 0.17 * (subtitle.count("\n") + 1)
    foot = 0.2 + 0.125 * len(footer)
    middle = PANEL_HEIGHT + 0.6
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, head + middle + foot), layout="constrained")
        top, panels_band, bottom = fig.subfigures(3, 1, height_ratios=[head, middle, foot])
        left = 0.4 / width
        top.text(left, 1 - 0.15 / head, title, fontsize=12, fontweight="bold", va="top")
        top.text(left, 1 - 0.45 / head, subtitle, fontsize=9, va="top", color=COLORS["note"],
                 linespacing=1.3)
        bottom.text(left, 1 - 0.1 / foot, "\n".join(footer), fontsize=7, va="top",
                    color=COLORS["note"], linespacing=1.25)
        axes = panels_band.subplots(1, panels, squeeze=False)[0]
        yield list(axes)
        _save(fig, path, fmt, title)


def _drawn(text: str) -> str:
    """A string for a picture: control characters escaped as in every output
    (`escape.one_line`), and `$` escaped, since matplotlib reads text between two `$` as
    mathtext (and fails on a title such as `a $\\frac{$`)."""
    return one_line(text).replace("$", r"\$")


def _format(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise FlopcalcError(f"--plot {path}: the format comes from the extension; use "
                            f"{' or '.join(FORMATS)}")
    return FORMATS[suffix]


def _matplotlib(command: str) -> Any:
    try:
        import matplotlib
    except ImportError:
        raise FlopcalcError(f"flopcalc {command} --plot needs matplotlib: pip install "
                            "matplotlib (or pip install '.[plot]' in flopcalc's checkout)"
                            ) from None
    return matplotlib


def check_target(path: str, command: str) -> None:
    """Refuse, before any counting or drawing, a target that cannot be a picture file: an
    unknown extension, a missing directory, a directory, FIFO or device, a symbolic link, a
    read-only file, a name too long (`writing.check_output`); and a missing matplotlib."""
    from ..writing import check_output

    _format(path)
    check_output(path, "--plot")
    _matplotlib(command)


def _save(fig: Any, path: str, fmt: str, title: str) -> None:
    """Render in memory, then write the file as `writing.write_output` does: beside the
    target, renamed over it, so a failure leaves the old file as it was; never through a link,
    never over a read-only file, the old file's mode kept."""
    from ..writing import write_output

    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=DPI,
                metadata={"Date": None, "Title": title} if fmt == "svg" else None)
    if fmt == "png":  # 256 colours are plenty for flat fills and grey text, at a third the size
        from PIL import Image  # pillow: a dependency of matplotlib

        image, buffer = Image.open(buffer).convert("RGB").quantize(256), io.BytesIO()
        image.save(buffer, format="png", optimize=True)
    write_output(path, buffer.getvalue(), "--plot")


def _tokens(n: float) -> str:
    """A length as the command line writes it: 1k, 32k, 1M (k = 1024), else with commas."""
    n = round(n)
    for shift, suffix in ((20, "M"), (10, "k")):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift:,}{suffix}"
    return f"{n:,}"


def _axis(ax: Any, x: str, y: str, *, log_x: bool = False, log_y: bool = False,
          lengths: bool = False, y_bytes: bool = False) -> None:
    """Labels with units, log scales, and readable tick labels: lengths at powers of two or
    multiples of one (1k, 2k, ...: k = 1024 as on the command line), other x values whole."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if log_x:
        ax.set_xscale("log", base=2 if lengths else 10)
    if log_y:
        ax.set_yscale("log")
    if lengths:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _tokens(v)))
        if not log_x:
            lo, hi = ax.get_xlim()
            step = max(1, int(hi - lo) // 6)
            ax.xaxis.set_major_locator(MultipleLocator(1 << (step.bit_length() - 1)))
    elif not log_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if y_bytes:
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v, binary=False)
                                                   if v else "0"))
    elif not log_y:
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useMathText=True)


def _note(ax: Any, text: str, x: float = 0.03, y: float = 0.95, **style: Any) -> None:
    """Text in the panel's own coordinates, wrapped to fit it."""
    ax.text(x, y, textwrap.fill(text, 60), transform=ax.transAxes, va="top", fontsize=8,
            color=style.pop("color", COLORS["note"]), **style)


def _marker(ax: Any, x: float, label: str = "", color: str = COLORS["note"],
            right: bool = False) -> None:
    """A dotted vertical line at x, labelled at the top, left of it (or right)."""
    ax.axvline(x, color=color, linestyle=":", linewidth=1.2)
    if label:
        ax.text(x, 0.98, f" {label}" if right else f"{label} ", va="top",
                ha="left" if right else "right", transform=ax.get_xaxis_transform(),
                fontsize=8, color=color,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})


# ------------------------------------------------------------------------------- pictures

def plot_sweep(report: SweepReport, path: str) -> None:
    """Weight-GEMM, attention-matrix and forward FLOPs against the length (log-log), the
    crossover s* marked; the attention share beside it."""
    s, x, rows = report.settings, report.crossover, report.rows
    seqs = [r.seq for r in rows]
    subtitle = (f"forward pass, batch {s.batch}, attention {s.attention}, seq {s.seq} "
                f"({s.lengths} lengths)" + (", target length = source length" if s.tgt_seq
                                            else ""))
    with _picture(report, path, "Forward FLOPs by sequence length", subtitle) as (flops, share):
        families = list(dict.fromkeys(k for r in rows for k in r.families))
        for key in families + ["forward"]:
            values = [r.forward if key == "forward" else r.families.get(key, 0) for r in rows]
            label = ("forward total" if key == "forward" else f"attention matrix ({s.attention})"
                     if key == "attention" else SWEEP_LABELS.get(key, key))
            flops.plot(seqs, values, marker="o", markersize=3, label=label,
                       color=FAMILY_COLORS.get(key, COLORS["total"]),
                       linestyle="--" if key == "forward" else "-")
        share.plot(seqs, [r.attention_share_pct for r in rows], marker="o", markersize=3,
                   color=COLORS["attention"])
        share.set_ylim(0, 100)
        _axis(flops, "sequence length (tokens)", "FLOPs", log_x=True, log_y=True, lengths=True)
        _axis(share, "sequence length (tokens)", "attention share of forward FLOPs (%)",
              log_x=True, lengths=True)
        flops.legend(loc="lower right")
        flops.set_title("FLOPs (log-log)")
        share.set_title("attention matrix share")
        # Without a crossover in range the share stays under about half: room for a note.
        if x.seq is None:
            _note(share, f"no crossover: {x.note}")
        else:
            multiple = f" ({x.d_model_multiple:.4g}d)" if x.d_model_multiple is not None else ""
            label = f"crossover s* = {x.seq:,}{multiple}"
            if seqs[0] <= x.seq <= seqs[-1]:
                _marker(flops, x.seq, label)
                _marker(share, x.seq)
            elif x.seq > seqs[-1]:
                _note(share, f"{label}: beyond the lengths drawn")
            else:  # past s* the share is over half: the note goes low
                _note(share, f"{label}: below the lengths drawn", y=0.12)


def plot_compare(report: CompareReport, path: str) -> None:
    """Forward FLOPs split into weight GEMMs and the attention matrix, stacked per model;
    training FLOPs, 6ND beside the exact count, per model."""
    s, models = report.settings, report.models
    at = f"seq {s.seq:,}" if s.seq is not None else "each model at its own default length"
    slanted = len(models) > 4  # then one slanted line per model, else stacked lines
    sep = " " if slanted else "\n"
    names = [_drawn(m.model) if s.seq is not None else f"{_drawn(m.model)}{sep}seq {m.seq:,}"
             for m in models]
    where = range(len(models))
    with _picture(report, path, "Models compared: forward and training FLOPs",
                  f"{', '.join(m.title for m in models)}; {at}, batch {s.batch}, "
                  f"attention {s.attention}") as (forward, training):
        families = list(dict.fromkeys(k for m in models for k in m.flops_families))
        bottom = [0] * len(models)
        for key in families:
            values = [m.flops_families.get(key, 0) for m in models]
            label = (f"attention matrix ({s.attention})" if key == "attention"
                     else SWEEP_LABELS.get(key, key))
            forward.bar(where, values, 0.6, bottom=bottom, label=label,
                        color=FAMILY_COLORS.get(key, COLORS["note"]))
            bottom = [b + v for b, v in zip(bottom, values)]
        for i, m in enumerate(models):
            forward.annotate(f"{human(m.flops_forward)}\n{percent(m.attention_share_pct)} attn",
                             (i, m.flops_forward), xytext=(0, 2), textcoords="offset points",
                             ha="center", va="bottom", fontsize=7.5)
        forward.margins(y=0.3)
        forward.set_title("forward pass, by component family")
        _axis(forward, "model", "FLOPs (forward pass)")
        forward.legend(loc="upper center", ncols=2)
        half = 0.19  # half a bar's width; floats: the counts pass 2**63
        training.bar([i - half for i in where], [float(m.training_six_nd) for m in models],
                     2 * half, color="#a1b6d8", label="6ND")
        training.bar([i + half for i in where], [float(m.training_exact) for m in models],
                     2 * half, color=COLORS["weights"], label="exact (3 x forward)")
        for i, m in enumerate(models):
            training.annotate(f"D = {human(m.training_tokens)}\n6ND "
                              f"{signed_percent(-m.six_nd_below_exact_pct)}",
                              (i, float(max(m.training_exact, m.training_six_nd))),
                              xytext=(0, 2), textcoords="offset points", ha="center",
                              va="bottom", fontsize=7)
        training.margins(y=0.35)
        training.set_title("training over D tokens: 6ND against the exact count")
        _axis(training, "model", "FLOPs (training)", log_y=True)
        training.legend(loc="upper center", ncols=2)
        for ax in (forward, training):
            ax.set_xticks(list(where), names, fontsize=8, rotation=30 if slanted else 0,
                          ha="right" if slanted else "center", rotation_mode="anchor")
            ax.grid(axis="x", visible=False)


def plot_infer(report: InferReport, path: str) -> None:
    """Decode FLOPs and bytes per step against the context, and with an accelerator the steps'
    arithmetic intensity against its ridge point; the prefill alone with --gen 0."""
    s, d, hw = report.settings, report.decode, report.accelerator
    roofline = hw is not None and hw.bandwidth is not None
    subtitle = (f"prompt {s.prompt:,} + gen {s.gen:,} tokens, batch {s.batch}; prefill "
                f"attention {s.attention}; weights {s.weights_dtype}, KV cache {s.kv_dtype}"
                + (f"; {hw.count:,} x {hw.title}, dense {hw.dtype}" if hw is not None else ""))
    panels = 1 if d is None else 3 if roofline else 2
    title = "Prefill" if d is None else "Decode, step by step"
    with _picture(report, path, title, subtitle, panels) as axes:
        if d is None or report.curve is None:
            _prefill_only(axes[0], report)
            return
        curve = report.curve
        contexts = [point.context for point in curve]
        families = list(dict.fromkeys(k for point in curve for k in point.flops))
        flops_ax, bytes_ax = axes[0], axes[1]
        flops_ax.stackplot(contexts, *([point.flops.get(k, 0) for point in curve]
                                       for k in families),
                           colors=[FAMILY_COLORS.get(k, COLORS["note"]) for k in families],
                           labels=[FAMILY_LABELS.get(k, k) for k in families])
        flops_ax.set_title(f"FLOPs per decode step (batch {s.batch})")
        moved = list(dict.fromkeys(k for point in curve for k in point.bytes))
        bytes_ax.stackplot(contexts, *([point.bytes[k] for point in curve] for k in moved),
                           colors=[BYTE_COLORS.get(k, COLORS["note"]) for k in moved],
                           labels=[BYTE_LABELS.get(k, k) for k in moved])
        bytes_ax.set_title("bytes moved per decode step")
        for ax, label in ((flops_ax, "FLOPs per step"), (bytes_ax, "bytes per step")):
            ax.set_xlim(contexts[0], contexts[-1])
            _axis(ax, "context c (tokens)", label, lengths=True, y_bytes=ax is bytes_ax)
            ax.legend(loc="lower right", facecolor="white", frameon=True, edgecolor="none")
        if roofline:
            assert hw is not None and hw.bandwidth is not None
            _intensity(axes[2], report, contexts, [point.intensity for point in curve],
                       hw.peak_flops, hw.bandwidth)


def _prefill_only(ax: Any, report: InferReport) -> None:
    pre, r = report.prefill, report.roofline
    ax.bar([0], [pre.weights], 0.5, color=COLORS["weights"], label="weight GEMMs (incl. LM head)")
    ax.bar([0], [pre.attention], 0.5, bottom=[pre.weights], color=COLORS["attention"],
           label=f"attention matrix ({report.settings.attention})")
    _axis(ax, "phase", "FLOPs")
    ax.set_xticks([0], [f"prefill, {pre.tokens:,} prompt tokens"])
    ax.set_xlim(-1, 2.5)
    ax.margins(y=0.15)
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper right")
    bound = (f"; roofline: >= {duration(r.prefill.seconds)}, {r.prefill.binds}-bound"
             if r is not None else "")
    _note(ax, f"no decode steps (--gen 0): the prefill only. {human(pre.flops)} FLOPs, "
              f"{human_bytes(pre.bytes, binary=False)} moved{bound}", x=0.45, y=0.6)


def _intensity(ax: Any, report: InferReport, contexts: list[int], intensity: list[float],
               peak: int, bandwidth: int) -> None:
    """The steps' FLOP/byte against the ridge point (peak / bandwidth): below it a step waits
    on memory, above it on compute."""
    ridge = peak / bandwidth
    ax.plot(contexts, intensity, color=COLORS["weights"], label="decode step")
    ax.axhline(ridge, color=COLORS["limit"], linestyle="--", linewidth=1.2,
               label=f"ridge point {ridge:,.0f} FLOP/byte\n= {rate(peak, 'FLOP/s')} / "
                     f"{rate(bandwidth, 'B/s')}")
    prefill = report.prefill.flops / report.prefill.bytes
    ax.axhline(prefill, color=COLORS["attention"], linestyle=":", linewidth=1.2,
               label=f"prefill: {prefill:,.0f} FLOP/byte")
    ax.set_xlim(contexts[0], contexts[-1])
    low, high = min(intensity + [ridge, prefill]), max(intensity + [ridge, prefill])
    ax.set_ylim(low / 3, high * 80)  # room above for the legend
    _axis(ax, "context c (tokens)", "arithmetic intensity (FLOP/byte)", lengths=True,
          log_y=True)
    ax.set_title("roofline: memory-bound below the ridge")
    ax.legend(loc="upper right")


def plot_memory(report: MemoryReport, path: str) -> None:
    """Memory per device against the micro-batch: weights, gradients and optimizer state
    (fixed) under the activations (growing), and with an accelerator its memory and the
    largest micro-batch that fits."""
    s, device, fit = report.settings, report.accelerator, report.max_micro_batch
    curve = report.curve or []
    batches = [point.batch for point in curve]
    extras = [name for name, on in (("sequence parallel", s.sequence_parallel),
                                    ("dropout", s.dropout), ("FlashAttention", s.flash)) if on]
    subtitle = (f"seq {s.seq:,}; {s.devices:,} device{'s' if s.devices > 1 else ''} = dp "
                f"{s.dp} x tp {s.tp} x pp {s.pp}"
                + (f" (ep {s.ep})" if s.ep > 1 else "") + f"; ZeRO-{s.zero}; recompute "
                f"{s.recompute}; {', '.join(extras + [s.precision + ' precision', s.optimizer])}")
    with _picture(report, path, "Training memory per device", subtitle, panels=1) as (ax,):
        state = ("weights", "gradients", "optimizer")
        ax.stackplot(batches, *([point.state[k] for point in curve] for k in state),
                     [point.activations for point in curve],
                     colors=[COLORS[k] for k in state + ("activations",)],
                     labels=["weights", "gradients", "optimizer state", "activations"])
        here = report.memory.total
        ax.plot([s.batch], [here], "o", color=COLORS["total"], clip_on=False, zorder=3,
                label=f"this run: micro-batch {s.batch}, {human_bytes(here, binary=False)}")
        if device is not None:
            ax.axhline(device.memory_bytes, color=COLORS["limit"], linestyle="--",
                       label=f"{_drawn(device.title)} memory: "
                             f"{human_bytes(device.memory_bytes, binary=False)}")
            if fit:
                _marker(ax, fit, f"largest micro-batch that fits: {fit:,}", COLORS["limit"],
                        right=True)
            else:
                _note(ax, "not even a micro-batch of 1 fits", x=0.4, y=0.5,
                      color=COLORS["limit"])
        ax.set_xlim(batches[0], batches[-1])
        top = curve[-1].activations + sum(curve[-1].state.values())
        ax.set_ylim(0, max(top, device.memory_bytes if device else 0) * 1.08)
        _axis(ax, "micro-batch per device (sequences)", "memory per device (bytes)",
              y_bytes=True)
        ax.set_title("state (fixed) and activations (per micro-batch)")
        ax.legend(loc="upper left", facecolor="white", frameon=True, edgecolor="none")


def plot_serve(report: "ServeReport", path: str) -> None:
    """The Pareto front of `serve --pareto`: tokens/s per device against tokens/s per user,
    each point labelled with its layout and users."""
    x = report.pareto
    if x is None:
        raise FlopcalcError("serve --plot draws the Pareto front: give --pareto too")
    subtitle = (f"{x.devices} devices, prompt {x.prompt:,}, gen {x.gen:,}, {x.engine}; "
                f"{x.searched} points searched")
    with _picture(report, path, "Pareto front", subtitle, 1) as axes:
        ax = axes[0]
        users = [p.output_tokens_per_second_per_user for p in x.points]
        per_gpu = [p.output_tokens_per_second_per_gpu for p in x.points]
        ax.plot(users, per_gpu, marker="o", color=COLORS["weights"])
        for p, u, g in zip(x.points, users, per_gpu):
            ax.annotate(f"{p.layout}, {p.concurrency:,}", (u, g), fontsize=7,
                        textcoords="offset points", xytext=(4, 4))
        _axis(ax, "output tokens/s per user", "output tokens/s per device")
