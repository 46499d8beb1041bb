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
from .tables import DTYPE_BITS, OPTIMIZERS, PRECISIONS, RECOMPUTE, SCALED_FORMATS, ZERO_STAGES

CONVENTIONS = ("full", "causal")
SCANS = ("chunked", "recurrent")  # kinds.base.SCANS, kept here so the CLI starts light
TYPES = ("length", "count", "bytes", "gen", "share", "amount", "choice", "number", "flag",
         "text", "texts", "count_or")


@dataclass(frozen=True)
class Option:
    """One option: its Python name (`tgt_seq` is `--tgt-seq`), the type of value it takes, its
    default and help. Types: `length` (k = 1024), `count` (K = 1,000), `bytes`, `gen` (a
    length, or 0), `share` (0.4 or 40%), `amount` (a positive number, not necessarily whole),
    `choice` (one of `choices`), `number` (an integer choice), `flag`, `text`, `texts`
    (repeatable), `count_or` (a count or one of `choices`)."""

    name: str
    type: str
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
        kind = self.type
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
        if kind == "count_or":  # a count, or one of `choices` (--concurrency N or max)
            if isinstance(value, str) and value.strip().lower() in self.choices:
                return value.strip().lower()
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise FlopcalcError(f"{value!r} is not a number or "
                                    + " or ".join(f"'{c}'" for c in self.choices))
            try:
                return parse_int(value, "count", self.flag)
            except FlopcalcError:
                raise FlopcalcError(f"{str(value).strip()!r} is not a positive whole number or "
                                    + " or ".join(f"'{c}'" for c in self.choices)) from None
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
ATTENTION_HELP = ("full: every (query, key) pair (FlopCounterMode's count); causal: the pairs "
                  "each layer's mask lets through (causal, sliding window, chunked).")
# Two declarations of one option (same name, choices and meaning), two defaults: the commands
# that count (model, sweep, compare) keep `full`, the source documents' and PyTorch's count;
# the commands that predict a time, a throughput or an MFU count the pairs the kernels compute.
ATTENTION = Option("attention", "choice", ATTENTION_HELP, "full", CONVENTIONS)
ATTENTION_CAUSAL = Option("attention", "choice", ATTENTION_HELP, "causal", CONVENTIONS)
SCAN = Option("scan", "choice", "How chunked scans (Mamba-2, gated DeltaNet, Kimi delta, "
              "lightning attention) count their core. chunked: as Hugging Face's PyTorch path, "
              "padded to the chunk (FlopCounterMode's count); recurrent: token by token, the "
              "decode step on every real token.", "chunked", SCANS)
ELEMENTWISE = Option("elementwise", "flag", "Also count bias adds, norms, activations, softmax, "
                     "residual adds.", False)
IMAGES = Option("images", "count", "Images per sequence through the model's vision tower (a "
                "multimodal config.json): adds the tower's FLOPs and the image tokens to the "
                "text's sequence.", metavar="N")
IMAGE_SIZE = Option("image_size", "text", "Size of each image, HEIGHTxWIDTH in pixels (448x448, "
                    "or 448). Default: the tower's trained size.", metavar="HxW")
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
MEMORY_FRACTION = Option("memory_fraction", "share", "Share of each device's usable memory "
                         "(what its driver reports) the run may fill: 0.9 or 90%.", Fraction(1),
                         metavar="F")
RESERVE = Option("reserve", "bytes", "Bytes per device held back from the run (CUDA context, "
                 "workspaces): 2GiB.", metavar="BYTES")
STORAGE_DTYPES = tuple(DTYPE_BITS)
WEIGHT_FORMATS = STORAGE_DTYPES + tuple(SCALED_FORMATS)
KV_DTYPES = tuple(d for d in DTYPE_BITS if d != "int4")


@dataclass(frozen=True)
class Command:
    """A command: its options, what it takes as MODEL (`one`, `many` for compare, `none`), and
    `run(model, **values)`, which builds its report from parsed values. Every command here can
    be gated by `flopcalc check --command NAME` (`CHECKABLE`)."""

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
        from .models.registry import collected_notes

        with collected_notes() as notes:
            report = self.run(*model, **values)
        if notes and isinstance(getattr(report, "warnings", None), list):
            report.warnings[:0] = list(dict.fromkeys(notes))  # each once
        return report


# ------------------------------------------------------------------------------ the runners


def load(model: str, overrides: Optional[Sequence[str]] = None) -> Any:
    """A preset name, a YAML or config.json path (or a directory holding one), with `--set`
    overrides: the validated, resolved model."""
    from .models.registry import load_model

    if not isinstance(model, str):
        raise FlopcalcError(f"MODEL must be a preset name or a path, got {model!r}")
    return load_model(model, overrides or ())


def _model(model: str, *, seq, tgt_seq, batch, tokens, attention, elementwise, set,  # noqa: A002
           images=None, image_size=None, scan="chunked"):
    from .reports.model import build_model_report

    return build_model_report(load(model, set), seq=seq, tgt_seq=tgt_seq, batch=batch,
                              tokens=tokens, attention=attention, elementwise=elementwise,
                              images=images, image_size=image_size, scan=scan)


def _sweep(model: str, *, seq, points, batch, attention, set, scan="chunked"):  # noqa: A002
    from .reports.sweep import build_sweep_report

    return build_sweep_report(load(model, set), seq, points, batch, attention, scan)


def _compare(models: Sequence[str], *, seq, batch, tokens, attention, set,  # noqa: A002
             scan="chunked"):
    from .reports.compare import build_compare_report
    from .reports.model import build_model_report

    if isinstance(models, str) or not models:
        raise FlopcalcError("compare needs a list of models")
    loaded = [load(name, set) for name in models]
    reports = [build_model_report(m, seq=seq, batch=batch, tokens=tokens, attention=attention,
                                  scan=scan) for m in loaded]
    return build_compare_report(reports, seq, batch, attention, scan, [m.spec for m in loaded])


def _conventions(model: str, *, seq, tokens, recompute, set, scan="chunked"):  # noqa: A002
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
                                    recompute == "full", scan)


def _attention(*, n, d_k, d_v, m, heads):
    from .reports.attention import build_attention_report

    return build_attention_report(n, m, d_k, d_v, heads)


def hardware(accelerator: Optional[str], dtype: str, count: int, peak: Optional[int],
             bandwidth: Optional[int], need_bandwidth: bool = True,
             memory_fraction: Fraction = Fraction(1), reserve: Optional[int] = None) -> Any:
    from .models.accelerators import resolve_hardware

    if accelerator is None and (memory_fraction != 1 or reserve is not None):
        raise FlopcalcError("--memory-fraction and --reserve size an accelerator's memory: "
                            "give --accelerator NAME too")
    return resolve_hardware(accelerator, dtype, count, peak, bandwidth, need_bandwidth,
                            memory_fraction, reserve or 0)


def _infer(model: str, *, prompt, gen, batch, kv_dtype, state_dtype, weights_dtype,
           compute_dtype, attention, accelerator, count, peak, bandwidth, memory_fraction,
           reserve, max_batch, set, images=None, image_size=None, curve=False,  # noqa: A002
           scan="chunked"):
    from .reports.infer import build_infer_report, largest_batch

    loaded = load(model, set)
    placed: list = []
    if images or image_size:  # the image tokens join the prompt; the towers run in the prefill
        from .counting.model import workload
        from .reports.images import place

        grown, placed = place(loaded.spec, workload(loaded.spec, prompt, None, batch), images,
                              image_size)
        prompt = grown.seq
    hw = hardware(accelerator, compute_dtype, count, peak, bandwidth,
                  memory_fraction=memory_fraction, reserve=reserve)
    options = dict(prompt=prompt, gen=gen, attention=attention, scan=scan, kv_dtype=kv_dtype,
                   state_dtype=state_dtype, weights_dtype=weights_dtype,
                   compute_dtype=compute_dtype, hw=hw)
    if max_batch:
        batch = largest_batch(loaded, hw, options)
    return build_infer_report(loaded, batch=batch, curve=curve, images=placed, **options)


def _train(model: str, *, mfu, tokens, seq, attention, recompute, accelerator, count, days,
           dtype, peak, price, set, images=None, image_size=None,  # noqa: A002
           scan="chunked"):
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
                              days=days, images=images, image_size=image_size, scan=scan)


def _memory(model: str, *, seq, batch, dp, tp, pp, ep, etp, vp, schedule, zero, recompute,
            sequence_parallel,
            dropout, flash, precision, optimizer, accelerator, count, memory_fraction,
            reserve, set,  # noqa: A002
            cp=1, lora_rank=0, qlora=False, fp8=False, offload_optimizer=False,
            zero3_buffer=False, grad_fp32=False, curve=False):
    from .reports.memory import build_memory_report, setup_for

    model_ways = tp * pp * cp
    if count is not None and count != dp * model_ways:
        if dp != 1 or count % model_ways:
            what = "dp x tp x pp" + (" x cp" if cp > 1 else "")
            raise FlopcalcError(f"--count {count} must be {what} = {dp * model_ways}; give "
                                "--count with --tp and --pp alone to derive --dp")
        dp = count // model_ways
    loaded = load(model, set)
    from .counting.memory import default_etp

    _dense_etp(loaded.spec, etp)
    setup = setup_for(loaded.spec, seq, batch=batch, dp=dp, tp=tp, pp=pp, ep=ep,
                      etp=etp or (default_etp(tp, ep) if _routed(loaded.spec) else 1),
                      vp=vp, schedule=schedule, zero=zero,
                      recompute=recompute, sequence_parallel=sequence_parallel,
                      dropout=dropout, flash=flash, precision=precision, optimizer=optimizer,
                      cp=cp, lora_rank=lora_rank, qlora=qlora, fp8=fp8,
                      offload_optimizer=offload_optimizer, zero3_buffer=zero3_buffer,
                      grad_fp32=grad_fp32)
    hw = hardware(accelerator, "bf16", 1, None, None, memory_fraction=memory_fraction,
                  reserve=reserve)
    return build_memory_report(loaded, setup, hw, curve)


def _routed(spec: Any) -> bool:
    """Whether some layer of `spec` has routed experts."""
    return any(k.ep_units() for g in spec.groups() for _, k in g.layer.slots())


def _dense_etp(spec: Any, etp: Optional[int]) -> None:
    """--etp given for a model without routed experts: nothing to split."""
    if etp is not None and not _routed(spec):
        raise FlopcalcError("--etp applies to mixtures of experts; this model is dense")


def _layout(spec: Any, seq: Optional[int], *, tp, pp, vp, dp, cp, ep, zero, recompute,
            sequence_parallel, micro_batch, global_batch, dropout, flash, grad_fp32,
            tp_overlap, capacity_factor, count, etp=None, dispatcher="flex",
            moe_overlap=False, schedule="1f1b") -> tuple[Any, int, list[str]]:
    """The Layout of `step` (with the unknowns: the options not given) from its options."""
    from .counting.memory import default_etp
    from .predict.steptime import Layout
    from .reports.common import default_seq

    _dense_etp(spec, etp)
    seq = seq or default_seq(spec)
    ways = tp * pp * cp
    if count is not None and count != dp * ways:
        if dp != 1 or count % ways:
            raise FlopcalcError(f"--count {count} must be dp x tp x pp x cp = {dp * ways}; give "
                                "--count with --tp, --pp and --cp alone to derive --dp")
        dp = count // ways
    if global_batch % dp:
        raise FlopcalcError(f"--global-batch {global_batch:,} must be a multiple of the "
                            f"{dp:,} data-parallel ranks (dp)")
    unknown = [name for name, value in (("micro_batch", micro_batch), ("vp", vp),
                                        ("recompute", recompute), ("dropout", dropout))
               if value is None]
    if vp is None and (pp == 1 or schedule not in ("1f1b", "interleaved")):
        unknown.remove("vp")  # nothing to interleave
    mb = micro_batch or 1
    if (global_batch // dp) % mb:
        raise FlopcalcError(f"--micro-batch {mb} must divide the {global_batch // dp:,} "
                            "sequences each data-parallel rank takes per step")
    lay = Layout(tp=tp, pp=pp, vp=vp or 1, dp=dp, cp=cp, ep=ep, zero=zero,
                 recompute=recompute or "none", sequence_parallel=sequence_parallel,
                 micro_batch=mb, global_batch=global_batch, dropout=dropout == "on",
                 flash=flash, grad_fp32=grad_fp32, tp_overlap=tp_overlap,
                 capacity=capacity_factor or Fraction(1),
                 etp=etp or (default_etp(tp, ep) if _routed(spec) else 1),
                 dispatcher=dispatcher,
                 moe_overlap=moe_overlap, schedule=schedule)
    return lay, seq, unknown


def _machine(accelerator, dtype, count, peak, network, efficiency):  # type: ignore
    from .predict.plans import machine_for

    if accelerator is None:
        raise FlopcalcError("this command needs --accelerator NAME (flopcalc accelerators "
                            "lists them)")
    hw = hardware(accelerator, dtype, count, peak, None)
    return hw, machine_for(hw, network, efficiency)


def _microscaling(accelerator: str) -> bool:
    """Whether a device runs OCP microscaling formats: the generation that added fp4 tensor
    cores (NVIDIA Blackwell, AMD CDNA 4) runs MXFP8 too, so its preset lists an fp4 peak."""
    from .models.accelerators import load_accelerator

    return "fp4" in load_accelerator(accelerator).spec.peak_flops


def _step(model: str, *, seq, tp, pp, vp, dp, cp, ep, zero, recompute, sequence_parallel,
          micro_batch, global_batch, dropout, flash, precision, optimizer, accelerator, count,
          network, efficiency, dtype, peak, grad_fp32, tp_overlap, capacity_factor, tokens,
          price, set, attention="causal", etp=None, dispatcher="flex",  # noqa: A002
          moe_overlap=False, schedule="1f1b", fp8_recipe=None, lora_rank=0, qlora=False):
    from .counting.memory import check_setup
    from .predict.plans import setup_of, valid_vp
    from .predict.steptime import profile
    from .reports.step import build_step_report

    loaded = load(model, set)
    spec = loaded.spec
    lay, seq, unknown = _layout(spec, seq, tp=tp, pp=pp, vp=vp, dp=dp, cp=cp, ep=ep, zero=zero,
                                recompute=recompute, sequence_parallel=sequence_parallel,
                                micro_batch=micro_batch, global_batch=global_batch,
                                dropout=dropout, flash=flash, grad_fp32=grad_fp32,
                                tp_overlap=tp_overlap, capacity_factor=capacity_factor,
                                count=count, etp=etp, dispatcher=dispatcher,
                                moe_overlap=moe_overlap, schedule=schedule)
    if fp8_recipe is not None and dtype != "fp8":
        raise FlopcalcError(f"--fp8-recipe {fp8_recipe} scales fp8 matmuls: give --dtype fp8 too")
    if dtype == "fp8":
        from dataclasses import replace as _replace

        lay = _replace(lay, fp8_recipe=fp8_recipe or "tensorwise")
    if qlora and not lora_rank:
        raise FlopcalcError("--qlora trains LoRA adapters on a 4-bit base: give --lora-rank R "
                            "too")
    if lora_rank:
        from dataclasses import replace as _replace

        lay = _replace(lay, lora_rank=lora_rank)
    mem = dict(precision=precision, optimizer=optimizer, fp8=dtype == "fp8", qlora=qlora)
    problem = check_setup(spec, setup_of(seq, lay, **mem))
    if problem:
        raise FlopcalcError(problem)
    problem = valid_vp(profile(spec, seq), lay, lay.vp)
    if problem:
        raise FlopcalcError(problem)
    hw, res = _machine(accelerator, dtype, lay.devices, peak, network, efficiency)
    if lay.fp8_recipe == "mxfp8" and hw.name != "custom" and not _microscaling(hw.name):
        raise FlopcalcError(f"--fp8-recipe mxfp8 needs a device with microscaling formats "
                            f"(Blackwell, CDNA 4: its preset lists an fp4 peak); {hw.name} has "
                            "none: use tensorwise, delayed, rowwise or blockwise")
    warnings: tuple[str, ...] = ()
    if "recompute" in unknown:
        from .predict.plans import least_recompute
        from dataclasses import replace

        least = least_recompute(spec, seq, lay, hw.memory_bytes, **mem)
        if least is not None and least != "none":
            lay = replace(lay, recompute=least)
            warnings = (f"--recompute not given: the estimate takes {least}, the least "
                        "recomputation with which this layout fits",)
    return build_step_report(loaded, hw, res, lay, seq, unknown, hw.memory_bytes, mem,
                             tokens=tokens, price=price, extra_warnings=warnings,
                             attention=attention)


def _mfu(model: str, *, tokens_per_second, per_device, step_time, global_batch, accelerator,
         count, seq, dtype, peak, recompute, set, scan="chunked",  # noqa: A002
         attention="causal"):
    from .reports.common import default_seq
    from .reports.mfu import build_mfu_report

    loaded = load(model, set)
    seq = seq or default_seq(loaded.spec)
    if (tokens_per_second is None) == (step_time is None):
        raise FlopcalcError("give the measurement: --tokens-per-second T, or --step-time S with "
                            "--global-batch B (sequences per step)")
    hw = hardware(accelerator, dtype, count, peak, None, need_bandwidth=False)
    if hw is None:
        raise FlopcalcError("mfu needs --accelerator NAME (flopcalc accelerators lists them) or "
                            "--peak FLOP/s per device")
    if step_time is not None:
        if global_batch is None:
            raise FlopcalcError("--step-time needs --global-batch B (sequences per step) to "
                                "know the tokens it processed")
        rate = Fraction(global_batch * seq) / step_time
        given = f"{float(step_time):g} s per step of {global_batch:,} sequences of {seq:,}"
    else:
        if global_batch is not None:
            raise FlopcalcError("--global-batch goes with --step-time, not --tokens-per-second")
        rate = tokens_per_second * (hw.count if per_device else 1)
        given = (f"{float(tokens_per_second):,g} tokens/s "
                 + ("per device" if per_device else "in all"))
    return build_mfu_report(loaded, hw, seq, rate, given, step_time, global_batch, recompute,
                            scan, attention)


def _plan(model: str, *, seq, global_batch, accelerator, count, network, efficiency, dtype,
          peak, flash, grad_fp32, tp_overlap, precision, optimizer, top, set,  # noqa: A002
          attention="causal"):
    from .reports.common import default_seq
    from .reports.plan import build_plan_report

    loaded = load(model, set)
    seq = seq or default_seq(loaded.spec)
    hw, res = _machine(accelerator, dtype, count, peak, network, efficiency)
    if hw.memory_bytes is None:
        raise FlopcalcError("plan needs the accelerator's memory: give --accelerator NAME")
    mem = dict(precision=precision, optimizer=optimizer, fp8=dtype == "fp8")
    return build_plan_report(loaded, hw, res, seq, global_batch, count, flash, grad_fp32,
                             tp_overlap, top, mem, attention)


def _ways(name: str, help_: str) -> Option:
    return Option(name, "count", help_, 1, metavar="N")


# What training plans need in memory (counting.memory_techniques); `memory`, `step` and `plan`.
CP = _ways("cp", "Context-parallel devices: each holds seq/cp tokens of every sequence (ring "
           "attention, a flash kernel per block).")
LORA_RANK = Option("lora_rank", "gen", "LoRA adapters of rank R on every matrix of the layers: "
                   "only they train (0: none).", 0, metavar="R")
QLORA = Option("qlora", "flag", "With --lora-rank: the frozen base in 4-bit NF4 (QLoRA).", False)
MEMORY_MORE = (
    CP, LORA_RANK, QLORA,
    Option("fp8", "flag", "fp8 GEMMs (Transformer Engine): fp8 weight copies, 8-bit GEMM "
           "inputs kept for backward.", False),
    Option("offload_optimizer", "flag", "Optimizer state in host memory (ZeRO-Offload).",
           False),
    Option("zero3_buffer", "flag", "With --zero 3: count the gathered largest module "
           "(DeepSpeed's estimator).", False),
    Option("grad_fp32", "flag", "Accumulate gradients in an fp32 buffer (Megatron-LM's "
           "main_grad; forced for bf16 there).", False),
)


# Every framework runs flash attention (FlashAttention, cuDNN's fused attention in
# Transformer Engine, PyTorch's SDPA); --no-flash is the eager path that keeps the s² scores.
FLASH = Option("flash", "flag", "Flash-attention kernels: no s² tensor kept, the blocks a "
               "causal mask removes skipped (--no-flash: the eager kernel).", True)
# On, as Megatron-Bridge's and NeMo's recipes and the Megatron-LM README's H100 runs train
# (--tp-comm-overlap; Megatron-Core's bare default is off).
TP_OVERLAP = Option("tp_overlap", "flag", "Tensor-parallel communication overlapped with the "
                    "matmuls in the estimate (Megatron's --tp-comm-overlap, as its published "
                    "recipes run; --no-tp-overlap: exposed).", True)
SCHEDULE = Option("schedule", "choice", "Pipeline schedule: 1f1b (interleaved with --vp > 1), "
                  "interleaved, zero-bubble (ZB-H1, Qi et al. 2023), dualpipe or dualpipev "
                  "(DeepSeek-V3): each with its paper's bubble and activation memory.", "1f1b",
                  ("1f1b", "interleaved", "zero-bubble", "dualpipe", "dualpipev"))
FP8_RECIPE = Option("fp8_recipe", "choice", "With --dtype fp8: how the matmuls are scaled, "
                    "and so what quantising their operands moves: tensorwise (Transformer "
                    "Engine's current scaling, the default), delayed, rowwise (torchao), "
                    "blockwise (DeepSeek-V3) or mxfp8 (Blackwell, CDNA 4).", None,
                    ("tensorwise", "delayed", "rowwise", "blockwise", "mxfp8"))
# Not given: 1 with --ep > 1 (what Megatron-Bridge's and the Megatron-MoE model zoo's MoE
# recipes set), --tp without expert parallelism (Megatron-Core's own default).
ETP = Option("etp", "count", "Expert tensor-parallel devices: each routed expert split this many "
             "ways (Megatron-Core's ETP; must divide --tp). Default: 1 with --ep > 1, as "
             "published MoE recipes run; --tp without expert parallelism, as Megatron-Core.",
             metavar="N")
# flex by default: DeepEP (or its HybridEP) is what Megatron-Bridge's MoE recipes and the
# Megatron-MoE model zoo run; Megatron-Core's own default is alltoall.
DISPATCHER = Option("dispatcher", "choice", "How routed tokens reach their experts: flex "
                    "(DeepEP, as published MoE recipes run: a token crosses to each other node "
                    "once), alltoall (Megatron-Core's default) or allgather.", "flex",
                    ("flex", "alltoall", "allgather"))
NETWORK = Option("network", "text", "Network preset (presets/networks: dgx-h100, gb200-nvl72, "
                 "...) or a YAML file. Default: the accelerator's usual system.",
                 metavar="NAME")
EFFICIENCY = Option("efficiency", "text", "Achievable-throughput file (presets/efficiency) "
                    "or a YAML file. Default: the accelerator's preset.", metavar="FILE")
GLOBAL_BATCH = Option("global_batch", "count", "Sequences per training step, every "
                      "data-parallel rank together.", metavar="B", required=True)
STEP_DTYPE = Option("dtype", "choice", "Which of the accelerator's peaks the matmuls run at "
                    "and MFU divides by (fp8: fp8 GEMMs).", "bf16", DTYPES)
LAYOUT = (
    _ways("tp", "Tensor-parallel devices (must divide the heads)."),
    _ways("pp", "Pipeline stages (at most the layers)."),
    Option("vp", "count", "Virtual pipeline stages per device (interleaved 1F1B). Not given: "
           "unknown, the estimate takes 1 and the interval every value that works.",
           metavar="V"),
    _ways("dp", "Data-parallel devices."),
    CP,
    _ways("ep", "Expert-parallel devices (divide the routed experts; drawn from tp x cp x dp "
          "as Megatron-Core does)."),
    Option("zero", "number", "ZeRO stage: 1 splits the optimizer, 2 also the gradients "
           "(reduced every micro-batch), 3 also the weights (gathered layer by layer).", 0,
           tuple(map(str, ZERO_STAGES))),
    Option("recompute", "choice", "Activation recomputation. Not given: unknown, the estimate "
           "takes the least that fits, the interval every one that fits.", None, RECOMPUTE),
    Option("sequence_parallel", "flag", "Sequence parallelism over --tp (norms and dropout "
           "split; reduce-scatter + all-gather instead of all-reduce).", False),
    Option("micro_batch", "count", "Sequences per micro-batch per data-parallel rank. Not "
           "given: unknown, the estimate takes 1, the interval every divisor that fits.",
           metavar="B"),
    GLOBAL_BATCH,
    Option("dropout", "choice", "Dropout on or off (its masks and kernels). Not given: "
           "unknown, the estimate takes off, the interval both.", None, ("on", "off")),
    FLASH, SCHEDULE, FP8_RECIPE, LORA_RANK, QLORA,
    ETP, DISPATCHER,
    Option("moe_overlap", "flag", "Hide the expert dispatch behind another micro-batch's "
           "compute (Megatron-Core's 1F1B all-to-all overlap: off by default there, on in "
           "Megatron-Bridge's MoE recipes).", False),
)


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("model", "Parameters, forward FLOPs by component, training FLOPs and the attention "
            "crossover.", (SEQ, TGT_SEQ, BATCH, TOKENS, ATTENTION, SCAN, ELEMENTWISE, IMAGES,
                           IMAGE_SIZE, SET), _model,
            presentation=("format", "brief")),
    Command("sweep", "Forward FLOPs over many sequence lengths: where attention's s² term takes "
            "over.", (
                Option("seq", "text", "Lengths: 1k,2k,4k; a range 1k..1M (every power of two); "
                       "or a range with --points N (N log-spaced lengths). k = 1024.", "1k..1M",
                       metavar="SPEC"),
                Option("points", "count", "With a range: this many log-spaced integer lengths.",
                       metavar="N"),
                BATCH, ATTENTION, SCAN, SET), _sweep, presentation=("format", "plot"),
            plotted="the sweep"),
    Command("compare", "Key figures of several models side by side (each at its own default "
            "length unless --seq). --set applies to every model.",
            (SEQ, BATCH, TOKENS, ATTENTION, SCAN, SET), _compare, models="many",
            presentation=("format", "plot"), plotted="the comparison"),
    Command("conventions", "Training FLOPs under 6ND, Kaplan, PaLM, Megatron, Chinchilla, the "
            "Megatron-LM and MaxText codebases and exact, side by side.",
            (SEQ, TOKENS, RECOMPUTE_FULL, SCAN, SET), _conventions),
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
                       "int4: weight-only quantisation; nvfp4, mxfp4, fp8-tensor, fp8-block: "
                       "scaled formats, their scales counted). Default: as the checkpoint "
                       "stores them (config.json's quantization_config, a preset's checkpoint), "
                       "else bf16.", None, WEIGHT_FORMATS),
                Option("compute_dtype", "choice", "dtype of the matmuls: which of the "
                       "accelerator's peaks applies.", "bf16", DTYPES),
                ATTENTION_CAUSAL, SCAN, ACCELERATOR, COUNT, PEAK, BANDWIDTH, MEMORY_FRACTION,
                RESERVE,
                Option("max_batch", "flag", "Serve the largest batch whose weights and KV cache "
                       "fit the devices (needs --accelerator).", False),
                IMAGES, IMAGE_SIZE, SET), _infer, presentation=("format", "brief", "plot"),
            plotted="decode FLOPs and bytes per step against the context", internal=("curve",)),
    Command("train", "Wall-clock days, accelerator-hours and cost to train on D tokens, for the "
            "exact count and 6ND; or, with --days, the devices needed.", (
                Option("mfu", "share", "Model FLOPs utilisation: the sustained share of peak, "
                       "0.4 or 40%.", metavar="F", required=True),
                TOKENS, SEQ, ATTENTION_CAUSAL, SCAN, RECOMPUTE_FULL, ACCELERATOR, COUNT,
                Option("days", "amount", "A deadline instead of --count: the fewest devices "
                       "that finish in N days.", metavar="N"),
                Option("dtype", "choice", "Which of the accelerator's peaks to use.", "bf16",
                       DTYPES),
                PEAK,
                Option("price", "amount", "Price per accelerator-hour: adds the cost.",
                       metavar="P"),
                IMAGES, IMAGE_SIZE, SET), _train, presentation=("format", "brief")),
    Command("memory", "Training memory per device: weights, gradients and optimizer state "
            "(ZeRO), activations (tensor by tensor, with tensor/sequence/pipeline parallelism "
            "and recomputation), and with --accelerator whether it fits and the largest "
            "micro-batch that does.", (
                SEQ, BATCH,
                _ways("dp", "Data-parallel devices (ZeRO splits over these)."),
                _ways("tp", "Tensor-parallel devices (must divide the heads)."),
                _ways("pp", "Pipeline stages (at most the layers)."),
                _ways("ep", "Expert-parallel devices (must divide the routed experts; drawn "
                      "from tp x cp x dp)."),
                ETP,
                _ways("vp", "Virtual pipeline stages per device: the interleaved schedule's "
                      "first stage holds p + (p-1)/v micro-batches."),
                SCHEDULE,
                Option("zero", "number", "ZeRO stage: 1 splits the optimizer, 2 also the "
                       "gradients, 3 also the weights.", 0, tuple(map(str, ZERO_STAGES))),
                Option("recompute", "choice", "Activation recomputation: selective drops the "
                       "s² tensors, full keeps each layer's input only.", "none", RECOMPUTE),
                Option("sequence_parallel", "flag", "Split the norm and dropout activations "
                       "over --tp too.", False),
                Option("dropout", "flag", "Keep dropout masks (off: modern LLMs train without "
                       "dropout; Korthikanti et al.'s figures assume it).", False),
                FLASH,
                Option("precision", "choice", "mixed: 16-bit weights and gradients with an fp32 "
                       "master copy; bf16: no master copy; fp32.", "mixed", tuple(PRECISIONS)),
                Option("optimizer", "choice", "adamw (fp32 m and v), adamw-8bit, sgd "
                       "(momentum).", "adamw", tuple(OPTIMIZERS)),
                ACCELERATOR,
                Option("count", "count", "Devices in all: dp x tp x pp (x cp) (derives --dp "
                       "when only --tp and --pp are given).", metavar="N"),
                MEMORY_FRACTION, RESERVE, *MEMORY_MORE, SET), _memory, presentation=("format", "plot"),
            plotted="memory against the micro-batch", internal=("curve",)),
)}

COMMANDS["step"] = Command(
    "step", "Time of one training step on a parallel layout: an interval (all communication "
    "hidden, none hidden) and an estimate, where the time goes, communication per axis, the "
    "bubble, MFU, tokens/s, days and cost for D tokens, and the memory per device.", (
        SEQ, *LAYOUT,
        Option("precision", "choice", "mixed: 16-bit weights and gradients with an fp32 master "
               "copy; bf16; fp32.", "mixed", tuple(PRECISIONS)),
        Option("optimizer", "choice", "adamw, adamw-8bit, sgd.", "adamw", tuple(OPTIMIZERS)),
        ACCELERATOR,
        Option("count", "count", "Devices in all: dp x tp x pp x cp (derives --dp when only "
               "the others are given).", metavar="N"),
        NETWORK, EFFICIENCY, STEP_DTYPE, PEAK,
        Option("grad_fp32", "flag", "Gradients accumulated and reduced in fp32 (Megatron-LM "
               "with bf16 forces it).", False),
        TP_OVERLAP,
        Option("capacity_factor", "amount", "MoE capacity factor of the all-to-all (1: "
               "dropless).", metavar="F"),
        TOKENS,
        Option("price", "amount", "Price per accelerator-hour: adds the cost.", metavar="P"),
        ATTENTION_CAUSAL, SET), _step, presentation=("format", "brief"))


# ------------------------------------------------------------------------------------ serve


def _serve(model: str, *, accelerator, count, tp, pp, dp, ep, max_model_len,
           gpu_memory_utilization, block_size, kv_dtype, max_num_batched_tokens, max_num_seqs,
           async_scheduling, prefix_caching, hybrid_kv_cache_manager, mamba_cache_dtype,
           mamba_ssm_cache_dtype, gdn_prefill_backend, kv_memory, kv_blocks, weights_dtype,
           experts_dtype, shared_prefix, draft, draft_tokens, acceptance, prompt, gen, batch,
           network, efficiency, compute_dtype, compute_efficiency, memory_efficiency, peak,
           bandwidth, set, attention="causal", engine="vllm", concurrency=None,  # noqa: A002
           request_rate=None, requests=None, random_state=0, pareto=False, price=None,
           prefill_devices=None, mem_fraction_static=None, page_size=None,
           chunked_prefill_size=None, max_running_requests=None, context_length=None,
           kv_cache_dtype=None):
    from fractions import Fraction as F

    sglang_given = {k: v for k, v in dict(
        mem_fraction_static=mem_fraction_static, page_size=page_size,
        chunked_prefill_size=chunked_prefill_size, max_running_requests=max_running_requests,
        context_length=context_length, kv_cache_dtype=kv_cache_dtype).items() if v is not None}
    if engine != "sglang" and sglang_given:
        flag = "--" + next(iter(sglang_given)).replace("_", "-")
        raise FlopcalcError(f"{flag} is SGLang's option: add --engine sglang (vLLM's are "
                            "--gpu-memory-utilization, --block-size, --max-num-batched-tokens, "
                            "--max-num-seqs, --max-model-len, --kv-dtype)")

    from .predict.latency import Network
    from .numbers import parse_bytes
    from .reports.serve import SHAPE_FACTOR, Draft, build_serve_report

    ways = tp * pp
    if count is not None and count != dp * ways:
        if dp != 1 or count % ways:
            raise FlopcalcError(f"--count {count} must be dp x tp x pp = {dp * ways}; give "
                                "--count with --tp and --pp alone to derive --dp")
        dp = count // ways
    loaded = load(model, set)
    config = _config_json(loaded.origin)
    ssm_from = None  # the config.json keys vLLM's per-family defaults read
    if mamba_ssm_cache_dtype == "auto" and config is not None:  # as vLLM: the config's word
        from .models.files import read_mapping

        ssm_from = read_mapping(config, "config.json")
    elif mamba_ssm_cache_dtype == "auto" and isinstance(loaded.raw.get("checkpoint"), dict):
        from .models.config import Checkpoint  # a preset: its published checkpoint's config

        ssm_from = Checkpoint(**loaded.raw["checkpoint"]).as_config()
    if ssm_from is not None:
        from .reports.serve import config_ssm_dtype

        mamba_ssm_cache_dtype = config_ssm_dtype(ssm_from) or "auto"
    hw = hardware(accelerator, compute_dtype, 1, peak, bandwidth)
    memories = None
    if kv_memory is not None:
        memories = [parse_bytes(x.strip(), "--kv-memory") for x in str(kv_memory).split(",")]
    net, eff_source = Network("", None), ""
    ce, me = compute_efficiency, memory_efficiency
    eff = None
    if hw is not None:
        from .models.networks import (GENERIC, load_efficiency, load_efficiency_file,
                                      load_network)

        name = network or hw.system
        if name is not None:
            loaded_net = load_network(name)
            net = Network(loaded_net.name, loaded_net.spec)
        eff = (load_efficiency_file(efficiency) if efficiency is not None
               else load_efficiency(hw.name) or load_efficiency(GENERIC))
        assert eff is not None
        share = eff.spec.matmul_share(compute_dtype)
        if ce is None:
            if share is None:
                raise FlopcalcError(f"the efficiency file {eff.name} has no matmul share for "
                                    f"{compute_dtype}; give --compute-efficiency")
            ce = F(share).limit_denominator(10**6) * SHAPE_FACTOR
        if me is None:
            me = F(eff.spec.memory.at("typical")).limit_denominator(10**6)
        eff_source = (f"efficiency/{eff.name}: matmul {share} of peak x {float(SHAPE_FACTOR):g} "
                      "for real shapes, memory typical" if compute_efficiency is None else
                      "--compute-efficiency")
    spec_draft = None
    if draft is not None:
        if acceptance is None:
            raise FlopcalcError("--draft needs --acceptance A: the probability that the target "
                                "accepts a draft token (0.7 or 70%)")
        if draft.lower() == "mtp":
            spec_draft = Draft("mtp", "the model's MTP modules", None, draft_tokens, acceptance)
        else:
            from .counting.storage import resolve_plan

            d = load(draft, ())  # its weights as its checkpoint stores them, or the flags
            spec_draft = Draft("draft", d.name, d.spec, draft_tokens, acceptance,
                               resolve_plan(d, weights_dtype, experts_dtype))
    elif acceptance is not None:
        raise FlopcalcError("--acceptance applies to speculative decoding: give --draft MODEL "
                            "(or --draft mtp) too")
    load_opts = _load_options(hw, eff, compute_dtype, engine, concurrency, request_rate,
                              requests, random_state, pareto, price)
    if prefill_devices is not None:
        if load_opts is None or pareto:
            raise FlopcalcError("--prefill-devices splits a closed loop's devices: give "
                                "--concurrency N too (not --pareto)")
        load_opts.prefill_devices = prefill_devices
    common = dict(
        hw=hw, max_model_len=max_model_len, pp=pp,
        gpu_memory_utilization=F(gpu_memory_utilization), block_size=block_size,
        kv_dtype=kv_dtype, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, async_scheduling=async_scheduling,
        prefix_caching=prefix_caching, hybrid_kv_cache_manager=hybrid_kv_cache_manager,
        mamba_cache_dtype=mamba_cache_dtype, mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
        gdn_prefill_backend=gdn_prefill_backend, kv_memory=memories, kv_blocks=kv_blocks,
        weights_dtype=weights_dtype, experts_dtype=experts_dtype, shared_prefix=shared_prefix,
        draft=spec_draft, prompt=prompt, gen=gen, batch=batch, network=net,
        compute_efficiency=ce, memory_efficiency=me, efficiency_source=eff_source)
    if pareto:
        return _pareto(loaded, common, load_opts, count or dp * ways, pp)
    report = build_serve_report(loaded, tp=tp, dp=dp, ep=ep, attention=attention,
                                load=load_opts, **common)
    if ssm_from is None and mamba_ssm_cache_dtype == "auto" and \
            report.settings.mamba_cache_mode is not None:
        report.warnings.append(
            "recurrent states sized in the model dtype (--mamba-ssm-cache-dtype auto); vLLM "
            "takes some models' from their config.json (Nemotron-H: fp32, Qwen3.5: "
            "mamba_ssm_dtype), which a model file does not carry: give the config.json or "
            "--mamba-ssm-cache-dtype")
    if engine == "sglang":
        from .reports.serve_sglang import sglang_capacity

        report.sglang = sglang_capacity(
            loaded.spec, hw, tp=tp, pp=pp, weights_bytes=max(report.weights.device_bytes),
            kv_memory=memories, mem_fraction_static=mem_fraction_static, page_size=page_size,
            chunked_prefill_size=chunked_prefill_size,
            max_running_requests=max_running_requests, context_length=context_length,
            kv_cache_dtype=kv_cache_dtype)
        report.conventions.append(
            "sglang: SGLang's token pool as its 0.5 code sizes it (server_args.py "
            "_handle_gpu_memory_settings; the model runner's profile_max_num_token and "
            "init_memory_pool): max_total_num_tokens = int(free after weights − free before × "
            "(1 − mem_fraction_static)) // bytes per token, in whole pages; recurrent states "
            "first (handle_max_mamba_cache); the rest of the report is vLLM's")
    return report


def _load_options(hw, eff, dtype, engine, concurrency, request_rate, requests, random_state,
                  pareto, price) -> Any:
    """What `serve` under load takes (None: capacity and idle latency only)."""
    if concurrency is None and request_rate is None and not pareto:
        if price is not None:
            raise FlopcalcError("--price prices tokens under load: give --concurrency N, "
                                "--request-rate R or --pareto too")
        return None
    from .predict.engine_step import efficiencies
    from .reports.serve_load import LoadOptions

    if hw is None or eff is None:
        raise FlopcalcError("--concurrency, --request-rate and --pareto time an engine on a "
                            "device: give --accelerator NAME")
    return LoadOptions(engine, concurrency, float(request_rate) if request_rate is not None
                       else None, requests or 0, random_state,
                       efficiencies(eff.spec, dtype, eff.name),
                       attention_peak=hw.bf16_peak_flops or hw.peak_flops,
                       price=float(price) if price is not None else None)


def _pareto(loaded, common: dict, opts: Any, devices: int, pp: int) -> Any:
    """Every layout of `devices` devices (tp x dp, and for a mixture of experts ep over all
    of them), each at concurrencies 1, 2, 4, ... : the front of tokens/s per device against
    tokens/s per user."""
    from .reports.serve import build_serve_report
    from .reports.serve_load import front

    if devices % pp:
        raise FlopcalcError(f"--count {devices} must be a multiple of --pp {pp}")
    moe = any(k.ep_units() for g in loaded.spec.groups("decoder") for _, k in g.layer.slots())
    points, layouts, skipped, first = [], [], [], None
    ways = devices // pp
    from .predict.plans import divisors

    # tensor parallelism splits heads: no model has 512 of them to split further, so the
    # search is bounded whatever --count is
    for tp in divisors(ways, 512):
        dp = ways // tp
        for ep in ([1, tp * dp] if moe and tp * dp > 1 else [1]):
            name = f"tp{tp} dp{dp}" + (f" ep{ep}" if ep > 1 else "")
            try:
                r = build_serve_report(loaded, tp=tp, dp=dp, ep=ep, load=opts, pareto=True,
                                       **common)
            except FlopcalcError as exc:
                skipped.append(f"{name}: {exc}")
                continue
            if not r.capacity.fits or not r.pareto.points:
                skipped.append(f"{name}: the cache holds no request of this length")
                continue
            layouts.append(name)
            points += r.pareto.points
            first = first or r
    if first is None:
        raise FlopcalcError(f"no layout of {devices} devices holds this model and a request: "
                            + "; ".join(skipped[:3]))
    best = front(points)
    first.pareto.devices, first.pareto.layouts, first.pareto.skipped = devices, layouts, skipped
    first.pareto.points, first.pareto.searched = best, len(points)
    first.pareto.model = ("steady state of a closed loop (predict.scheduler.steady_state) at "
                          "concurrencies 1, 2, 4, ... up to what each layout's cache and "
                          "max_num_seqs hold; estimates; a point is on the front when no other "
                          "has more tokens/s per device at as many tokens/s per user")
    first.timing = None
    return first


def _config_json(origin: str) -> Any:
    """The Hugging Face config.json a model was read from (None: a preset or model file)."""
    from pathlib import Path

    path = Path(origin)
    if path.is_dir():
        path = path / "config.json"
    return path if path.suffix == ".json" and path.is_file() else None


def _serve_command() -> Command:
    engine_kv = ("auto", "bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla",
                 "nvfp4_ds_mla", "nvfp4")
    states = ("auto", "bf16", "fp16", "fp32")
    weights = WEIGHT_FORMATS
    return Command(
        "serve", "Serving capacity as vLLM 0.33.0 computes it (paged KV blocks, cache groups, "
        "hybrid state pages, max concurrency and the logged KV cache size), prefix caching, "
        "speculative decoding, and with --prompt the time a user sees (TTFT, TPOT).", (
            ACCELERATOR,
            Option("count", "count", "Devices in all: dp x tp x pp (derives --dp when only "
                   "--tp and --pp are given).", metavar="N"),
            _ways("tp", "Tensor-parallel devices per replica (--tensor-parallel-size)."),
            _ways("pp", "Pipeline stages per replica (--pipeline-parallel-size)."),
            _ways("dp", "Replicas (--data-parallel-size); each has its own cache."),
            _ways("ep", "Devices the routed experts are spread over (vLLM: tp x dp with "
                  "--enable-expert-parallel); 1: experts split by --tp."),
            _lengths("max_model_len", "Longest request the engine admits (--max-model-len). "
                     "Default: the model's context."),
            Option("gpu_memory_utilization", "share", "Share of each device's memory the engine "
                   "takes (vLLM 0.33's default).", "0.92", metavar="F"),
            Option("block_size", "count", "Tokens per KV block. Default: 16 (64 for "
                   "DeepSeek's sparse MLA and for --kv-dtype fp8_ds_mla: FlashMLA-sparse's "
                   "pages); hybrid models grow it to "
                   "fit a state page.", metavar="N"),
            Option("kv_dtype", "choice", "--kv-cache-dtype: auto (the model's bf16), fp8 "
                   "(per-tensor scales), fp8_ds_mla / nvfp4_ds_mla (DeepSeek's MLA layouts), "
                   "nvfp4 (½ byte + an fp8 scale per 16).", "auto", engine_kv),
            Option("max_num_batched_tokens", "count", "Tokens per engine step (chunked "
                   "prefill); window layers keep room for the steps in flight.", 8192,
                   metavar="N"),
            Option("max_num_seqs", "count", "Sequences the scheduler runs at once.", 1024,
                   metavar="N"),
            Option("async_scheduling", "flag", "Async scheduling: one more step in flight "
                   "(window layers keep 2 x max_num_batched_tokens more).", True),
            Option("prefix_caching", "flag", "Prefix caching (recurrent layers then keep states "
                   "in align mode: 3 blocks per request and group).", True),
            Option("hybrid_kv_cache_manager", "flag", "The hybrid KV cache manager (off: window "
                   "and chunked layers cache every token).", True),
            Option("mamba_cache_dtype", "choice", "dtype of recurrent layers' conv states "
                   "(auto: the model's).", "auto", states),
            Option("mamba_ssm_cache_dtype", "choice", "dtype of their SSM / recurrent states "
                   "(auto: the conv dtype; vLLM's Nemotron-H defaults to fp32).", "auto",
                   states),
            Option("gdn_prefill_backend", "choice", "Gated DeltaNet prefill kernel (auto: "
                   "FlashInfer on H100/H200/B200, which keeps a prefill checkpoint block).",
                   "auto", ("auto", "flashinfer", "triton")),
            Option("kv_memory", "text", "Bytes per device for the cache, as the engine logs "
                   "'Available KV cache memory' (one value, or one per pipeline stage, "
                   "comma-separated). Default: estimated.", metavar="BYTES"),
            Option("kv_blocks", "count", "The engine's block count (num_gpu_blocks) instead of "
                   "its memory.", metavar="N"),
            Option("weights_dtype", "choice", "How weights are stored: a dtype, or a scaled "
                   "format (nvfp4, mxfp4, fp8-tensor, fp8-block) with its scales. Default: as "
                   "the checkpoint stores them (config.json's quantization_config, a preset's "
                   "checkpoint), else bf16.", None, weights),
            Option("experts_dtype", "choice", "How routed experts are stored (gpt-oss: mxfp4). "
                   "Default: --weights-dtype.", None, weights),
            _lengths("shared_prefix", "Tokens every request shares (a system prompt): its "
                     "blocks are held once and its prefill skipped."),
            Option("draft", "text", "Speculative decoding: a draft MODEL, or mtp (the model's "
                   "own multi-token-prediction modules).", metavar="MODEL"),
            Option("draft_tokens", "count", "Draft tokens per step (num_speculative_tokens).",
                   1, metavar="K"),
            Option("acceptance", "share", "Probability that the target accepts a draft token "
                   "(0.7 or 70%).", metavar="A"),
            _lengths("prompt", "Prompt tokens of a request: adds the time to first token and "
                     "per output token (needs --accelerator)."),
            Option("gen", "gen", "Generated tokens of a request.", 256, metavar="N"),
            Option("batch", "count", "Sequences decoding together on each replica.", 1,
                   metavar="B"),
            NETWORK, EFFICIENCY,
            Option("compute_dtype", "choice", "dtype of the matmuls: which peak applies.",
                   "bf16", DTYPES),
            Option("compute_efficiency", "share", "Share of the peak the estimate assumes. "
                   "Default: the efficiency preset's matmul share x 0.85.", metavar="F"),
            Option("memory_efficiency", "share", "Share of the memory bandwidth the estimate "
                   "assumes. Default: the efficiency preset's typical share.", metavar="F"),
            PEAK, BANDWIDTH, ATTENTION_CAUSAL, SET,
            Option("engine", "choice", "The serving engine: its capacity arithmetic (vllm: "
                   "0.33.0's blocks; sglang adds its token pool, max_total_num_tokens, with "
                   "SGLang's own options below; trtllm takes vLLM's) and its per-step overhead "
                   "under load.", "vllm", ("vllm", "sglang", "trtllm")),
            Option("concurrency", "count_or", "Users in a closed loop (vllm bench serve "
                   "--max-concurrency), or max: as many as the cache and --max-num-seqs hold "
                   "(offline throughput). Needs --prompt.", choices=("max",), metavar="N|max"),
            Option("request_rate", "amount", "Poisson arrivals, requests/s (open loop). Needs "
                   "--prompt.", metavar="R"),
            Option("requests", "count", "Requests simulated per replica. Default: 10 x "
                   "concurrency, at most max(2,000, 2 x concurrency).", metavar="N"),
            Option("random_state", "gen", "Random state of the Poisson arrivals: the same "
                   "number draws the same arrivals.", 0, metavar="N"),
            Option("pareto", "flag", "Search tp x dp (and ep) layouts of --count devices and "
                   "concurrencies: the front of tokens/s per device vs per user.", False),
            Option("price", "amount", "Price per device-hour: adds $ per million output "
                   "tokens.", metavar="P"),
            Option("prefill_devices", "count_or", "Disaggregated serving: devices of --count "
                   "in the prefill pool (whole replicas); the rest decode. auto: the split with "
                   "the most tokens/s.", choices=("auto",), metavar="N|auto"),
            Option("mem_fraction_static", "share", "SGLang: share of the device for weights "
                   "and the token pool. Default: SGLang's rule by the device's memory, the "
                   "chunk, CUDA graphs and tp.", metavar="F"),
            Option("page_size", "count", "SGLang: tokens per page; the pool is whole pages. "
                   "Default: 1.", metavar="N"),
            Option("chunked_prefill_size", "count", "SGLang: tokens per prefill chunk. "
                   "Default: by the device's memory (8192 on 80 GB).", metavar="N"),
            Option("max_running_requests", "count", "SGLang: the request pool. Default: "
                   "min(max(tokens / context · 512, 2048), 4096).", metavar="N"),
            _lengths("context_length", "SGLang: the longest request (--context-length). "
                     "Default: the model's context."),
            Option("kv_cache_dtype", "choice", "SGLang: dtype of the token pool (auto: the "
                   "model's bf16).", None, ("auto", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"))),
        _serve, presentation=("format", "brief", "plot"),
        plotted="the Pareto front (with --pareto)")


COMMANDS["serve"] = _serve_command()


COMMANDS["mfu"] = Command(
    "mfu", "MFU from a measured throughput under every named convention side by side (6ND, "
    "PaLM, Megatron, exact full and causal), and HFU with recomputation; a figure above 100% is "
    "shown as impossible, with the convention that causes it.", (
        Option("tokens_per_second", "amount", "Measured training tokens per second (all "
               "devices together unless --per-device).", metavar="T"),
        Option("per_device", "flag", "--tokens-per-second is per device.", False),
        Option("step_time", "amount", "Measured seconds per training step (with "
               "--global-batch).", metavar="S"),
        Option("global_batch", "count", "Sequences per step (with --step-time).", metavar="B"),
        ACCELERATOR,
        Option("count", "count", "Devices that produced the throughput.", 1, metavar="N"),
        SEQ,
        Option("dtype", "choice", "Which of the accelerator's peaks MFU divides by.", "bf16",
               DTYPES),
        PEAK,
        Option("recompute", "choice", "Activation recomputation, for HFU: selective adds the "
               "attention core, full the layers' forward.", "none", RECOMPUTE),
        ATTENTION_CAUSAL, SCAN, SET), _mfu, presentation=("format", "brief"))

COMMANDS["plan"] = Command(
    "plan", "Search the parallel layouts of a model on N devices that fit in memory, rank them "
    "by estimated step time, and show the best with where their time goes.", (
        SEQ,
        Option("global_batch", "count", "Sequences per training step.", metavar="B",
               required=True),
        ACCELERATOR,
        Option("count", "count", "Devices in all.", metavar="N", required=True),
        NETWORK, EFFICIENCY, STEP_DTYPE, PEAK,
        FLASH,
        Option("grad_fp32", "flag", "Gradients accumulated and reduced in fp32.", False),
        TP_OVERLAP,
        Option("precision", "choice", "mixed, bf16 or fp32 (bytes per parameter).", "mixed",
               tuple(PRECISIONS)),
        Option("optimizer", "choice", "adamw, adamw-8bit, sgd.", "adamw", tuple(OPTIMIZERS)),
        Option("top", "count", "How many plans to show.", 5, metavar="K"),
        ATTENTION_CAUSAL, SET), _plan)


# The commands whose reports `check` can hold against limits: every declared command (each
# prints figures), so a command added to the table is gated with no other change.
CHECKABLE = tuple(COMMANDS)

