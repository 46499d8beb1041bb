"""Accelerators: the YAML schema of `presets/accelerators/*.yaml`, finding and loading them, and
resolving one (with `--peak` / `--bandwidth` / `--count`) into the `Hardware` a run is timed on.

Every figure is a dense (no 2:4 sparsity) vendor peak, per device, as an exact integer:
FLOP/s per dtype and bytes/s of memory bandwidth; sizes use the number syntax of the command line
(`memory_bytes: 80GB`, `peak_flops: {bf16: 989.5T}`, `8e10`). Each preset cites its datasheet.
Short names pick a preset: each file lists its own (`aliases: [h100]` in h100-sxm.yaml).
"""

from __future__ import annotations

from dataclasses import asdict, field
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from ..records import dataclass
from ..declare import Min, Parsed, structure
from ..errors import FlopcalcError
from ..numbers import parse_bytes, parse_count
from ..tables import COMPUTE_DTYPES
from .files import read_mapping, user_path




Dtype = Literal[COMPUTE_DTYPES]  # type: ignore[valid-type]
# "ada": SM89 (RTX 4090, L40S, L4); "blackwell-rtx": SM120, the GeForce and RTX PRO Blackwell
# parts, which have FP4 and microscaling tensor formats but not SM100's kernels (tcgen05,
# tensor memory), so engines pick other kernels on them (e.g. vLLM's MXFP4 MoE: Marlin).
Architecture = Literal["ampere", "ada", "hopper", "blackwell", "blackwell-rtx", "cdna3", "cdna4",
                       "tpu-v5p"]
# The generations with OCP microscaling formats in their tensor cores (MXFP8, MXFP4: NVIDIA's
# Blackwell architecture technical brief and RTX Blackwell whitepaper; AMD's CDNA 4 instruction
# set architecture guide).
MICROSCALING = ("blackwell", "blackwell-rtx", "cdna4")
# NVIDIA's SM90, SM100 and SM120 generations, which FlashInfer's Hopper and Blackwell kernels
# need (its GDN prefill: SM90, SM100/SM120 with CUDA 13).
HOPPER_UP = ("hopper", "blackwell", "blackwell-rtx")
Size = Annotated[int, Parsed(parse_bytes)]
Rate = Annotated[int, Parsed(parse_count)]


@dataclass(frozen=True)
class AcceleratorSpec:
    """An accelerator file (its one declaration, see `flopcalc.declare`), per device."""

    title: str
    vendor: str
    source: str
    memory_bytes: Size
    memory_bandwidth: Size  # bytes/s
    peak_flops: dict[Dtype, Rate]  # dtype → dense FLOP/s
    notes: str = ""
    # What the device offers a run: the capacity its driver reports (nvidia-smi's total), with
    # where that figure comes from. Absent: the nominal `memory_bytes` stands in, and says so.
    usable_memory_bytes: Optional[Size] = None
    usable_memory_source: str = ""
    # The network preset this device usually comes built into (`presets/networks/`), which
    # commands that time a run use when --network is not given.
    system: Optional[str] = None
    # Short names people type for this preset (`h100` for h100-sxm).
    aliases: list[str] = field(default_factory=list)
    # The chip's generation, which says what its kernels can run (`MICROSCALING`, `HOPPER_UP`).
    architecture: Optional[Architecture] = None
    # The board's power limit (the datasheet's TDP), in watts, with its source: energy per token.
    board_watts: Optional[Annotated[int, Min(1)]] = None
    board_watts_source: str = ""

    def __post_init__(self) -> None:
        if not self.peak_flops:
            raise ValueError("peak_flops must map dtypes to FLOP/s")
        if self.board_watts is not None and not self.board_watts_source:
            raise ValueError("board_watts needs board_watts_source: where the figure comes from")
        if self.usable_memory_bytes is not None and not self.usable_memory_source:
            raise ValueError("usable_memory_bytes needs usable_memory_source: where the figure "
                             "comes from")
        # A driver reports at most the memory on the device. A vendor's "80GB" may be binary
        # (an H100 80GB reports 81,559 MiB, an A100 40GB exactly 40 GiB), so the bound is the
        # nominal size read as GiB: memory_bytes x 2^30 / 10^9.
        most = self.memory_bytes * 2**30 // 10**9
        if self.usable_memory_bytes is not None and self.usable_memory_bytes > most:
            raise ValueError(f"usable_memory_bytes {self.usable_memory_bytes:,} is more than "
                             f"the device has (memory_bytes {self.memory_bytes:,}, at most "
                             f"{most:,} read as GiB): check the units")


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
    memory_bytes: Optional[int]  # per device, what a run may fill: usable x fraction - reserve
    peak_overridden: bool = False
    bandwidth_overridden: bool = False
    nominal_memory_bytes: Optional[int] = None  # the vendor's "80GB"
    usable_memory_bytes: Optional[int] = None  # what the driver reports (else the nominal)
    memory_basis: str = ""  # where the usable figure comes from
    memory_fraction: Fraction = Fraction(1)  # --memory-fraction
    reserve_bytes: int = 0  # --reserve, per device
    bf16_peak_flops: Optional[int] = None  # the device file's bf16 peak (attention kernels)
    system: Optional[str] = None  # the device file's usual network preset
    architecture: Optional[str] = None  # the device file's generation
    board_watts: Optional[int] = None  # the device file's TDP, W
    board_watts_source: str = ""

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
        from .registry import preset_aliases

        names = accelerator_names()
        name = ref
        if ref.lower() not in {n.lower() for n in names}:
            aliases = preset_aliases(accelerators_dir())
            name = aliases.get(ref.lower(), ref)
            names_hint = (f"available: {', '.join(names)}; short names: "
                          + ", ".join(f"{k} = {v}" for k, v in aliases.items())
                          + "; a YAML file path works too")
        else:
            names_hint = ""
        name = find_preset(name, names, "accelerator", names_hint)
        raw = read_mapping(accelerators_dir() / f"{name}.yaml", "accelerator file")
        origin, label = "preset", f"accelerators/{name}.yaml"
    return LoadedAccelerator(name, origin, validated(raw, label))


def validated(raw: dict[str, Any], label: str) -> AcceleratorSpec:
    """`raw` read as an accelerator file: by pydantic, or by the fast reader of the same
    declaration when this very input validated before, so `--accelerator` costs no pydantic
    start-up after the first run."""
    from .cache import Store, key

    store = Store("accelerators", ("declare.py", "models/accelerators.py"))
    cache_key = key(raw)
    if store.seen(cache_key):
        try:
            return structure(AcceleratorSpec, raw)
        except ValueError:
            pass  # validate from scratch below, for pydantic's message
    from .validation import resolve, validate_declared

    spec = resolve(raw, label, lambda r: validate_declared(AcceleratorSpec, r, label))
    store.remember(cache_key)
    return spec


def all_accelerators() -> list[LoadedAccelerator]:
    return [load_accelerator(name) for name in accelerator_names()]


def usable_memory(spec: AcceleratorSpec, fraction: Fraction = Fraction(1),
                  reserve: int = 0) -> tuple[int, int, str]:
    """(bytes a run may fill per device, the usable capacity, where that comes from): the
    driver-reported capacity (or the nominal size where no preset figure is known, said so),
    times `fraction` (a serving engine's memory utilisation, a framework's cap), less
    `reserve` bytes (the CUDA context, workspaces, another process)."""
    if spec.usable_memory_bytes is not None:
        usable, basis = spec.usable_memory_bytes, spec.usable_memory_source
    else:
        usable, basis = spec.memory_bytes, ("the nominal size: no driver-reported capacity "
                                            "is recorded for this device")
    room = usable * fraction - reserve
    if room <= 0:
        raise FlopcalcError(f"--reserve {reserve:,} bytes leaves nothing of the {usable:,} bytes "
                            f"usable{'' if fraction == 1 else ' x --memory-fraction'}; give a "
                            "smaller --reserve")
    return int(room), usable, basis  # whole bytes, rounded down


def resolve_hardware(accelerator: Optional[str], dtype: str, count: int,
                     peak: Optional[int] = None, bandwidth: Optional[int] = None,
                     need_bandwidth: bool = True, memory_fraction: Fraction = Fraction(1),
                     reserve: int = 0) -> Optional[Hardware]:
    """The hardware for a run, or None when no accelerator and no override was given.

    `peak` and `bandwidth` (per device) override the preset's figures; without `--accelerator`
    they describe a custom device and must both be given where the run needs both. Memory is
    what a run may fill per device (`usable_memory`).
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
    room, usable, basis = usable_memory(spec, memory_fraction, reserve)
    return Hardware(
        name=loaded.name, title=spec.title, source=spec.source, dtype=dtype, count=count,
        peak_flops=peak if peak is not None else spec.peak_flops[dtype],
        bandwidth=bandwidth if bandwidth is not None else spec.memory_bandwidth,
        memory_bytes=room, peak_overridden=peak is not None,
        bandwidth_overridden=bandwidth is not None, nominal_memory_bytes=spec.memory_bytes,
        usable_memory_bytes=usable, memory_basis=basis, memory_fraction=memory_fraction,
        reserve_bytes=reserve, bf16_peak_flops=spec.peak_flops.get("bf16"), system=spec.system,
        architecture=spec.architecture, board_watts=spec.board_watts,
        board_watts_source=spec.board_watts_source)


def preset_row(loaded: LoadedAccelerator) -> dict[str, Any]:
    """An accelerator as plain data, for `flopcalc accelerators`."""
    return {"name": loaded.name, **asdict(loaded.spec)}


DTYPES = COMPUTE_DTYPES
