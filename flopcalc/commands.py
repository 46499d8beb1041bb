"""What each command takes, declared once, and how it builds its report.

Every option of every command is an `Option` below; the command line (`flopcalc.cli`), the
Python API (`flopcalc.api`) and budget files (`flopcalc check --budget`) all read their options,
defaults, choices and help from here, and every value goes through the same parser (`parse`),
so `seq="32k"` from Python, `--seq 32k` at a shell and `seq: 32k` in a budget mean the same.
An option shared by several commands (`--seq`, `--set`, `--accelerator`) is one object.
Choice lists come from the tables that define them (dtypes, precisions, optimizers).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence

from .errors import FlopcalcError
from .numbers import parse_amount, parse_int, parse_share

from .tables import COMPUTE_DTYPES as DTYPES
from .tables import DTYPE_BITS, OPTIMIZERS, PRECISIONS, RECOMPUTE, ZERO_STAGES

CONVENTIONS = ("full", "causal")
KINDS = ("length", "count", "bytes", "gen", "share", "amount", "choice", "number", "flag",
         "text", "texts")


@dataclass(frozen=True)
class Option:
    """One option: its Python name (`tgt_seq` is `--tgt-seq`), the kind of value it takes, its
    default and help. Kinds: `length` (k = 1024), `count` (K = 1,000), `bytes`, `gen` (a
    length, or 0), `share` (0.4 or 40%), `amount` (a positive number, not necessarily whole),
    `choice` (one of `choices`), `number` (an integer choice), `flag`, `text`, `texts`
    (repeatable)."""

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    metavar: str = ""
    required: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, value: Any) -> Any:
        """The value as the command uses it; FlopcalcError names the option and the problem."""
        if value is None:
            if self.required:
                raise FlopcalcError(f"Missing option '{self.flag}'")
            return self.default
        try:
            return self._parse(value)
        except FlopcalcError as exc:
            message = str(exc).removeprefix(f"{self.flag}: ")
            raise FlopcalcError(f"Invalid value for '{self.flag}': {message}") from None

    def _parse(self, value: Any) -> Any:
        kind = self.kind
        if kind in ("length", "count", "bytes", "gen"):
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FlopcalcError(f"{value!r} is not a number")
            value = repr(value) if isinstance(value, float) else value  # YAML's 100.5
            if kind == "gen":
                return 0 if str(value).strip() == "0" else parse_int(value, "length", self.flag)
            return parse_int(value, kind, self.flag)  # type: ignore[arg-type]
        if kind in ("share", "amount"):
            if isinstance(value, Fraction):
                return value
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FlopcalcError(f"{value!r} is not a number")
            return (parse_share if kind == "share" else parse_amount)(str(value), self.flag)
        if kind in ("choice", "number"):
            text = str(value) if kind == "number" and type(value) is int else value
            if not isinstance(text, str) or text.lower() not in self.choices:
                raise FlopcalcError(f"{value!r} is not one of "
                                    + ", ".join(f"'{c}'" for c in self.choices))
            return int(text) if kind == "number" else text.lower()
        if kind == "flag":
            if type(value) is not bool:
                raise FlopcalcError(f"{value!r} is not true or false")
            return value
        if kind == "text":
            if not isinstance(value, str):
                raise FlopcalcError(f"{value!r} is not text")
            return value
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise FlopcalcError(f"{value!r} is not a list of texts")
        return list(value)


def _lengths(name: str, help_: str, **kw: Any) -> Option:
    return Option(name, "length", help_, metavar="N", **kw)


# ----------------------------------------------------------------------------- the options

SEQ = _lengths("seq", "Sequence (source) length; k = 1024 (32k = 32,768). Default: the model's "
               "training length, else its context.")
TGT_SEQ = _lengths("tgt_seq", "Target (decoder) length of an encoder-decoder model. Default: "
                   "--seq.")
BATCH = Option("batch", "count", "Sequences per forward pass.", 1, metavar="B")
TOKENS = Option("tokens", "count", "Training tokens D (300B, 1.5T, 3e11). Default: published, "
                "else 20 per param.", metavar="D")
ATTENTION = Option("attention", "choice", "full: every (query, key) pair (FlopCounterMode's "
                   "count); causal: the pairs each layer's mask lets through (causal, sliding "
                   "window, chunked).", "full", CONVENTIONS)
ELEMENTWISE = Option("elementwise", "flag", "Also count bias adds, norms, activations, softmax, "
                     "residual adds.", False)
SET = Option("set", "texts", "Override a config field (repeatable; dotted keys for nested ones, "
             "e.g. bias.qkv=false).", (), metavar="KEY=VALUE")
RECOMPUTE_FULL = Option("recompute", "choice", "full: one more forward pass (activation "
                        "recomputation): hardware FLOPs.", "none", ("none", "full"))
ACCELERATOR = Option("accelerator", "text", "Accelerator preset (flopcalc accelerators; h100 = "
                     "h100-sxm) or a YAML file.", metavar="NAME")
COUNT = Option("count", "count", "Number of devices; peak, bandwidth and memory scale by it: "
               "perfect scaling.", 1, metavar="N")
PEAK = Option("peak", "count", "Dense peak FLOP/s per device, overriding the preset (989.5T, "
              "1P).", metavar="FLOP/S")
BANDWIDTH = Option("bandwidth", "bytes", "Memory bandwidth in bytes/s per device, overriding "
                   "the preset (3.35TB).", metavar="BYTES/S")
STORAGE_DTYPES = tuple(DTYPE_BITS)
KV_DTYPES = tuple(d for d in DTYPE_BITS if d != "int4")


@dataclass(frozen=True)
class Command:
    """A command: its options, what it takes as MODEL (`one`, `many` for compare, `none`), and
    `run(model, **values)`, which builds its report from parsed values."""

    name: str
    help: str
    options: tuple[Option, ...]
    run: Callable[..., Any]
    models: str = "one"
    presentation: tuple[str, ...] = ("format",)  # CLI-only: format, brief, plot
    plotted: str = ""  # what --plot draws
    internal: tuple[str, ...] = ()  # keywords of `run` that are not options (curve)

    def option(self, name: str) -> Option:
        return next(o for o in self.options if o.name == name)

    def values(self, given: dict[str, Any]) -> dict[str, Any]:
        """Every option's parsed value: given ones parsed, the others their defaults; an
        unknown name is an error naming the valid ones."""
        known = {o.name for o in self.options}
        unknown = sorted(set(given) - known)
        if unknown:
            from .errors import suggest

            hint = suggest(unknown[0], known) or f" valid: {', '.join(sorted(known))}"
            raise FlopcalcError(f"{self.name}: unknown option '{unknown[0]}';{hint}")
        return {o.name: o.parse(given.get(o.name)) for o in self.options}

    def __call__(self, *model: Any, **given: Any) -> Any:
        """The report for MODEL (or MODELs) and these options."""
        extra = {k: given.pop(k) for k in self.internal if k in given}
        values = {**self.values(given), **extra}
        want = 0 if self.models == "none" else 1
        if len(model) != want:
            what = "no MODEL" if not want else "MODEL (a list of them for compare)"
            raise FlopcalcError(f"{self.name} takes {what} before its options")
        return self.run(*model, **values)


# ------------------------------------------------------------------------------ the runners


def load(model: str, overrides: Optional[Sequence[str]] = None) -> Any:
    """A preset name, a YAML or config.json path (or a directory holding one), with `--set`
    overrides: the validated, resolved model."""
    from .models.registry import load_model

    if not isinstance(model, str):
        raise FlopcalcError(f"MODEL must be a preset name or a path, got {model!r}")
    return load_model(model, overrides or ())


def _model(model: str, *, seq, tgt_seq, batch, tokens, attention, elementwise, set):  # noqa: A002
    from .reports.model import build_model_report

    return build_model_report(load(model, set), seq=seq, tgt_seq=tgt_seq, batch=batch,
                              tokens=tokens, attention=attention, elementwise=elementwise)


def _sweep(model: str, *, seq, points, batch, attention, set):  # noqa: A002
    from .reports.sweep import build_sweep_report

    return build_sweep_report(load(model, set), seq, points, batch, attention)


def _compare(models: Sequence[str], *, seq, batch, tokens, attention, set):  # noqa: A002
    from .reports.compare import build_compare_report

    if isinstance(models, str) or not models:
        raise FlopcalcError("compare needs a list of models")
    reports = [_model(name, seq=seq, tgt_seq=None, batch=batch, tokens=tokens,
                      attention=attention, elementwise=False, set=set) for name in models]
    return build_compare_report(reports, seq, batch, attention)


def _conventions(model: str, *, seq, tokens, recompute, set):  # noqa: A002
    from .counting.model import model_params
    from .kinds.base import total
    from .reports.common import default_seq, default_tokens
    from .reports.conventions import build_conventions_report

    loaded = load(model, set)
    spec = loaded.spec
    if tokens is None:
        tokens, source = default_tokens(spec, total(model_params(spec)))
    else:
        source = "--tokens"
    return build_conventions_report(loaded, seq or default_seq(spec), tokens, source,
                                    recompute == "full")


def _attention(*, n, d_k, d_v, m, heads):
    from .reports.attention import build_attention_report

    return build_attention_report(n, m, d_k, d_v, heads)


def hardware(accelerator: Optional[str], dtype: str, count: int, peak: Optional[int],
             bandwidth: Optional[int], need_bandwidth: bool = True) -> Any:
    from .models.accelerators import resolve_hardware

    return resolve_hardware(accelerator, dtype, count, peak, bandwidth, need_bandwidth)


def _infer(model: str, *, prompt, gen, batch, kv_dtype, state_dtype, weights_dtype,
           compute_dtype, attention, accelerator, count, peak, bandwidth, max_batch,
           set, curve=False):  # noqa: A002
    from .reports.infer import build_infer_report, largest_batch

    loaded = load(model, set)
    hw = hardware(accelerator, compute_dtype, count, peak, bandwidth)
    options = dict(prompt=prompt, gen=gen, attention=attention, kv_dtype=kv_dtype,
                   state_dtype=state_dtype, weights_dtype=weights_dtype,
                   compute_dtype=compute_dtype, hw=hw)
    if max_batch:
        batch = largest_batch(loaded, hw, options)
    return build_infer_report(loaded, batch=batch, curve=curve, **options)


def _train(model: str, *, mfu, tokens, seq, attention, recompute, accelerator, count, days,
           dtype, peak, price, set):  # noqa: A002
    from .reports.train import build_train_report

    if days is not None and count != 1:
        raise FlopcalcError("give --count N (devices) or --days N (a deadline that sets the "
                            "devices), not both")
    hw = hardware(accelerator, dtype, count, peak, None, need_bandwidth=False)
    if hw is None:
        raise FlopcalcError("train needs --accelerator NAME (flopcalc accelerators lists them) "
                            "or --peak FLOP/s per device")
    return build_train_report(load(model, set), hw, mfu, seq=seq, tokens=tokens,
                              attention=attention, recompute=recompute == "full", price=price,
                              days=days)


def _memory(model: str, *, seq, batch, dp, tp, pp, ep, zero, recompute, sequence_parallel,
            dropout, flash, precision, optimizer, accelerator, count, set,  # noqa: A002
            curve=False):
    from .reports.memory import build_memory_report, setup_for

    if count is not None and count != dp * tp * pp:
        if dp != 1 or count % (tp * pp):
            raise FlopcalcError(f"--count {count} must be dp x tp x pp = {dp * tp * pp}; give "
                                "--count with --tp and --pp alone to derive --dp")
        dp = count // (tp * pp)
    loaded = load(model, set)
    setup = setup_for(loaded.spec, seq, batch=batch, dp=dp, tp=tp, pp=pp, ep=ep, zero=zero,
                      recompute=recompute, sequence_parallel=sequence_parallel,
                      dropout=dropout, flash=flash, precision=precision, optimizer=optimizer)
    hw = hardware(accelerator, "bf16", 1, None, None) if accelerator else None
    return build_memory_report(loaded, setup, hw, curve)


def _ways(name: str, help_: str) -> Option:
    return Option(name, "count", help_, 1, metavar="N")


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("model", "Parameters, forward FLOPs by component, training FLOPs and the attention "
            "crossover.", (SEQ, TGT_SEQ, BATCH, TOKENS, ATTENTION, ELEMENTWISE, SET), _model,
            presentation=("format", "brief")),
    Command("sweep", "Forward FLOPs over many sequence lengths: where attention's s² term takes "
            "over.", (
                Option("seq", "text", "Lengths: 1k,2k,4k; a range 1k..1M (every power of two); "
                       "or a range with --points N (N log-spaced lengths). k = 1024.", "1k..1M",
                       metavar="SPEC"),
                Option("points", "count", "With a range: this many log-spaced integer lengths.",
                       metavar="N"),
                BATCH, ATTENTION, SET), _sweep, presentation=("format", "plot"),
            plotted="the sweep"),
    Command("compare", "Key figures of several models side by side (each at its own default "
            "length unless --seq). --set applies to every model.",
            (SEQ, BATCH, TOKENS, ATTENTION, SET), _compare, models="many",
            presentation=("format", "plot"), plotted="the comparison"),
    Command("conventions", "Training FLOPs under 6ND, Kaplan, PaLM, Megatron, Chinchilla and "
            "exact, side by side.", (SEQ, TOKENS, RECOMPUTE_FULL, SET), _conventions),
    Command("attention", "One attention operation counted scalar by scalar (every multiply, "
            "add, divide and exp), term by term, against the leading order 2mn(d_k + d_v).", (
                Option("n", "length", "Keys (the sequence length); 8k = 8,192.", metavar="N",
                       required=True),
                Option("d_k", "count", "Query/key width per head.", metavar="K", required=True),
                Option("d_v", "count", "Value width per head.", metavar="V", required=True),
                Option("m", "length", "Queries (e.g. a decoder's target length in "
                       "cross-attention). Default: n.", metavar="M"),
                Option("heads", "count", "Heads H; totals are H x per head.", 1, metavar="H")),
            _attention, models="none"),
    Command("infer", "Prefill and decode FLOPs with the KV context, KV-cache and weight bytes, "
            "and with --accelerator the roofline lower bounds on time and tokens/s.", (
                Option("prompt", "length", "Prompt tokens per sequence, processed by the "
                       "prefill; k = 1024.", metavar="N", required=True),
                Option("gen", "gen", "Generated tokens per sequence: one decode step each; k = "
                       "1024; 0 counts the prompt only.", metavar="N", required=True),
                BATCH,
                Option("kv_dtype", "choice", "dtype of the cached K and V (and of convolution "
                       "windows).", "bf16", KV_DTYPES),
                Option("state_dtype", "choice", "dtype of recurrent layers' states (Hugging "
                       "Face keeps them in fp32).", "fp32", KV_DTYPES),
                Option("weights_dtype", "choice", "dtype the weights are stored in (int8, fp8, "
                       "int4: weight-only quantisation).", "bf16", STORAGE_DTYPES),
                Option("compute_dtype", "choice", "dtype of the matmuls: which of the "
                       "accelerator's peaks applies.", "bf16", DTYPES),
                ATTENTION, ACCELERATOR, COUNT, PEAK, BANDWIDTH,
                Option("max_batch", "flag", "Serve the largest batch whose weights and KV cache "
                       "fit the devices (needs --accelerator).", False),
                SET), _infer, presentation=("format", "brief", "plot"),
            plotted="decode FLOPs and bytes per step against the context", internal=("curve",)),
    Command("train", "Wall-clock days, accelerator-hours and cost to train on D tokens, for the "
            "exact count and 6ND; or, with --days, the devices needed.", (
                Option("mfu", "share", "Model FLOPs utilisation: the sustained share of peak, "
                       "0.4 or 40%.", metavar="F", required=True),
                TOKENS, SEQ, ATTENTION, RECOMPUTE_FULL, ACCELERATOR, COUNT,
                Option("days", "amount", "A deadline instead of --count: the fewest devices "
                       "that finish in N days.", metavar="N"),
                Option("dtype", "choice", "Which of the accelerator's peaks to use.", "bf16",
                       DTYPES),
                PEAK,
                Option("price", "amount", "Price per accelerator-hour: adds the cost.",
                       metavar="P"),
                SET), _train, presentation=("format", "brief")),
    Command("memory", "Training memory per device: weights, gradients and optimizer state "
            "(ZeRO), activations (tensor by tensor, with tensor/sequence/pipeline parallelism "
            "and recomputation), and with --accelerator whether it fits and the largest "
            "micro-batch that does.", (
                SEQ, BATCH,
                _ways("dp", "Data-parallel devices (ZeRO splits over these)."),
                _ways("tp", "Tensor-parallel devices (must divide the heads)."),
                _ways("pp", "Pipeline stages (at most the layers)."),
                _ways("ep", "Expert-parallel devices (must divide the routed experts)."),
                Option("zero", "number", "ZeRO stage: 1 splits the optimizer, 2 also the "
                       "gradients, 3 also the weights.", 0, tuple(map(str, ZERO_STAGES))),
                Option("recompute", "choice", "Activation recomputation: selective drops the "
                       "s² tensors, full keeps each layer's input only.", "none", RECOMPUTE),
                Option("sequence_parallel", "flag", "Split the norm and dropout activations "
                       "over --tp too.", False),
                Option("dropout", "flag", "Keep dropout masks (off: modern LLMs train without "
                       "dropout; Korthikanti et al.'s figures assume it).", False),
                Option("flash", "flag", "Attention kernels that keep no s² matrix "
                       "(FlashAttention).", False),
                Option("precision", "choice", "mixed: 16-bit weights and gradients with an fp32 "
                       "master copy; bf16: no master copy; fp32.", "mixed", tuple(PRECISIONS)),
                Option("optimizer", "choice", "adamw (fp32 m and v), adamw-8bit, sgd "
                       "(momentum).", "adamw", tuple(OPTIMIZERS)),
                ACCELERATOR,
                Option("count", "count", "Devices in all: dp x tp x pp (derives --dp when only "
                       "--tp and --pp are given).", metavar="N"),
                SET), _memory, presentation=("format", "plot"),
            plotted="memory against the micro-batch", internal=("curve",)),
)}

# The commands whose reports `check` can hold against limits.
CHECKABLE = ("model", "infer", "train", "memory")


def options_of(names: Sequence[str]) -> tuple[Option, ...]:
    """The options of several commands, each once (a shared option is one object)."""
    seen: dict[str, Option] = {}
    for name in names:
        for o in COMMANDS[name].options:
            seen.setdefault(o.name, o)
    return tuple(seen.values())
