"""Accelerators: the YAML schema of `presets/accelerators/*.yaml`, finding and loading them, and
resolving one (with `--peak` / `--bandwidth` / `--count`) into the `Hardware` a run is timed on.

Every figure is a dense (no 2:4 sparsity) vendor peak, per device, as an exact integer:
FLOP/s per dtype and bytes/s of memory bandwidth; sizes use the number syntax of the command line
(`memory_bytes: 80GB`, `peak_flops: {bf16: 989.5T}`, `8e10`). Each preset cites its datasheet.
Short names pick a preset: `h100` is the H100 SXM (`ALIASES`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import FlopcalcError
from .files import read_mapping, user_path

# Every dtype a datasheet row may name; `peak_flops` keys must be among these.
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
# Short names people type, and the preset each means.
ALIASES = {"h100": "h100-sxm", "a100": "a100-sxm-80gb", "a100-80gb": "a100-sxm-80gb",
           "a100-40gb": "a100-pcie-40gb", "mi300": "mi300x", "v5p": "tpu-v5p"}


@dataclass(frozen=True)
class AcceleratorSpec:
    """A validated accelerator file, per device; checks its own invariants, so a damaged cache
    entry is refused like a bad file."""

    title: str
    vendor: str
    source: str
    memory_bytes: int
    memory_bandwidth: int  # bytes/s
    peak_flops: dict[str, int]  # dtype → dense FLOP/s
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("title", "vendor", "source", "notes"):
            if type(getattr(self, name)) is not str:
                raise ValueError(f"{name} must be text")
        for name in ("memory_bytes", "memory_bandwidth"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise ValueError(f"{name} must be a positive whole number")
        if not isinstance(self.peak_flops, dict) or not self.peak_flops:
            raise ValueError("peak_flops must map dtypes to FLOP/s")
        for dtype, value in self.peak_flops.items():
            if dtype not in DTYPES:
                raise ValueError(f"peak_flops.{dtype}: unknown dtype; use {', '.join(DTYPES)}")
            if type(value) is not int or value <= 0:
                raise ValueError(f"peak_flops.{dtype} must be a positive whole number")


_schema: Optional[type] = None


def accelerator_schema() -> type:
    """The pydantic model of an accelerator file. Built on first use: defining a pydantic model
    imports about 40 ms of pydantic internals, which runs without --accelerator never need."""
    global _schema
    if _schema is None:
        from typing import Annotated, Literal, Union

        from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, StrictInt,
                              StrictStr, model_validator)

        from ..numbers import parse_bytes, parse_count

        def reader(parse: Any) -> Any:
            def read(value: Any) -> int:
                try:
                    return parse(value, "value")
                except FlopcalcError as exc:
                    raise ValueError(str(exc).removeprefix("value: ")) from None
            return BeforeValidator(read)

        figure = Union[StrictInt, float, StrictStr]
        size = Annotated[figure, reader(parse_bytes)]
        rate = Annotated[figure, reader(parse_count)]
        dtype = Literal[DTYPES]  # type: ignore[valid-type]

        class Accelerator(BaseModel):
            model_config = ConfigDict(extra="forbid", frozen=True)

            title: StrictStr
            vendor: StrictStr
            source: StrictStr
            memory_bytes: size  # type: ignore[valid-type]
            memory_bandwidth: size  # type: ignore[valid-type]  # bytes/s
            peak_flops: Annotated[dict[dtype, rate], Field(min_length=1)]  # type: ignore
            notes: StrictStr = ""

            @model_validator(mode="after")
            def _spec(self) -> Any:
                AcceleratorSpec(**self.model_dump())
                return self

        _schema = Accelerator
    return _schema


@dataclass(frozen=True)
class LoadedAccelerator:
    name: str  # preset name or file stem
    origin: str  # "preset", or the path that was read
    spec: AcceleratorSpec


@dataclass(frozen=True)
class Hardware:
    """What a run is timed on: `count` identical devices, each with these peaks.

    `peak_flops` and `bandwidth` are per device (None when unknown: train needs no bandwidth);
    the totals assume perfect scaling, i.e. `count` devices are `count` times one.
    """

    name: str
    title: str
    source: str
    dtype: str
    count: int
    peak_flops: int
    bandwidth: Optional[int]
    memory_bytes: Optional[int]
    peak_overridden: bool = False
    bandwidth_overridden: bool = False

    @property
    def total_peak_flops(self) -> int:
        return self.count * self.peak_flops

    @property
    def total_bandwidth(self) -> Optional[int]:
        return None if self.bandwidth is None else self.count * self.bandwidth

    @property
    def total_memory_bytes(self) -> Optional[int]:
        return None if self.memory_bytes is None else self.count * self.memory_bytes


def accelerators_dir() -> Path:
    from .registry import presets_dir

    return presets_dir() / "accelerators"


def accelerator_names() -> list[str]:
    from .registry import preset_names

    return preset_names(accelerators_dir())


def load_accelerator(ref: str) -> LoadedAccelerator:
    """A preset name (`h100-sxm`, or a short name such as `h100`) or a path to a YAML file in
    the same schema."""
    from .registry import find_preset, looks_like_path

    if looks_like_path(ref):
        path = user_path(ref)
        raw, name, origin = read_mapping(path, "accelerator file"), path.stem, str(path)
        label = origin
    else:
        names = accelerator_names()
        name = ALIASES.get(ref.lower(), ref)
        name = find_preset(name, names, "accelerator",
                           f"available: {', '.join(names)}; short names: "
                           + ", ".join(f"{k} = {v}" for k, v in ALIASES.items())
                           + "; a YAML file path works too")
        raw = read_mapping(accelerators_dir() / f"{name}.yaml", "accelerator file")
        origin, label = "preset", f"accelerators/{name}.yaml"
    return LoadedAccelerator(name, origin, validated(raw, label))


def validated(raw: dict[str, Any], label: str) -> AcceleratorSpec:
    """`raw` checked against `accelerator_schema()`, or rebuilt (through the same invariants)
    from an identical earlier check, so `--accelerator` costs no pydantic start-up after the
    first run."""
    from .cache import Store, key

    store = Store("accelerators", ["accelerators.py"])
    cache_key = key(raw)
    stored = store.lookup(cache_key)
    if isinstance(stored, dict):
        try:
            return AcceleratorSpec(**stored)
        except (TypeError, ValueError):
            pass  # damaged or edited: validate from scratch
    from .validation import validate

    spec = validate(accelerator_schema(), raw, label).model_dump()
    store.store(cache_key, spec)
    return AcceleratorSpec(**spec)


def all_accelerators() -> list[LoadedAccelerator]:
    return [load_accelerator(name) for name in accelerator_names()]


def resolve_hardware(accelerator: Optional[str], dtype: str, count: int,
                     peak: Optional[int] = None, bandwidth: Optional[int] = None,
                     need_bandwidth: bool = True) -> Optional[Hardware]:
    """The hardware for a run, or None when no accelerator and no override was given.

    `peak` and `bandwidth` (per device) override the preset's figures; without `--accelerator`
    they describe a custom device and must both be given where the run needs both.
    """
    if accelerator is None:
        if peak is None and bandwidth is None:
            if count != 1:
                raise FlopcalcError("--count multiplies an accelerator: give --accelerator NAME "
                                    "(or --peak and --bandwidth) too")
            return None
        missing = ("--peak" if peak is None
                   else "--bandwidth" if need_bandwidth and bandwidth is None else None)
        if missing:
            raise FlopcalcError(f"{missing} is needed too when there is no --accelerator (or name "
                                "one: flopcalc accelerators lists them)")
        assert peak is not None
        return Hardware("custom", "custom device", "--peak/--bandwidth", dtype, count, peak,
                        bandwidth, None, True, bandwidth is not None)
    loaded = load_accelerator(accelerator)
    spec = loaded.spec
    if peak is None and dtype not in spec.peak_flops:
        raise FlopcalcError(
            f"{loaded.name} has no {dtype} peak (it lists {', '.join(spec.peak_flops)}); choose "
            f"one of those dtypes or give --peak FLOP/s")
    return Hardware(
        name=loaded.name, title=spec.title, source=spec.source, dtype=dtype, count=count,
        peak_flops=peak if peak is not None else spec.peak_flops[dtype],
        bandwidth=bandwidth if bandwidth is not None else spec.memory_bandwidth,
        memory_bytes=spec.memory_bytes, peak_overridden=peak is not None,
        bandwidth_overridden=bandwidth is not None)


def preset_row(loaded: LoadedAccelerator) -> dict[str, Any]:
    """An accelerator as plain data, for `flopcalc accelerators`."""
    return {"name": loaded.name, **asdict(loaded.spec)}
