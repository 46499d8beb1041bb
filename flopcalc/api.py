"""flopcalc from Python: the same reports the command line prints, as typed objects.

    >>> import flopcalc
    >>> r = flopcalc.model("llama-3.1-8b", seq=4096, attention="causal")
    >>> r.params.total
    8030261248
    >>> r.to_dict() == json.loads(`flopcalc model llama-3.1-8b --seq 4096 --attention causal
    ...                             --format json`)
    True

Numbers may be given as ints or in the command line's syntax (`seq="32k"`, `tokens="15T"`,
`mfu="40%"`). Every bad input raises `flopcalc.FlopcalcError` with the message the command line
prints. The command line itself builds its reports through these functions.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Literal, Optional, Sequence, Union

from .errors import FlopcalcError
from .numbers import Kind, parse_amount, parse_int, parse_share

if TYPE_CHECKING:
    from .models.accelerators import Hardware
    from .models.registry import LoadedModel
    from .reports.attention import AttentionReport
    from .reports.compare import CompareReport
    from .reports.conventions import ConventionsReport
    from .reports.infer import InferReport
    from .reports.memory import MemoryReport
    from .reports.model import ModelReport
    from .reports.sweep import SweepReport
    from .reports.train import TrainReport

Number = Union[int, str]
Convention = Literal["full", "causal"]


def _int(value: Optional[Number], option: str, kind: Kind = "count") -> Optional[int]:
    """None, or a positive whole number in the syntax of `kind`; errors name the option as the
    command line does."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise FlopcalcError(f"Invalid value for '{option}': {value!r} is not a number")
    try:
        return parse_int(value, kind, option)
    except FlopcalcError as exc:
        raise FlopcalcError(f"Invalid value for '{option}': "
                            f"{str(exc).removeprefix(option + ': ')}") from None


def _choice(value: str, option: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise FlopcalcError(f"Invalid value for '{option}': {value!r} is not one of "
                            + ", ".join(f"'{c}'" for c in choices))
    return value


def _fraction(value: Union[Fraction, float, str], option: str, parse=parse_share) -> Fraction:
    if isinstance(value, Fraction):
        return value
    try:
        return parse(str(value), option)
    except FlopcalcError as exc:
        raise FlopcalcError(f"Invalid value for '{option}': "
                            f"{str(exc).removeprefix(option + ': ')}") from None


def load(model: str, set: Optional[Sequence[str]] = None) -> LoadedModel:  # noqa: A002
    """A preset name, a YAML or config.json path (or a directory holding one), with `--set`
    overrides (`["n_layers=48", "bias.qkv=false"]`): the validated, resolved model."""
    from .models.registry import load_model

    return load_model(model, set or ())


def model(model: str, *, seq: Optional[Number] = None, tgt_seq: Optional[Number] = None,
          batch: Number = 1, tokens: Optional[Number] = None, attention: Convention = "full",
          elementwise: bool = False, set: Optional[Sequence[str]] = None) -> ModelReport:  # noqa: A002
    """`flopcalc model`: parameters, forward FLOPs, training FLOPs and the crossover."""
    from .reports.model import build_model_report

    return build_model_report(
        load(model, set), seq=_int(seq, "--seq", "length"),
        tgt_seq=_int(tgt_seq, "--tgt-seq", "length"), batch=_int(batch, "--batch") or 1,
        tokens=_int(tokens, "--tokens"),
        attention=_choice(attention, "--attention", ("full", "causal")),  # type: ignore[arg-type]
        elementwise=elementwise)


def sweep(model: str, *, seq: str = "1k..1M", points: Optional[int] = None, batch: Number = 1,
          attention: Convention = "full", set: Optional[Sequence[str]] = None  # noqa: A002
          ) -> SweepReport:
    """`flopcalc sweep`: the forward pass over many sequence lengths."""
    from .reports.sweep import build_sweep_report

    return build_sweep_report(load(model, set), seq, points, _int(batch, "--batch") or 1,
                              _choice(attention, "--attention", ("full", "causal")))  # type: ignore[arg-type]


def compare(models: Sequence[str], *, seq: Optional[Number] = None, batch: Number = 1,
            tokens: Optional[Number] = None, attention: Convention = "full",
            set: Optional[Sequence[str]] = None) -> CompareReport:  # noqa: A002
    """`flopcalc compare`: the key figures of several models side by side."""
    from .reports.compare import build_compare_report

    length = _int(seq, "--seq", "length")
    reports = [model(name, seq=length, batch=batch, tokens=tokens, attention=attention, set=set)
               for name in models]
    return build_compare_report(reports, length, _int(batch, "--batch") or 1, attention)


def conventions(model: str, *, seq: Optional[Number] = None, tokens: Optional[Number] = None,
                recompute: Literal["none", "full"] = "none",
                set: Optional[Sequence[str]] = None) -> ConventionsReport:  # noqa: A002
    """`flopcalc conventions`: training FLOPs under the published conventions."""
    from .counting.model import model_params
    from .kinds.base import total
    from .reports.common import default_seq, default_tokens
    from .reports.conventions import build_conventions_report

    loaded = load(model, set)
    spec = loaded.spec
    count = _int(tokens, "--tokens")
    if count is None:
        count, source = default_tokens(spec, total(model_params(spec)))
    else:
        source = "--tokens"
    full = _choice(recompute, "--recompute", ("none", "full")) == "full"
    return build_conventions_report(loaded, _int(seq, "--seq", "length") or default_seq(spec),
                                    count, source, full)


def attention(*, n: Number, d_k: Number, d_v: Number, m: Optional[Number] = None,
              heads: Number = 1) -> AttentionReport:
    """`flopcalc attention`: one attention operation counted scalar by scalar."""
    from .reports.attention import build_attention_report

    return build_attention_report(_int(n, "--n", "length") or 1, _int(m, "--m", "length"),
                                  _int(d_k, "--d-k") or 1, _int(d_v, "--d-v") or 1,
                                  _int(heads, "--heads") or 1)


def _hardware(accelerator: Optional[str], dtype: str, count: Number, peak: Optional[Number],
              bandwidth: Optional[Number], need_bandwidth: bool = True) -> Optional[Hardware]:
    from .models.accelerators import resolve_hardware

    return resolve_hardware(accelerator, dtype, _int(count, "--count") or 1,
                            _int(peak, "--peak"), _int(bandwidth, "--bandwidth", "bytes"),
                            need_bandwidth)


def infer(model: str, *, prompt: Number, gen: Number, batch: Number = 1,
          kv_dtype: str = "bf16", weights_dtype: str = "bf16", compute_dtype: str = "bf16",
          attention: Convention = "full", accelerator: Optional[str] = None, count: Number = 1,
          peak: Optional[Number] = None, bandwidth: Optional[Number] = None,
          max_batch: bool = False, set: Optional[Sequence[str]] = None,  # noqa: A002
          curve: bool = False) -> InferReport:
    """`flopcalc infer`: prefill and decode over the KV cache, bytes, and the roofline."""
    from .counting.traffic import DTYPE_BITS
    from .reports.infer import build_infer_report, largest_batch

    loaded = load(model, set)
    hw = _hardware(accelerator, compute_dtype, count, peak, bandwidth)
    generated = 0 if str(gen).strip() == "0" else _int(gen, "--gen", "length")
    options = dict(prompt=_int(prompt, "--prompt", "length"), gen=generated,
                   attention=_choice(attention, "--attention", ("full", "causal")),
                   kv_dtype=_choice(kv_dtype, "--kv-dtype",
                                    [d for d in DTYPE_BITS if d != "int4"]),
                   weights_dtype=_choice(weights_dtype, "--weights-dtype", list(DTYPE_BITS)),
                   compute_dtype=compute_dtype, hw=hw)
    size = _int(batch, "--batch") or 1
    if max_batch:
        size = largest_batch(loaded, hw, options)
    return build_infer_report(loaded, batch=size, curve=curve, **options)  # type: ignore[arg-type]


def train(model: str, *, mfu: Union[Fraction, float, str], tokens: Optional[Number] = None,
          seq: Optional[Number] = None, attention: Convention = "full",
          recompute: Literal["none", "full"] = "none", accelerator: Optional[str] = None,
          count: Number = 1, days: Union[Fraction, float, str, None] = None,
          dtype: str = "bf16", peak: Optional[Number] = None,
          price: Union[Fraction, float, str, None] = None,
          set: Optional[Sequence[str]] = None) -> TrainReport:  # noqa: A002
    """`flopcalc train`: days, accelerator-hours and cost, or the devices for a deadline."""
    from .reports.train import build_train_report

    if days is not None and _int(count, "--count") != 1:
        raise FlopcalcError("give --count N (devices) or --days N (a deadline that sets the "
                            "devices), not both")
    hw = _hardware(accelerator, dtype, count, peak, None, need_bandwidth=False)
    if hw is None:
        raise FlopcalcError("train needs --accelerator NAME (flopcalc accelerators lists them) "
                            "or --peak FLOP/s per device")
    return build_train_report(
        load(model, set), hw, _fraction(mfu, "--mfu"), seq=_int(seq, "--seq", "length"),
        tokens=_int(tokens, "--tokens"),
        attention=_choice(attention, "--attention", ("full", "causal")),  # type: ignore[arg-type]
        recompute=_choice(recompute, "--recompute", ("none", "full")) == "full",
        price=None if price is None else _fraction(price, "--price", parse_amount),
        days=None if days is None else _fraction(days, "--days", parse_amount))


def memory(model: str, *, seq: Optional[Number] = None, batch: Number = 1, dp: Number = 1,
           tp: Number = 1, pp: Number = 1, ep: Number = 1, zero: int = 0,
           recompute: Literal["none", "selective", "full"] = "none",
           sequence_parallel: bool = False, dropout: bool = False, flash: bool = False,
           precision: Literal["mixed", "bf16", "fp32"] = "mixed",
           optimizer: Literal["adamw", "adamw-8bit", "sgd"] = "adamw",
           accelerator: Optional[str] = None, count: Optional[Number] = None,
           set: Optional[Sequence[str]] = None, curve: bool = False  # noqa: A002
           ) -> MemoryReport:
    """`flopcalc memory`: training memory per device and whether it fits."""
    from .counting.memory import OPTIMIZERS, PRECISIONS
    from .models.accelerators import resolve_hardware
    from .reports.memory import build_memory_report, setup_for

    ways = {name: _int(value, f"--{name}") or 1 for name, value in
            (("batch", batch), ("dp", dp), ("tp", tp), ("pp", pp), ("ep", ep))}
    devices = _int(count, "--count")
    if devices is not None and devices != ways["dp"] * ways["tp"] * ways["pp"]:
        if ways["dp"] != 1 or devices % (ways["tp"] * ways["pp"]):
            raise FlopcalcError(f"--count {devices} must be dp x tp x pp = "
                                f"{ways['dp'] * ways['tp'] * ways['pp']}; give --count with "
                                "--tp and --pp alone to derive --dp")
        ways["dp"] = devices // (ways["tp"] * ways["pp"])
    loaded = load(model, set)
    setup = setup_for(
        loaded.spec, _int(seq, "--seq", "length"), **ways,
        zero=int(_choice(str(zero), "--zero", ("0", "1", "2", "3"))),
        recompute=_choice(recompute, "--recompute", ("none", "selective", "full")),
        sequence_parallel=sequence_parallel, dropout=dropout, flash=flash,
        precision=_choice(precision, "--precision", list(PRECISIONS)),
        optimizer=_choice(optimizer, "--optimizer", list(OPTIMIZERS)))
    hw = resolve_hardware(accelerator, "bf16", 1) if accelerator else None
    return build_memory_report(loaded, setup, hw, curve)
