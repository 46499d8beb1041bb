"""Accelerators: the YAML schema of `presets/accelerators/*.yaml`, finding and loading them, and
resolving one (with `--peak` / `--bandwidth` / `--count`) into the `Hardware` a run is timed on.

Every figure is a dense (no 2:4 sparsity) vendor peak, per device, as an exact integer:
FLOP/s per dtype and bytes/s of memory bandwidth. Each preset cites its datasheet in `source`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

from .errors import FlopcalcError
from .registry import looks_like_path, presets_dir, read_mapping, suggest

if TYPE_CHECKING:
    from pydantic import BaseModel

# Every dtype a datasheet row may name; `peak_flops` keys must be among these.
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
_schema: Optional[type] = None


def accelerator_schema() -> type[BaseModel]:
    """The pydantic model of an accelerator file, per device; unknown keys, floats and
    non-positive values are errors. Built on first use: defining a pydantic model imports about
    40 ms of pydantic internals, which runs without --accelerator never need."""
    global _schema
    if _schema is None:
        from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

        positive = Annotated[StrictInt, Field(gt=0)]
        dtype = Literal[DTYPES]  # type: ignore[valid-type]

        class Accelerator(BaseModel):
            model_config = ConfigDict(extra="forbid", frozen=True)

            title: StrictStr
            vendor: StrictStr
            source: StrictStr
            memory_bytes: positive  # type: ignore[valid-type]
            memory_bandwidth: positive  # type: ignore[valid-type]  # bytes/s
            # dense FLOP/s per dtype
            peak_flops: Annotated[dict[dtype, positive], Field(min_length=1)]  # type: ignore
            notes: StrictStr = ""

        _schema = Accelerator
    return _schema


def __getattr__(name: str) -> Any:
    # `from flopcalc.accelerators import Accelerator` works, and still builds it lazily.
    if name == "Accelerator":
        return accelerator_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class AcceleratorSpec:
    """A validated accelerator file: the fields of `accelerator_schema()`, as plain data."""

    title: str
    vendor: str
    source: str
    memory_bytes: int
    memory_bandwidth: int  # bytes/s
    peak_flops: dict[str, int]  # dtype → dense FLOP/s
    notes: str = ""

    @classmethod
    def from_stored(cls, data: object) -> Optional[AcceleratorSpec]:
        """A spec from a cache entry, or None unless it has the validated types."""
        def positive(v: object) -> bool:
            return type(v) is int and v > 0

        if not isinstance(data, dict) or set(data) != set(cls.__annotations__):
            return None
        peaks = data["peak_flops"]
        if not (all(isinstance(data[k], str) for k in ("title", "vendor", "source", "notes"))
                and positive(data["memory_bytes"]) and positive(data["memory_bandwidth"])
                and isinstance(peaks, dict) and peaks
                and all(k in DTYPES and positive(v) for k, v in peaks.items())):
            return None
        return cls(**data)


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
    return presets_dir() / "accelerators"


def accelerator_names() -> list[str]:
    return sorted(p.stem for p in accelerators_dir().glob("*.yaml"))


def load_accelerator(ref: str) -> LoadedAccelerator:
    """A preset name (`h100-sxm`) or a path to a YAML file in the same schema."""
    path = Path(ref).expanduser()
    if looks_like_path(ref) or path.is_file():
        raw, name, origin = read_mapping(path, "accelerator file"), path.stem, str(path)
        label = origin
    else:
        names = accelerator_names()
        if ref not in names:
            hint = suggest(ref, names)
            raise FlopcalcError(
                f"unknown accelerator '{ref}';{hint} available: {', '.join(names)} "
                "(flopcalc accelerators lists them; a YAML file path works too)")
        raw = read_mapping(accelerators_dir() / f"{ref}.yaml", "accelerator file")
        name, origin, label = ref, "preset", f"accelerators/{ref}.yaml"
    return LoadedAccelerator(name, origin, validated(raw, label))


def validated(raw: dict[str, Any], label: str) -> AcceleratorSpec:
    """`raw` checked against `accelerator_schema()`, or the result of an identical earlier check
    (cache.py: so `--accelerator` costs no pydantic start-up after the first run)."""
    from .cache import Store, key

    store = Store("accelerators", ["accelerators.py"])
    cache_key = key(raw)
    spec = AcceleratorSpec.from_stored(store.lookup(cache_key))
    if spec is not None:
        return spec
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
